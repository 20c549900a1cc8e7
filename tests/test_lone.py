"""A job-wide reading of one process's error keeps that process's node unless the logs show the fault shared."""

from __future__ import annotations

import json
from pathlib import Path

from scan_helpers import DigitMiner, rec

from l4lite.api import analyze
from l4lite.detect.base import Finding
from l4lite.diagnose.localize import localize
from l4lite.diagnose.lone import lone_fault, one_node_reading, process_of, told_on_its_own
from l4lite.evaluate.planting import Excerpt, JobPlanter
from l4lite.evaluate.scoreboard import job_paths, norm_node
from l4lite.options import AnalyzeOptions
from l4lite.scan.scanner import JobScan, scan_records

ROOT = Path(__file__).resolve().parent.parent

NODES = ["n1", "n2", "n3", "n4"]
WATCHDOG = "[E ProcessGroupNCCL.cpp:828] [Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, " \
           "OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600081 milliseconds before timing out."


def _scan() -> JobScan:
    records = [rec(f"12:00:{i:02d} iteration {i}/1000 | lm loss: 2.0 |", node=node, rank=k, time=1000.0 + i,
                   line=i, file=f"{node}.log") for k, node in enumerate(NODES) for i in range(1, 21)]
    return scan_records(records, DigitMiner())


def _error(node: str, rank: int | None, text: str, *, category: str = "user_config", line: int = 30,
           t: float = 1021.0, detector: str = "rules") -> Finding:
    r = rec(text, node=node, rank=rank, time=t, line=line, file=f"{node}.log")
    scope = "global" if category in ("user_config", "numerical") else "node"
    return Finding(detector, category, "root", 0.7, "an error", node=node, rank=rank, time=t,
                   rule="cfg" if detector == "rules" else None, records=[r],
                   data={"scope": scope, "ranks": [rank] if rank is not None else []})


def _cascades(but: str) -> list[Finding]:
    out = []
    for k, node in enumerate(NODES):
        if node == but:
            continue
        r = rec(WATCHDOG.format(r=k), node=node, rank=k, time=1051.0, line=40, file=f"{node}.log")
        out.append(Finding("rules", "unknown", "cascade", 0.35, "watchdog", node=node, rank=k, time=1051.0,
                           rule="nccl-watchdog-timeout", records=[r]))
    return out


SHM = "RuntimeError: DataLoader worker (pid 729) is killed by signal: Bus error. It is possible that dataloader's " \
      "workers are out of shared memory."


def test_a_configuration_signature_one_process_printed_stays_job_wide() -> None:
    """A rule of a job-wide category whose reading the verdict keeps: a configuration the thread blames often
    shows on the one machine that printed it."""
    err = _error("n2", 1, SHM)
    v = localize(_scan(), [err, *_cascades("n2")])
    assert v.scope == "global" and v.suspects == [] and v.scope_by == "rule"


def test_a_job_wide_reading_whose_category_turned_keeps_the_one_process_node() -> None:
    scan = _scan()
    err = _error("n2", 1, SHM)
    assert lone_fault(scan, [err, *_cascades("n2")], err)
    assert one_node_reading(scan, [err, *_cascades("n2")], err, "software")
    assert not one_node_reading(scan, [err, *_cascades("n2")], err, "user_config")
    assert not one_node_reading(scan, [err], err, "software")  # no peer lost it: nothing contradicts the reading


def test_the_same_error_on_a_second_node_shows_it_shared() -> None:
    errs = [_error("n2", 1, SHM), _error("n3", 2, SHM, t=1021.5)]
    assert not lone_fault(_scan(), [*errs, *_cascades("n2")], errs[0])


def test_the_same_error_from_a_second_process_of_the_node_shows_it_shared() -> None:
    """One rank's file of a single-machine run holds several processes' lines: two NCCL pids said it."""
    text = "{h}:{p}:4183 [0] include/shm.h:28 NCCL WARN Call to posix_fallocate failed : No space left on device"
    err = _error("n2", 1, text.format(h="n2", p=41588))
    err.records.append(rec(text.format(h="n2", p=41585), node="n2", rank=1, time=1021.1, line=31, file="n2.log"))
    assert not lone_fault(_scan(), [err, *_cascades("n2")], err)


def test_without_peers_that_lost_it_the_reading_stays_job_wide() -> None:
    """Nothing shows the others waited for it (they printed no cascade): the job-wide reading is not contradicted."""
    err = _error("n2", 1, SHM)
    v = localize(_scan(), [err])
    assert v.scope == "global" and v.suspects == []


def test_a_lexicon_reading_of_one_process_keeps_the_node_too() -> None:
    err = _error("n3", 2, "ValueError: invalid configuration value for --micro-batch-size", detector="components")
    err.role = "symptom"
    v = localize(_scan(), [err, *_cascades("n3")])
    assert v.scope == "node" and v.suspects and v.suspects[0][0] == "n3" and v.category == "user_config"
    assert any("one process" in n for n in v.notes)


def test_process_of_reads_the_rank_then_the_nccl_pid() -> None:
    assert process_of(rec("x", node="n1", rank=3)) == ("rank", "3")
    bare = rec("x", node="n1", rank=None, text="n1:2143:2561 [1] include/shm.h:28 NCCL WARN Call to posix_fallocate "
               "failed")
    assert process_of(bare) == ("pid", "2143")
    assert process_of(rec("a line of no process", node="n1")) is None


def test_a_training_signal_is_never_lone() -> None:
    sig = Finding("health", "numerical", "root", 0.9, "loss is NaN", node="n2", time=1021.0,
                  data={"signal": "nan", "scope": "global"})
    assert not lone_fault(_scan(), [sig, *_cascades("n2")], sig)


IMA = "RuntimeError: CUDA error: an illegal memory access was encountered"


def test_numbers_that_followed_one_process_own_error_are_that_node_s() -> None:
    scan = _scan()
    sig = Finding("health", "numerical", "root", 0.9, "grad norm is NaN", node="n2", time=1020.0,
                  data={"signal": "nan", "scope": "global"})
    ima = _error("n2", 1, IMA, category="software")
    assert told_on_its_own(scan, [sig, ima, *_cascades("n2")], sig, ima)
    again = _error("n3", 2, IMA, category="software", t=1021.4)  # a second node met it too: shared
    assert not told_on_its_own(scan, [sig, ima, again, *_cascades("n2")], sig, ima)
    cfg = _error("n2", 1, SHM)  # a job-wide reading of the cause keeps the numbers job-wide
    assert not told_on_its_own(scan, [sig, cfg, *_cascades("n2")], sig, cfg)
    elsewhere = _error("n4", 3, IMA, category="software")  # the signal's node printed no such line
    assert not told_on_its_own(scan, [sig, elsewhere, *_cascades("n4")], sig, elsewhere)


def _lines_entry(entry_id: str) -> Excerpt:
    for line in (ROOT / "fixtures" / "real" / "lines.jsonl").read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        if r["id"] == entry_id:
            return Excerpt(id=r["id"], source_group=r["source_group"], split="lines", status="incident",
                           category=r["category"], phase=None, faulty=None, lines=tuple(r["lines"]))
    raise KeyError(entry_id)


def test_planted_lines_one_node_printed_keep_that_node_and_every_node_s_stay_job_wide(tmp_path: Path) -> None:
    """End to end on labelled lines (``node_faults.py --part lines``): a missing attribute a rule first read as
    configuration, and an OFI plugin error the lexicon reads as configuration, each met by one rank while the
    other seven only lost it; an import error every node met (a job-wide entry is printed by every node) still
    blames none."""
    for entry in ("deepspeedai-deepspeed-2584", "aws-aws-ofi-nccl-889"):
        planter = JobPlanter(_lines_entry(entry), 0)
        job = planter.write("rank-files", tmp_path / entry)
        inc = analyze(job_paths(job.path), AnalyzeOptions())
        assert inc.scope == "node", entry
        assert norm_node(inc.suspects[0].node) == norm_node(planter.hosts[planter.faulty_node]), entry
    job = JobPlanter(_lines_entry("mlfoundations-datacomp-79"), 0).write("rank-files", tmp_path / "shared")
    inc = analyze(job_paths(job.path), AnalyzeOptions())
    assert inc.scope == "global" and not inc.suspects


def test_warnings_that_name_a_part_witness_no_error_of_it() -> None:
    """A library's warning naming a setting ("it is recommended to set the environment variable X"), which the
    ranks that got further print, is no second node's print of a configuration error (184)."""
    from l4lite.diagnose.lone import mentions_only, printers

    err = _error("n2", 2, "ValueError: buffer is smaller than requested size")
    warned = _error("n1", 0, "UserWarning: it is recommended to set the environment variable "
                    "CUDA_DEVICE_MAX_CONNECTIONS to 1", detector="components")
    warned.role = "symptom"
    for r in warned.records:
        r.level = "warning"
    assert mentions_only(warned) and not mentions_only(err)
    assert printers([err, warned], "user_config")[0] == {"n2"}
    warned.records[0].level = "error"
    assert printers([err, warned], "user_config")[0] == {"n1", "n2"}
