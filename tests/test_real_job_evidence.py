"""Root evidence on real torchrun jobs (fixtures/real_jobs). A stuck rank of a hang prints nothing, so what
proves it is its agent's SIGTERM of its pid while it was still busy and the timeouts of the ranks that waited
for it on its own node; the traceback it prints as the signal tears it down is not why it stopped."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from l4lite import analyze
from l4lite.detect.base import Finding
from l4lite.diagnose.assemble import (
    after_destructors,
    quoting_reports,
    rewrapped_tracebacks,
    whole_tracebacks,
)
from l4lite.diagnose.incident import Evidence
from l4lite.diagnose.killreport import kill_report
from l4lite.evaluate.scoreboard import job_paths
from l4lite.records import Record

REAL = Path(__file__).resolve().parent.parent / "fixtures" / "real_jobs"


def _analyze(job: Path) -> dict[str, Any]:
    return analyze(job_paths(job)).to_dict()


def _roots(inc: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in inc["evidence"] if e["role"] == "root"]


def _line(job: Path, file: str, n: int) -> str:
    return (job / file).read_text(errors="replace").splitlines()[n - 1]


def test_the_agents_sigterm_of_the_stuck_pid_and_its_node_mates_timeouts_are_the_root() -> None:
    job = REAL / "024-ddp-hang"  # rank 0 (pid 838) on compute-alpha stuck; rank 1 beside it timed out
    inc = _analyze(job)
    roots = _roots(inc)
    assert inc["suspects"][0]["node"] == "compute-alpha" and inc["phase"] == "train"
    assert all(e["node"] == "compute-alpha" for e in roots)
    texts = [_line(job, e["file"], e["line"]) for e in roots]
    assert any("Sending process 838 closing signal SIGTERM" in t for t in texts)
    ends = [_line(job, e["file"], e["end_line"]) for e in roots if e["end_line"] > e["line"]]
    assert ends and all("Timed out waiting" in t for t in ends)  # the whole traceback, down to its exception
    assert not any("FAILED" in (e.get("text") or "")[:200] for e in roots)  # the launcher's report is no root


def test_a_stuck_rank_killed_while_busy_keeps_the_software_category_without_other_lines() -> None:
    inc = _analyze(REAL / "003-ddp-hang")  # its node-mate saw a closed connection: only the SIGTERM line is left
    roots = _roots(inc)
    assert inc["category"] == "software" and len(roots) == 1
    assert "Sending process 19644 closing signal SIGTERM" in roots[0]["text"]


def test_the_same_pid_signalled_on_another_host_is_not_the_stuck_ranks(tmp_path: Path) -> None:
    """Pids repeat across hosts: only the stuck rank's own node's SIGTERM line of that pid counts."""
    job = tmp_path / "job"
    shutil.copytree(REAL / "003-ddp-hang", job)
    other = job / "llm-pretrain-7f9c4-worker-0" / "console.log"
    lines = other.read_text().splitlines(keepends=True)
    lines.insert(66, "W1203 14:40:04.300000 19408 torch/distributed/elastic/multiprocessing/api.py:1028] "
                     "Sending process 19644 closing signal SIGTERM\n")
    other.write_text("".join(lines))
    roots = _roots(_analyze(job))
    assert [(e["node"], e["line"]) for e in roots] == [("llm-pretrain-7f9c4-worker-1", 23)]


def test_the_traceback_a_stuck_rank_prints_as_it_is_killed_is_not_its_root() -> None:
    """Lightning's stuck rank prints a traceback ending in a closed connection after its agent's SIGTERM; read
    as the root it put the failure at start-up (its C++ frames are the store's)."""
    job = REAL / "019-lightning-hang"
    inc = _analyze(job)
    assert inc["phase"] == "train" and inc["category"] == "software"
    kill = next(i for i, t in enumerate((job / "a100-rack2-15" / "console.log").read_text().splitlines(), 1)
                if "Sending process 24629 closing signal SIGTERM" in t)
    assert not any(e["file"].endswith("console.log") and e["line"] > kill for e in _roots(inc))


def test_a_flight_recorder_verdict_shows_the_log_lines_that_agree_with_it() -> None:
    job = REAL / "026-ddp-hang_fr"
    roots = _roots(_analyze(job))
    assert any(e["file"].endswith("fr_trace_3") for e in roots)  # the dump says which collective it missed
    assert any("Sending process 3580 closing signal SIGTERM" in e["text"] for e in roots)


def test_a_raising_workers_traceback_is_its_root_and_its_exit_line_only_confirms_it() -> None:
    """A worker that raised told its failure itself: the whole traceback, down to its exception line, is root;
    the launcher's exit line of that worker confirms it and is no root line of its own."""
    job = REAL / "001-ddp-exception"  # rank 3 (local rank 1, pid 16470) on a100-rack2-15 raised
    inc = _analyze(job)
    roots = _roots(inc)
    assert roots and all(e["node"] == "a100-rack2-15" for e in roots)
    assert any("RuntimeError: shape mismatch" in _line(job, e["file"], e["end_line"]) for e in roots)
    assert not any("failed (exitcode:" in e["text"] for e in roots)
    assert any("(pid: 16470)" in e["text"] and e["role"] != "root" for e in inc["evidence"])


def test_a_killed_workers_exit_line_and_the_report_naming_its_signal_are_root_together() -> None:
    """A SIGKILLed worker leaves no traceback: its exit line (code -9) and the launcher report whose first failure
    is that signal are the whole event; the report is not dropped as a cascade for the peers it also lists.
    The exit line of a peer its agent stopped with SIGTERM is not root."""
    job = REAL / "018-lightning-sigkill"
    roots = _roots(_analyze(job))
    assert any("failed (exitcode: -9)" in e["text"] for e in roots)
    assert not any("failed (exitcode: 1)" in e["text"] or "exitcode: -15" in e["text"][:300] for e in roots)
    assert any(e["line"] <= 191 <= e["end_line"] and e["file"].endswith("console.log") for e in roots)


def test_a_job_wide_error_is_shown_in_every_file_it_was_written_to() -> None:
    """Every rank failed reading the same truncated checkpoint: the lowest ranks' copies are shown in the
    launcher's console, in each rank's stderr.log and in the error.json files, once per rank and file."""
    inc = _analyze(REAL / "006-ddp-corrupt_ckpt")
    roots = _roots(inc)
    assert inc["scope"] == "global" and inc["category"] == "storage"
    kinds = {e["file"].rsplit("/", 1)[-1] for e in roots}
    assert {"console.log", "stderr.log", "error.json"} <= kinds
    per = [(e["file"], e.get("rank")) for e in roots]
    assert len(per) == len(set(per)) and len(roots) <= 10


def _ev(line: int, text: str, end: int | None = None, rank: int | None = 0, file: str = "n1/console.log",
        role: str = "root") -> Evidence:
    return Evidence(file=file, line=line, node="n1", rank=rank, time=None, text=text, template_id="t", rule=None,
                    role=role, score=1.0, end_line=end)


FRAME_A = '[default0]:[rank0]:   File "/opt/x/model_checkpoint.py", line 600, in _save_checkpoint'
FRAME_B = '[default0]:[rank0]:   File "/opt/x/trainer.py", line 1464, in save_checkpoint'
RAISED = "[default0]:[rank0]: OSError: [Errno 28] No space left on device: '/ckpt/epoch=0-step=20.ckpt'"


def test_frames_shown_apart_from_their_exception_line_become_one_traceback_entry() -> None:
    out = whole_tracebacks([_ev(113, FRAME_A), _ev(140, RAISED), _ev(115, FRAME_B)])
    assert [(e.line, e.end_line, e.text) for e in out] == [(113, 140, RAISED)]


def test_frames_after_an_srun_label_become_one_traceback_entry_too() -> None:
    # ``srun --label torchrun``: one stream per node, each line after its task's label
    out = whole_tracebacks([_ev(113, "0: " + FRAME_A), _ev(140, "0: " + RAISED), _ev(115, "0: " + FRAME_B)])
    assert [(e.line, e.end_line) for e in out] == [(113, 140)]


def test_frames_after_a_kubectl_pod_prefix_become_one_traceback_entry_too() -> None:
    # ``kubectl logs --prefix``: every pod's lines in one stream, each after ``[pod/NAME/CONTAINER] ``
    pod = "[pod/train-worker-0/pytorch] "
    out = whole_tracebacks([_ev(113, pod + FRAME_A), _ev(140, pod + RAISED), _ev(115, pod + FRAME_B)])
    assert [(e.line, e.end_line) for e in out] == [(113, 140)]


def test_frames_of_another_rank_or_file_or_too_far_above_stay_apart() -> None:
    entries = [_ev(113, FRAME_A, rank=1), _ev(114, FRAME_B, file="n1/other.log"), _ev(20, FRAME_B),
               _ev(140, RAISED), _ev(120, FRAME_A, role="cascade")]
    out = whole_tracebacks(entries)
    assert [(e.file, e.line, e.end_line) for e in out] == [("n1/console.log", 113, None), ("n1/other.log", 114, None),
                                                          ("n1/console.log", 20, None), ("n1/console.log", 140, None),
                                                          ("n1/console.log", 120, None)]


def test_a_worker_that_ignored_sigterm_is_told_by_that_signal_and_its_forced_kill_alone() -> None:
    """Rank 1 (pid 6378) was stopped: the agent's SIGTERM of it and the forced kill that followed are one event;
    the exit line of rank 0 (pid 6377), which timed out waiting for it, is not this worker's."""
    job = REAL / "041-ddp-sigstop"
    roots = _roots(_analyze(job))
    texts = sorted(_line(job, e["file"], e["line"]) for e in roots)
    assert len(texts) == 2 and all(e["node"] == "dgx-b200-03" for e in roots)
    assert "Sending process 6378 closing signal SIGTERM" in texts[0] and "Unable to shutdown process 6378" in texts[1]


def test_a_restarted_worker_groups_failure_does_not_hide_the_first_attempts_error() -> None:
    """079: rank 2 on node0422 raises in attempt_0; torchrun restarts both nodes' workers (--max-restarts 1) and
    node0421's new workers fail connecting to peers still being torn down (Gloo connectFullMesh failed)."""
    job = REAL / "079-ddp-restart"
    inc = _analyze(job)
    roots = _roots(inc)
    assert inc["suspects"][0]["node"] == "node0422"
    assert (inc["category"], inc["phase"]) == ("software", "train")
    assert roots and all(e["node"] == "node0422" and "attempt_1" not in e["file"] for e in roots)
    assert any("shape mismatch" in _line(job, e["file"], e["end_line"] or e["line"]) for e in roots)


def test_an_untimed_traceback_teed_below_the_loss_lines_is_in_training() -> None:
    """081: Fabric logs its loss with print (no time stamp); the failing rank's stderr.log copy of its traceback
    inherits its start-up line's time, its console copy sits below the training lines."""
    inc = _analyze(REAL / "081-fabric-exception")
    assert (inc["suspects"][0]["node"], inc["phase"], inc["category"]) == ("gpu-node-07", "train", "software")


def test_a_gloo_interface_missing_on_a_node_is_a_configuration_fault() -> None:
    inc = _analyze(REAL / "083-ddp-bad_env")  # GLOO_SOCKET_IFNAME=ib0 on cpu-node-b only
    assert (inc["category"], inc["phase"]) == ("user_config", "init")
    assert all(e["node"] == "cpu-node-b" for e in _roots(inc))


def test_the_odd_rank_of_a_check_every_rank_failed_is_the_root_and_its_peers_confirm() -> None:
    # DDP's parameter check fails on every rank; the ranks holding the common model all name rank 3 as the one
    # that differs: its own copies are the root, first; the copies of the ranks that named it confirm
    job = REAL / "153-lightning-layer_mismatch"
    inc = _analyze(job)
    roots = _roots(inc)
    assert inc["suspects"][0]["node"] == "gpu-node-12"
    assert roots and {e["rank"] for e in roots} == {3} and inc["evidence"][0]["role"] == "root"
    assert all("Rank 3 has 40 params" in _line(job, e["file"], e["end_line"]) for e in roots)
    peers = [e for e in inc["evidence"] if e["role"] == "confirmation" and e["rank"] in (0, 1)]
    assert peers and all(e["node"] == "gpu-node-07" for e in peers)


def test_the_odd_rank_beside_a_rank_that_named_it_on_one_node() -> None:
    job = REAL / "146-ddp-layer_mismatch"  # rank 1 differs; rank 0 on the same node named it
    roots = _roots(_analyze(job))
    assert roots and {e["rank"] for e in roots} == {1}


def test_a_reraise_of_a_workers_error_and_the_workers_traceback_below_it_are_one_entry() -> None:
    outer = "[rank3]: Traceback (most recent call last):\n[rank3]:   File \"train.py\", line 55, in main\n" \
            "[rank3]: RuntimeError: Caught JSONDecodeError in DataLoader worker process 1."
    inner = "[rank3]: json.decoder.JSONDecodeError: Expecting ',' delimiter: line 1 column 26 (char 25)"
    other = "[rank3]: ValueError: something else"
    out = rewrapped_tracebacks([_ev(9, outer, 32, rank=3), _ev(57, inner, 57, rank=3), _ev(70, other, 70, rank=3)])
    assert [(e.line, e.end_line) for e in out] == [(9, 57), (70, 70)]
    # not without the re-raise's words, nor across ranks
    plain = outer.replace("Caught JSONDecodeError in DataLoader worker process 1.", "bad input")
    assert len(rewrapped_tracebacks([_ev(9, plain, 32, rank=3), _ev(57, inner, 57, rank=3)])) == 2
    assert len(rewrapped_tracebacks([_ev(9, outer, 32, rank=2), _ev(57, inner, 57, rank=3)])) == 2


def test_a_report_of_every_ranks_failure_and_the_first_rank_it_quotes_are_one_entry() -> None:
    report = "[rank0]: Traceback (most recent call last):\n[rank0]:   File \"train.py\", line 9, in main\n" \
             "[rank0]: torch.distributed.checkpoint.api.CheckpointException: CheckpointException ranks:dict_keys([0, 1])"
    quote0 = "[rank0]: Traceback (most recent call last): (RANK 0)\n[rank0]: OSError: [Errno 30] Read-only file system"
    quote1 = "[rank0]: Traceback (most recent call last): (RANK 1)\n[rank0]: OSError: [Errno 30] Read-only file system"
    out = quoting_reports([_ev(28, report, 52), _ev(53, quote0, 79), _ev(80, quote1, 106)])
    assert [(e.line, e.end_line) for e in out] == [(28, 79), (80, 106)]  # each quote keeps its own entry
    # not a report whose next root starts further down, nor one of another rank, nor a quote's own error
    assert len(quoting_reports([_ev(28, report, 52), _ev(60, quote0, 79)])) == 2
    assert len(quoting_reports([_ev(28, report, 52, rank=1), _ev(53, quote0, 79)])) == 2
    plain = report.replace("CheckpointException", "OSError")
    assert len(quoting_reports([_ev(28, plain, 52), _ev(53, "[rank0]: OSError: [Errno 30]", 53)])) == 2


def test_the_checkpoint_report_of_a_read_only_mount_shows_the_ranks_os_errors() -> None:
    """175: dcp.save fails on a read-only mount; each rank raises CheckpointException and quotes both ranks'
    OSError below it: no root entry ends at the report's line without the OSError it quotes."""
    job = REAL / "175-fsdp-erofs"
    roots = _roots(_analyze(job))
    assert roots and all("Read-only file system" in _line(job, e["file"], e["end_line"]) for e in roots)


def test_a_destructors_ignored_error_after_the_failure_is_not_root() -> None:
    failure = "[rank2]: Traceback (most recent call last):\n[rank2]: ValueError: buffer is smaller than requested size"
    ignored = "Traceback (most recent call last):\n  File \"/x/indexed_dataset.py\", line 780, in __del__\n" \
              "    del self.index\nAttributeError: 'IndexedDataset' object has no attribute 'index'"
    out = after_destructors([_ev(9, failure, 28), _ev(30, ignored, 34)])
    assert [e.role for e in out] == ["root", "cascade"]
    assert [e.role for e in after_destructors([_ev(30, ignored, 34)])] == ["root"]  # alone, it is what there is
    called = ignored.replace("in __del__", "in close")
    assert [e.role for e in after_destructors([_ev(9, failure, 28), _ev(30, called, 34)])] == ["root", "root"]


def test_a_cut_index_files_error_is_root_not_the_destructor_after_it() -> None:
    job = REAL / "184-megatron-idx_truncated"  # ValueError opening the .idx, then IndexedDataset.__del__ fails
    roots = _roots(_analyze(job))
    assert roots and all("buffer is smaller than requested size" in _line(job, e["file"], e["end_line"])
                         for e in roots)
    # both ranks that failed are shown: the destructor's unlabelled lines do not take a failed rank's place
    assert {e["rank"] for e in roots} == {2, 3}


def test_a_warning_retried_on_every_attempt_is_one_root_entry_with_its_count() -> None:
    job = REAL / "142-ddp-no_master_host"  # node0422 cannot resolve the endpoint and warns on each of 10 retries
    roots = _roots(_analyze(job))
    assert len(roots) == 1 and roots[0]["line"] == 5 and roots[0]["count"] >= 10


def test_the_kernels_oom_kill_and_the_launchers_report_of_that_pid_are_root_together() -> None:
    """The kernel names the process it killed, the launcher which rank's worker that was: its exit line (-9) and
    its summary's signal line for the same pid are root beside the kill, each one line; the exit line of a peer
    on the other node that only lost its connection is not."""
    job = REAL / "217-ignite-host_oom_srun"  # rank 2 (pid 20568) on a100-rack2-15 killed by the memcg OOM killer
    roots = _roots(_analyze(job))
    where = {(e["file"], e["line"], e["end_line"]) for e in roots}
    assert ("a100-rack2-15/kern.log", 82, 82) in where
    assert ("slurm-4317.out", 147, 147) in where  # failed (exitcode: -9) local_rank: 0 (pid: 20568)
    assert ("slurm-4317.out", 184, 184) in where  # traceback : Signal 9 (SIGKILL) received by PID 20568
    assert not any("failed (exitcode: 1)" in e["text"] for e in roots)


def test_a_launcher_report_of_another_pid_is_not_tied_to_the_kill() -> None:
    """Only the pid the kernel killed ties a launcher line to the kill: a report of another worker, or lines
    cut from a record whose line numbers cannot be placed, stay out."""
    def rec(line: int, text: str, source: str = "launcher") -> Record:
        n = text.count("\n")
        return Record(file="n/console.log", line=line, end_line=line + n, node="n", rank=None, gpu=None,
                      source=source, time=1.0, level=None, message=text, text=text)

    kill = Finding("rules", "host", "root", 1.0, "", node="n",
                   records=[rec(5, "Out of memory: Killed process 4711 (python)", "kernel")])
    report = "  exitcode  : -9 (pid: 4711)\n  error_file: <N/A>\n  traceback : Signal 9 (SIGKILL) received by PID 4711"
    other = Finding("rules", "software", "symptom", 0.5, "", node="n", records=[
        rec(10, "E1 api.py:1] failed (exitcode: -9) local_rank: 1 (pid: 4712) of binary: python"),
        rec(11, "E1 api.py:1] failed (exitcode: -9) local_rank: 0 (pid: 4711) of binary: python"),
        rec(20, report)])
    got = kill_report([kill, other], kill)
    assert got is not None and got.role == "root"
    assert [(r.line, r.end_line) for r in got.records] == [(11, 11), (22, 22)]
    assert got.records[1].text.strip().startswith("traceback : Signal 9")
    elsewhere = Finding("rules", "software", "symptom", 0.5, "", node="m", records=[rec(11, other.records[1].text)])
    assert kill_report([kill, elsewhere], kill) is None
    # a blank line left out of a block's text: its last lines are placed from its end, a line higher up not at all
    gap = rec(30, "  exitcode  : -9 (pid: 4711)\n  traceback : Signal 9 (SIGKILL) received by PID 4711\n" + "=" * 20)
    gap.end_line += 1
    assert [r.line for r in kill_report([kill, Finding("rules", "host", "symptom", 0.5, "", node="n",
                                                       records=[gap])], kill).records] == [32]
    high = rec(40, "  traceback : Signal 9 (SIGKILL) received by PID 4711\n" + "-" * 20 + "\n" + "=" * 20)
    high.end_line += 1
    assert kill_report([kill, Finding("rules", "host", "symptom", 0.5, "", node="n", records=[high])], kill) is None
