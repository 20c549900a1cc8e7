"""Facts about a whole job, worked out once before its lines are read, so that one odd file cannot move them."""

from __future__ import annotations

import gzip
import re
import zlib
from collections import Counter
from collections.abc import Sequence
from typing import Any

_YEAR_DATE = re.compile(r"(?<!\d)(20\d\d)[-/.](?:0[1-9]|1[0-2])[-/.](?:0[1-9]|[12]\d|3[01])(?!\d)")
_YEAR_CTIME = re.compile(r"\b(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) \w{3} +\d{1,2} \d\d:\d\d:\d\d (20\d\d)\b")


def job_year(files: Sequence[Any], head_lines: int = 50, max_files: int = 256) -> int | None:
    """The year most of a job's dated lines carry, read from the first lines of its largest files.

    Formats without a year (glog ``W0625 20:51:06``, syslog ``May  7 ...``) otherwise take the year of the
    file's modification time, and a job copied or simulated long after it ran would have one of its files in
    another year than the rest; the job's own dated lines are the better guess. The largest files are the main
    logs; a job of 100,000 small files is not opened twice for this.
    """
    years: Counter[int] = Counter()
    if len(files) > max_files:
        files = sorted(files, key=lambda f: -(getattr(f, "size", 0) or 0))[:max_files]
    for f in files:
        path = getattr(f, "path", None)
        if not path or path == "-":
            continue
        try:
            opener = gzip.open if getattr(f, "compressed", False) else open
            with opener(path, "rt", encoding="utf-8", errors="replace") as fh:  # type: ignore[operator]
                for n, line in enumerate(fh):
                    if n >= head_lines:
                        break
                    m = _YEAR_DATE.search(line) or _YEAR_CTIME.search(line)
                    if m:
                        years[int(m.group(1))] += 1
        except (OSError, EOFError, zlib.error):  # unreadable, truncated or corrupt: ingest warns about it
            continue
    return years.most_common(1)[0][0] if years else None


