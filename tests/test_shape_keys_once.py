"""Work done once per line shape or per tie, not once per run or per record, with the answers of before.

A trainer's progress lines print numbers of changing width, so each run holds many shapes and a shape comes back
in many runs: its miner key is found once (``RunShape.miner_key``). Records that tie with no record before them
are not handed to ``seconds._placed`` at all.
"""

from __future__ import annotations

import itertools
import random
import sys
from pathlib import Path

import pytest
from scan_helpers import assert_runs_mine_as_lines

from l4lite.ingest import seconds
from l4lite.ingest.files import discover
from l4lite.ingest.reader import IngestOptions, iter_job
from l4lite.ingest.shaperun import ShapeRun
from l4lite.mining import runmine
from l4lite.records import Accounting, Record


def _zoo_items(tmp_path: Path, fmt: str, lines: int) -> list:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    import format_zoo

    gen, name = format_zoo.FORMATS[fmt]
    f = tmp_path / "job" / "node001" / name
    f.parent.mkdir(parents=True)
    f.write_text("\n".join(itertools.islice(gen(0, random.Random(5)), lines)) + "\n", encoding="utf-8")
    acc = Accounting()
    return list(iter_job(discover([str(tmp_path / "job")], acc), IngestOptions(fold_shapes=True), acc, runs=True))


def test_a_shapes_miner_key_is_found_once_across_the_runs_it_is_in(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    items = _zoo_items(tmp_path, "fairseq", 6000)
    runs = [x for x in items if type(x) is ShapeRun]
    shapes = {id(run.table[x]) for run in runs for x in set(run.shapes) if run.table[x].fold_from < 0}
    per_run = sum(len({x for x in set(run.shapes) if run.table[x].fold_from < 0}) for run in runs)
    assert per_run > 2 * len(shapes)  # the premise: a shape is in several runs
    calls = [0]
    hex_key = runmine.hex_key

    def counted(key: bytes) -> bytes:
        calls[0] += 1
        return hex_key(key)

    monkeypatch.setattr(runmine, "hex_key", counted)
    assert_runs_mine_as_lines(items)  # ids, hits and the miner's state as line by line
    assert 0 < calls[0] <= len(shapes)


def test_records_that_tie_with_none_before_them_are_not_placed_one_by_one(monkeypatch: pytest.MonkeyPatch) -> None:
    base = 1_764_388_860.0  # 04:01:00
    times = [base + 0.25, base + 1, base + 1, base + 1, None, base + 2.5, base + 3, base + 3, base + 3.5, base + 3]
    texts = ["a", "04:01:01 b", "04:01:01 c", "trace", "x", "d", "04:01:03 e", "04:01:03 f", "g", "04:01:03 h"]

    def records() -> list[Record]:
        return [Record("f.log", i + 1, i + 1, "n1", None, None, "trainer", t, "INFO", s, s)
                for i, (t, s) in enumerate(zip(times, texts, strict=True))]

    want, before = [], None  # ``_placed`` of every timed record, in file order
    for t, s in zip(times, texts, strict=True):
        if t is not None:
            t = before = seconds._placed(t, before, s)
        want.append(t)
    calls = [0]
    placed = seconds._placed

    def counted(t: float, before: float | None, text: str) -> float:
        calls[0] += 1
        return placed(t, before, text)

    monkeypatch.setattr(seconds, "_placed", counted)
    got = [r.time for r in seconds.in_line_order(iter(records()))]
    assert got == want
    assert want[1] == base + 1 and want[2] == want[3] == pytest.approx(base + 1.001)  # the premise: ties moved
    assert want[7] == pytest.approx(base + 3.001) and want[9] == pytest.approx(base + 3.501)
    assert calls[0] == 4  # the records whose time equals the second of the one placed before: c, trace, f, h
