"""Line order within a second, for stamps printed without a fraction (``12/03/2026 02:38:23 PM``, syslog's).

Lines stamped to the whole second tie: the last step before a hang and the traceback printed after it, a save and
the error that cut it, read with one time, as if nothing told which came first. The file's order does tell, and
later stages compare times (a root line's own time against a finding's, the lines before a failure): each record
of a file stamped in the same whole second as the record before it, at or before that record's time, is placed a
millisecond after it (never into the next second); a record with no stamp of its own in that second (a
traceback under the line it follows) takes the time the record before it was placed at. Times with a fraction
of their own are left as read, and so are runs (``ShapeRun``), whose ISO stamps carry one.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from typing import TypeVar

from l4lite.records import Record

STEP = 0.001  # seconds between two records of one whole second, in file order
_LAST = 1.0 - STEP / 2  # a record stays inside its second

_OWN = re.compile(r"\d:\d\d:\d\d")  # a time of its own in a record's head
_HEAD = 80
T = TypeVar("T")


def in_line_order(items: Iterator[T]) -> Iterator[T]:
    """``items`` (one file's records and runs, in file order) with whole-second ties in file order (see the
    module docstring)."""
    before: float | None = None
    for item in items:
        if isinstance(item, Record):
            t = item.time
            if t is not None and before is not None and t == math.floor(t) and t <= before < t + _LAST:
                # a line stamped in that second comes after the record before; one with no stamp of its own
                # (a traceback) took that record's time, and keeps it as placed
                t = round(min(before + STEP, t + _LAST), 6) if _OWN.search(item.text, 0, _HEAD) else before
                item.time = t
            before = t
        yield item
