"""Whether a job's slashed dates (``03/12/2026 14:38:23``) put the month or the day first: one decision per job.

accelerate's and transformers' example scripts log ``%m/%d/%Y``, a European ``datefmt`` ``%d/%m/%Y``. A date
whose first field is over 12 can only be day first, one whose second field is over 12 only month first; the
job's sampled lines are counted together, so no single line (nor a file read before another) decides alone.
When no field is over 12 (the first twelve days of a month), the reading whose dates lie nearest the job's other
dates wins: its ISO-dated lines, else its files' write times; month first when nothing tells them apart, as
Python's ``%x`` and the US tools that print such dates do.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable
from datetime import UTC, date, datetime

_SLASHED = re.compile(r"(?<![\d/])(\d\d)/(\d\d)/(\d{4}) \d\d:\d\d:\d\d")
_ISO_DAY = re.compile(r"(?<![\d/])(\d{4})-(\d\d)-(\d\d)[T ]\d\d:\d\d")
_HEAD = 96  # characters of a line a header lies in (after stream prefixes)
_FAR = 400  # days a date that is no date counts as from the job's


def _ordinal(y: int, m: int, d: int) -> int | None:
    try:
        return date(y, m, d).toordinal()
    except ValueError:
        return None


def day_first(lines: Iterable[str], written: Iterable[float | None] = ()) -> bool:
    """Whether the slashed dates of ``lines`` (a job's sampled lines) are day first; ``written``: its files'
    write times, the job's time when no ISO date is among the lines (see the module docstring)."""
    firsts = seconds = 0
    dates: list[tuple[int, int, int]] = []
    near: list[int] = []
    for line in lines:
        head = line[:_HEAD]
        if "/" in head:
            m = _SLASHED.search(head)
            if m:
                a, b, y = int(m[1]), int(m[2]), int(m[3])
                firsts += a > 12
                seconds += b > 12
                dates.append((a, b, y))
                continue
        if "-" in head:
            m = _ISO_DAY.search(head)
            if m and (o := _ordinal(int(m[1]), int(m[2]), int(m[3]))) is not None:
                near.append(o)
    if firsts != seconds:
        return firsts > seconds
    if not dates:
        return False
    if not near:
        near = [datetime.fromtimestamp(t, UTC).date().toordinal() for t in written if t]
    if not near:
        return False
    ref = statistics.median(near)

    def cost(day: bool) -> float:
        total = 0.0
        for a, b, y in dates:
            o = _ordinal(y, b, a) if day else _ordinal(y, a, b)
            total += _FAR if o is None else min(abs(o - ref), _FAR)
        return total
    return cost(True) < cost(False)
