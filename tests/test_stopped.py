"""A launcher stopped from outside ("Received 15 death signal"): the node taken away when the stop came before
any other failure of the job, the job's teardown when it came after one."""

from __future__ import annotations

from pathlib import Path

from l4lite.api import analyze
from l4lite.options import AnalyzeOptions

AGENT = "W1206 10:{t} 5215 torch/distributed/elastic/{where}] "
TRAIN = "[default0]:2026-12-06 10:{t},000 INFO [rank{r}] step {s}/40 | epoch 0 | loss 3.{s:02d} | lr 3.00e-03"
LOST = ("[default0]:[rank{r}]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] "
        "Connection closed by peer [10.0.0.2]:28862. This is typically caused by a remote worker crashing.")
TIMED_OUT = ("[default0]:[rank{r}]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] "
             "Timed out waiting 30000ms for recv operation to complete")
FAILED = "failed (exitcode: 1) local_rank: 0 (pid: 4711) of binary: /usr/bin/python3"
STOP = "Received 15 death signal, shutting down workers"


def _write(root: Path, node: str, lines: list[str]) -> None:
    (root / node).mkdir(parents=True)
    (root / node / "console.log").write_text("\n".join(lines) + "\n")


def _steps(rank: int, upto: int) -> list[str]:
    return [TRAIN.format(t=f"00:{s:02d}", r=rank, s=s) for s in range(1, upto + 1)]


def _agent(t: str, where: str, text: str) -> str:
    return AGENT.format(t=t, where=where) + text


def test_a_node_stopped_from_outside_while_the_other_trained_is_the_root(tmp_path: Path) -> None:
    """node-b's launcher is signalled at step 12; node-a's rank then loses its peer: node-b was taken away."""
    _write(tmp_path, "node-a", _steps(0, 12) + [
        LOST.format(r=0),
        _agent("00:13.100000", "agent/server/api.py:900", FAILED)])
    _write(tmp_path, "node-b", _steps(2, 12) + [
        _agent("00:12.500000", "agent/server/api.py:753", STOP),
        _agent("00:12.510000", "multiprocessing/api.py:1028", "Sending process 4801 closing signal SIGTERM")])
    incident = analyze(tmp_path, AnalyzeOptions(store=None))
    assert incident.status == "incident" and incident.category == "host", incident.summary
    assert incident.suspects[0].node == "node-b"
    assert any(e.role == "root" and STOP in e.text for e in incident.evidence)


def test_a_stop_after_the_job_already_failed_is_its_teardown(tmp_path: Path) -> None:
    """Every rank of node-a timed out and its agent failed; 40 s later the scheduler stops node-b's launcher:
    the stop is a consequence, not a host taken away."""
    _write(tmp_path, "node-a", _steps(0, 12) + [
        TIMED_OUT.format(r=0), _agent("00:43.000000", "agent/server/api.py:900", FAILED)])
    _write(tmp_path, "node-b", _steps(2, 12) + [
        _agent("01:23.000000", "agent/server/api.py:753", STOP),
        _agent("01:23.010000", "multiprocessing/api.py:1028", "Sending process 4801 closing signal SIGTERM")])
    incident = analyze(tmp_path, AnalyzeOptions(store=None))
    assert incident.status == "incident"
    assert incident.category != "host", incident.summary


JOB_161 = Path(__file__).resolve().parent.parent / "fixtures" / "real_jobs" / "161-lightning-preempt"


def test_a_stopped_node_no_line_names_is_blamed_on_no_other_node(tmp_path: Path) -> None:
    """Job 161 with its node folders renamed ``attempt_0`` and ``attempt_1``: only the surviving node's lines
    name a host (trn-sjc2-r08-n3); the preempted node's stop is still the root, and the node that only lost it
    is not the suspect (its agent's report of its own failed rank came 2.6 s after the stop)."""
    import shutil

    shutil.copytree(JOB_161 / "trn-sjc2-r08-n3", tmp_path / "attempt_0")
    shutil.copytree(JOB_161 / "trn-sjc2-r08-n4", tmp_path / "attempt_1")
    incident = analyze(tmp_path, AnalyzeOptions(store=None))
    assert incident.status == "incident" and incident.category == "host", incident.summary
    roots = [e for e in incident.evidence if e.role == "root"]
    assert roots and all(e.file == "attempt_1/console.log" and STOP in e.text for e in roots)
    assert not incident.suspects or incident.suspects[0].node != "trn-sjc2-r08-n3"


def test_the_same_file_of_another_node_reads_alike() -> None:
    from l4lite.diagnose.siblings import file_shape

    assert file_shape("part-0002/console.log") == file_shape("part-0001/console.log")
    assert file_shape("logs/007-console.log") == file_shape("logs/000-console.log")
    assert file_shape("train-4242-1.out") == file_shape("train-4242-0.out")
    assert file_shape("attempt_1/console.log") != file_shape("attempt_1/dmesg.log")



LIMIT = "slurmstepd: error: *** STEP 4242.0 ON {node} CANCELLED AT 2026-12-06T10:00:15 DUE TO TIME LIMIT ***"


def _time_limit_job(root: Path, said_after: int) -> None:
    """Both nodes' launchers signalled after step 15; the Slurm step's lines saying why come after step
    ``said_after`` of the merged output (their time is that step's line's: slurmstepd's line has no header)."""
    lines = []
    for s in range(1, 16):
        lines += [f"{task}: " + TRAIN.format(t=f"00:{s:02d}", r=2 * task, s=s) for task in (0, 1)]
        if s == said_after:
            lines += [LIMIT.format(node="node-a"), LIMIT.format(node="node-b")]
    for task in (0, 1):
        lines.append(f"{task}: " + _agent("00:15.200000", "agent/server/api.py:753", STOP))
    (root / "slurm-4242.out").write_text("\n".join(lines) + "\n")


def test_a_stop_the_scheduler_says_was_its_time_limit_is_the_jobs_limit(tmp_path: Path) -> None:
    """Slurm ends the job step at its time limit: every launcher is signalled as slurmstepd writes why. The stop
    is the job's own limit (its configuration), no node taken away, and the scheduler's line proves it."""
    _time_limit_job(tmp_path, 15)
    incident = analyze(tmp_path, AnalyzeOptions(store=None))
    assert incident.status == "incident" and incident.category == "user_config", incident.summary
    assert not incident.suspects
    assert any(e.role == "root" and "DUE TO TIME LIMIT" in e.text for e in incident.evidence)


def test_a_time_limit_line_far_from_the_stop_does_not_explain_it(tmp_path: Path) -> None:
    """The same lines written ten steps (seconds) before the launchers' stop: they say nothing of the stop."""
    _time_limit_job(tmp_path, 5)
    incident = analyze(tmp_path, AnalyzeOptions(store=None))
    assert incident.category != "user_config", incident.summary


def _stalled_job(root: Path, quiet: int) -> None:
    """Every rank logs its steps; rank 2 (task 1) stops after step 12, its peers log step 13 and wait; ``quiet``
    seconds after step 13 Slurm ends the step at its time limit (its lines have no header: they take the last
    stamp above them) and both launchers are signalled."""
    lines = []
    for s in range(1, 14):
        for task in (0, 1):
            for r in (2 * task, 2 * task + 1):
                if r != 2 or s < 13:
                    lines.append(f"{task}: " + TRAIN.format(t=f"00:{s:02d}", r=r, s=s))
    lines += [LIMIT.format(node="node-a"), LIMIT.format(node="node-b")]
    stop = 13 + quiet
    for task in (0, 1):
        lines.append(f"{task}: " + _agent(f"{stop // 60:02d}:{stop % 60:02d}.200000", "agent/server/api.py:753", STOP))
    lines += ["srun: error: node-a: task 0: Exited with exit code 1", "srun: error: node-b: task 1: Exited with exit code 1"]
    (root / "slurm-4242.out").write_text("\n".join(lines) + "\n")


def test_a_time_limit_after_a_rank_stopped_making_progress_is_the_hangs_consequence(tmp_path: Path) -> None:
    """Rank 2 stopped after step 12 while its peers logged step 13, then nothing for 40 s until the time limit:
    the job had hung before its limit; the stuck rank's node is the fault and its last progress line the proof."""
    _stalled_job(tmp_path, 40)
    incident = analyze(tmp_path, AnalyzeOptions(store=None))
    assert incident.status == "incident" and incident.category == "software", incident.summary
    assert incident.suspects and incident.suspects[0].node == "node-b", incident.suspects
    assert any(e.role == "root" and "[rank2] step 12/40" in e.text for e in incident.evidence)
    assert not any(e.role == "root" and "DUE TO TIME LIMIT" in e.text for e in incident.evidence)
    # the summary still tells the engineer that the limit ended the job, and when the scheduler says it did
    assert "afterwards the scheduler ended the job at its time limit" in incident.summary, incident.summary


def test_a_time_limit_right_after_the_last_steps_is_still_the_limit(tmp_path: Path) -> None:
    """The same lines with the limit a moment after step 13: one rank a step behind at a stop is no hang."""
    _stalled_job(tmp_path, 0)
    incident = analyze(tmp_path, AnalyzeOptions(store=None))
    assert incident.status == "incident" and incident.category == "user_config", incident.summary
    assert not incident.suspects
