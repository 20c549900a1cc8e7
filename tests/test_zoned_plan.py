"""An ISO time with a UTC offset read from a header plan's offsets (``stamp_patterns.zoned_layout`` and
``zoned_time``): journald's and rsyslog's ``2025-11-29T04:01:02.123456+00:00 host prog[pid]: ...``, which no
window reads, so that every such line used to go through the header pattern on top of its plan."""

from __future__ import annotations

import itertools
import random
import sys
from pathlib import Path

import pytest

from l4lite.ingest.cri import cri_layout, cri_prefix
from l4lite.ingest.files import discover
from l4lite.ingest.reader import IngestOptions, iter_job
from l4lite.ingest.shape import shape_of
from l4lite.ingest.stamp_patterns import iso_layout, zoned_layout
from l4lite.ingest.timestamps import TimestampParser
from l4lite.records import Accounting

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

from test_runs import same_three_ways  # noqa: E402


def _zoned_lines(rnd: random.Random) -> list[tuple[str, bool]]:
    """Lines of ISO headers of many layouts, each with whether it has a UTC offset other than ``Z``."""
    lines = []
    for i in range(4000):
        date = f"2025-{rnd.choice((2, 11, 12)):02d}-{rnd.choice((1, 28, 29)):02d}"
        clock = f"{rnd.choice((0, 4, 23)):02d}:{rnd.choice((0, 1, 59)):02d}:{rnd.randrange(60):02d}"
        width = rnd.choice((0, 3, 6, 9))
        frac = rnd.choice(".,") + "".join(rnd.choice("0123456789") for _ in range(width)) if width else ""
        off = rnd.choice(("+00:00", "+05:30", "-08:00", "-0500", "+0200", "+03", "Z", ""))
        head = f"{date}{rnd.choice('T ')}{clock}{frac}{off}"
        line = f"[{head}] gpu-node-07 kernel: x {i}" if i % 5 == 0 else f"{head} gpu-node-07 systemd[1]: {i}"
        lines.append((line, off not in ("Z", "")))
    return lines


def test_zoned_times_are_parse_times() -> None:
    """Read from the layout learnt from the first header of its shape, a zoned time is ``parse``'s, and its
    minute is read from the parser's memo (a new minute is left to ``parse``, which learns it)."""
    rnd = random.Random(3)
    parsed, planned = TimestampParser(), TimestampParser()
    layouts: dict[bytes, tuple | None] = {}
    read = 0
    for s, zoned in _zoned_lines(rnd):
        t, end, _, kind = parsed.parse(s, 0)
        assert end
        key = shape_of(s[:end])
        if key not in layouts:
            layouts[key] = zoned_layout(s, 0, end)
            assert (layouts[key] is not None) == zoned, s
        layout = layouts[key]
        t2 = planned.zoned_time(s, layout) if layout is not None else None
        if t2 is None:
            t2 = planned.parse(s, 0)[0]
        else:
            read += 1
        assert t2 == t, s
    assert read > 2000


def test_naive_and_utc_headers_are_left_to_the_iso_layout() -> None:
    ts = TimestampParser()
    for s in ("2025-11-29 04:01:02.123 INFO x", "2025-11-29T04:01:02.123456Z host x", "[2025-11-29 04:01:02] x"):
        end = ts.parse(s, 0)[1]
        assert zoned_layout(s, 0, end) is None
        assert iso_layout(s, 0, end) is not None


def _journal_job(tmp_path: Path) -> list[str]:
    import format_zoo

    gen, name = format_zoo.FORMATS["journal"]
    for node in range(2):
        f = tmp_path / "job" / f"node{node + 1:03d}" / name
        f.parent.mkdir(parents=True)
        f.write_text("\n".join(itertools.islice(gen(node, random.Random(node)), 3000)) + "\n", encoding="utf-8")
    return [str(tmp_path / "job")]


def test_a_journal_export_reads_its_times_from_its_plans(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The header pattern runs once per new minute, not once per line (before: on all 6,000 lines), and the
    records are those of the full reader's."""
    paths = _journal_job(tmp_path)
    records, calls = _read_counting_parses(paths, monkeypatch)
    assert records == 6000
    assert calls < 1000
    assert same_three_ways(paths) == 6000


def _read_counting_parses(paths: list[str], monkeypatch: pytest.MonkeyPatch) -> tuple[int, int]:
    """(records read, calls of the full timestamp pattern) for the job at ``paths``; the pattern is restored."""
    calls = 0
    parse = TimestampParser.parse

    def counted(self: TimestampParser, s: str, pos: int = 0) -> tuple:
        nonlocal calls
        calls += 1
        return parse(self, s, pos)

    with monkeypatch.context() as m:
        m.setattr(TimestampParser, "parse", counted)
        acc = Accounting()
        records = sum(1 for _ in iter_job(discover(paths, acc), IngestOptions(), acc))
    return records, calls


def test_a_container_runtime_prefix_time_is_parse_time() -> None:
    """A CRI prefix's RFC 3339 time (its fraction trimmed of trailing zeros, ``Z`` or an offset), read from its
    parts (``cri.cri_layout``) once its minute is known, is ``parse``'s."""
    rnd = random.Random(5)
    parsed, planned = TimestampParser(), TimestampParser()
    read = 0
    for i in range(4000):
        frac = "".join(rnd.choice("0123456789") for _ in range(rnd.randrange(0, 10))).rstrip("0")
        stamp = (f"2025-11-{rnd.choice((29, 30))}T{rnd.choice((4, 5)):02d}:{rnd.choice((0, 59)):02d}:"
                 f"{rnd.randrange(60):02d}{'.' + frac if frac else ''}{rnd.choice(('Z', '+00:00', '-07:00', '+05:30'))}")
        s = f"{'  3: ' if i % 7 == 0 else ''}{stamp} {rnd.choice(('stdout', 'stderr'))} F step {i}"
        m = cri_prefix(s)
        assert m is not None
        t = parsed.parse(s, m.start())[0]
        t2 = planned.zoned_time(s, cri_layout(s, m.start()))
        if t2 is None:
            t2 = planned.parse(s, m.start())[0]
        else:
            read += 1
        assert t2 == t, s
    assert read > 3000


def test_a_pod_log_parses_its_prefixes_once_per_minute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The zoo's CRI job: the header pattern runs about once per new minute and per line the plan cannot read,
    not on every prefix (before: on all of them), and the records are the full reader's."""
    import format_zoo

    gen, name = format_zoo.FORMATS["cri"]
    f = tmp_path / "job" / "node001" / name
    f.parent.mkdir(parents=True)
    f.write_text("\n".join(itertools.islice(gen(0, random.Random(0)), 4000)) + "\n", encoding="utf-8")
    paths = [str(tmp_path / "job")]
    records, calls = _read_counting_parses(paths, monkeypatch)
    assert records == 4000
    assert calls < 2000
    assert same_three_ways(paths) == 4000
