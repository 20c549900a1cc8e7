"""A clock that jumps inside one file: a node logging naive local time springs forward an hour for daylight
saving (or is set to another zone) while the job runs, and every later line of the file reads an hour late.

Measured skew (``ingest.skew``) is one offset per node and cannot see it; read as it stands, the jump is an
hour's pause of that node, then lines after every other node's last one (a phase, a suspect, a failure time
moved). A gap between two consecutive times of a file is taken for a jump only when all of these hold:

- it is a whole number of quarter hours (what zones and daylight saving move a clock by) plus at most
  ``MAX_PAUSE`` seconds (the real gap between the two lines);
- the line after it says nothing of a wait (a watchdog's timeout comes a whole half hour after the collective
  it waited in, a store's after its own timeout);
- the line after the gap lies past the other nodes' last lines, and back by the jump it lies within them (or
  within ``MAX_PAUSE`` of their end: a file's end is sampled from its last lines, which may carry no time).

A node whose watchdog fires thirty minutes after its peers died fails the second test (its line says it timed
out), one whose peers time out with it the third. The other nodes' ends are sampled (``JobContext.node_ends``):
a node that went on logging is not required, for a file's last lines often carry no time. The file's later
times are then read back by the jump (``without_jumps``), in its records and its runs alike, until a time reads
as it was written again (the clock set back, or a second clock in the file: torchrun's agent and its workers);
the times as written stay in the lines' text.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Mapping
from typing import TypeVar

import numpy as np

from l4lite.records import Record

QUARTER = 900.0  # seconds: clocks of zones and daylight saving differ by whole quarter hours
ZONE_LIMIT = 14 * 3600.0  # seconds a zone lies from UTC at most
APART_LIMIT = 26 * 3600.0  # seconds two nodes' zones may lie apart (UTC-12 to UTC+14)
MAX_PAUSE = 60.0  # seconds of real gap between the two lines around a jump
# the line after a gap that says it waited (a watchdog's or a store's timeout): the gap is that wait, no jump
_WAITED = re.compile(r"time ?out|timed out|Timeout\(ms\)|watchdog", re.I)

T = TypeVar("T")


def node_ends(file_ends: Mapping[str, float], node_of: Callable[[str], str | None]) -> dict[str, float]:
    """Each node's last sampled time (``file_ends``: rel -> its file's; ``node_of``: rel -> node)."""
    out: dict[str, float] = {}
    for rel, t in file_ends.items():
        node = node_of(rel)
        if node is not None and t > out.get(node, -math.inf):
            out[node] = t
    return out


def peers_end(ends: Mapping[str, float], node: str | None) -> float | None:
    """The last sampled time of the job's other nodes (``ends``: ``node_ends``), or None."""
    if node is None:
        return None
    return max((t for other, t in ends.items() if other != node), default=None)


def jump_of(before: float, t: float, others_end: float) -> float:
    """The clock's jump between two consecutive times of a file (see the module docstring), or 0.0."""
    gap = t - before
    if not gap >= QUARTER:  # also an untimed line of a run before it (NaN): no jump to read
        return 0.0
    jump = QUARTER * math.floor(gap / QUARTER)
    if gap - jump > MAX_PAUSE:
        return 0.0
    if t <= others_end + MAX_PAUSE or t - jump > others_end + MAX_PAUSE:
        return 0.0
    return jump


def quarters(offset: float, tolerance: float = MAX_PAUSE, limit: float = ZONE_LIMIT) -> float:
    """The whole quarter hours (at least one, at most ``limit``: no zone is further from UTC) that an offset
    between two clocks is, within ``tolerance``, or 0.0."""
    q = QUARTER * round(offset / QUARTER)
    return q if abs(offset - q) <= tolerance and QUARTER <= abs(q) <= limit else 0.0


def without_jumps(items: Iterator[T], others_end: float | None) -> Iterator[T]:
    """``items`` (one file's records and runs, in file order) with the times after a jump of its clock read back
    by it (see the module docstring)."""
    if others_end is None:
        yield from items
        return
    shift = 0.0
    before: float | None = None
    for item in items:
        if isinstance(item, Record):
            if item.time is not None:
                t = item.time - shift
                if shift and t < before - MAX_PAUSE <= item.time:  # type: ignore[operator]
                    shift, t = 0.0, item.time  # read as written again
                elif before is not None and t - before >= QUARTER and (jump := jump_of(before, t, others_end)) \
                        and not _WAITED.search(item.text):  # (``jump_of``'s first test inline: no gap, no jump)
                    shift += jump
                    t -= jump
                item.time = before = t
        elif getattr(item, "times", None):
            times = np.asarray(item.times, dtype=np.float64) - shift  # type: ignore[attr-defined]
            steps = np.diff(times, prepend=times[0] if before is None else before)
            for i in np.flatnonzero(steps >= QUARTER):
                prev = before if i == 0 else float(times[i - 1])
                if prev is not None and (jump := jump_of(prev, float(times[i]), others_end)) and \
                        not _WAITED.search(item.texts[i]):  # type: ignore[attr-defined]
                    shift += jump
                    times[i:] -= jump
            if shift:
                item.retime(times)  # type: ignore[attr-defined]
            before = float(times[-1])
        yield item
