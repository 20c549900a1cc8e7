"""Stamps that carry less than an ISO time: slashed dates of either order, times of day without a date, whole
seconds, and a clock that jumps inside one file; each read once per job or per file, never by one line alone."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from l4lite.ingest.context import build_context
from l4lite.ingest.dateorder import day_first
from l4lite.ingest.files import discover
from l4lite.ingest.jumps import jump_of, node_ends, peers_end, without_jumps
from l4lite.ingest.reader import IngestOptions, iter_records
from l4lite.ingest.seconds import in_line_order
from l4lite.ingest.timestamps import TimestampParser
from l4lite.records import Accounting, Record


def ts(*args: int, ms: int = 0) -> float:
    return datetime(*args, tzinfo=UTC).timestamp() + ms / 1000


def rec(line: int, t: float | None, text: str = "INFO step") -> Record:
    return Record("a.log", line, line, "n1", 0, None, "trainer", t, "info", text, text)


# ------------------------------------------------------------------------------------------------ date order
def test_a_field_over_twelve_anywhere_in_the_job_decides_the_order() -> None:
    assert day_first(["03/12/2026 14:38:23 INFO a", "13/12/2026 09:00:00 INFO b"])
    assert not day_first(["12/03/2026 14:38:23 INFO a", "12/13/2026 09:00:00 INFO b"])


def test_ambiguous_dates_take_the_order_nearest_the_jobs_other_dates() -> None:
    eu = ["[default0]:03/12/2026 14:38:23.200 INFO a", "2026-12-03 14:38:24,000 INFO b"]
    us = ["12/03/2026 14:38:23 INFO a", "2026-12-03 14:38:24,000 INFO b"]
    assert day_first(eu) and not day_first(us)
    # no ISO date: the files' write times
    assert day_first(["03/12/2026 14:38:23 INFO a"], [ts(2026, 12, 3, 15, 0, 0)])
    assert not day_first(["03/12/2026 14:38:23 INFO a"], [ts(2026, 3, 12, 15, 0, 0)])
    assert not day_first(["03/12/2026 14:38:23 INFO a"])  # nothing tells: month first


def test_the_parser_reads_the_jobs_order() -> None:
    line = "03/12/2026 14:38:23.200 INFO a"
    assert TimestampParser(2026, day_first=True).parse(line)[0] == ts(2026, 12, 3, 14, 38, 23, ms=200)
    assert TimestampParser(2026).parse(line)[0] == ts(2026, 3, 12, 14, 38, 23, ms=200)


def test_a_day_first_file_beside_iso_files_is_read_in_the_jobs_days(tmp_path: Path) -> None:
    (tmp_path / "n1").mkdir()
    (tmp_path / "n2").mkdir()
    (tmp_path / "n1" / "train.log").write_text("03/12/2026 14:38:23.200 INFO step 1\n"
                                               "03/12/2026 14:38:24.100 ERROR boom\n")
    (tmp_path / "n2" / "train.log").write_text("2026-12-03 14:38:23,300 INFO step 1\n"
                                               "2026-12-03 14:38:24,500 INFO step 2\n")
    files = discover([str(tmp_path)], Accounting()).files
    ctx = build_context(files)
    assert ctx.day_first
    options = IngestOptions()
    options.use(ctx)
    times = {r.file: r.time for r in iter_records([str(tmp_path)], options, Accounting()) if "boom" in r.text}
    assert times == {"n1/train.log": ts(2026, 12, 3, 14, 38, 24, ms=100)}


# ------------------------------------------------------------------------------------------------ time of day
def test_times_of_day_cross_midnight_into_the_next_day() -> None:
    p = TimestampParser(2026, around=ts(2026, 12, 4, 0, 0, 5))
    got = [p.parse(x)[0] for x in ("23:59:58.200 INFO a", "23:59:59.900 INFO b", "00:00:01.000 INFO c")]
    assert got == [ts(2026, 12, 3, 23, 59, 58, ms=200), ts(2026, 12, 3, 23, 59, 59, ms=900),
                   ts(2026, 12, 4, 0, 0, 1)]
    assert p.parse("00:00:01.000 INFO c")[3] == "daytime"
    assert TimestampParser(2026).parse("25:61:07 INFO no time")[1] == 0  # no time of day: no header


# ------------------------------------------------------------------------------------------------ whole seconds
def test_records_of_one_whole_second_keep_their_file_order() -> None:
    t = ts(2026, 12, 3, 14, 55, 52)
    line = "12/03/2026 02:55:52 PM INFO step"
    items = [rec(1, t - 1, line), rec(2, t, line), rec(3, t, line), rec(4, t, "Traceback (most recent call last):"),
             rec(5, t + 1, line)]
    # the traceback under the third line has no stamp of its own: it takes the time that line was placed at
    assert [r.time for r in in_line_order(iter(items))] == [t - 1, t, t + 0.001, t + 0.001, t + 1]
    frac = t + 0.062  # a stamp with its own fraction is left as read
    assert [r.time for r in in_line_order(iter([rec(1, frac), rec(2, frac)]))] == [frac, frac]


# ------------------------------------------------------------------------------------------------ clock jumps
def test_an_hour_forward_past_every_other_node_is_read_back() -> None:
    t0 = ts(2026, 12, 3, 14, 39, 24)
    others = t0 + 40  # the other node's last line
    items = [rec(1, t0), rec(2, t0 + 3600.3), rec(3, t0 + 3601.0), rec(4, t0 + 3603.0)]
    assert [r.time for r in without_jumps(iter(items), others)] == [t0, t0 + 0.3, t0 + 1.0, t0 + 3.0]


def test_a_wait_is_no_jump() -> None:
    t0 = ts(2026, 12, 3, 14, 39, 24)
    # a watchdog that fired after its half hour, the other nodes long silent: the gap is real
    waited = [rec(1, t0), rec(2, t0 + 1800.5, "[Rank 0] Watchdog caught collective operation timeout")]
    assert [r.time for r in without_jumps(iter(waited), t0)] == [t0, t0 + 1800.5]
    assert jump_of(t0, t0 + 3600.5, t0 + 3700) == 0.0  # the other nodes logged past it: they waited as well
    assert jump_of(t0, t0 + 3000.0, t0) == 0.0  # not whole quarter hours
    assert jump_of(t0, t0 + 3600.5, t0 + 10) == 3600.0


def test_the_other_nodes_ends_exclude_the_nodes_own_files() -> None:
    ends = node_ends({"a/x.log": 10.0, "a/y.log": 30.0, "b/x.log": 20.0}, lambda rel: rel.split("/")[0])
    assert ends == {"a": 30.0, "b": 20.0}
    assert peers_end(ends, "a") == 20.0 and peers_end(ends, None) is None


def test_a_time_after_an_untimed_line_is_no_jump() -> None:
    # a run's untimed line leaves NaN as the time before: nothing to compare, no jump (and no crash)
    assert jump_of(float("nan"), 1_700_000_000.0, 1_600_000_000.0) == 0.0
