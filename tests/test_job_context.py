"""The job context: nodes found from the whole job (layouts of real launchers, hosts named inside lines), a year
and a span that one bad line cannot move, and the same records through every entry point.

Every layout is built from real lines: excerpts of fixtures/real/real-failures.jsonl (hosts renamed where the
layout needs other hosts) and lines of a torchrun job run on this machine (fixtures/real_jobs)."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from l4lite.api import analyze
from l4lite.ingest.context import JobContext, build_context
from l4lite.ingest.files import discover
from l4lite.ingest.reader import IngestOptions, iter_records
from l4lite.options import AnalyzeOptions
from l4lite.records import Accounting

ROOT = Path(__file__).resolve().parent.parent
REAL = {row["id"]: row for row in map(json.loads, (ROOT / "fixtures" / "real" / "real-failures.jsonl").open())}
IB_FAULT = REAL["nccl-1405-ib-completion-error-12"]["lines"]  # written by host kp-ddp-worker-0
HEALTHY = [line for line in REAL["nccl-tests-252-normal-init-complete"]["lines"] if line.startswith("kolyoz1:")]
SUMMARY = REAL["cppo-6-grpo-childfailed-sigkill"]["lines"]  # torchelastic failure summary naming its host

# a torchrun job run on this machine (fixtures/real_jobs/001-ddp-exception): rank 3 raises, rank 0 loses its peer
TRAINER_OK = [
    "2026-12-03 14:36:22,440 INFO [rank{r}] initialized process group: backend=gloo world_size=4 local_rank={lr}",
    "2026-12-03 14:36:27,420 INFO [rank{r}] step 16/40 | epoch 0 | loss 3.5340 | grad_norm 0.439 | lr 3.00e-03",
]
RAISES = [
    "[rank{r}]: Traceback (most recent call last):",
    '[rank{r}]:   File "/tmp/l4lite-realjobs/work/001-ddp-exception/run/train_ddp.py", line 111, in main',
    "[rank{r}]:     faults.at_step(step, model.module)",
    '[rank{r}]:   File "/tmp/l4lite-realjobs/work/001-ddp-exception/run/faults.py", line 99, in at_step',
    "[rank{r}]:     raise RuntimeError(EXCEPTION_MESSAGE.format(want=64, got=63))",
    "[rank{r}]: RuntimeError: shape mismatch in attention block: expected key length 64, got 63 (sequence packing bug)",
]


def host_lines(lines: list[str], host: str) -> list[str]:
    """Real NCCL lines as another host would have written them (only the host field changes)."""
    return [host + line[line.index(":"):] for line in lines]


def write(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")


def torchrun_logdir(job: Path) -> tuple[str, list[str]]:
    """``torchrun --log-dir <host>/torchelastic``: hosts named only by the folders (no digit in them), run
    folders with torchelastic's random suffix, local-rank folders, and a stray file beside the nodes."""
    hosts = ["cpu-node-a", "cpu-node-b"]
    for n, (host, rand) in enumerate(zip(hosts, ["ikil2jrv", "a6dd32x0"], strict=True)):
        for lr in (0, 1):
            r = 2 * n + lr
            lines = [t.format(r=r, lr=lr) for t in TRAINER_OK]
            if host == "cpu-node-b" and lr == 1:
                lines += [t.format(r=r) for t in RAISES]
            write(job / host / "torchelastic" / f"ddp-exception-001_{rand}" / "attempt_0" / str(lr) / "stderr.log",
                  lines)
            (job / host / "torchelastic" / f"ddp-exception-001_{rand}" / "attempt_0" / str(lr) / "stdout.log"
             ).write_text("")
    write(job / "latin1.log", ["Gr\u00f6\u00dfe des Puffers: 3 \u00b5s"])
    return "cpu-node-b", hosts


def srun_merged(job: Path) -> tuple[str, list[str]]:
    """``srun --label`` output of every rank in one file; hosts only inside the lines."""
    lines = [f"{r}: {line}" for r, h in enumerate(["dgx01", "dgx01", "dgx02", "dgx02"])
             for line in host_lines(HEALTHY, h)]
    lines += [f"3: {line}" for line in host_lines(IB_FAULT, "dgx02")]
    lines += ["srun: error: dgx02: task 3: Exited with exit code 1"]
    write(job / "slurm-81234.out", lines)
    return "dgx02", ["dgx01", "dgx02"]


def per_rank_hosts_inside(job: Path) -> tuple[str, list[str]]:
    """One file per rank, named by rank only: the hosts are in the NCCL headers."""
    for r, h in enumerate(["gn-a17", "gn-a17", "gn-b04", "gn-b04"]):
        lines = host_lines(HEALTHY, h) + (host_lines(IB_FAULT, h) if r == 0 else [])
        write(job / f"rank-{r}.log", lines)
    return "gn-a17", ["gn-a17", "gn-b04"]


def kubernetes_pods(job: Path) -> tuple[str, list[str]]:
    """``kubectl logs`` of a PyTorchJob's pods (their host names are the pod names)."""
    pods = ["kp-ddp-master-0", "kp-ddp-worker-0", "kp-ddp-worker-1"]
    for pod in pods:
        lines = host_lines(HEALTHY, pod) + (IB_FAULT if pod == "kp-ddp-worker-0" else [])
        write(job / f"{pod}.log", lines)
    return "kp-ddp-worker-0", pods


def mpirun_tagged(job: Path) -> tuple[str, list[str]]:
    """``mpirun --tag-output``: every rank's lines in the launcher's output, tagged ``[job,rank]<stream>:``."""
    lines = [f"[1,{r}]<stdout>:{line}" for r, h in enumerate(["c3n01", "c3n02"]) for line in host_lines(HEALTHY, h)]
    lines += [f"[1,1]<stderr>:{line}" for line in host_lines(IB_FAULT, "c3n02")]
    write(job / "launcher" / "mpirun.log", lines)
    return "c3n02", ["c3n01", "c3n02"]


def mpirun_output_filename(job: Path) -> tuple[str, list[str]]:
    """``mpirun --output-filename out``: ``out/1/rank.N/stdout`` per rank, hosts only inside."""
    for r, h in enumerate(["c3n01", "c3n01", "c3n02", "c3n02"]):
        lines = host_lines(HEALTHY, h) + (host_lines(IB_FAULT, h) if r == 1 else [])
        write(job / "out" / "1" / f"rank.{r}" / "stdout", lines)
    return "c3n01", ["c3n01", "c3n02"]


def slurm_per_node(job: Path) -> tuple[str, list[str]]:
    """``#SBATCH --output=slurm-%j-%N.out``: one file per node, its name carrying the node."""
    for h in ("hpc-gpu-0007", "hpc-gpu-0012"):
        lines = host_lines(HEALTHY, h) + (host_lines(IB_FAULT, h) if h.endswith("12") else [])
        write(job / f"slurm-99417-{h}.out", lines)
    return "hpc-gpu-0012", ["hpc-gpu-0007", "hpc-gpu-0012"]


def elastic_summary_only(job: Path) -> tuple[str, list[str]]:
    """Files named by run and rank only; the faulty host is named only by torchelastic's failure summary."""
    host = "mlxlab115rp2n7682d40d9-20250521025625-6dyyd3-8nir8b-worker"
    write(job / "run-20250521" / "agent-0.log", SUMMARY)
    write(job / "run-20250521" / "agent-1.log", host_lines(HEALTHY, "mlxlab-other-worker"))
    return host, [host, "mlxlab-other-worker"]


def ray_driver_log(job: Path) -> tuple[str, list[str]]:
    """A Ray Train driver log: every worker's lines prefixed ``(RayTrainWorker pid=N, ip=IP)``."""
    lines = [f"(RayTrainWorker pid={4242 + r}, ip=10.0.0.{2 + r}) " + t.format(r=r, lr=0)
             for r in (0, 1) for t in TRAINER_OK]
    lines += ["(RayTrainWorker pid=4243, ip=10.0.0.3) " + t.format(r=1) for t in RAISES]
    write(job / "session_2026-12-03_14-36-00_123456_789" / "logs" / "job-driver-raysubmit_Xk2a.log", lines)
    return "10.0.0.3", ["10.0.0.2", "10.0.0.3"]


def skypilot_run_log(job: Path) -> tuple[str, list[str]]:
    """A SkyPilot multi-node run log: ``(head, rank=0, pid=N)`` and ``(worker1, rank=1, pid=N, ip=IP)``."""
    lines = [f"(worker{r}, rank={r}, pid={5100 + r}, ip=10.1.0.{7 + r}) " + t.format(r=r, lr=0)
             for r in (1, 2) for t in TRAINER_OK]
    lines += ["(worker2, rank=2, pid=5102, ip=10.1.0.9) " + t.format(r=2) for t in RAISES]
    write(job / "sky-2026-12-03-14-36-00-123456" / "tasks" / "run.log", lines)
    return "10.1.0.9", ["10.1.0.8", "10.1.0.9"]


LAYOUTS: dict[str, Callable[[Path], tuple[str, list[str]]]] = {
    "torchrun-logdir": torchrun_logdir, "srun-merged": srun_merged, "per-rank-hosts-inside": per_rank_hosts_inside,
    "kubernetes-pods": kubernetes_pods, "mpirun-tag-output": mpirun_tagged,
    "mpirun-output-filename": mpirun_output_filename, "slurm-per-node": slurm_per_node,
    "elastic-summary": elastic_summary_only, "ray-driver-log": ray_driver_log, "skypilot-run-log": skypilot_run_log,
}


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_layout_names_the_faulty_node_first_and_no_path_part_as_a_node(layout: str, tmp_path: Path) -> None:
    job = tmp_path / "job"
    faulty, hosts = LAYOUTS[layout](job)
    acc = Accounting()
    nodes = {r.node for r in iter_records([str(job)], IngestOptions(), acc)}
    assert nodes - {None} <= set(hosts), nodes
    incident = analyze([str(job)], AnalyzeOptions())
    suspects = [s.node for s in incident.suspects]
    assert suspects and suspects[0] == faulty, suspects
    assert set(suspects) <= set(hosts)


def test_torchrun_run_folders_and_stray_files_are_not_nodes(tmp_path: Path) -> None:
    torchrun_logdir(tmp_path)
    files = discover([str(tmp_path)], Accounting()).files
    ctx = build_context(files)
    assert {ctx.node_of(f.rel) for f in files} == {"cpu-node-a", "cpu-node-b", None}
    assert ctx.node_of("latin1.log") is None and ctx.depth == 0


def test_loopback_names_in_lines_are_not_hosts(tmp_path: Path) -> None:
    summary = [line.replace("mlxlab115rp2n7682d40d9-20250521025625-6dyyd3-8nir8b-worker", "localhost")
               for line in SUMMARY]
    write(tmp_path / "node-a" / "console.log", summary)
    write(tmp_path / "node-b" / "console.log", summary)
    files = discover([str(tmp_path)], Accounting()).files
    ctx = build_context(files)
    assert sorted(ctx.node_of(f.rel) or "" for f in files) == ["node-a", "node-b"] and not ctx.rank_ties


def test_context_is_plain_data(tmp_path: Path) -> None:
    kubernetes_pods(tmp_path)
    ctx = build_context(discover([str(tmp_path)], Accounting()).files)
    again = JobContext.from_dict(json.loads(json.dumps(ctx.to_dict())))
    assert again == ctx and again.node_of("kp-ddp-worker-1.log") == "kp-ddp-worker-1"


# ---------------------------------------------------------------------------------------------- time
FIXTURE_JOBS = sorted(p.parent for p in (ROOT / "fixtures").glob("*/*/ground_truth.json")
                      if p.parent.parent.name in ("suite", "jobs", "real_jobs"))


def verdict(job: Path) -> tuple:
    from l4lite.evaluate.scoreboard import job_paths

    inc = analyze(job_paths(job), AnalyzeOptions())
    return inc.status, inc.category, inc.phase, inc.failure_time, [s.node for s in inc.suspects[:1]]


def _with_2099_line(job: Path, dest: Path) -> Path:
    """A copy of ``job`` with one line dated 2099 at the start of one of its logs: the faulty node's kernel log
    if it has one (its times date the root cause), else another kernel log, else the first log."""
    shutil.copytree(job, dest)
    logs = sorted(p for p in dest.rglob("*") if p.is_file() and p.name != "ground_truth.json" and p.stat().st_size
                  and "_meta" not in p.parts)
    faulty = json.loads((dest / "ground_truth.json").read_text()).get("faulty_nodes") or [""]
    kernel = [p for p in logs if "kern" in p.name or "dmesg" in p.name or "kernel" in p.parts]
    target = next((p for p in kernel if faulty[0] in str(p.relative_to(dest))), (kernel or logs)[0])
    target.write_text("2099-06-01 00:00:00,000 clock jumped\n" + target.read_text())
    return dest


@pytest.mark.parametrize("job", FIXTURE_JOBS, ids=[p.name for p in FIXTURE_JOBS])
def test_one_line_dated_2099_changes_no_verdict(job: Path, tmp_path: Path) -> None:
    assert verdict(_with_2099_line(job, tmp_path / job.name)) == verdict(job)


def test_year_and_span_follow_most_files_not_one_line(tmp_path: Path) -> None:
    write(tmp_path / "n1" / "kern.log", ["2099-06-01T00:00:00.000000+00:00 n1 kernel: clock jumped",
                                         *REAL["pcluster-2701-fsx-lustre-network-error-after-oom"]["lines"]])
    for n in ("n1", "n2"):
        write(tmp_path / n / "train.log", [f"[2021-04-30 14:4{i}:00,000] INFO step {i}" for i in range(5)])
    files = discover([str(tmp_path)], Accounting()).files
    ctx = build_context(files)
    # from the first trainer line to the last kernel line; not to 2099
    assert ctx.year == 2021 and ctx.end is not None and ctx.end - ctx.start == 584
    recs = list(iter_records([str(tmp_path)], IngestOptions(), Accounting()))
    lustre = [r for r in recs if "Lustre" in r.text]
    assert lustre and all(r.time is not None and time.gmtime(r.time).tm_year == 2021 for r in lustre)


# ---------------------------------------------------------------------------------------------- entry points
def _entry_job(job: Path) -> None:
    """The torchrun layout plus a node whose plain dmesg capture carries only uptimes, anchored by its kern.log
    (real lines: fixtures/real/real-failures.jsonl), and enough trainer lines for the parallel scan to cut."""
    torchrun_logdir(job)
    write(job / "cpu-node-a" / "dmesg.txt", REAL["nvsentinel-155-fallen-off-bus-no-xid"]["lines"])
    write(job / "cpu-node-a" / "kern.log", [line.replace("ip-10-0-33-4", "cpu-node-a") for line in
                                            REAL["pcluster-2701-fsx-lustre-network-error-after-oom"]["lines"]])
    steps = [f"2026-12-03 14:36:{22 + i // 100:02d},{i % 100:03d} INFO [rank0] step {i}/40 | loss 3.5 | lr 3.00e-03"
             for i in range(3000)]
    write(job / "cpu-node-a" / "torchelastic" / "ddp-exception-001_ikil2jrv" / "attempt_0" / "0" / "stderr.log",
          steps)


def _rows(records) -> list[tuple]:
    return sorted((r.file, r.line, r.node, r.rank, None if r.time is None else round(r.time, 3)) for r in records)


def _parse_rows(job: Path, out: Path, jobs: str) -> list[tuple]:
    from datetime import datetime

    from l4lite.cli.main import main

    assert main(["parse", str(job), "-o", str(out), "--quiet", "--jobs", jobs]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    return sorted((r["file"], r["line"], r["node"], r["rank"],
                   None if r["time"] is None else round(datetime.fromisoformat(r["time"]).timestamp(), 3))
                  for r in rows)


def test_every_entry_point_reads_the_job_alike(tmp_path: Path) -> None:
    from l4lite.live.reader import default_reader_factory
    from l4lite.scale.engine import PoolEngine, scan_job_parallel
    from l4lite.scan.job import scan_job

    job = tmp_path / "job"
    _entry_job(job)
    files = discover([str(job)], Accounting()).files
    expected = _rows(iter_records([str(job)], IngestOptions(), Accounting()))
    assert {row[2] for row in expected} == {"cpu-node-a", "cpu-node-b", None}
    anchored = [row for row in expected if row[0] == "cpu-node-a/dmesg.txt"]
    assert anchored and all(row[4] is not None for row in anchored)  # the kern.log's boot anchor dates the dmesg
    assert _parse_rows(job, tmp_path / "one.jsonl", "1") == expected
    assert _parse_rows(job, tmp_path / "two.jsonl", "2") == expected
    make = default_reader_factory(str(job), paths=[f.path for f in files])
    live = []
    for f in files:
        reader = make(f.rel)
        for i, text in enumerate(Path(f.path).read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            live.extend(reader.feed(i, text))
        live.extend(reader.flush())
    assert _rows(live) == expected
    one = scan_job([str(job)], AnalyzeOptions())
    with PoolEngine(2) as engine:
        sharded = scan_job_parallel([str(job)], AnalyzeOptions(), engine=engine)
    assert sharded.info["shards"] >= 2
    for scan in (one, sharded):
        assert (scan.node_first, scan.node_last, scan.rank_nodes, scan.start_time, scan.end_time) == \
            (one.node_first, one.node_last, one.rank_nodes, one.start_time, one.end_time)
        assert scan.info["job_span"] == one.info["job_span"] and scan.info["node_layout"] == one.info["node_layout"]
    assert set(one.node_last) >= {"cpu-node-a", "cpu-node-b"} and not set(one.node_last) - {
        "cpu-node-a", "cpu-node-b", "unknown"}


def test_lines_of_no_known_node_blame_no_node(tmp_path: Path) -> None:
    write(tmp_path / "train.log", REAL["nematus-8-nfs-ioerror-on-save"]["lines"])
    incident = analyze([str(tmp_path)], AnalyzeOptions())
    assert incident.status == "incident" and "unknown" not in [s.node for s in incident.suspects]
