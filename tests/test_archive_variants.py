"""The same job archived another way gives the same verdict (``benchmarks/archive_variants.py``), and the ingest
mechanisms that make it so."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from l4lite.ingest.reader import IngestOptions, iter_records
from l4lite.records import Accounting

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import archive_variants as av  # noqa: E402

SRUN_HEAD = ("0: [default1]:2026-12-03 14:38:23,219 INFO [rank1] initialized process group: host=node-a\n"
             "1: [default1]:2026-12-03 14:38:23,219 INFO [rank3] initialized process group: host=node-b\n")


def _srun_records(tmp_path: Path, tail: str) -> list:
    """Records of one ``srun --label`` file of two nodes whose first lines name their hosts."""
    (tmp_path / "slurm-77.out").write_text(SRUN_HEAD + tail)
    return list(iter_records([str(tmp_path)], IngestOptions(), Accounting()))


def test_srun_label_over_torchrun_takes_the_global_rank_of_torch_prefix(tmp_path: Path) -> None:
    # ``srun --label torchrun``, one task per node: "1: " is the node's task id, "[default1]:" the local rank,
    # "[rank3]:" the global rank
    recs = _srun_records(tmp_path, "1: [default1]:[rank3]: RuntimeError: shape mismatch in attention block\n"
                                   "1: [default0]:[rank2]: RuntimeError: shape mismatch in attention block\n")
    errors = [(r.rank, r.node) for r in recs if "RuntimeError" in r.text]
    assert errors == [(3, "node-b"), (2, "node-b")]  # rank 2 is tied to no host: the label says node-b


def test_srun_label_names_the_node_of_lines_without_a_host(tmp_path: Path) -> None:
    # one file of two nodes (``srun --label torchrun``): a launcher line without a rank prefix of node 1 is
    # node-b's, whatever global rank 1's host is
    recs = _srun_records(tmp_path, "1: E1203 14:38:30.696000 16444 torch/distributed/elastic/multiprocessing/api.py:1002] "
                                   "failed (exitcode: 1) local_rank: 1 (pid: 16468) of binary: /usr/bin/python3\n")
    assert [r.node for r in recs] == ["node-a", "node-b", "node-b"]


def test_kubectl_prefix_names_the_pod_as_the_host_its_lines_name(tmp_path: Path) -> None:
    # ``kubectl logs --prefix``: every pod's lines in one stream; a pod whose lines name its host is that host
    # (its other lines too), a pod naming none is its own node, and a traceback's text is what the program wrote
    (tmp_path / "pods.log").write_text(
        "[pod/train-worker-0/train] 2026-12-03 14:38:23,219 INFO initialized process group: host=gpu-a17\n"
        "[pod/train-worker-0/train] 2026-12-03 14:38:24,000 INFO step 1 loss 2.5\n"
        "[pod/train-worker-1/train] 2026-12-03 14:38:23,300 INFO step 1 loss 2.5\n"
        "[pod/train-worker-1/train] Traceback (most recent call last):\n"
        "[pod/train-worker-1/train]   File \"train.py\", line 3, in <module>\n"
        "[pod/train-worker-1/train] RuntimeError: CUDA error: an illegal memory access was encountered\n")
    recs = list(iter_records([str(tmp_path)], IngestOptions(), Accounting()))
    assert [r.node for r in recs if "step 1" in r.text] == ["gpu-a17", "train-worker-1"]
    tb = next(r for r in recs if "Traceback" in r.text)
    assert tb.node == "train-worker-1" and "\n  File \"train.py\"" in tb.text and tb.text.count("[pod/") == 1


def test_a_nul_run_is_reported_with_its_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "n1").mkdir()
    (tmp_path / "n1" / "train.log").write_bytes(b"one\ntwo\n" + b"\x00" * 5000 + b"three\nfour\n")
    acc = Accounting()
    texts = [r.text for r in iter_records([str(tmp_path)], IngestOptions(), acc)]
    assert texts == ["one", "two", "three", "four"]
    assert "n1/train.log:3: 5000 NUL byte(s) removed" in acc.warnings


# ---------------------------------------------------------------------------------------------- variants
# Each transform on a few jobs of different layouts (the benchmark runs every job): torchelastic --log-dir,
# srun --label with a kernel log per host, Kubernetes pods, a hang with Flight Recorder dumps, and the
# simulator's per-node folders with NCCL headers and dmesg.
CASES: dict[str, tuple[str, ...]] = {
    "identity": ("001-ddp-exception",),
    "folders-letters": ("009-hf-exception", "ib-link-down", "078-jax-exception_srun"),  # 078: banners name hosts
    "folders-part-N": ("037-ddp-host_oom", "048-hf-exception_k8s", "074-jax-sigkill",  # 074: process banners
                       "142-ddp-no_master_host"),  # no line names the node: a part folder names none either
    "folders-dated": ("005-ddp-enospc", "036-deepspeed-hang_fr", "044-hf-diverge"),  # 044: no host in any line
    "folders-job-ids": ("018-lightning-sigkill", "047-ddp-host_oom_srun"),
    "folders-workers": ("ib-link-down", "037-ddp-host_oom", "075-jax-sigstop", "071-ray-exception_k8s",
                        "142-ddp-no_master_host"),  # no line names the node: its role folder stands for it
    "folders-pods": ("048-hf-exception_k8s", "047-ddp-host_oom_srun",
                     "131-ddp-two_faults"),  # two ranks' untimed errors: their error files say which came first
    "folders-attempts": ("037-ddp-host_oom", "002-ddp-sigkill", "073-jax-exception"),
    "hosts-in-lines": ("009-hf-exception", "047-ddp-host_oom_srun", "078-jax-exception_srun",
                       "019-lightning-hang",  # 019: the stuck rank's error.json by its own shape
                       "005-ddp-enospc",  # the error.json placed by the exception its rank raised
                       "071-ray-exception_k8s",  # the head pod's actors' banners name the hosts
                       "127-lightning-anomaly_nan",  # a console naming its host once, mid-file, in ``logs/``
                       "145-hf-shm_small"),  # ``logs/`` of two nodes' files; rank files by their tee copies
    "wrapped-levels": ("021-lightning-enospc", "048-hf-exception_k8s"),
    "levels-under-node": ("030-deepspeed-exception",),
    "deeper-run-host-rank": ("002-ddp-sigkill", "ib-link-down"),
    "flattened": ("013-hf-enospc", "047-ddp-host_oom_srun", "078-jax-exception_srun", "015-hf-data", "042-hf-sigstop",
                  "011-hf-hang",  # 011: error.json beside stderr.log by name
                  "145-hf-shm_small"),  # file names spelling the hosts out, one host named by lines
    "merged-labelled": ("002-ddp-sigkill", "030-deepspeed-exception", "001-ddp-exception",
                        "005-ddp-enospc", "011-hf-hang",  # error records: their shape, no borrowed time
                        "021-lightning-enospc",  # a traceback's frames and exception line after the task's label
                        "145-hf-shm_small",  # an agent's run folder in the shared ``logs/``: its ranks' own
                        "131-ddp-two_faults",  # two ranks' untimed errors ordered by their error files
                        "142-ddp-no_master_host"),  # no line names the node: the task's label, ``rank:1``
    # pdsh's host before every line; a pod's host by its folder (048, 064)
    "merged-pdsh": ("002-ddp-sigkill", "030-deepspeed-exception", "048-hf-exception_k8s",
                    "064-accelerate-exception_k8s",
                    # a node naming no host of its own: its ranks' files in ``logs/`` by their tee copies under
                    # its prefix, the merge placed on no one host
                    "164-deepspeed-cpu_throttle",
                    "069-ray-nan"),  # a Ray session cat'ed after the driver: the next file's notice is no cause
    "merged-plain": ("003-ddp-hang", "037-ddp-host_oom",  # hosts named by pids and banners, none by the file
                     "004-ddp-nan",  # every rank's error.json, with the second it states
                     "073-jax-exception",  # the traceback after a process's last pid-named step
                     "065-ray-healthy",  # relayed prefixes name their actors, not the driver's file
                     # a console's ``[default0]:`` lines between its agent's lines: local ranks repeat on every node
                     "083-ddp-bad_env", "092-lightning-missing_file_all",
                     # a rank's error.json merged just above its traceback (081), or after it (125): the same error
                     "081-fabric-exception", "125-ddp-logfile_exception",
                     # two agents stating their pids on two hosts (145); a local rank's label doubled (150)
                     "145-hf-shm_small", "150-ddp-missing_module",
                     # the second node's console cat'ed below the first's: its ``[default0]:`` traceback is its
                     # own node's, not the host that prefix had in the block above (198), nor its tee copies (129)
                     "198-ignite-data", "129-deepspeed-model_config",
                     # a Ray session folder cat'ed after the driver's output: the dashboard's start-up notice,
                     # minutes earlier, just below the driver's last lines is another file's, not the failure's
                     "069-ray-nan"),
    "stdin-merged": ("030-deepspeed-exception", "001-ddp-exception", "019-lightning-hang",  # 019: summaries past 32 KB
                     "026-ddp-hang_fr"),  # a dump beside stdin
    "gzip": ("038-hf-host_oom", "011-hf-hang"),  # 011: the stuck rank's error.json.gz
    "rotated": ("009-hf-exception", "019-lightning-hang", "005-ddp-enospc", "004-ddp-nan",
                # the diagnosis reads a rotated log as one stream: a shutdown line paired with the failure in an
                # older piece (042), the phase of an untimed line from the lines after it (044), a traceback's
                # frames in one piece and its exception line in the next (021)
                "042-hf-sigstop", "044-hf-diverge", "021-lightning-enospc"),
    "crlf": ("014-hf-corrupt_ckpt",),
    "bom": ("007-ddp-data",),
    "binary-garbage": ("049-ddp-netdown", "060-accelerate-sigkill"),  # damaged bytes inside a traceback
    "nul-run": ("033-deepspeed-nan",),
    "truncated-last-line": ("010-hf-sigkill",),
    "empty-files": ("045-lightning-erofs",),
    "clock-1970": ("037-ddp-host_oom", "022-lightning-corrupt_ckpt"),
    "clock-2099": ("022-lightning-corrupt_ckpt",),
    # a line between a traceback's frames (002) or inside torchelastic's failure summary (018)
    "clock-2099-mid": ("002-ddp-sigkill", "018-lightning-sigkill", "025-hf-hang", "010-hf-sigkill"),  # 010: carets
    "clock-2099-end": ("003-ddp-hang",),
    "local-offset": ("001-ddp-exception", "043-ddp-diverge"),
    "stale-file": ("004-ddp-nan", "003-ddp-hang", "005-ddp-enospc", "011-hf-hang"),
    # 065: a healthy job's teardown on a node 5 s behind the node that says it finished
    "skewed-peer": ("065-ray-healthy", "001-ddp-exception", "037-ddp-host_oom"),
    "glog-peer": ("001-ddp-exception",),
    # a node's files in syslog's yearless format, copied a year after they were written (053: its year was
    # guessed from the copy's write time, a year after the other node's)
    "syslog-peer-copied": ("001-ddp-exception", "053-ignite-sigkill"),
    # 038: a kernel log of January lines alone beside December's; 027: a Flight Recorder dump's times moved too
    "new-year": ("038-hf-host_oom", "027-hf-hang_fr"),
    "ampm": ("004-ddp-nan", "120-amp-healthy",  # 120: a PM time read as AM made a healthy job hang
             "024-ddp-hang"),  # 024: the timeout's traceback tied with the last step's whole second
    "epoch-ms-json": ("001-ddp-exception",),
    "epoch-s-json": ("002-ddp-sigkill",),
    # a peer an hour ahead from the middle on, its later lines past every other node's (001: the phase, 003:
    # the suspect moved): read back by the jump (``ingest.jumps``)
    "dst-jump": ("002-ddp-sigkill", "001-ddp-exception", "003-ddp-hang",
                 "126-ddp-save_killed"),  # 126: the jump shows in no file's sampled times; its error files tell it
    "bad-dates": ("002-ddp-sigkill", "025-hf-hang"),  # between a traceback's frames
    "dmesg-old-boot": ("ib-link-down", "047-ddp-host_oom_srun"),
    # the agents' run folders in a shared ``logs/``: placed by their consoles' tee copies (145), never by the one
    # folder of both (150); a console naming its host only mid-file (145, by task)
    "slurm-output-host": ("001-ddp-exception", "047-ddp-host_oom_srun", "145-hf-shm_small", "150-ddp-missing_module",
                          "020-lightning-nan"),  # no line names a host: ``cpu-node-a`` by its siblings' names
    "slurm-output-task": ("037-ddp-host_oom", "078-jax-exception_srun", "145-hf-shm_small", "150-ddp-missing_module",
                          # ``logs/`` read as the one host named: an agent's run folder is the node whose console
                          # names it all the same
                          "054-ignite-hang"),
    # the pods' lines name their hosts (003) or name none (001: the pod is the node)
    "kubectl-prefix": ("003-ddp-hang", "001-ddp-exception", "078-jax-exception_srun",
                       "052-ignite-exception",  # a rank's own files replay the console's steps below its traceback
                       "160-lightning-tz_exception"),  # a node in another zone, its part of the one file read in it
    "us-date": ("032-deepspeed-hang",),  # whole seconds: the timeout's traceback after the last step
    # day first, the day under 13: December from the job's ISO dates (114: the file read in March before)
    "eu-date": ("002-ddp-sigkill", "114-ddp-eval_sigkill"),
    "time-only": ("004-ddp-nan", "120-amp-healthy"),  # across midnight with no date (120: an incident before)
    "tz-peer": ("002-ddp-sigkill",),  # a peer eight hours ahead: kept here, not yet everywhere (docs/evaluation.md)
    # 143: the root rank's only stamped line refused, its failure time the launcher summary's read in its node's
    # zone
    "future-line": ("001-ddp-exception", "143-ddp-tz_exception"),
    # the peer's process-group line, its only skew anchor, a year back or an hour back (flushed late): no skew
    "peer-year-back": ("002-ddp-sigkill",),
    "peer-flushed-late": ("002-ddp-sigkill", "031-deepspeed-sigkill", "126-ddp-save_killed"),
    # a bare ``date`` of 2024 in the root's file: no failure time of 2024 (145: a file of no time of its own)
    # 064, 104, 174, 190: the quoted line reads as a checkpoint saved after the failure, the node's first marker:
    # no set-up before it; 150: the file's one timed line of several is no clock to set the file apart by
    "quoted-time": ("012-hf-nan", "145-hf-shm_small", "064-accelerate-exception_k8s", "104-ddp-json_exception",
                    "174-fsdp-shard_mismatch", "190-fsdp-netslow", "150-ddp-missing_module",
                    "092-lightning-missing_file_all"),  # 092: failed at set-up, the quoted save says nothing of it
    "clock-step-back": ("001-ddp-exception", "137-hf-exit0"),  # 137: the only ahead lines are the node's last
    # a JSON line's epoch of 2024 is no failure time (150: nor a file's clock; 143: nor a file's start, its zone
    # found)
    "epoch-field": ("010-hf-sigkill", "002-ddp-sigkill", "150-ddp-missing_module", "143-ddp-tz_exception",
                    "184-megatron-idx_truncated"),  # 184: nor the time of the untimed traceback after it
    "new-year-root": ("001-ddp-exception", "119-ddp-eval_sigkill"),
    # 125: the root file opens with epoch seconds, its time spot: the root dated by its own line
    "epoch-prefix": ("002-ddp-sigkill", "119-ddp-eval_sigkill", "143-ddp-tz_exception", "125-ddp-logfile_exception"),
    # 163: the peer's journal lines after an uptime are python's, not the kernel's
    "journal-monotonic": ("001-ddp-exception", "050-deepspeed-netdown", "163-accelerate-cpu_throttle"),
    "clock-12h-bare": ("001-ddp-exception", "119-ddp-eval_sigkill", "143-ddp-tz_exception"),
    # every file in one folder named after the submit host (or a job id under it): a host-like folder that holds
    # two nodes' files is no node (103: an srun file of two hosts beside two kernel logs; 057 likewise)
    # (126: the named host's console heads the other node's console too; that console's whole read places it)
    "submit-host-folder": ("103-ddp-restart_srun", "057-ignite-sigkill_srun", "001-ddp-exception",
                           "126-ddp-save_killed"),
    "job-id-folder": ("103-ddp-restart_srun", "057-ignite-sigkill_srun", "126-ddp-save_killed"),
    "rank-named-files": ("001-ddp-exception", "005-ddp-enospc"),
    # one of the root node's last timed lines three hours ahead: one line makes no failure time
    "root-line-hours-ahead": ("001-ddp-exception", "024-ddp-hang"),
    # logrotate's ``-%Y%m%d-%s`` pieces, each written at its last line: one log, oldest first (002, 024 lost on main)
    "rotated-dated": ("002-ddp-sigkill", "024-ddp-hang"),
    # a pod of another zone in one kubectl file: each pod's part a clock of its own (``ingest.writerclocks``); 143's
    # root node logs New York time too, placed by the error records copied into its part
    "kubectl-zoned-pod": ("002-ddp-sigkill", "024-ddp-hang", "143-ddp-tz_exception", "199-fsdp-host_oom"),
    # the kubelet's ``var/log/pods/<ns>_<pod>_<uid>/pytorch/0.log``: a pod's folder names no host, the lines do
    # (047: the kernel's log collected under the node's name; 069: a Ray session tree copied out of its pod)
    "kubelet-pod-logs": ("001-ddp-exception", "047-ddp-host_oom_srun", "069-ray-nan"),
    # a Ray driver's console relaying every worker's lines behind ``(RayTrainWorker pid=N, ip=A)``
    "ray-driver-relay": ("002-ddp-sigkill", "070-ray-erofs"),
    # a pdsh merge whose one host logs eight hours ahead: its ``host: `` part a clock of its own (018 lost on main)
    "pdsh-zoned-host": ("002-ddp-sigkill", "018-lightning-sigkill"),
}


# Evidence a transform cannot keep (none of the cases above): two ranks' byte-identical error.json files whose
# lines name neither host nor rank cannot be told apart once no path places them (``diagnose.errorfiles``).
# the verdict kept, its evidence a part of the plain copy's: one file holds the copies that the plain copy's
# session files each held (the health detector finds a step's copies file by file)
EVIDENCE_SHRINKS: set[tuple[str, str]] = {("merged-plain", "069-ray-nan"), ("merged-pdsh", "069-ray-nan")}


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], tuple[av.Job, av.Verdict]]:
    """A job with the verdict of its plain copy, made once per job for the module."""
    jobs = av.job_list()
    neighbours = {p.name: jobs[(i + 1) % len(jobs)] for i, p in enumerate(jobs)}
    by_name = {p.name: p for p in jobs}
    tmp = tmp_path_factory.mktemp("variants")
    done: dict[str, tuple[av.Job, av.Verdict]] = {}

    def get(name: str) -> tuple[av.Job, av.Verdict]:
        if name not in done:
            done[name] = av.prepare(by_name[name], tmp, neighbours[name])
        return done[name]
    return get


def test_every_transform_has_cases() -> None:
    assert set(CASES) == set(av.TRANSFORMS)


@pytest.mark.parametrize(("transform", "name"), [(t, j) for t, js in CASES.items() for j in js])
def test_the_job_archived_another_way_gives_the_same_verdict(
        transform: str, name: str, prepared: Callable[[str], tuple[av.Job, av.Verdict]], tmp_path: Path) -> None:
    job, base = prepared(name)
    variant = av.TRANSFORMS[transform](job)
    incident = av.analyse(variant, tmp_path / "variant")
    written = {p.relative_to(tmp_path / "variant").as_posix(): p.read_bytes()
               for p in (tmp_path / "variant").rglob("*") if p.is_file()}
    assert (written == {s.rel: s.data for s in job.srcs}) == (transform == "identity")  # the archive did change
    got = av.verdict_of(incident, variant, job)
    unspelt = av.unspelled(base.node, variant, job)  # a node no line names, no path spells any more: None
    if (transform, name) in EVIDENCE_SHRINKS:
        assert av.changed(base, got, unspelt) == ["evidence"] and got.evidence < base.evidence, (base, got)
    else:
        assert av.changed(base, got, unspelt) == [], (base, got)
    assert av.unaccounted(incident, variant) == ""
