"""Line order within a second, for stamps printed without a fraction (``12/03/2026 02:38:23 PM``, syslog's).

Lines stamped to the whole second tie: the last step before a hang and the traceback printed after it, a save and
the error that cut it, read with one time, as if nothing told which came first. The file's order does tell, and
later stages compare times (a root line's own time against a finding's, the lines before a failure): each record
of a file stamped in the same whole second as the record before it, at or before that record's time, is placed a
millisecond after it (never into the next second); a record with no stamp of its own in that second (a
traceback under the line it follows, a wrong clock's line given the time of the line before) takes the time the
record before it was placed at; a stamp is the record's own when its minutes and seconds are in the record's head
(a 12-hour clock's hour is not the UTC one). Times with a fraction of their own are left as read.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from functools import lru_cache
from typing import TypeVar

import numpy as np

from l4lite.records import Record

STEP = 0.001  # seconds between two records of one whole second, in file order
_LAST = 1.0 - STEP / 2  # a record stays inside its second

_HEAD = 80  # characters of a record's text its own stamp lies in
T = TypeVar("T")


def _placed(t: float, before: float | None, text: str) -> float:
    """Where a record of time ``t`` and ``text`` goes after one placed at ``before`` (see the module docstring)."""
    if before is None or t != math.floor(t) or not t <= before < t + _LAST:
        return t
    # a line stamped in that second comes after the record before; one with no stamp of its own (a traceback),
    # or a wrong clock's (given the time of the line before), keeps that record's time as placed
    own = _clock(t) in text[:_HEAD]
    return round(min(before + STEP, t + _LAST), 6) if own else before


@lru_cache(maxsize=256)
def _clock(t: float) -> str:
    """``:MM:SS`` of a whole second: the lines that tie are many to one second, so it is written once per second."""
    return f":{int(t % 3600 // 60):02d}:{int(t % 60):02d}"


class SecondOrder:
    """``_placed`` for records that come a few at a time (``tail``'s incremental reader), in file order."""

    __slots__ = ("before",)

    def __init__(self) -> None:
        self.before: float | None = None

    def place(self, records: list[Record]) -> list[Record]:
        for r in records:
            if r.time is not None:
                r.time = self.before = _placed(r.time, self.before, r.text)
        return records


def last_placed(records: Iterable[Record]) -> float | None:
    """Where the last timed record of ``records`` is placed: what a piece of a file (``ingest.pieces``) starts
    from, so that the ties at its start are ordered as when the file is read whole."""
    last = None
    for r in in_line_order(iter(records)):
        if r.time is not None:
            last = r.time
    return last


def tie_rows(times: np.ndarray, before: float | None) -> np.ndarray:
    """The rows of a run's ``times`` that ``_placed`` may move, given the record before the first placed at
    ``before``: a whole second equal to the second of the time before it. Every other row keeps its time, so a
    run's lines are placed one by one only where they tie. Placing keeps a record in its second (``_LAST``), so
    the second of the record before as placed is the second of its time as read."""
    secs = np.floor(times)
    prev = np.empty(len(times))
    if len(times):
        prev[0] = -1.0 if before is None else np.floor(before)
        prev[1:] = secs[:-1]
    return np.flatnonzero((times == secs) & (secs == prev))


def in_line_order(items: Iterator[T], before: float | None = None) -> Iterator[T]:
    """``items`` (one file's records and runs, in file order) with whole-second ties in file order (see the
    module docstring); a run's times as its records' would be. ``before``: where the record before the first
    was placed (a piece's lead, ``last_placed``)."""
    floor = math.floor
    for item in items:
        if isinstance(item, Record):
            t = item.time
            if t is not None:
                # ``_placed``'s first test inline: a record that ties with none before it keeps its time
                if before is None or not t <= before < t + _LAST or t != floor(t):
                    before = t
                else:
                    item.time = before = _placed(t, before, item.text)
        elif times := getattr(item, "times", None):
            arr = np.asarray(times, dtype=np.float64)
            ties = tie_rows(arr, before)
            if len(ties):  # ties: only their lines placed one by one
                placed = list(times)  # a line with no time keeps None (a NaN would read as a time downstream)
                texts = item.texts  # type: ignore[attr-defined]
                for i in ties.tolist():
                    placed[i] = _placed(times[i], placed[i - 1] if i else before, texts[i])
                item.retime(np.array(placed))  # type: ignore[attr-defined]
            before = item.times[-1]  # type: ignore[attr-defined]
        yield item
