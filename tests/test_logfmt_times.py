"""Times and levels of formats read by no header plan of their own: logfmt's ``time=``/``ts=`` key (a file's time
spot, ``ingest.timespots``) and a console logger's ``Nov 29, 2025 04:06:23`` date behind its colour codes."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from pathlib import Path

from test_runs import same_three_ways

from l4lite.ingest.reader import IngestOptions, iter_records
from l4lite.ingest.timespots import learn_spot
from l4lite.ingest.timestamps import TimestampParser
from l4lite.records import Accounting


def test_logfmt_time_keys_are_learnt_per_file_and_quoted_times_are_not() -> None:
    assert learn_spot(['time="2022-09-14T11:35:13Z" level=error msg="runc create failed"']) == "time="
    assert learn_spot(["level=info ts=2022-09-14T11:35:13.123Z caller=main.go:1 msg=start"]) == "ts="
    assert learn_spot(['ts=1732852924.849 level=warn msg="slow"']) == "ts="
    # a logfmt record quoted in another line's message, and a metric named like a key: no spot
    assert learn_spot(['Warning  Failed  113s   kubelet  Error: container create failed: time="2022-09-14T11:35:13Z" '
                       'level=error msg="runc"']) == ""
    assert learn_spot(["step=5 loss=1.2 runtime=123456789012"]) == ""


def test_month_name_date_with_a_comma_is_a_header() -> None:
    p = TimestampParser(year=2025)
    t, end, _, kind = p.parse("Nov 29, 2025 04:06:23 INFO: trainer step 1")
    assert t == datetime(2025, 11, 29, 4, 6, 23, tzinfo=UTC).timestamp() and kind
    assert "Nov 29, 2025 04:06:23 INFO: trainer step 1"[end:] == "INFO: trainer step 1"
    t, end, _, _ = p.parse("Oct 10, 2019 7:22:57 PM org.example.Main run")  # java.util.logging
    assert t == datetime(2019, 10, 10, 19, 22, 57, tzinfo=UTC).timestamp()


def _logfmt(rnd: random.Random) -> list[str]:
    out = []
    t = datetime(2025, 11, 29, 4, 1, 2, tzinfo=UTC).timestamp()
    for i in range(3000):
        t += rnd.choice((0.3, 1.1, 7.9, 61.0))
        stamp = datetime.fromtimestamp(t + 3 * 3600, UTC).strftime("%Y-%m-%dT%H:%M:%S") + f".{i % 1000:03d}+03:00"
        level = "warn" if i % 25 == 0 else "info"
        out.append(f'time={stamp} level={level} msg="train step" step={i} loss={rnd.uniform(0, 12):.5f}')
    return out


def _ansi(rnd: random.Random) -> list[str]:
    out = []
    t = datetime(2025, 11, 29, 4, 1, 2, tzinfo=UTC).timestamp()
    for i in range(3000):
        t += rnd.choice((0.3, 1.1, 7.9, 61.0))
        stamp = datetime.fromtimestamp(t, UTC).strftime("%b %d, %Y %H:%M:%S")
        word = "\x1b[33mWARNING:\x1b[0m" if i % 25 == 0 else "\x1b[34mINFO:\x1b[0m"
        out.append(f"{stamp} {word} \x1b[36mtrainer\x1b[0m step {i} loss \x1b[1m{rnd.uniform(0, 12):.4f}\x1b[0m")
    return out


def test_logfmt_and_coloured_lines_get_their_time_and_level_by_every_reader(tmp_path: Path) -> None:
    for k, (name, make) in enumerate((("logfmt", _logfmt), ("ansi", _ansi))):
        f = tmp_path / "job" / "node003" / f"{name}.log"
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text("\n".join(make(random.Random(3 + k))) + "\n", encoding="utf-8")
    paths = [str(tmp_path / "job")]
    assert same_three_ways(paths) == 6000
    records = [(r.time, r.level, r.text) for r in iter_records(paths, IngestOptions(), Accounting())]
    assert all(t is not None for t, _, _ in records)
    for _, level, text in records:
        assert level == ("warning" if ("level=warn" in text or "WARNING:" in text) else "info"), text
    lf = [(t, text) for t, _, text in records if text.startswith("time=")]
    assert len(lf) == 3000 and all(abs(t - datetime.fromisoformat(text[5:34]).timestamp()) < 1e-3 for t, text in lf)
