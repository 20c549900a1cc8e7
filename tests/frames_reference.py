"""The pandas frames the count tables (``l4lite.detect.counts``) were first built as: the plain reference the
tables are checked against, kept with the tests."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from l4lite.detect.windows import MAX_FILLED_WINDOWS, auto_window
from l4lite.scan.scanner import JobScan


def _rows(scan: JobScan, window: float) -> pd.DataFrame:
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
    window = auto_window(scan, window_seconds)
    rows = _rows(scan, window).dropna(subset=["window"])
    if rows.empty:
        return pd.DataFrame()
    frame = rows.pivot_table(index="node", columns="window", values="count", aggfunc="sum", fill_value=0)
    full = np.arange(frame.columns.min(), frame.columns.max() + window / 2, window)
    return frame.reindex(columns=full, fill_value=0).astype(np.int64)
