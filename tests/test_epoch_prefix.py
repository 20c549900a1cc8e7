"""Epoch seconds first on every line (moreutils ``ts '%.s'``, ``[1733558400] ...``): read as the lines' time
where a file opens with them (``ingest.timespots.EPOCH_SPOT``), never from a number that opens one later line."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from pathlib import Path

from test_runs import same_three_ways

from l4lite.ingest.reader import IngestOptions, iter_records
from l4lite.ingest.timespots import EPOCH_SPOT, learn_spot
from l4lite.ingest.timestamps import TimestampParser
from l4lite.records import Accounting

T0 = datetime(2024, 12, 7, 8, 0, 0, tzinfo=UTC).timestamp()


def test_a_file_that_opens_with_epoch_seconds_has_the_epoch_spot() -> None:
    assert learn_spot(["1733558400.123456 INFO step 1", "1733558401.000001 INFO step 2"]) == EPOCH_SPOT
    assert learn_spot(["[1733558400] INFO step 1"]) == EPOCH_SPOT
    assert learn_spot(["[1733558400.5] worker up"]) == EPOCH_SPOT
    assert learn_spot(["[rank0]: 1733558400.123 INFO step 1"]) == EPOCH_SPOT  # after a stream prefix
    # a number that opens a later line, a bare count without a fraction, a line that is not the file's first
    assert learn_spot(["starting", "1733558400.123 tokens seen"]) == ""
    assert learn_spot(["1733558400 tokens seen"]) == ""
    assert learn_spot(["1733558400.123 INFO step 1"], opening=False) == ""
    # an ISO header first is the line's time, whatever follows it
    assert learn_spot(["2024-12-07 08:00:00,000 1733558400.123 INFO x"]) == ""


def test_a_bracketed_epoch_is_no_dmesg_uptime() -> None:
    p = TimestampParser(year=2024)
    assert p.parse("[1733558400.123456] INFO step 1")[1] == 0  # no uptime of 55 years
    t, end, _, kind = p.parse("[  950.818166] NVRM: Xid 79")
    assert kind == "uptime" and end == len("[  950.818166] ")


def _lines(rnd: random.Random, bracket: bool) -> list[str]:
    out = []
    t = T0
    for i in range(3000):
        t += rnd.choice((0.3, 1.1, 7.9))
        head = f"[{int(t)}]" if bracket else f"{t:.6f}"
        if i % 40 == 39:
            out.append(f"{head} ERROR step {i} failed: CUDA error: an illegal memory access was encountered")
        else:
            out.append(f"{head} INFO step {i} loss {rnd.uniform(0, 12):.4f} 1733558400 tokens")
    return out


def test_epoch_prefixed_files_get_their_times_by_every_reader(tmp_path: Path) -> None:
    for k, bracket in enumerate((False, True)):
        f = tmp_path / "job" / "node003" / f"ts{k}.log"
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text("\n".join(_lines(random.Random(5 + k), bracket)) + "\n", encoding="utf-8")
    paths = [str(tmp_path / "job")]
    assert same_three_ways(paths) == 6000
    records = list(iter_records(paths, IngestOptions(), Accounting()))
    assert len(records) == 6000
    for r in records:
        head = r.text.split(" ", 1)[0].strip("[]")
        assert r.time is not None and abs(r.time - float(head)) < 1e-3, r.text
        assert r.level == ("error" if "ERROR" in r.text else "info"), r.text
        assert T0 < r.time < T0 + 86400


def test_a_number_that_opens_one_line_of_a_timed_file_is_not_its_time(tmp_path: Path) -> None:
    f = tmp_path / "job" / "node003" / "train.log"
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text("2024-12-07 08:00:00,000 INFO start\n1709294400.5 samples read\n2024-12-07 08:00:05,000 INFO step 1\n",
                 encoding="utf-8")
    times = [r.time for r in iter_records([str(tmp_path / "job")], IngestOptions(), Accounting())]
    assert times and all(t is not None and T0 <= t <= T0 + 5 for t in times)
