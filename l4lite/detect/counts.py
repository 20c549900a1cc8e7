"""Template count tables as numpy arrays, for the isolation forests and the heatmap, without pandas.

The counts were first built as pandas frames (kept in ``tests/frames_reference.py`` as the reference); importing pandas costs a third of a second of CPU,
a third of a small job's whole analysis, for a few pivots and medians over tables of tens to hundreds of rows.
``CountTable`` holds the rows, columns and counts of such a frame in the same order (``node_table`` as
``node_frame``, ``window_table`` as ``window_frame``, ``cell_table`` as ``count_frame``), and the few frame
operations the forests use are written here over arrays with the same results: medians and maxima are exact,
and ``descending`` orders ties as pandas' ``sort_values(ascending=False)`` does (``tests/test_counts.py``
compares both on random tables).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

import numpy as np

from l4lite.detect.windows import MAX_FILLED_WINDOWS, auto_window
from l4lite.scan.jobscan import JobScan


@dataclass(frozen=True)
class CountTable:
    """Counts per row (a node, a window start, or a (node, window start) pair) x column (a template id)."""

    rows: list[Any]
    cols: list[str]
    values: np.ndarray  # int64, len(rows) x len(cols)

    @property
    def empty(self) -> bool:
        return not self.rows or not self.cols

    def take(self, cols: list[str]) -> CountTable:
        """The table of columns ``cols`` (names of this table's), in that order."""
        at = {c: k for k, c in enumerate(self.cols)}
        return CountTable(self.rows, list(cols), self.values[:, [at[c] for c in cols]])


def _empty() -> CountTable:
    return CountTable([], [], np.zeros((0, 0), np.int64))


def node_table(scan: JobScan) -> CountTable:
    """``node_frame`` as a table: counts per node (sorted) x template id (in the order a frame built from
    the per-node dicts has them: first seen, node by node)."""
    data: dict[str, dict[str, int]] = {}
    for tid, stat in scan.templates.items():
        for node, n in stat.nodes.items():
            data.setdefault(node, {})[tid] = n
    if not data:
        return _empty()
    cols: dict[str, int] = {}
    for row in data.values():
        for tid in row:
            cols.setdefault(tid, len(cols))
    rows = sorted(data)
    values = np.zeros((len(rows), len(cols)), np.int64)
    for r, node in enumerate(rows):
        row = data[node]
        values[r, [cols[t] for t in row]] = list(row.values())
    return CountTable(rows, list(cols), values)


def _timed(scan: JobScan, window: float) -> tuple[list[str], np.ndarray, list[str], np.ndarray]:
    """``windows._rows`` without its untimed rows: (nodes, window starts, template ids, counts)."""
    keys = list(scan.counts)
    nodes = list(map(itemgetter(0), keys))  # the keys' parts by maps over C functions, no Python step a cell
    buckets = np.fromiter(map(itemgetter(1), keys), dtype=np.int64, count=len(keys))
    tids = list(map(itemgetter(2), keys))
    counts = np.fromiter(scan.counts.values(), dtype=np.int64, count=len(keys))
    starts = np.floor(buckets * scan.bucket_seconds / window) * window
    starts = np.where(buckets < 0, np.nan, starts)
    begin = scan.job_start()
    if begin is not None:
        starts = np.where(starts < math.floor(begin / window) * window - window, np.nan, starts)
    keep = ~np.isnan(starts)
    if keep.all():
        return nodes, starts, tids, counts
    rows = np.flatnonzero(keep).tolist()
    return [nodes[r] for r in rows], starts[keep], [tids[r] for r in rows], counts[keep]


def _summed(rows: list[Any], row_of: Any, tids: list[str], counts: np.ndarray) -> CountTable:
    """The table of ``rows`` (sorted) with each count added at its row (``row_of``) and its template's column
    (columns sorted)."""
    cols = sorted(set(tids))
    c_at = {k: i for i, k in enumerate(cols)}
    col_of = np.fromiter(map(c_at.__getitem__, tids), np.int64, count=len(tids))
    # summed by bincount (float sums of counts are exact far beyond any log's line count), not ``np.add.at``,
    # which takes several times as long
    flat = np.bincount(np.asarray(row_of, np.int64) * len(cols) + col_of, weights=counts,
                       minlength=len(rows) * len(cols))
    return CountTable(rows, cols, flat.astype(np.int64).reshape(len(rows), len(cols)))


def _start_pivot(starts: np.ndarray, tids: list[str], counts: np.ndarray) -> CountTable:
    """``_pivot`` of window starts (no NaN): the sorted distinct starts and each cell's row from ``np.unique``,
    as ``sorted(set(...))`` and a dict would give them, without a Python step per cell (a long job's table
    holds a hundred thousand cells)."""
    rows, row_of = np.unique(starts, return_inverse=True)
    return _summed(rows.tolist(), row_of.reshape(-1), tids, counts)


def _cell_pivot(nodes: list[str], starts: np.ndarray, tids: list[str], counts: np.ndarray) -> CountTable:
    """``_pivot`` of (node, window start) pairs (no NaN start): rows sorted by node, then start, as
    ``sorted(set(zip(nodes, starts)))`` sorts them, found with a lexsort of the nodes' ranks and the starts."""
    names = sorted(set(nodes))
    n_at = {k: i for i, k in enumerate(names)}
    code = np.fromiter(map(n_at.__getitem__, nodes), np.int64, count=len(nodes))
    order = np.lexsort((starts, code))
    c, s = code[order], starts[order]
    new = np.ones(len(order), bool)
    new[1:] = (c[1:] != c[:-1]) | (s[1:] != s[:-1])
    row_of = np.empty(len(order), np.int64)
    row_of[order] = np.cumsum(new) - 1
    rows = list(zip(map(names.__getitem__, c[new].tolist()), s[new].tolist(), strict=True))
    return _summed(rows, row_of, tids, counts)


def window_table(scan: JobScan, window_seconds: float | None = None) -> CountTable:
    """``window_frame`` as a table: counts per window start (empty windows filled in) x template id."""
    window = auto_window(scan, window_seconds)
    if not scan.counts:
        return _empty()
    _, starts, tids, counts = _timed(scan, window)
    if not len(starts):
        return _empty()
    table = _start_pivot(starts, tids, counts)
    lo, hi = table.rows[0], table.rows[-1]
    if (hi - lo) / window <= MAX_FILLED_WINDOWS:  # ``reindex``: rows matched by exact value, others zero
        full = np.arange(lo, hi + window / 2, window)
        at = {w: i for i, w in enumerate(table.rows)}
        values = np.zeros((len(full), len(table.cols)), np.int64)
        for k, w in enumerate(full.tolist()):
            i = at.get(w)
            if i is not None:
                values[k] = table.values[i]
        table = CountTable(full.tolist(), table.cols, values)
    return table


def cell_table(scan: JobScan, window_seconds: float | None = None) -> CountTable:
    """``count_frame`` as a table: counts per (node, window start), sorted, x template id."""
    window = auto_window(scan, window_seconds)
    if not scan.counts:
        return _empty()
    nodes, starts, tids, counts = _timed(scan, window)
    if not nodes:
        return _empty()
    return _cell_pivot(nodes, starts, tids, counts)


def descending(values: np.ndarray) -> np.ndarray:
    """The order ``Series.sort_values(ascending=False)`` gives ``values`` (no NaN): quicksort of the reversed
    values, reversed, so that ties come out as pandas puts them."""
    idx = np.arange(len(values))[::-1]
    return idx[values[::-1].argsort(kind="quicksort")][::-1]


def column_std(x: np.ndarray) -> np.ndarray:
    """Each column's standard deviation (ddof 1) as a frame's ``std(axis=0)`` works it out."""
    v = np.ascontiguousarray(x.T, dtype=np.float64)
    n = v.shape[1]
    avg = v.sum(axis=1, dtype=np.float64) / n
    sqr = (avg[:, None] - v) ** 2
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.sqrt(sqr.sum(axis=1, dtype=np.float64) / (n - 1)) if n > 1 else np.full(len(v), np.nan)
