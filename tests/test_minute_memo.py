"""A glog or ``%b %d, %Y`` (MDY) header of a new second in a minute read before is read from its plan
(``TimestampParser.planned_time``) without reading its date again, and gives ``parse``'s time and state: over
years that change, a wild year off the job's, 12-hour clocks, fractions and impossible dates."""

from __future__ import annotations

import random

from l4lite.ingest.stamp_patterns import MONTHS
from l4lite.ingest.timestamps import TimestampParser


def _state(ts: TimestampParser) -> tuple:
    return ts._year, ts._last_month, dict(ts._cache), ts.undated


def _mdy_lines(rnd: random.Random) -> list[str]:
    names = list(MONTHS)
    lines = []
    year, month, day, h, mi = 2025, 11, 29, 4, 1
    for i in range(6000):
        r = rnd.random()
        if r < 0.01:
            year = rnd.choice((2025, 2026, 2025, 1999))  # 1999: a wild year the job's year ignores
        elif r < 0.02:
            month, day = rnd.choice(((11, 29), (12, 31), (1, 1), (2, 30)))  # Feb 30: no date
        if rnd.random() < 0.05:
            h, mi = rnd.randrange(24), rnd.choice((0, 1, 59))
        sec = rnd.randrange(60)  # a new second on most lines
        stamp = f"{names[month - 1]} {day}, {year} {h:02d}:{mi:02d}:{sec:02d}"
        if i % 7 == 0:
            stamp += f".{rnd.randrange(1000):03d}"
        elif i % 11 == 0:
            stamp = f"{names[month - 1]} {day}, {year} {h % 12 + 1}:{mi:02d}:{sec:02d} {rnd.choice(('AM', 'PM'))}"
        lines.append(f"{stamp} INFO: trainer step {i}")
    return lines


def test_planned_mdy_times_of_new_seconds_are_parse_times_and_leave_the_same_state() -> None:
    rnd = random.Random(5)
    parsed = TimestampParser(near=2025)
    planned = TimestampParser(near=2025)
    read = 0
    lines = _mdy_lines(rnd)
    for s in lines:
        t, end, _, kind = parsed.parse(s, 0)
        if kind != "mdy":  # an impossible date: ``parse`` alone
            assert planned.parse(s, 0)[0] == t
            continue
        known, t2 = planned.planned_time(s, 0, end, "mdy")
        if not known:
            t2, end2, _, _ = planned.parse(s, 0)
            assert end2 == end
        read += known
        assert t2 == t, s
        assert _state(planned) == _state(parsed), s
    assert read > 0.5 * len(lines)  # a second read before alone: about a tenth


def test_planned_glog_times_of_new_seconds_are_parse_times_and_leave_the_same_state() -> None:
    rnd = random.Random(7)
    for around in (None, 1_764_388_862.0):
        parsed = TimestampParser(mtime=1_767_225_600.0, around=around)
        planned = TimestampParser(mtime=1_767_225_600.0, around=around)
        mo, d, h, mi = 12, 31, 23, 59
        for i in range(4000):
            if rnd.random() < 0.01:
                mo, d = rnd.choice(((12, 31), (1, 1), (6, 15)))  # over New Year both ways
            if rnd.random() < 0.05:
                h, mi = rnd.randrange(24), rnd.randrange(60)
            s = f"I{mo:02d}{d:02d} {h:02d}:{mi:02d}:{rnd.randrange(60):02d}.{rnd.randrange(10**6):06d} 77 train.py:1] x"
            t, end, _, _ = parsed.parse(s, 0)
            known, t2 = planned.planned_time(s, 0, end, "glog")
            if not known:
                t2 = planned.parse(s, 0)[0]
            assert t2 == t, s
            assert _state(planned) == _state(parsed), (i, s)
