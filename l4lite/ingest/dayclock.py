"""Times of day printed without a date (a logger's ``datefmt="%H:%M:%S"``: ``23:59:58.200 INFO ...``).

The day is the job's: the first such stamp of a file takes the day that puts it nearest the job's time (the
middle of its dated files' spans, else the file's write time), and each later one the day that keeps it within
twelve hours of the stamp before, so that a file crossing midnight goes on into the next day rather than back to
the morning of the same one.
"""

from __future__ import annotations

import re
import time as _time

# 23:59:58 / 23:59:58.200 / 23:59:58,200 at the start of a line, a space after it
TIME_OF_DAY = re.compile(r"([01]\d|2[0-3]):([0-5]\d):([0-5]\d|60)(?:[.,](\d{1,9}))?(?= ) *")
_DAY = 86400.0
_HALF = _DAY / 2


class DayClock:
    """One file's day for its dateless times (see the module docstring)."""

    __slots__ = ("day", "last")

    def __init__(self) -> None:
        self.day: float | None = None  # epoch seconds of the current day's midnight
        self.last = 0.0  # seconds into the day of the stamp before

    def time(self, seconds: float, near: float | None) -> float:
        """Epoch seconds of ``seconds`` into a day: the day of the stamp before, or the next (previous) one when
        the clock went back (forward) by more than half a day; the first: the day nearest ``near``."""
        day = self.day
        if day is None:
            ref = near if near is not None else _time.time()
            day = round((ref - seconds) / _DAY) * _DAY
        elif seconds < self.last - _HALF:
            day += _DAY
        elif seconds > self.last + _HALF:
            day -= _DAY
        self.day, self.last = day, seconds
        return day + seconds
