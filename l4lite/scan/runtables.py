"""The template cells, count table and exemplars of a run of one node's timed lines, counted with numpy per
(template, time bucket) and per (template, shape) instead of one dict update per line.

``RunPath`` inherits ``RunTables``; ``tests/test_runtables.py`` compares it with the per-line tally it replaced
and ``tests/test_runs.py`` a runs scan with the per-record one.
"""

from __future__ import annotations

import math
from itertools import repeat
from operator import add
from typing import Any

import numpy as np

from l4lite.ingest.shaperun import ShapeRun
from l4lite.records import Record
from l4lite.scan.jobscan import EXEMPLAR_CAP
from l4lite.scan.points import EXEMPLAR_BUDGET


class FirstSeen:
    """The distinct values of an int64 array in the order of their first lines: ``values`` (a list),
    ``first`` (the line of each), ``counts`` and ``inverse`` (each line's place in ``values``)."""

    __slots__ = ("values", "first", "counts", "inverse")

    def __init__(self, codes: np.ndarray) -> None:
        uniq, first, inverse, counts = np.unique(codes, return_index=True, return_inverse=True, return_counts=True)
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        self.values: list[int] = uniq[order].tolist()
        self.first: np.ndarray = first[order]
        self.counts: list[int] = counts[order].tolist()
        self.inverse: np.ndarray = rank[inverse.ravel()]


def bucket_codes(values: np.ndarray, width: float) -> np.ndarray:
    """``int(t // width)`` of each time (numpy's float floor division is Python's: ``npy_divmod``)."""
    return np.floor_divide(values, width).astype(np.int64)


class RunTables:
    """``RunPath._tables_at_once`` (a mixin: the state is the scanner's)."""

    def _tables_at_once(self: Any, run: ShapeRun, cids: list[int], node: str) -> bool:
        """The template cells, the count table and the exemplars of a run of one node's timed lines, counted per
        (template, time bucket) and (template, shape) instead of per line; False (nothing done) where that could
        differ from adding the lines one by one: a count table that would coarsen in the middle, an exemplar
        budget that could run out. New keys go into every table in the order of their first lines, as line by
        line; times out of order (dmesg uptimes between a syslog file's whole seconds) take each cell's least
        and greatest time from numpy."""
        times = run.times
        n = len(times)
        if self._exemplar_count + n >= EXEMPLAR_BUDGET:
            return False
        values = run.time_values()
        cid_arr = np.fromiter(cids, np.int64, n)
        buckets = bucket_codes(values, self.bucket_seconds)
        low = int(buckets.min())
        span_b = int(buckets.max()) - low + 1
        cells_b = FirstSeen(cid_arr * span_b + (buckets - low))
        codes = np.array(cells_b.values, np.int64)
        m = len(codes)
        # the count table's keys (node, bucket, template) and their counts, put in by C loops (``map``, ``zip``):
        # a storage log's lines are each of their own (template, bucket) nearly as often as not
        keys = list(zip(repeat(node, m), (codes % span_b + low).tolist(), (codes // span_b).tolist(), strict=True))
        counts = self._counts
        old = list(map(counts.get, keys, repeat(0, m)))  # (a key in the table counts at least one line)
        if len(counts) + old.count(0) > self.max_cells:
            return False
        counts.update(zip(keys, map(add, old, cells_b.counts), strict=True))
        table = run.table
        width = len(table)
        pairs = FirstSeen(cid_arr * width + run.shape_codes())
        if n < 2 or not bool((np.diff(values) < 0).any()):
            # times in order: a (template, shape)'s first line has its least time, its last line its greatest
            last = np.zeros(len(pairs.values), np.int64)
            last[pairs.inverse] = np.arange(n)  # (numpy keeps the last of repeated indices' writes)
            least = values[pairs.first].tolist()
            most = values[last].tolist()
        else:
            lo = np.full(len(pairs.values), np.inf)
            np.minimum.at(lo, pairs.inverse, values)
            hi = np.full(len(pairs.values), -np.inf)
            np.maximum.at(hi, pairs.inverse, values)
            least, most = lo.tolist(), hi.tolist()
        cells = self._cells
        inf = math.inf
        for code, size, t0, t1 in zip(pairs.values, pairs.counts, least, most, strict=True):
            sh = table[code % width]
            ckey = (code // width, sh.level, sh.source)
            cell = cells.get(ckey)
            if cell is None:
                cell = cells[ckey] = [0, inf, -inf]
            cell[0] += size
            if t0 < cell[1]:
                cell[1] = t0
            if t1 > cell[2]:
                cell[2] = t1
        self._run_exemplars(run, cids, cid_arr, node)
        return True

    def _run_exemplars(self: Any, run: ShapeRun, cids: list[int], cid_arr: np.ndarray, node: str) -> None:
        """Each template's first lines of the run, as many as its exemplars of ``node`` have room for, added
        in line order (what one exemplar check per line adds)."""
        exemplars = self._exemplars
        wanted = {}
        for cid in dict.fromkeys(cids):
            ex = exemplars.get((cid, node))
            room = EXEMPLAR_CAP if ex is None else EXEMPLAR_CAP - len(ex)
            if room > 0:
                wanted[cid] = room
        if not wanted:
            return
        order = np.argsort(cid_arr, kind="stable")
        ordered = cid_arr[order]
        picked: list[np.ndarray] = []
        for cid, room in wanted.items():
            at = int(np.searchsorted(ordered, cid))
            end = int(np.searchsorted(ordered, cid, "right"))
            picked.append(order[at:min(at + room, end)])  # (a template's lines in line order, from the stable sort)
        lines = np.sort(np.concatenate(picked)).tolist() if len(picked) > 1 else picked[0].tolist()
        texts, keys, shapes, times, table = run.texts, run.keys, run.shapes, run.times, run.table
        cid_names = self._cid_names
        file, first, rec_node, rank, gpu = run.file, run.first, run.node, run.rank, run.gpu
        for i in lines:
            cid = cids[i]
            sh = table[shapes[i]]
            line = first + i
            s = texts[i]
            record = Record(file, line, line, rec_node, rank, gpu, sh.source, times[i], sh.level,
                            s[sh.msg_start:sh.msg_end], s, cid_names[cid], "", sh.rank_local, keys[i])
            ekey = (cid, node)
            if ekey in exemplars:
                exemplars[ekey].append(record)
            else:
                exemplars[ekey] = [record]
        self._exemplar_count += len(lines)
