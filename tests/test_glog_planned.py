"""A glog header read from its plan (``TimestampParser.planned_time``) gives ``parse``'s time and leaves the parser
as ``parse`` leaves it: the year inferred across New Year, a second remembered, an impossible date left to
``parse``."""

from __future__ import annotations

import random

from l4lite.ingest.timestamps import TimestampParser


def _state(ts: TimestampParser) -> tuple:
    return ts._year, ts._last_month, dict(ts._cache), ts.undated


def _glog_lines(rnd: random.Random) -> list[str]:
    lines = []
    for i in range(3000):
        mo, d = (12, 31) if i < 1500 else (1, 1)  # over New Year: the year moves on
        if i == 2000:
            mo, d = 2, 30  # no date
        h, mi, s = rnd.randrange(24), rnd.randrange(60), rnd.choice((7, 8, 59))
        frac = "".join(rnd.choice("0123456789") for _ in range(rnd.choice((3, 6, 9))))
        month = f"{mo}" if i % 3 == 0 else f"{mo:02d}"  # glog pads the month; a month of one digit reads too
        head = f"{rnd.choice('IWEF')}{month}{d:02d} {h:02d}:{mi:02d}:{s:02d}.{frac}"
        tid = f" {rnd.randrange(10**3, 10**15)}" if i % 4 else ""
        lines.append(f"[{head}{tid} ProcessGroupNCCL.cpp:1117] x" if i % 2 else f"{head}{tid} train.py:412] step {i}")
    return lines


def test_planned_glog_times_are_parse_times_and_leave_the_same_state() -> None:
    rnd = random.Random(11)
    parsed = TimestampParser(mtime=1_767_225_600.0)  # 2026-01-01: December lines are of 2025
    planned = TimestampParser(mtime=1_767_225_600.0)
    read = 0
    for s in _glog_lines(rnd):
        t, end, level, kind = parsed.parse(s, 0)
        known, t2 = planned.planned_time(s, 0, end, "glog")
        if not known:
            t2, end2, _, _ = planned.parse(s, 0)
            assert end2 == end
        else:
            read += 1
            assert kind == "glog"
        assert t2 == t
        assert _state(planned) == _state(parsed)
    assert read > 2900
    assert parsed.undated == 1
