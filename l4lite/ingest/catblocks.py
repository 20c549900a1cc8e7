"""Where one writer's block ends in a concatenated stream: time steps back.

A ``cat`` of several files (a Ray session folder, a node's logs, several nodes' outputs) is one file to the
reader, but its lines come in blocks, one per file, each in its own time order. Two lines a few lines apart in
such a stream need not be one process's story: the last traceback of the driver's output and the first start-up
notice of the dashboard's log are neighbours there, written minutes apart by different processes. Each line's
record carries the time the stream had reached at it (its own stamp, or the one it borrowed from the stamped line
above it), so the step back between blocks shows in the records themselves: when the lower of two lines was
reached at a time well before the upper one, a new writer's block began between them. Within one writer's file
time never goes back that far (a clock stepped back for one line keeps the time before it, ``ingest.reader``).
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections import defaultdict
from collections.abc import Iterable

from l4lite.records import Record

STEP_BACK = 60.0  # seconds the stream must go back between two lines for them to be in different blocks


def other_block(a: Record, b: Record, a_time: float | None = None, b_time: float | None = None) -> bool:
    """Whether two records of one file lie in different writers' blocks (the lower one reached at a time more
    than ``STEP_BACK`` before the upper one); False when either has no time or they are in different files.
    ``a_time``/``b_time`` stand in for a record without a time: the time of the event a copy of it was written
    for (a driver's relayed copy of a worker's line has none of its own, but was not written before the event)."""
    ta = a.time if a.time is not None else a_time
    tb = b.time if b.time is not None else b_time
    if a.file != b.file or ta is None or tb is None:
        return False
    return (tb < ta - STEP_BACK) if a.line <= b.line else (ta < tb - STEP_BACK)


def same_block_near(a: Record, b: Record, lines: int, a_time: float | None = None,
                    b_time: float | None = None) -> bool:
    """Whether two records are near each other in one file (at most ``lines`` apart) and in one writer's block."""
    return a.file == b.file and abs(a.line - b.line) <= lines and not other_block(a, b, a_time, b_time)


def block_starts(marks: Iterable[tuple[str, int, float | None]]) -> dict[str, list[int]]:
    """Per file, the lines where a new writer's block begins, worked out once from the lines given (file, line,
    the time the stream had reached there): a line reached more than ``STEP_BACK`` before the latest time above
    it starts a block, and the block's own times count from there. Files without a step back are left out."""
    by_file: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for file, line, t in marks:
        if t is not None:
            by_file[file].append((line, t))
    out: dict[str, list[int]] = {}
    for file, seen in by_file.items():
        seen.sort()
        top, starts = -math.inf, []
        for line, t in seen:
            if t < top - STEP_BACK:
                starts.append(line)
                top = t
            elif t > top:
                top = t
        if starts:
            out[file] = starts
    return out


def crosses(starts: dict[str, list[int]], file: str, above: int, below: int) -> bool:
    """Whether a block of ``file`` begins after line ``above`` and no later than line ``below``."""
    lines = starts.get(file)
    if not lines:
        return False
    i = bisect_right(lines, above)
    return i < len(lines) and lines[i] <= below
