"""Node x time-window template counts as pandas frames, built from the scan's bucket counts.

The scan counts templates per (node, bucket) with short buckets; a window is a whole number of buckets, so any
window length (``--window SECONDS``) is available without reading the logs again. Frames are wide: one column
per template id, one row per (node, window) or per window, which is the form the isolation forests take.

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
from typing import TYPE_CHECKING

import numpy as np

from l4lite.scan.scanner import JobScan, TemplateStat

if TYPE_CHECKING:
    import pandas as pd  # imported where a frame is built: see l4lite.detect.iforest

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


def _rows(scan: JobScan, window: float) -> pd.DataFrame:
    import pandas as pd
    if not scan.counts:
        return pd.DataFrame({"node": pd.Series([], dtype=object), "window": pd.Series([], dtype=float),
                             "template_id": pd.Series([], dtype=object), "count": pd.Series([], dtype=np.int64)})
    keys = list(scan.counts.keys())
    nodes = [k[0] for k in keys]
    buckets = np.fromiter((k[1] for k in keys), dtype=np.int64, count=len(keys))
    tids = [k[2] for k in keys]
    counts = np.fromiter(scan.counts.values(), dtype=np.int64, count=len(keys))
    starts = np.floor(buckets * scan.bucket_seconds / window) * window
    starts = np.where(buckets < 0, np.nan, starts)  # untimed records
    begin = scan.job_start()
    if begin is not None:  # boot messages of a kernel log, weeks before the job, are no part of its timeline
        starts = np.where(starts < math.floor(begin / window) * window - window, np.nan, starts)
    return pd.DataFrame({"node": nodes, "window": starts, "template_id": tids, "count": counts})


def count_frame(scan: JobScan, window_seconds: float | None = None, *, include_untimed: bool = False) -> pd.DataFrame:
    """Counts per (node, window start) x template id. Untimed records are left out unless asked for."""
    import pandas as pd
    window = auto_window(scan, window_seconds)
    rows = _rows(scan, window)
    if not include_untimed:
        rows = rows.dropna(subset=["window"])
    if rows.empty:
        return pd.DataFrame(index=pd.MultiIndex.from_tuples([], names=["node", "window"]))
    frame = rows.pivot_table(index=["node", "window"], columns="template_id", values="count", aggfunc="sum",
                             fill_value=0)
    frame.columns.name = None
    return frame.astype(np.int64)


def window_frame(scan: JobScan, window_seconds: float | None = None) -> pd.DataFrame:
    """Counts per window start x template id, summed over nodes, with empty windows filled in."""
    import pandas as pd
    window = auto_window(scan, window_seconds)
    rows = _rows(scan, window).dropna(subset=["window"])
    if rows.empty:
        return pd.DataFrame()
    frame = rows.pivot_table(index="window", columns="template_id", values="count", aggfunc="sum", fill_value=0)
    span = (frame.index.max() - frame.index.min()) / window
    if span <= MAX_FILLED_WINDOWS:  # a node whose clock is years off would ask for millions of empty windows
        full = np.arange(frame.index.min(), frame.index.max() + window / 2, window)
        frame = frame.reindex(full, fill_value=0)
    frame.index.name = "window"
    frame.columns.name = None
    return frame.astype(np.int64)


def node_frame(scan: JobScan) -> pd.DataFrame:
    """Counts per node x template id over the whole job (timed and untimed records)."""
    import pandas as pd
    data: dict[str, dict[str, int]] = {}
    for tid, stat in scan.templates.items():
        for node, n in stat.nodes.items():
            data.setdefault(node, {})[tid] = n
    if not data:
        return pd.DataFrame()
    frame = pd.DataFrame.from_dict(data, orient="index").fillna(0).astype(np.int64)
    return frame.sort_index()


def node_activity(scan: JobScan, window_seconds: float | None = None) -> pd.DataFrame:
    """Records per node x window start (all templates), with empty windows filled in: the heatmap's grid."""
    import pandas as pd
    window = auto_window(scan, window_seconds)
    rows = _rows(scan, window).dropna(subset=["window"])
    if rows.empty:
        return pd.DataFrame()
    frame = rows.pivot_table(index="node", columns="window", values="count", aggfunc="sum", fill_value=0)
    full = np.arange(frame.columns.min(), frame.columns.max() + window / 2, window)
    return frame.reindex(columns=full, fill_value=0).astype(np.int64)


def is_alarming(stat: TemplateStat) -> bool:
    """A template that reports trouble: printed at error or warning level, or worded like a failure."""
    return bool(stat.levels.get("error") or stat.levels.get("warning")) or BAD_WORDS.search(stat.template) is not None


def alarming_templates(scan: JobScan) -> set[str]:
    """Template ids of the job's alarming templates (see ``is_alarming``)."""
    return {tid for tid, stat in scan.templates.items() if is_alarming(stat)}
