"""A worker group torchelastic restarted (``--max-restarts``): the first attempt's failure is the root, the
restarted group's failure to connect to peers still being torn down is its cascade (diagnose.restarts)."""

from __future__ import annotations

from l4lite.detect.base import Finding
from l4lite.diagnose.restarts import restart_time, restarted_roots
from l4lite.records import Record
from l4lite.scan.scanner import JobScan

STAMP = "E1205 05:32:{:02d}.000000 426 api.py:1002] "
T0 = 1796448720.0  # 2026-12-05 05:32:00 UTC


def _root(file: str, second: int, text: str, node: str) -> Finding:
    r = Record(file=file, line=5, end_line=5, node=node, rank=None, gpu=None, source="trainer", time=T0 + second,
               level="error", message=text, text=STAMP.format(second) + text)
    return Finding("rules", "software", "root", 0.3, text, node=node, time=T0 + second, records=[r])


def test_a_restarted_groups_failure_after_the_first_attempts_is_a_cascade() -> None:
    first = _root("n2/torchelastic/run_x/attempt_0/0/stderr.log", 29, "RuntimeError: shape mismatch", "n2")
    again = _root("n1/torchelastic/run_y/attempt_1/0/stderr.log", 33, "Gloo connectFullMesh failed", "n1")
    teed = _root("n1/console.log", 40, "Gloo connectFullMesh failed", "n1")  # a console copy, placed by time
    findings = [first, again, teed]
    roles = {id(f): "root" for f in findings}
    assert restart_time(JobScan(), findings) == T0 + 33
    assert restarted_roots(JobScan(), findings, roles) == [again, teed]
    assert roles[id(first)] == "root" and roles[id(again)] == roles[id(teed)] == "cascade"
    assert again.data["restarted"]


def test_without_an_earlier_root_the_restarted_groups_failure_stays_the_root() -> None:
    # the first attempt failed of something no rule calls a root: the later failure is all the job says
    again = _root("n1/torchelastic/run_y/attempt_1/0/stderr.log", 33, "Gloo connectFullMesh failed", "n1")
    roles = {id(again): "root"}
    assert restarted_roots(JobScan(), [again], roles) == [] and roles[id(again)] == "root"


def test_a_job_that_never_restarted_is_left_alone() -> None:
    a = _root("n2/torchelastic/run_x/attempt_0/0/stderr.log", 29, "RuntimeError: shape mismatch", "n2")
    b = _root("n1/console.log", 40, "Gloo connectFullMesh failed", "n1")
    roles = {id(a): "root", id(b): "root"}
    assert restart_time(JobScan(), [a, b]) is None
    assert restarted_roots(JobScan(), [a, b], roles) == [] and roles[id(b)] == "root"


def test_a_folder_named_attempt_above_the_run_is_no_restart() -> None:
    # an archive whose node folders are run folders ``attempt_0``, ``attempt_1``: only torchelastic's own
    # ``attempt_N/<local rank>/`` under a run id marks a restarted worker
    a = _root("attempt_1/torchelastic/run_x/attempt_0/0/stderr.log", 29, "RuntimeError: shape mismatch", "n2")
    b = _root("attempt_0/console.log", 40, "Gloo connectFullMesh failed", "n1")
    roles = {id(a): "root", id(b): "root"}
    assert restart_time(JobScan(), [a, b]) is None
    assert restarted_roots(JobScan(), [a, b], roles) == [] and roles[id(b)] == "root"


def _line(file: str, second: int | None, text: str, node: str, role: str, severity: str = "error") -> Finding:
    """A finding of one line; ``second`` None: an untimed line (a worker's error.json) that no stamp places."""
    t = None if second is None else T0 + second
    r = Record(file=file, line=5, end_line=5, node=node, rank=None, gpu=None, source="launcher", time=t,
               level="error", message=text, text=(STAMP.format(second) if second is not None else "") + text)
    return Finding("rules", "host", role, 0.3, text, node=node, time=t, severity=severity, records=[r])


def test_a_worker_killed_without_a_word_before_the_restart_makes_the_restarted_failure_a_cascade() -> None:
    # attempt_0's rank 0 is SIGKILLed while it saves (only its agent's exit report tells it); the restarted ranks
    # resume from the file it left cut short and fail reading it, on both nodes, one copy in an untimed error.json
    killed = _line("n1/console.log", 36, "failed (exitcode: -9) local_rank: 0 (pid: 24160)", "n1", "confirmation")
    again = _line("n1/torchelastic/run_y/attempt_1/0/stderr.log", 42, "PytorchStreamReader failed", "n1", "root")
    other = _line("n2/console.log", 42, "PytorchStreamReader failed", "n2", "root")
    other.records.append(_line("n2/torchelastic/run_z/attempt_0/0/error.json", None, "PytorchStreamReader failed",
                               "n2", "root").records[0])
    summary = _line("n1/console.log", 43, "Root Cause (first observed failure): exitcode : 1", "n1", "confirmation")
    exited = _line("n1/console.log", 43, "failed (exitcode: 1) local_rank: 0 (pid: 24431)", "n1", "symptom")
    findings = [killed, again, other, summary, exited]
    roles = {id(f): f.role for f in findings}
    assert restarted_roots(JobScan(), findings, roles) == [again, other]
    assert roles[id(again)] == roles[id(other)] == "cascade"
    # the restarted group's own summary and exit report no longer lead either; the first report stays
    assert roles[id(summary)] == roles[id(exited)] == "symptom" and summary.data["restarted"] and exited.data["restarted"]
    assert roles[id(killed)] == "confirmation" and "restarted" not in killed.data


def test_a_warning_before_the_restart_does_not_say_what_failed_first() -> None:
    note = _line("n1/console.log", 30, "low disk space on /tmp", "n1", "confirmation", severity="warning")
    again = _line("n1/torchelastic/run_y/attempt_1/0/stderr.log", 42, "PytorchStreamReader failed", "n1", "root")
    roles = {id(note): "confirmation", id(again): "root"}
    assert restarted_roots(JobScan(), [note, again], roles) == [] and roles[id(again)] == "root"

def _report(second: float, agent: int, worker: int, node: str) -> Finding:
    text = f"failed (exitcode: 1) local_rank: 0 (pid: {worker}) of binary: /usr/bin/python3"
    r = Record(file="job.out", line=9, end_line=9, node=node, rank=None, gpu=None, source="launcher",
               time=T0 + second, level="error", message=text,
               text=f"E1205 05:32:{second:06.3f}000 {agent} torch/distributed/elastic/multiprocessing/api.py:1002] "
                    + text)
    return Finding("rules", "software", "symptom", 0.3, text, node=node, time=T0 + second, records=[r])


def test_an_agent_reporting_two_failed_workers_restarted_its_group_between_them() -> None:
    """Every node's logs in one file: no path names an attempt. Agent 426 reports worker 457 failed at :29.5 and
    worker 510 at :33.8: it restarted its group after its first report. The first attempt's root (:28) stays the
    root; the restarted group's failure to connect becomes its cascade."""
    first = _root("job.out", 28, "RuntimeError: shape mismatch", "n2")
    again = _root("job.out", 35, "Gloo connectFullMesh failed", "n1")
    reports = [_report(29.495, 426, 457, "n2"), _report(33.825, 426, 510, "n2"), _report(29.897, 412, 456, "n1")]
    findings = [first, again, *reports]
    roles = {id(f): f.role for f in findings}
    assert T0 + 29.495 < restart_time(JobScan(), findings) < T0 + 29.496  # right after the first report
    assert restarted_roots(JobScan(), findings, roles) == [again] and roles[id(first)] == "root"


def test_one_agent_reporting_once_or_two_ranks_at_once_is_no_restart() -> None:
    once = [_report(29.5, 426, 457, "n2"), _report(29.9, 412, 456, "n1")]  # two agents, one report each
    assert restart_time(JobScan(), once) is None
    together = [_report(29.5, 426, 457, "n2"), _report(29.6, 426, 458, "n2")]  # one failed group's two ranks
    assert restart_time(JobScan(), together) is None
