"""Lines of one event told together as root evidence: a rank's line naming the process the kernel killed, the
error file torchelastic wrote for a stuck rank's node-mate, one copy per shared console of a job-wide error, and
a stated NaN error over the loss lines that show it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from l4lite import analyze
from l4lite.detect.base import Finding
from l4lite.diagnose.evidence import killed_lines, low_rank_records, repeats_error, stated_by_rule
from l4lite.evaluate.scoreboard import job_paths
from l4lite.records import Record

REAL = Path(__file__).resolve().parent.parent / "fixtures" / "real_jobs"


def _rec(file: str, line: int, text: str, *, rank: int | None = None, source: str = "other",
         node: str = "n1", end_line: int | None = None) -> Record:
    return Record(file=file, line=line, end_line=end_line or line, node=node, rank=rank, gpu=None, source=source,
                  time=None, level=None, message=text.splitlines()[-1], text=text)


def _finding(records: list[Record], *, detector: str = "rules", category: str = "host", rule: str = "r",
             node: str = "n1") -> Finding:
    return Finding(detector, category, "root", 0.9, "x", node=node, rule=rule, records=records)


def _roots(job: Path) -> list[dict[str, Any]]:
    return [e for e in analyze(job_paths(job)).to_dict()["evidence"] if e["role"] == "root"]


def _covers(roots: list[dict[str, Any]], file: str, line: int) -> bool:
    return any(e["file"].endswith(file) and e["line"] <= line <= (e.get("end_line") or e["line"]) for e in roots)


# ------------------------------------------------------------------ the pid the kernel killed
def test_a_ranks_line_naming_the_killed_pid_joins_the_kernel_line() -> None:
    kill = _finding([_rec("kern.log", 78, "kernel: Memory cgroup out of memory: Killed process 10234 (w)",
                          source="kernel")])
    tb = "[rank1]: Traceback (most recent call last):\n[rank1]:   File \"x.py\", line 1\n" \
         "[rank1]: RuntimeError: DataLoader worker (pid(s) 10234) exited unexpectedly"
    rank_line = _rec("console.log", 9, tb, rank=1, end_line=11)
    other_pid = _rec("console.log", 40, "[rank1]: RuntimeError: DataLoader worker (pid 999) is killed", rank=1)
    agent = _rec("console.log", 59, "failed (exitcode: -9) local_rank: 1 (pid: 10234)", source="launcher")
    elsewhere = _rec("console.log", 5, "[rank3]: worker (pid 10234) killed", rank=3, node="n2")
    told = killed_lines([kill, _finding([rank_line, other_pid, agent]), _finding([elsewhere], node="n2")], kill)
    assert told is not None and told.role == "root" and told.category == "host"
    assert [(r.file, r.line) for r in told.records] == [("console.log", 9)]  # not the agent's nor another node's


def test_no_kill_line_or_no_line_naming_its_pid_tells_nothing() -> None:
    oom = _finding([_rec("kern.log", 1, "kernel: python3 invoked oom-killer: gfp_mask=0xcc0", source="kernel")])
    line = _rec("console.log", 9, "[rank1]: RuntimeError: DataLoader worker (pid 10234) is killed", rank=1)
    assert killed_lines([oom, _finding([line])], oom) is None  # the kill line names no pid
    kill = _finding([_rec("kern.log", 78, "kernel: Killed process 55 (python3)", source="kernel")])
    assert killed_lines([kill, _finding([line])], kill) is None


def test_the_data_loader_lines_of_a_worker_oom_are_root() -> None:
    job = REAL / "040-hf-worker_oom"  # the kernel killed pid 10413, a DataLoader worker of rank 3
    roots = _roots(job)
    assert _covers(roots, "h100-sxm-044/kern.log", 78)
    assert _covers(roots, "h100-sxm-044/console.log", 30)
    assert _covers(roots, "attempt_0/1/stderr.log", 23)
    assert not any("exitcode" in e["text"][:200] for e in roots)  # the agent's exit line only confirms it


# ------------------------------------------------------------------ a job-wide error's copies
def test_a_shared_console_shows_its_first_copy_when_each_rank_has_a_file_of_its_own() -> None:
    recs = [_rec("console.log", 26, "[rank0]: E", rank=0), _rec("console.log", 23, "[rank1]: E", rank=1),
            _rec("a/0/stderr.log", 19, "[rank0]: E", rank=0), _rec("a/1/stderr.log", 18, "[rank1]: E", rank=1)]
    got = {(r.file, r.line) for r in low_rank_records(_finding(recs))}
    assert got == {("console.log", 23), ("a/0/stderr.log", 19), ("a/1/stderr.log", 18)}


def test_a_merged_file_keeps_every_ranks_copy_when_it_is_their_only_file() -> None:
    recs = [_rec("slurm.out", 47, "2: E", rank=2), _rec("slurm.out", 39, "1: E", rank=1),
            _rec("slurm.out", 51, "0: E", rank=0)]
    assert len(low_rank_records(_finding(recs))) == 3


# ------------------------------------------------------------------ a stated NaN error
def test_a_stated_nan_error_makes_the_health_signals_loss_lines_confirmation() -> None:
    health = _finding([_rec("console.log", 19, "step 12 | loss nan")], detector="health", category="numerical")
    stated = _finding([_rec("console.log", 28, "FloatingPointError: loss is nan at step 12")], category="numerical")
    roles = {id(health): "root", id(stated): "root"}
    stated_by_rule([health, stated], roles, health, {("console.log", 19)})
    assert roles == {id(health): "confirmation", id(stated): "root"}


def test_a_rule_on_the_metric_lines_alone_leaves_the_health_signal_root() -> None:
    health = _finding([_rec("console.log", 19, "step 12 | loss nan")], detector="health", category="numerical")
    metric = _finding([_rec("console.log", 19, "step 12 | loss nan")], category="numerical")
    roles = {id(health): "root", id(metric): "root"}
    stated_by_rule([health, metric], roles, health, {("console.log", 19)})
    assert roles[id(health)] == "root"


def test_the_nan_jobs_root_is_the_stated_error_not_the_progress_line() -> None:
    roots = _roots(REAL / "004-ddp-nan")
    assert roots and all("loss is nan at step 12" in e["text"] for e in roots)


# ------------------------------------------------------------------ a stuck rank's node-mate's error file
def test_a_hangs_timeout_brings_the_ranks_error_json() -> None:
    roots = _roots(REAL / "011-hf-hang")  # rank 0 timed out beside the stuck rank; its error.json says so too
    files = [e["file"] for e in roots]
    assert any(f.endswith("attempt_0/0/error.json") for f in files)
    assert any(f.endswith("attempt_0/0/stderr.log") for f in files)
    assert all("cpu-node-a" in f for f in files)


# ------------------------------------------------------------------ a framework's logger repeating the error
def test_the_trainers_line_repeating_the_primarys_exception_joins_it() -> None:
    tb = "[rank0]: Traceback (most recent call last):\n[rank0]:   File \"x.py\", line 1\n" \
         "[rank0]: RuntimeError: [enforce fail at inline_container.cc:672] . unexpected pos 11136 vs 11030"
    primary = _finding([_rec("console.log", 79, tb, rank=0, end_line=81)], category="storage")
    said = _rec("console.log", 77, "[default0]:2026-12-04 10:55:12,300 Trainer ERROR: Engine run is terminating due "
                "to exception: [enforce fail at inline_container.cc:672] . unexpected pos 11136 vs 11030", rank=0,
                source="trainer")
    quoted = _rec("console.log", 150, "  RuntimeError: [enforce fail at inline_container.cc:672] . unexpected pos "
                  "11136 vs 11030", source="trainer")
    agent = _rec("console.log", 203, "failed (exitcode: 1) [enforce fail at inline_container.cc:672] . unexpected pos "
                 "11136 vs 11030", source="launcher")
    other = _finding([said, quoted, agent], detector="components", category="storage")
    told = repeats_error([primary, other], primary, {id(primary): "root", id(other): "symptom"})
    assert told is not None and [(r.file, r.line) for r in told.records] == [("console.log", 77)]
    short = _finding([_rec("console.log", 79, "RuntimeError: boom", rank=0)])
    assert repeats_error([short, other], short, {id(short): "root"}) is None  # too short to tie lines by


def test_ignites_terminating_lines_are_root_with_the_save_error() -> None:
    roots = _roots(REAL / "056-ignite-enospc")
    assert _covers(roots, "cpu-node-a/console.log", 77) and _covers(roots, "cpu-node-a/console.log", 78)
