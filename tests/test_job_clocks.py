"""Every clock of a job is weighed once, whatever the layout: a node whose own error files place its clock whole
quarter hours off the zone-free time is read in that time when another clock of the job confirms the offset
(a peer in a zone of its own, a peer whose folder names no node), and a job whose clocks all agree is left as
logged."""

from __future__ import annotations

import json
import os
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

from l4lite.api import analyze
from l4lite.ingest.context import build_context
from l4lite.ingest.files import discover
from l4lite.ingest.spans import FileSpan, apart_files
from l4lite.ingest.zones import JobClocks, NodeClock, zone_shifts
from l4lite.options import AnalyzeOptions
from l4lite.records import Accounting

T0 = datetime(2026, 12, 3, 14, 0, 0, tzinfo=UTC)
REAL = Path(__file__).resolve().parent.parent / "fixtures" / "real_jobs" / "160-lightning-tz_exception"


def _lines(start: datetime, n: int) -> str:
    stamps = [(start + timedelta(seconds=10 * i)).strftime("%Y-%m-%d %H:%M:%S,%f")[:-3] for i in range(n)]
    return "".join(f"{s} INFO step {i}\n" for i, s in enumerate(stamps))


def _job(tmp: Path, ahead: dict[str, timedelta], stated: dict[str, datetime]) -> None:
    """Folders logging 10 lines each from T0 on a clock ``ahead``; a folder in ``stated`` holds a torchelastic
    error file stating that time in epoch seconds (zone-free)."""
    for folder, delta in ahead.items():
        (tmp / folder).mkdir()
        (tmp / folder / "train.log").write_text(_lines(T0 + delta, 10))
        if folder in stated:
            record = {"message": {"message": "RuntimeError: boom", "extraInfo": {
                "py_callstack": "Traceback", "timestamp": str(int(stated[folder].timestamp()))}}}
            (tmp / folder / "error.json").write_text(json.dumps(record) + "\n")


def _shifts(tmp: Path) -> dict[str, float]:
    return build_context(discover([str(tmp)], Accounting()).files).node_shifts


def test_two_nodes_each_in_a_zone_of_its_own_are_read_in_the_zone_free_time(tmp_path: Path) -> None:
    # one node nine hours ahead, the other eight: neither is the majority, and comparing the two alone cannot
    # say which is right; each one's error file can, and the hour between them confirms both
    end = T0 + timedelta(seconds=95)
    _job(tmp_path, {"gpu-node-1": timedelta(hours=9), "gpu-node-2": timedelta(hours=8)},
         {"gpu-node-1": end, "gpu-node-2": end})
    assert _shifts(tmp_path) == {"gpu-node-1": 9 * 3600.0, "gpu-node-2": 8 * 3600.0}


def test_a_job_whose_every_clock_reads_local_time_is_left_as_logged(tmp_path: Path) -> None:
    end = T0 + timedelta(seconds=95)
    _job(tmp_path, {"gpu-node-1": timedelta(hours=9), "gpu-node-2": timedelta(hours=9)},
         {"gpu-node-1": end, "gpu-node-2": end})
    assert _shifts(tmp_path) == {}


def _clock(ahead: float, stated: list[float] | None = None) -> NodeClock:
    t = T0.timestamp()
    return NodeClock(t + ahead, t + 90 + ahead, [], stated or [])


def test_a_clock_in_a_file_no_node_is_known_for_confirms_the_offset() -> None:
    end = [T0.timestamp() + 95]
    mine = {"gpu-node-1": _clock(9 * 3600, end)}
    assert zone_shifts(mine, {}) == []  # one node alone is compared with nothing
    moved = JobClocks(mine, {"b/train.log": _clock(0)}, loose=end).anchored()
    assert [(z.node, z.seconds) for z in moved] == [("gpu-node-1", 9 * 3600.0)]
    assert "error files" in moved[0].warning()


def test_a_clock_whose_offset_says_otherwise_vetoes_it() -> None:
    end = [T0.timestamp() + 95]
    # eight hours apart, but the other clock's own error file puts it on the zone-free time: nine minus eight is
    # not zero, so one of the two readings is wrong and nothing moves
    clocks = {"gpu-node-1": _clock(9 * 3600, end), "gpu-node-2": _clock(3600, [end[0] + 3600])}
    assert JobClocks(clocks).anchored() == []
    # nor does a node with no other clock whole quarter hours from it
    assert JobClocks({"gpu-node-1": _clock(9 * 3600, end), "gpu-node-2": _clock(9 * 3600)}).anchored() == []


def test_two_zones_seventeen_hours_apart_are_no_stale_file_but_yesterdays_file_is() -> None:
    t, day = T0.timestamp(), 86400.0
    core = {f"a/{i}.log": FileSpan(False, t, t + 60) for i in range(4)}
    far = {f"b/{i}.log": FileSpan(False, t + 17 * 3600, t + 17 * 3600 + 60) for i in range(3)}
    written = {rel: t + 100 for rel in (*core, *far)}
    assert apart_files({**core, **far}, written) == {}
    old = {f"b/{i}.log": FileSpan(False, t - day, t - day + 60) for i in range(3)}
    written = {**written, **{rel: t - day + 100 for rel in old}}
    assert set(apart_files({**core, **old}, written)) == set(old)


def test_the_real_job_with_its_peers_folder_renamed_keeps_its_failure_time(tmp_path: Path) -> None:
    # the peer's folder names no node: the skewed node's clock must not become the job's
    shutil.copytree(REAL, tmp_path / "plain", ignore=shutil.ignore_patterns("_meta", "ground_truth.json"))
    shutil.copytree(tmp_path / "plain", tmp_path / "letters")
    (tmp_path / "letters" / "node0422").rename(tmp_path / "letters" / "b")
    options = AnalyzeOptions()
    plain = analyze([str(tmp_path / "plain")], options)
    letters = analyze([str(tmp_path / "letters")], options)
    assert plain.failure_time is not None and plain.failure_time.startswith("2026-12-06T04:53")
    assert letters.failure_time == plain.failure_time


def test_a_stale_file_set_apart_has_no_say_in_the_year_of_yearless_lines(tmp_path: Path) -> None:
    # glog lines carry no year; a stray file of another job, dated 2024, is set apart, and must not leave the
    # job's lines read in 2024 (then the error files' epoch seconds, in 2026, place no clock at all)
    written = T0.timestamp() + 200
    for node in ("gpu-node-1", "gpu-node-2"):
        (tmp_path / node).mkdir()
        f = tmp_path / node / "train.log"
        f.write_text("".join(f"I1203 14:00:{10 * i:02d}.000000 42 train.py:1] step {i}\n" for i in range(6)))
        os.utime(f, (written, written))
    stale = tmp_path / "gpu-node-1" / "previous.log"
    stale.write_text("".join(f"2024-07-10 10:00:{10 * i:02d},000 INFO old step {i}\n" for i in range(6)))
    then = datetime(2024, 7, 10, 11, tzinfo=UTC).timestamp()
    os.utime(stale, (then, then))
    ctx = build_context(discover([str(tmp_path)], Accounting()).files)
    assert list(ctx.set_apart) == ["gpu-node-1/previous.log"]
    assert ctx.start == T0.timestamp()


def test_a_node_in_a_zone_of_its_own_that_springs_forward_is_read_at_its_start_offset() -> None:
    end = [T0.timestamp() + 95]
    t = T0.timestamp()
    # nine hours ahead at its first line, ten at its last (daylight saving mid-job): its span is an hour longer
    jumped = NodeClock(t + 9 * 3600, t + 90 + 10 * 3600, [], end)
    moved = JobClocks({"gpu-node-1": jumped, "gpu-node-2": _clock(0, end)}).anchored()
    assert [(z.node, z.seconds) for z in moved] == [("gpu-node-1", 9 * 3600.0)]
    # the peer sprang forward, not this node: it is read at its one offset, the peer left to ``jumps``
    peer = NodeClock(t, t + 90 + 3600, [], [end[0]])
    moved = JobClocks({"gpu-node-1": _clock(-5 * 3600, end), "gpu-node-2": peer}).anchored()
    assert [(z.node, z.seconds) for z in moved] == [("gpu-node-1", -5 * 3600.0)]


def test_a_file_that_ends_where_an_error_file_says_the_job_failed_is_no_stale_file() -> None:
    t = T0.timestamp()
    core = {f"a/{i}.log": FileSpan(False, t + 9 * 3600, t + 10 * 3600 + 60) for i in range(4)}
    peer = {f"b/{i}.log": FileSpan(False, t, t + 60) for i in range(3)}
    assert set(apart_files({**core, **peer})) == set(peer)  # nine hours before at one end, ten at the other
    assert apart_files({**core, **peer}, stated=[t + 62]) == {}


def test_a_node_that_springs_forward_in_its_own_zone_ends_with_the_job(tmp_path: Path) -> None:
    end = T0 + timedelta(seconds=95)
    _job(tmp_path, {"gpu-node-1": timedelta(0), "gpu-node-2": timedelta(hours=9)},
         {"gpu-node-1": end, "gpu-node-2": end})
    log = tmp_path / "gpu-node-2" / "train.log"
    lines = log.read_text().splitlines(keepends=True)
    later = _lines(T0 + timedelta(hours=10, seconds=50), 5).splitlines(keepends=True)
    log.write_text("".join(lines[:5] + later))  # its last five lines an hour late
    acc = Accounting()
    ctx = build_context(discover([str(tmp_path)], acc).files, accounting=acc)
    assert ctx.node_shifts == {"gpu-node-2": 9 * 3600.0} and ctx.set_apart == {}
    result = analyze([str(tmp_path)], AnalyzeOptions())
    span = result.to_dict()["job"]
    assert span["start"].startswith("2026-12-03T14:00") and span["end"].startswith("2026-12-03T14:01")
