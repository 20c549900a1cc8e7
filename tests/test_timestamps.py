"""Timestamp formats of GPU-cluster logs: epoch seconds (UTC), header span, level, year inference, dmesg uptimes."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from l4lite.ingest.stamp_patterns import parse_elastic_time
from l4lite.ingest.timestamps import TimestampParser


def ts(*args: int, us: int = 0) -> float:
    return datetime(*args, tzinfo=UTC).timestamp() + us / 1e6


MTIME_2025 = ts(2025, 12, 31, 12, 0, 0)


@pytest.mark.parametrize(
    ("line", "expected", "rest", "level"),
    [
        # ISO 8601 with T or space, with and without fraction and offset
        ("2026-11-29 10:11:12,345 - trainer - INFO - hi", ts(2026, 11, 29, 10, 11, 12, us=345000),
         "- trainer - INFO - hi", None),
        ("2026-11-29T10:11:12Z msg", ts(2026, 11, 29, 10, 11, 12), "msg", None),
        ("2026-11-29T10:11:12.5+02:00 msg", ts(2026, 11, 29, 8, 11, 12, us=500000), "msg", None),
        ("2025-01-21T04:41:44+0000 node1 kernel: x", ts(2025, 1, 21, 4, 41, 44), "node1 kernel: x", None),
        ("2024/09/11 17:52:18.030, 0, 00000000:4E:00.0", ts(2024, 9, 11, 17, 52, 18, us=30000), "0, 00000000:4E:00.0",
         None),
        # DeepSpeed (real: deepspeed-2946-t5-11b-sigkill-handler)
        ("[2023-03-05 06:40:25,173] [INFO] [launch.py:318:sigkill_handler] Killing subprocess 3698707",
         ts(2023, 3, 5, 6, 40, 25, us=173000), "[INFO] [launch.py:318:sigkill_handler] Killing subprocess 3698707",
         None),
        # loguru (real: dddd-trainer-36)
        ("2023-07-26 09:59:13.215 | INFO     | __main__:__init__:12 - ", ts(2023, 7, 26, 9, 59, 13, us=215000),
         "| INFO     | __main__:__init__:12 - ", None),
        # glog / c10 (real: llamafactory-6269, llamafactory-7396, milabench-269)
        ("[E1206 18:44:12.715298746 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught",
         ts(2025, 12, 6, 18, 44, 12, us=715299), "[Rank 0] Watchdog caught", "error"),
        ("[E321 02:07:08.408271257 ProcessGroupNCCL.cpp:607] [Rank 0] x", ts(2025, 3, 21, 2, 7, 8, us=408271),
         "[Rank 0] x", "error"),
        ("W0801 13:23:17.366000 139989 torch/distributed/elastic/multiprocessing/api.py:897] Sending process 1",
         ts(2025, 8, 1, 13, 23, 17, us=366000), "Sending process 1", "warning"),
        ("I1129 10:11:12.345678 12345 file.cc:123] hello", ts(2025, 11, 29, 10, 11, 12, us=345678), "hello", "info"),
        # dmesg -T (real: gpud-46, vllm-40652)
        ("[Fri Aug 30 11:43:09 2024] NVRM: Xid (PCI:0000:cb:00): 13", ts(2024, 8, 30, 11, 43, 9),
         "NVRM: Xid (PCI:0000:cb:00): 13", None),
        # syslog (real: pcluster-2701), year from the file's mtime
        ("Apr 30 14:49:44 ip-10-0-33-4 kernel: [271848.483268] Lustre: x", ts(2025, 4, 30, 14, 49, 44),
         "ip-10-0-33-4 kernel: [271848.483268] Lustre: x", None),
        ("Nov  9 10:11:12 host prog[12]: x", ts(2025, 11, 9, 10, 11, 12), "host prog[12]: x", None),
        # dmesg -x --time-format iso
        ("kern  :warn  : 2025-01-21T04:41:44,283302+00:00 mlx5_core: link down", ts(2025, 1, 21, 4, 41, 44, us=283302),
         "mlx5_core: link down", "warning"),
        ("kern  :err   : [  12.5] x", None, "x", "error"),
        # mmengine (real: mmdet-12069, xtuner-187)
        ("12/09 06:49:23 - mmengine - INFO - Saving checkpoint", ts(2025, 12, 9, 6, 49, 23),
         "- mmengine - INFO - Saving checkpoint", None),
        # NVIDIA fabric manager (real: gpud-testdata-fabricmanager)
        ("[Feb 25 2025 13:59:45] [INFO] [tid 1803] Received", ts(2025, 2, 25, 13, 59, 45), "[INFO] [tid 1803] Received",
         None),
        # vLLM and HF transformers
        ("INFO 12-06 18:44:12 llm_engine.py:1] x", ts(2025, 12, 6, 18, 44, 12), "llm_engine.py:1] x", "info"),
        ("[WARNING|trainer.py:2048] 2024-09-11 17:52:18,030 >> hello", ts(2024, 9, 11, 17, 52, 18, us=30000), "hello",
         "warning"),
        ("09/11/2024 17:52:18 - WARNING - __main__ - Process rank: 0", ts(2024, 9, 11, 17, 52, 18),
         "- WARNING - __main__ - Process rank: 0", None),
        # Ray 2.60's C++ processes (raylet.out, core worker logs) and Ray Train's JSON worker logs (real jobs 065-071)
        ("[2026-12-04 13:51:31,875 W 355 401] core_worker_shutdown_executor.cc:401: Failed to disconnect",
         ts(2026, 12, 4, 13, 51, 31, us=875000), "core_worker_shutdown_executor.cc:401: Failed to disconnect",
         "warning"),
        ("[2026-12-04 13:51:31,816 I 7 7] (gcs_server) gcs_actor_manager.cc:1013: Tried to destroy actor",
         ts(2026, 12, 4, 13, 51, 31, us=816000), "(gcs_server) gcs_actor_manager.cc:1013: Tried to destroy actor",
         "info"),
        ('{"asctime": "2026-12-04 13:55:14,613", "levelname": "INFO", "message": "step 12/40 | loss 3.9771", '
         '"filename": "train_ray.py"}', ts(2026, 12, 4, 13, 55, 14, us=613000),
         'step 12/40 | loss 3.9771", "filename": "train_ray.py"}', "info"),
    ],
)
def test_formats(line: str, expected: float | None, rest: str, level: str | None) -> None:
    t, end, lvl, kind = TimestampParser(mtime=MTIME_2025).parse(line)
    assert kind
    if expected is None:
        assert t is None
    else:
        assert t == pytest.approx(expected, abs=1e-6)
    assert line[end:] == rest
    assert lvl == level


# an impossible date (``Feb 30``, ``2024-13-45``) is a header without a time: see the test of headers whose date
# is no date below
@pytest.mark.parametrize("line", ["hello world", "", "[E ProcessGroupNCCL.cpp:915] x", "12345 apples",
                                  "[rank0]: x", "[INFO] x",
                                  "2024-01-01 10:00:00abc", "Epoch 0: 3%"])
def test_no_timestamp(line: str) -> None:
    assert TimestampParser(year=2025).parse(line) == (None, 0, None, "")


def test_parse_at_offset() -> None:
    line = "3: [rank3]:[E1206 18:44:12.715298746 ProcessGroupNCCL.cpp:607] msg"
    t, end, level, _ = TimestampParser(year=2024).parse(line, line.index("[E"))
    assert t == pytest.approx(ts(2024, 12, 6, 18, 44, 12, us=715299), abs=1e-6)
    assert line[end:] == "msg" and level == "error"


def test_year_from_explicit_option_and_from_full_timestamps() -> None:
    p = TimestampParser(year=2019)
    assert p.parse("Nov 29 10:11:12 h x")[0] == ts(2019, 11, 29, 10, 11, 12)
    p = TimestampParser(year=2021)
    p.parse("2022-11-01 00:00:00 full year first")
    assert p.parse("Nov 29 10:11:12 h x")[0] == ts(2022, 11, 29, 10, 11, 12)
    # a date far from the job's year (a wrong clock, a line dated 2099) does not move the year of the others
    p = TimestampParser(year=2019)
    assert p.parse("2099-11-01 00:00:00 wild clock")[0] == ts(2099, 11, 1, 0, 0, 0)
    assert p.parse("Nov 29 10:11:12 h x")[0] == ts(2019, 11, 29, 10, 11, 12)
    # without a job year, the file's own dated lines give it
    p = TimestampParser()
    p.parse("2022-11-01 00:00:00 full year first")
    assert p.parse("Nov 29 10:11:12 h x")[0] == ts(2022, 11, 29, 10, 11, 12)


def test_year_before_mtime_when_date_is_later_in_the_year() -> None:
    # a file written on 2026-01-02 that starts in December belongs to 2025
    p = TimestampParser(mtime=ts(2026, 1, 2, 0, 0, 0))
    assert p.parse("Dec 31 23:59:59 h x")[0] == ts(2025, 12, 31, 23, 59, 59)
    assert p.parse("Jan  1 00:00:01 h x")[0] == ts(2026, 1, 1, 0, 0, 1)  # roll-over at New Year


def test_glog_roll_over_new_year() -> None:
    p = TimestampParser(year=2024)
    assert p.parse("E1231 23:59:59.000000 1 a.cc:1] x")[0] == ts(2024, 12, 31, 23, 59, 59)
    assert p.parse("E0101 00:00:01.000000 1 a.cc:1] x")[0] == ts(2025, 1, 1, 0, 0, 1)


def test_cache_gives_the_same_second_with_different_fractions() -> None:
    p = TimestampParser()
    a = p.parse("2024-05-01 10:00:01,100 x")[0]
    b = p.parse("2024-05-01 10:00:01,900 x")[0]
    assert b - a == pytest.approx(0.8)


def test_dmesg_uptime_unanchored_then_anchored() -> None:
    p = TimestampParser(year=2021)
    t, end, _, kind = p.parse("[271848.483268] Lustre: x")
    assert (t, kind) == (None, "uptime") and end == len("[271848.483268] ")
    wall = ts(2021, 4, 30, 14, 49, 44)
    p.anchor(wall, 271848.483268)
    t, _, _, _ = p.parse("[271850.483268] later")
    assert t == pytest.approx(wall + 2.0)
    # the uptime restarting means a reboot: the anchor no longer holds
    t, _, _, _ = p.parse("[    1.000000] Linux version")
    assert t is None


def test_absurd_uptimes_do_not_raise() -> None:
    p = TimestampParser()
    assert p.parse("[1.123456789012345678901234] x")[3] == "uptime"
    assert p.parse("[99999999999999999999999.5] x")[3] == "uptime"


def test_dmesg_delta_has_no_time() -> None:
    t, end, _, kind = TimestampParser().parse("[  +0.000316] pcieport 0000:00:03.0: AER: Corrected error")
    assert t is None and kind == "delta"
    assert end == len("[  +0.000316] ")


def test_elastic_time() -> None:
    assert parse_elastic_time("2025-05-21_15:43:03") == ts(2025, 5, 21, 15, 43, 3)
    assert parse_elastic_time("<N/A>") is None
    assert parse_elastic_time("2025-02-30_15:43:03") is None


def test_planned_syslog_and_uptime_times_equal_parse() -> None:
    """``planned_time`` (a line of a header shape ``parse`` read before) gives ``parse``'s time and leaves the
    parser in the same state, over months out of order, New Year both ways, reboots and new seconds of known
    minutes; where it cannot it says so and ``parse`` reads the line."""
    import random

    from l4lite.ingest.stamp_patterns import MONTHS
    from l4lite.ingest.timestamps import TimestampParser

    names = list(MONTHS)
    rnd = random.Random(4)
    lines = []
    month, day, up, h, mi = 11, 28, 100.0, 23, 59
    for _ in range(20_000):
        r = rnd.random()
        if r < 0.002:
            month = rnd.choice((1, 12, 6, month % 12 + 1))
        elif r < 0.004:
            up = rnd.uniform(1, 50)  # a reboot
        day = min(28, max(1, day + rnd.choice((0, 0, 0, 1, -1))))
        if rnd.random() < 0.1:
            h, mi = rnd.randrange(24), rnd.choice((0, 1, 59))
        sec = rnd.randrange(60)
        up += rnd.uniform(0, 3)
        if rnd.random() < 0.5:
            lines.append((f"{names[month - 1]} {day:2d} {h:02d}:{mi:02d}:{sec:02d} host kernel: x", "syslog"))
        else:
            lines.append((f"[{up:12.6f}] x", "uptime"))
    ref = TimestampParser(mtime=1_764_388_862.0)
    fast = TimestampParser(mtime=1_764_388_862.0)
    planned = 0
    for s, kind in lines:
        t, end, _, k = ref.parse(s, 0)
        assert k == kind
        known, t2 = fast.planned_time(s, 0, end, kind)
        planned += known
        if not known:
            t2 = fast.parse(s, 0)[0]
        assert t2 == t, s
        assert (fast._year, fast._last_month, fast._cache, fast.boot_index, fast._last_uptime) == \
            (ref._year, ref._last_month, ref._cache, ref.boot_index, ref._last_uptime)
    assert planned > 0.8 * len(lines)


def test_a_colon_after_the_time_ends_the_header() -> None:
    """TensorFlow's and absl's C++ logs and Composer put ": " after the time (real excerpts in
    ``benchmarks/unread_times.py``); "HH:MM:SS:mmm" is no such time."""
    p = TimestampParser(2025)
    line = "2018-12-14 01:13:48.307208: W tensorflow/core/platform/s3/aws_logging.cc:57] Request failed"
    t, end, _, kind = p.parse(line)
    assert (t, line[end:end + 1], kind) == (1544750028.307208, "W", "iso")
    t, end, _, kind = p.parse("2019-06-02T16:13:44.884Z: [1,12]<stdout>:x")
    assert (t, end, kind) == (1559492024.884, 26, "rfc3339")
    assert p.parse("2024-01-01 10:00:00:123 x")[1] == 0


def test_an_offset_after_a_time_of_the_same_second_is_read() -> None:
    """A JSON field's naive time, then the same second with an offset: the offset counts (not the line before's)."""
    p = TimestampParser(2025)
    assert p.parse('2025-01-01T10:00:00.500", "x": 1', 0)[0] == 1735725600.5
    assert p.parse('2025-01-01T10:00:00.500+02:00", "x": 1', 0)[0] == 1735725600.5 - 7200


def test_a_12_hour_clock_reads_its_am_or_pm() -> None:
    """The logging docs' ``datefmt='%m/%d/%Y %I:%M:%S %p'``: 02:38:23 PM is 14:38:23, 12 AM midnight, 12 PM noon."""
    p = TimestampParser()
    day = 1796256000.0  # 2026-12-03T00:00:00Z
    assert p.parse("12/03/2026 02:38:23 PM INFO step 7")[0] == day + 14 * 3600 + 38 * 60 + 23
    assert p.parse("12/03/2026 02:38:23 AM INFO step 7")[0] == day + 2 * 3600 + 38 * 60 + 23
    assert p.parse("12/03/2026 12:05:00 AM x")[0] == day + 300
    t, end, _, _ = p.parse("12/03/2026 12:05:00 PM x")
    assert (t, "12/03/2026 12:05:00 PM x"[end:]) == (day + 12 * 3600 + 300, "x")
    assert p.parse("12/03/2026 14:38:23 x")[0] == day + 14 * 3600 + 38 * 60 + 23


def test_a_header_whose_date_is_no_date_stays_a_header_without_a_time() -> None:
    """An unset clock's ``0000-00-00`` or a corrupt month ends the header as a real date would, with no time, and
    is counted; the next good line reads as ever."""
    p = TimestampParser(2026)
    for line in ("0000-00-00 00:00:00,000 INFO heartbeat", "2026-13-45 25:61:07,000 INFO heartbeat",
                 "Feb 30 10:00:00 node7 kernel: x"):
        t, end, _, kind = p.parse(line)
        assert t is None and end > 0 and kind in ("iso", "syslog")
    assert (p.undated, p.undated_text) == (3, "0000-00-00 00:00:00,000")
    assert p.parse("2026-12-03 00:00:01,000 INFO ok")[0] == 1796256001.0
    assert p.parse("no header here") == (None, 0, None, "")


def test_a_line_dated_with_no_date_inside_a_traceback_is_kept_and_counted(tmp_path: Path) -> None:
    """Two lines of impossible dates between a traceback's frames: the traceback stays one record, each bad line
    is a record of its own timed as the line before, and the file's warning counts them."""
    from l4lite.ingest.reader import IngestOptions, iter_records
    from l4lite.records import Accounting

    (tmp_path / "n1").mkdir()
    lines = [f"2026-12-03 14:38:{i:02d},100 INFO step {i}" for i in range(5)]
    lines += ["Traceback (most recent call last):", '  File "train.py", line 3, in <module>',
              "0000-00-00 00:00:00,000 INFO heartbeat", "2026-13-45 25:61:07,000 INFO heartbeat", "    main()",
              "RuntimeError: boom", "2026-12-03 14:39:00,100 INFO done"]
    (tmp_path / "n1" / "train.log").write_text("\n".join(lines) + "\n")
    acc = Accounting()
    recs = list(iter_records([str(tmp_path)], IngestOptions(), acc))
    tb = next(r for r in recs if r.text.startswith("Traceback"))
    assert tb.text.endswith("RuntimeError: boom")
    bad = [r for r in recs if "heartbeat" in r.text]
    assert [(r.line, r.time) for r in bad] == [(8, recs[4].time), (9, recs[4].time)]
    assert acc.balanced and any("2 line(s) dated with no real date" in w for w in acc.warnings)


def test_a_date_without_a_year_takes_the_year_nearest_the_jobs_time() -> None:
    """Around New Year (the job's dated lines' middle at midnight), a kernel log of January lines alone is of the
    next year and one of December of this one, whatever the job's voted year or the file's write time."""
    from l4lite.ingest.timestamps import year_near

    midnight = datetime(2027, 1, 1, tzinfo=UTC).timestamp()
    assert (year_near(midnight, 1), year_near(midnight, 12), year_near(midnight, 6)) == (2027, 2026, 2027)
    written_later = datetime(2027, 12, 10, tzinfo=UTC).timestamp()  # copied a year after, without its times
    p = TimestampParser(2026, written_later, 2026, around=midnight - 30)
    assert p.parse("Jan  1 00:00:03 node7 kernel: x")[0] == midnight + 3
    assert p.parse("I1231 23:59:58.000000 42 train.py:1] x")[0] == midnight - 2
    assert p.parse("Jan  1 00:00:04 node7 kernel: x")[0] == midnight + 4


def test_yearless_files_beside_dated_ones_read_in_the_dated_files_year(tmp_path: Path) -> None:
    """A node's syslog-stamped file written on January 1 beside ISO files of December 31: one job span of
    seconds, not a year (each file guessing its own year from its lines and write time put it a year off)."""
    import os

    from l4lite.ingest.context import build_context
    from l4lite.ingest.files import discover
    from l4lite.records import Accounting

    for node in ("a", "b"):
        (tmp_path / node).mkdir()
    (tmp_path / "a" / "train.log").write_text("".join(f"2026-12-31 23:59:{s:02d},000 INFO step {s}\n"
                                                      for s in range(50, 60)))
    (tmp_path / "b" / "kern.log").write_text("".join(f"Jan  1 00:00:{s:02d} b kernel: eth0 up {s}\n"
                                                     for s in range(5)))
    jan = datetime(2027, 1, 1, 0, 1, tzinfo=UTC).timestamp()
    for p in tmp_path.rglob("*.log"):
        os.utime(p, (jan, jan))
    ctx = build_context(discover([str(tmp_path)], Accounting()).files)
    assert ctx.year == 2026 and ctx.end is not None and ctx.start is not None
    assert ctx.end - ctx.start < 60
    from l4lite.ingest.reader import IngestOptions, iter_records

    kern = [r.time for r in iter_records([str(tmp_path)], IngestOptions(), Accounting()) if "eth0" in r.text]
    assert kern == [jan - 60 + s for s in range(5)]
