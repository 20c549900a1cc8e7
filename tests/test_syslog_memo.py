"""``TimestampParser.read_syslog`` puts a run's syslog times into its memos at once (``ingest.syslog_memo``):
the memos must come out as the line-by-line loop leaves them, also where one fills up and is emptied."""

from __future__ import annotations

import random

import pytest

from l4lite.ingest import syslog_memo
from l4lite.ingest.syslog_memo import SyslogBatch, remember_at_once
from l4lite.ingest.timestamps import TimestampParser


def _one_by_one(cache: dict, minutes: dict, batch: SyslogBatch, time_bound: int, minute_bound: int) -> None:
    """The loop ``read_syslog`` ran before, with the memos' bounds given."""
    for text, t, base in zip(batch.texts, batch.times, batch.bases, strict=True):
        if text not in cache:
            if len(cache) > time_bound:
                cache.clear()
            cache[text] = t
            if len(minutes) > minute_bound:
                minutes.clear()
            minutes[text[:-2]] = (batch.year, base)


def _batch(rng: random.Random, n: int) -> SyslogBatch:
    texts, times, bases = [], [], []
    for _ in range(n):
        minute, second = rng.randrange(40), rng.randrange(6)
        texts.append(f"Nov 29 04:{minute:02d}:{second:02d}")
        bases.append(1000.0 + 60 * minute)
        times.append(bases[-1] + second)
    return SyslogBatch(texts, times, bases, 2025)


@pytest.mark.parametrize("seed", range(40))
def test_at_once_equals_one_by_one(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(seed)
    time_bound, minute_bound = rng.choice([(8, 4), (30, 12), (400, 100)])
    monkeypatch.setattr(syslog_memo, "TIME_MEMO", time_bound)
    monkeypatch.setattr(syslog_memo, "MINUTE_MEMO", minute_bound)
    cache: dict = {}
    minutes: dict = {}
    ref_cache: dict = {}
    ref_minutes: dict = {}
    bulk = 0
    for _ in range(12):
        batch = _batch(rng, rng.randrange(1, 30))
        if remember_at_once(cache, minutes, batch):
            bulk += 1
        else:
            _one_by_one(cache, minutes, batch, time_bound, minute_bound)
        _one_by_one(ref_cache, ref_minutes, batch, time_bound, minute_bound)
        assert cache == ref_cache
        assert minutes == ref_minutes
    if time_bound == 400:
        assert bulk == 12  # far from the bounds every batch goes in at once


def test_bound_reached_leaves_memos_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(syslog_memo, "TIME_MEMO", 2)
    cache = {"Nov 29 04:00:00": 1.0, "Nov 29 04:00:01": 2.0}
    minutes: dict = {}
    batch = SyslogBatch(["Nov 29 04:00:02"], [3.0], [0.0], 2025)
    assert not remember_at_once(cache, minutes, batch)
    assert cache == {"Nov 29 04:00:00": 1.0, "Nov 29 04:00:01": 2.0} and minutes == {}


def test_read_syslog_first_line_of_a_text_wins() -> None:
    ts = TimestampParser(year=2025)
    ts.read_syslog(["Nov 29 04:00:02", "Nov 29 04:00:02", "Nov 29 04:01:00"], [5.0, 9.0, 60.0], [3.0, 7.0, 60.0],
                   2025)
    ts.read_syslog(["Nov 29 04:00:02"], [11.0], [11.0], 2025)
    assert ts.planned_time("Nov 29 04:00:02 host kernel: x", 0, 15, "syslog") == (True, 5.0)
