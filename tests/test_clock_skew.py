"""Clock skew between nodes (``ingest.skew``), measured on real jobs: the torchrun jobs of fixtures/real_jobs ran
on one machine, so their nodes share a clock; a copy of one with one node's times moved by a known amount must
give that amount back, and the incident and the report must say so."""

from __future__ import annotations

import json
import re
import shutil
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from l4lite.api import analyze
from l4lite.evaluate.scoreboard import job_paths
from l4lite.ingest.context import build_context
from l4lite.ingest.files import discover
from l4lite.ingest.skew import anchor_key, estimate
from l4lite.options import AnalyzeOptions
from l4lite.records import Accounting

ROOT = Path(__file__).resolve().parent.parent
REAL_JOBS = sorted(p for p in (ROOT / "fixtures" / "real_jobs").iterdir() if (p / "ground_truth.json").exists())
REAL = {row["id"]: row for row in map(json.loads, (ROOT / "fixtures" / "real" / "real-failures.jsonl").open())}

_ISO = re.compile(r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3})")
_GLOG = re.compile(r"\b([IWEF])(\d\d)(\d\d) (\d\d:\d\d:\d\d)\.(\d{6})")


def skew_of(job: Path) -> dict:
    return build_context(discover([str(job)], Accounting()).files).clock_skew


def shift_text(text: str, seconds: float, year: int = 2026) -> str:
    """Every timestamp of a log (Python logging's and glog's) moved by ``seconds``, as a clock that is off."""
    def iso(m: re.Match[str]) -> str:
        t = datetime.strptime(f"{m[1]}.{m[2]}", "%Y-%m-%d %H:%M:%S.%f") + timedelta(seconds=seconds)
        return t.strftime("%Y-%m-%d %H:%M:%S,") + f"{t.microsecond // 1000:03d}"

    def glog(m: re.Match[str]) -> str:
        t = datetime.strptime(f"{year}{m[2]}{m[3]} {m[4]}.{m[5]}", "%Y%m%d %H:%M:%S.%f") + timedelta(seconds=seconds)
        return f"{m[1]}{t:%m%d %H:%M:%S}.{t.microsecond:06d}"

    return _GLOG.sub(glog, _ISO.sub(iso, text))


def test_median_of_shared_events_against_the_node_with_most() -> None:
    # node b is 2 s ahead on four events, one of them late (a rank that entered the collective late)
    anchors = [("a", k, 100.0 + i) for i, k in enumerate("wxyz")]
    anchors += [("b", "w", 102.0), ("b", "x", 103.0), ("b", "y", 104.0), ("b", "z", 110.0), ("c", "w", 100.1)]
    skew = estimate(anchors)
    assert skew.reference == "a"
    assert skew.offsets["b"].seconds == 2.0 and skew.offsets["b"].lines == 4
    assert abs(skew.offsets["c"].seconds - 0.1) < 1e-9 and skew.offsets["c"].lines == 1
    assert skew.exceeds and "b is +2.000 s from a" in skew.note()
    assert not estimate([("a", "w", 1.0)]).offsets


def test_lines_that_are_simultaneous_on_every_node_have_keys() -> None:
    watchdog = REAL["llamafactory-6269-watchdog-reduce-scatter"]["lines"]
    keys = {anchor_key(line) for line in watchdog if "Watchdog caught" in line}
    assert keys == {"collective pg? _REDUCE_SCATTER_BASE seq 7753 timeout"}
    assert anchor_key("The node 'gpu-node-07_6865_0' has joined round 0 of the rendezvous 'run-009' as rank 1 in "
                      "a world of size 2.") == "rendezvous run-009 round 0"
    assert anchor_key("2026-12-03 14:38:23,200 INFO [rank2] initialized process group: backend=gloo "
                      "world_size=4 local_rank=0 host=a100-rack2-15") == "process group initialized"
    # a collective each rank logs when it gets there is not simultaneous
    assert anchor_key("WorkNCCL(SeqNum=12, OpType=BROADCAST, NumelIn=1) enqueued") is None


# 111, 119: one node's processes ran with TZ=EST5, their lines stamped five hours behind the other node's;
# 143, 144: the faulty node's processes ran in America/New_York in winter, five hours behind as well
OTHER_ZONE = {name: 5 * 3600.0 for name in
              ("111-ddp-tz_exception", "119-ddp-eval_sigkill", "143-ddp-tz_exception", "144-ddp-hang")}


def test_the_real_jobs_share_a_clock() -> None:
    measured = {}
    for job in REAL_JOBS:
        skew = skew_of(job)
        assert skew, job.name  # every real job has two nodes
        if job.name in OTHER_ZONE:
            assert skew["exceeds"] and abs(skew["largest_seconds"] - OTHER_ZONE[job.name]) < 1.0, skew
            continue
        if skew["reference"] is not None:
            measured[job.name] = skew["largest_seconds"]
            assert not skew["exceeds"], (job.name, skew)
    # the plain DDP jobs log ``initialized process group`` on every node; the HF, Lightning and DeepSpeed jobs
    # print nothing that every node writes at one moment with a time (their gloo timeouts sit in tracebacks).
    # The Ray hang (068) was run on a loaded machine: its one shared event reached the two nodes' logs 0.155 s
    # apart, which is how simultaneous the event was, not a second clock.
    assert len(measured) >= 10 and max(measured.values()) < 0.2, measured


@pytest.mark.parametrize("shift", [93.25, -4.5])
def test_a_node_whose_clock_is_off_gives_its_offset_back(tmp_path: Path, shift: float) -> None:
    job = ROOT / "fixtures" / "real_jobs" / "001-ddp-exception"
    base = skew_of(job)["nodes"]["a100-rack2-15"]["seconds"]
    copy = tmp_path / job.name
    shutil.copytree(job, copy)
    for p in (copy / "a100-rack2-15").rglob("*.log"):
        p.write_text(shift_text(p.read_text(), shift))
    skew = skew_of(copy)
    got = skew["nodes"]["a100-rack2-15"]
    assert abs(got["seconds"] - (base + shift)) < 0.002 and got["lines"] >= 1
    assert skew["exceeds"] and skew["corrected"] is False
    incident = analyze(job_paths(copy), AnalyzeOptions())
    assert incident.job["clock_skew"]["nodes"]["a100-rack2-15"]["seconds"] == got["seconds"]
    from l4lite.report.html import render_html

    page = render_html(incident)
    assert "clocks disagree: a100-rack2-15 is" in page and f"{base + shift:+.3f} s" in page


def test_one_collective_timeout_apart_is_a_late_rank_not_a_clock() -> None:
    # a rank that entered the collective 4.8 s after its peers times out 4.8 s after them on the same clock
    timeout = "collective pg0 ALLREDUCE seq 117 timeout"
    late = estimate([("a", timeout, 100.0), ("b", timeout, 104.8)])
    assert late.offsets["b"].strong == 0 and not late.exceeds
    assert late.note().startswith("clocks not shown to disagree: b is +4.800 s from a")
    # three timeouts that agree, or one rendezvous round, do show the clocks apart
    keys = [f"collective pg0 ALLREDUCE seq {n} timeout" for n in (1, 2, 3)]
    assert estimate([(n, k, t + (4.8 if n == "b" else 0.0)) for n in "ab" for t, k in enumerate(keys)]).exceeds
    rdzv = "rendezvous job round 0"
    assert estimate([("a", rdzv, 100.0), ("b", rdzv, 104.8)]).exceeds


def test_the_bundled_example_does_not_warn_of_clocks_from_one_timeout() -> None:
    skew = skew_of(ROOT / "fixtures" / "jobs" / "ib-link-down")
    assert skew["reference"] is not None and not skew["exceeds"], skew
