"""Node x time-window template counts: the window length, and which templates are alarming.

The scan counts templates per (node, bucket) with short buckets; a window is a whole number of buckets, so any
window length (``--window SECONDS``) is available without reading the logs again (the count tables the
forests take are ``detect.counts``).

The default window length (``DEFAULT_WINDOW``) was chosen by measurement (``benchmarks/window_length.py``):
the share of incident jobs whose top heatmap cell is the faulty node within two windows of the fault, and whose
most anomalous job-wide window (temporal forest) is within two windows of it:

    window   fixtures/suite (11 jobs)   simulated 8x4-GPU suite (44 jobs)
             heatmap   temporal         heatmap   temporal
    10 s     63.6 %    45.5 %           43.2 %    31.8 %
    20 s        -         -             59.1 %    34.1 %
    30 s     63.6 %    54.5 %           59.1 %    31.8 %
    60 s     63.6 %     9.1 %           63.6 %    25.0 %
    120 s    63.6 %     0.0 %           70.5 %     2.3 %

Longer windows help the heatmap (one failure's lines land in one cell) and hurt the temporal forest (too few
windows before the failure to learn from); 30 s is best on both together and five times cheaper than 10 s.
``auto_window`` keeps the number of windows of very long or very short jobs in a useful range.
"""

from __future__ import annotations

import math
import re

from l4lite.scan.scanner import JobScan, TemplateStat

BAD_WORDS = re.compile(
    r"error|fail|fatal|exception|traceback|timeout|timed out|abort|killed|refused|denied|lost|down|unreachable|"
    r"corrupt|invalid|illegal|panic|segfault|signal|oom|out of memory|cannot|unable|not responding|reset|hang",
    re.I,
)

DEFAULT_WINDOW = 30.0
MIN_WINDOWS = 8
MAX_WINDOWS = 2000
MAX_FILLED_WINDOWS = 100_000  # empty windows filled in between the first and the last, at most


def auto_window(scan: JobScan, requested: float | None = None) -> float:
    """The window length to use: the requested one, else the default bounded to 8..2000 windows over the job.

    Always a whole multiple of the scan's bucket length.
    """
    bucket = scan.bucket_seconds
    if requested is not None and requested > 0:
        return max(bucket, round(requested / bucket) * bucket)
    window = DEFAULT_WINDOW
    start = scan.job_start()
    if start is not None and scan.end_time is not None:
        span = max(scan.end_time - start, bucket)
        window = min(window, max(bucket, span / MIN_WINDOWS))
        window = max(window, span / MAX_WINDOWS)
    return max(bucket, math.ceil(window / bucket) * bucket)


def is_alarming(stat: TemplateStat) -> bool:
    """A template that reports trouble: printed at error or warning level, or worded like a failure."""
    return bool(stat.levels.get("error") or stat.levels.get("warning")) or BAD_WORDS.search(stat.template) is not None


def alarming_templates(scan: JobScan) -> set[str]:
    """Template ids of the job's alarming templates (see ``is_alarming``)."""
    return {tid for tid, stat in scan.templates.items() if is_alarming(stat)}
