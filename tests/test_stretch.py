"""``ingest.stretch.known_stretch`` against the per-line loop it replaced in ``RunReading._block``."""

from __future__ import annotations

import random

import numpy as np
import pytest

from l4lite.ingest.blocks import BlockPlan, RunShape, TableRows
from l4lite.ingest.stretch import ShapeFlags, known_stretch


def _shape(clocked: bool, ties: bool) -> RunShape:
    return RunShape(b"k", -1, -1, 0, 0, 1, None, "s", None, ties=ties, clock_at=0 if clocked else -1)


def _by_line(block: BlockPlan, start: int, stop_at_clock: bool) -> tuple[int, bool, list[int], float | None]:
    """The loop ``_block`` ran over a window's lines."""
    clocked, ties, last = False, [], None
    j = start
    while j < len(block.shape_list) and block.shape_list[j] >= 0:
        sh = block.table[block.shape_list[j]]
        if sh.clocked:
            if stop_at_clock:
                break
            clocked = True
        if sh.ties:
            ties.append(j)
        t = block.time_list[j]
        if t == t:
            last = t
        j += 1
    return j, clocked, ties, last


@pytest.mark.parametrize("seed", range(40))
def test_known_stretch_is_the_per_line_loop(seed: int) -> None:
    rng = random.Random(seed)
    table = [_shape(rng.random() < 0.2, rng.random() < 0.2) for _ in range(6)]
    n = rng.choice([5, 40, 300])
    gaps = rng.choice([0.0, 0.01, 0.2])
    shapes = np.array([-1 if rng.random() < gaps else rng.randrange(len(table)) for _ in range(n)], np.int64)
    times = np.array([np.nan if rng.random() < 0.3 else float(k) for k in range(n)])
    block = BlockPlan([""] * n, [b""] * n, b"", np.zeros(n + 1, np.int64), table, shapes, times, [], [])
    flags = ShapeFlags()
    for start in np.flatnonzero(shapes >= 0)[:20].tolist():
        for stop in (False, True):
            got = known_stretch(block, start, stop, flags)
            assert (got.end, got.clocked, got.ties, got.last) == _by_line(block, start, stop)


def test_flags_follow_a_growing_table() -> None:
    table = [_shape(False, False)]
    flags = ShapeFlags()
    assert flags.of(table).clocked.tolist() == [False]
    table.append(_shape(True, True))
    assert flags.of(table).clocked.tolist() == [False, True]
    assert flags.of(table).ties.tolist() == [False, True]
    other = [_shape(True, False)]
    assert flags.of(other).clocked.tolist() == [True]


def test_table_rows_grow_as_worked_out_afresh() -> None:
    """``blocks.TableRows`` of a table grown shape by shape equals the rows of the whole table worked out at once
    (the minute forms numbered in the table's order either way), and a new table starts afresh."""
    rng = random.Random(7)
    keys = [b"2024-01-01 00:00:00 a", b"Jan 01 00:00:00 x b", b"2024/01/01 00:00:00 c"]
    table: list[RunShape] = []
    grown = TableRows()
    for _ in range(30):
        table.append(RunShape(rng.choice(keys), rng.choice([-1, 0]), -1, 0, 0, 1, None, "s", None))
        rows = grown.of(table)
        assert rows.tolist() == TableRows().of(list(table)).tolist()
    assert rows.shape == (30, 4) and set(rows[:, 3].tolist()) <= {0, 1, 2, 3, 4, 5}
    other = table[:3]
    assert grown.of(other).tolist() == TableRows().of(other).tolist()
