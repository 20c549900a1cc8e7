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
