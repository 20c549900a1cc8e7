"""How far a run reaches in a window: the lines from one on whose run shapes the window already gave, at once.

``RunReading._block`` looked at each line of a window in turn (its shape known? clocked? an NCCL line that ties a
rank to its host? its time?) before a run was cut. A window of kernel or storage lines is almost all such lines,
so the stretch is found from the window's arrays: where its next line without a shape is, the shapes' flags per
line by one look-up each, the last time by one search. Short stretches are looked at line by line (numpy would
cost more there).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from l4lite.ingest.blocks import BlockPlan, RunShape

_BY_LINE = 32  # lines looked at one by one before the rest of a stretch is looked at with numpy


class Stretch(NamedTuple):
    """Lines ``start:end`` of a window, each of a run shape the window gave (``BlockPlan.shape_list``)."""

    end: int
    clocked: bool  # a line of a syslog or dmesg clock among them (``RunShape.clocked``)
    ties: list[int]  # the lines of shapes that tie a rank to the host (``RunShape.ties``), in order
    last: float | None  # the last time among them, None without one


class ShapeFlags:
    """``clocked`` and ``ties`` of each shape of a table, as arrays; worked out again when the table grew."""

    def __init__(self) -> None:
        self.table: list[RunShape] | None = None
        self.size = -1
        self.clocked = np.zeros(0, bool)
        self.ties = np.zeros(0, bool)

    def of(self, table: list[RunShape]) -> ShapeFlags:
        """The flags of ``table``'s shapes: those of the shapes appended since the last call are added (a run
        table is only appended to, or replaced by a new one)."""
        if table is not self.table or len(table) < self.size:
            self.table, self.size = table, 0
            self.clocked = np.zeros(0, bool)
            self.ties = np.zeros(0, bool)
        if len(table) != self.size:
            new = table[self.size:]
            self.clocked = np.concatenate([self.clocked, np.fromiter((sh.clocked for sh in new), bool, len(new))])
            self.ties = np.concatenate([self.ties, np.fromiter((sh.ties for sh in new), bool, len(new))])
            self.size = len(table)
        return self


def known_stretch(block: BlockPlan, start: int, stop_at_clock: bool, flags: ShapeFlags) -> Stretch:
    """The lines from ``start`` on of run shapes the window gave, up to the first without one (or, with
    ``stop_at_clock``, up to the first clocked one); ``start`` itself is of a run shape."""
    shape_list, time_list, table = block.shape_list, block.time_list, block.table
    n = len(shape_list)
    clocked = False
    ties: list[int] = []
    last = None
    j = start
    stop = min(n, start + _BY_LINE)
    while j < stop:
        x = shape_list[j]
        if x < 0:
            return Stretch(j, clocked, ties, last)
        sh = table[x]
        if sh.clocked:
            if stop_at_clock:
                return Stretch(j, clocked, ties, last)
            clocked = True
        if sh.ties:
            ties.append(j)
        t = time_list[j]
        if t == t:
            last = t
        j += 1
    if j == n:
        return Stretch(j, clocked, ties, last)
    shapes = block.shape_array[j:]
    negative = shapes < 0
    end = int(negative.argmax()) if negative.any() else len(shapes)
    shapes = shapes[:end]
    f = flags.of(table)
    on_clock = f.clocked[shapes]
    if stop_at_clock and on_clock.any():
        end = int(on_clock.argmax())
        shapes = shapes[:end]
        on_clock = on_clock[:end]
    if on_clock.any():
        clocked = True
    tied = np.flatnonzero(f.ties[shapes])
    if len(tied):
        ties += (tied + j).tolist()
    times = block.time_array[j:j + end]
    timed = np.flatnonzero(~np.isnan(times))
    if len(timed):
        last = float(times[timed[-1]])
    return Stretch(j + end, clocked, ties, last)
