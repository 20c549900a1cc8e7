"""Isolation forests over template-count vectors: spatial (a node unlike its peers) and temporal (a window unlike
the ones before), each reporting the templates that drive its score.

Vectors are log-scaled template counts (``log1p``), so that one chatty template does not drown the rest. The
spatial forest is fitted on all nodes of the job (L4's insight: nodes of one job should look alike); the
temporal forest is fitted on the job's own first windows (or a baseline job's windows) and scores the later
ones. Findings are "anomaly" evidence: they rank suspects and explain, they never make an incident alone.

``node_window_scores`` scores every (node, window) cell the same way, for the report's heatmap.

The forests are ``IsolationTrees`` (``l4lite.detect.isolation``): scikit-learn's estimator spends milliseconds
per tree on bookkeeping, two thirds of a small job's analysis, and importing it (and SciPy) costs more CPU than
analysing one. pandas is imported where a frame is built, so that a parallel scan can import it while its shards
are scanned.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from l4lite.detect.base import Detector, Finding
from l4lite.detect.isolation import IsolationTrees
from l4lite.detect.windows import alarming_templates, auto_window, count_frame, node_frame, window_frame
from l4lite.scan.scanner import JobScan

if TYPE_CHECKING:
    import pandas as pd

MAX_COLUMNS = 400
MAD_FLOOR = 0.01  # isolation scores of identical rows have no spread; z is measured against at least this
CONCENTRATION = 0.6  # a window anomaly names a node only when that node printed this share of its drivers


def preload() -> None:
    """Import pandas now: for a long-lived caller (``tail``) that would rather pay the import at start-up than in
    its first diagnosis, or a parallel scan while its shards are scanned elsewhere."""
    import pandas  # noqa: F401


def _forest(n_rows: int, seed: int, trees: int = 48) -> IsolationTrees:
    # The rows are nodes or windows (tens to hundreds) and the informative columns few: 48 seeded trees keep the
    # scores stable.
    return IsolationTrees(n_estimators=trees, max_samples=min(256, max(2, n_rows)), random_state=seed)


def _select_columns(frame: pd.DataFrame, limit: int = MAX_COLUMNS) -> pd.DataFrame:
    """Keep the templates with the most variation across rows (bounded, for speed and memory)."""
    if frame.shape[1] <= limit:
        return frame
    spread = np.log1p(frame).std(axis=0)
    keep = spread.sort_values(ascending=False).index[:limit]
    return frame[keep]


def normalised(frame: pd.DataFrame) -> pd.DataFrame:
    """Log-scaled counts with each row rescaled to the median row volume.

    Rows (nodes, windows) differ in volume for dull reasons (a partial first window, a node with more ranks);
    rescaling keeps what a row is made of and drops how much of it there is.
    """
    totals = frame.sum(axis=1).astype(float)
    scale = float(totals[totals > 0].median()) if (totals > 0).any() else 1.0
    rates = frame.astype(float).div(totals.replace(0, np.nan), axis=0).fillna(0.0) * scale
    return np.log1p(rates)


def informative(train: pd.DataFrame, test: pd.DataFrame, min_shift: float = math.log(2.0),
                spread_factor: float = 4.0) -> list[str]:
    """Columns on which some test row departs from the training rows' median by more than noise.

    An isolation forest splits every feature alike, so columns that only carry noise isolate random rows;
    keeping the columns that actually move makes its scores mean something with few rows.
    """
    med = train.median(axis=0)
    mad = (train - med).abs().median(axis=0)
    shift = (test - med).abs().max(axis=0)
    keep = shift > np.maximum(min_shift, spread_factor * 1.4826 * mad)
    return [str(c) for c in keep[keep].index]


def drivers(row: pd.Series, reference: pd.DataFrame, top: int = 3) -> list[tuple[str, float]]:
    """Templates whose (log) count differs most from the reference rows' median, with that difference."""
    x = np.log1p(row.astype(float))
    med = np.log1p(reference.astype(float)).median(axis=0)
    diff = (x - med).sort_values(ascending=False)
    return [(str(k), float(v)) for k, v in diff.head(top).items() if v > 0]


def _normalise(raw: np.ndarray) -> np.ndarray:
    lo, hi = float(np.min(raw)), float(np.max(raw))
    if hi - lo < 1e-12:
        return np.zeros_like(raw)
    return (raw - lo) / (hi - lo)


class IsolationForestDetector(Detector):
    """Spatial and temporal isolation forests over template counts."""

    name = "iforest"

    def __init__(self, *, window_seconds: float | None = None, min_nodes: int = 4, min_windows: int = 8,
                 fit_fraction: float = 0.6, z_threshold: float = 3.5, seed: int = 0, max_findings: int = 5) -> None:
        self.window_seconds = window_seconds
        self.min_nodes = min_nodes
        self.min_windows = min_windows
        self.fit_fraction = fit_fraction
        self.z_threshold = z_threshold
        self.seed = seed
        self.max_findings = max_findings
        self._baseline_windows: pd.DataFrame | None = None

    def fit(self, baseline: JobScan) -> IsolationForestDetector:
        """Use a healthy job's windows as the temporal reference instead of the job's own first windows."""
        import pandas as pd
        frame = window_frame(baseline, self.window_seconds)
        if not frame.empty:
            self._baseline_windows = frame if self._baseline_windows is None else pd.concat(
                [self._baseline_windows, frame]).fillna(0)
        return self

    def detect(self, scan: JobScan) -> list[Finding]:
        return self.spatial(scan) + self.temporal(scan)

    # ------------------------------------------------------------------ spatial
    def spatial(self, scan: JobScan) -> list[Finding]:
        frame = node_frame(scan)
        if frame.shape[0] < self.min_nodes or frame.shape[1] == 0:
            return []
        norm = normalised(frame)
        cols = informative(norm, norm)
        if not cols:
            return []
        frame = _select_columns(frame[cols])
        x = norm[frame.columns].to_numpy(dtype=float)
        forest = _forest(len(frame), self.seed).fit(x)
        raw = -forest.score_samples(x)
        med = float(np.median(raw))
        mad = max(float(np.median(np.abs(raw - med))), MAD_FLOOR)
        z = (raw - med) / (1.4826 * mad)
        order = np.argsort(-z)
        out: list[Finding] = []
        for i in order[: self.max_findings]:
            if z[i] < self.z_threshold:
                break
            node = str(frame.index[i])
            peers = frame.drop(index=frame.index[i])
            top = drivers(frame.iloc[i], peers)
            names = [scan.templates[t].template[:100] if t in scan.templates else t for t, _ in top]
            records = [r for t, _ in top for r in scan.exemplars.get((t, node), [])[:1]]
            score = float(min(1.0, z[i] / (2 * self.z_threshold)))
            out.append(Finding(self.name, "unknown", "anomaly", round(score, 3),
                               f"node {node} logs unlike its peers (isolation score z={z[i]:.1f}); driven by: "
                               + "; ".join(names), node=node, records=records,
                               time=min((r.time for r in records if r.time is not None), default=None),
                               data={"kind": "spatial", "z": float(z[i]), "drivers": [t for t, _ in top]}))
        return out

    # ------------------------------------------------------------------ temporal
    def temporal(self, scan: JobScan) -> list[Finding]:
        import pandas as pd
        frame = window_frame(scan, self.window_seconds)
        if frame.shape[0] < self.min_windows or frame.shape[1] == 0:
            return []
        if self._baseline_windows is not None:
            cols = frame.columns.union(self._baseline_windows.columns)
            train = self._baseline_windows.reindex(columns=cols, fill_value=0)
            frame = frame.reindex(columns=cols, fill_value=0)
        else:
            n_fit = max(self.min_windows // 2, int(len(frame) * self.fit_fraction))
            train = frame.iloc[:n_fit]
        # Raw log counts of the alarming templates: a handful of new error lines in a busy window is the
        # signal, and a rate would drown it in the window's volume.
        ntrain, ntest = np.log1p(train.astype(float)), np.log1p(frame.astype(float))
        alarming = alarming_templates(scan)
        cols = [c for c in informative(ntrain, ntest, min_shift=0.5) if c in alarming]
        if not cols:
            return []
        cols = list(_select_columns(frame[cols]).columns)
        train, test = train[cols], frame[cols]
        # Fitted on every window: a forest never splits on a column that is constant in its training rows,
        # and a template new near the failure is exactly that. The training windows only set the scale of z.
        both = ntest[cols] if self._baseline_windows is None else pd.concat([ntrain[cols], ntest[cols]])
        forest = _forest(len(both), self.seed).fit(both.to_numpy(dtype=float))
        ref_raw = -forest.score_samples(ntrain[cols].to_numpy(dtype=float))
        raw = -forest.score_samples(ntest[cols].to_numpy(dtype=float))
        med = float(np.median(ref_raw))
        mad = max(float(np.median(np.abs(ref_raw - med))), MAD_FLOOR)
        z = (raw - med) / (1.4826 * mad)
        out: list[Finding] = []
        window = auto_window(scan, self.window_seconds)
        # Start-up windows differ from training ones by nature; only windows after training began compete.
        starts = [p.first_time for p in scan.progress.values() if p.first_time is not None]
        first_train = min(starts) if starts else None
        for i in np.argsort(-z):
            if len(out) >= self.max_findings or z[i] < self.z_threshold:
                break
            start = float(test.index[i])
            if first_train is not None and start < first_train:
                continue
            top = drivers(test.iloc[i], train)
            names = [scan.templates[t].template[:100] if t in scan.templates else t for t, _ in top]
            node = self._node_of(scan, [t for t, _ in top], start, window)
            records = [r for t, _ in top for r in scan.exemplars.get((t, node), [])[:1]] if node else []
            score = float(min(1.0, z[i] / (2 * self.z_threshold)))
            out.append(Finding(self.name, "unknown", "anomaly", round(score, 3),
                               f"window at +{start - (scan.start_time or start):.0f}s unlike the windows before "
                               f"(z={z[i]:.1f}); driven by: " + "; ".join(names), node=node, time=start,
                               records=records,
                               data={"kind": "temporal", "z": float(z[i]), "window": start,
                                     "drivers": [t for t, _ in top]}))
        return out

    @staticmethod
    def _node_of(scan: JobScan, tids: list[str], start: float, window: float) -> str | None:
        """The node that printed most of the driving templates in that window."""
        if not tids:
            return None
        b0 = math.floor(start / scan.bucket_seconds)
        b1 = math.floor((start + window) / scan.bucket_seconds)
        wanted = set(tids)
        per_node: dict[str, int] = {}
        for (node, bucket, tid), n in scan.counts.items():
            if tid in wanted and b0 <= bucket < b1:
                per_node[node] = per_node.get(node, 0) + n
        if not per_node:
            return None
        node = max(per_node, key=lambda k: per_node[k])
        return node if per_node[node] >= CONCENTRATION * sum(per_node.values()) else None


def node_window_scores(scan: JobScan, window_seconds: float | None = None, seed: int = 0) -> pd.DataFrame:
    """Anomaly score in [0, 1] per node (rows) x window start (columns): the report's heatmap.

    The isolation score of each (node, window) count vector over the informative alarming templates, blended
    with an alarm score that weighs those lines by how few nodes print them in the same window.
    """
    import pandas as pd
    frame = count_frame(scan, window_seconds)
    if frame.empty:
        return pd.DataFrame()
    alarming = alarming_templates(scan)
    cols = [c for c in frame.columns if c in alarming]  # the heatmap shows trouble, not routine
    # Raw log counts: one Xid line in a busy window must count, which a rate would not.
    x = np.log1p(frame[list(_select_columns(frame[cols]).columns)].to_numpy(dtype=float)) if cols else None
    # Identical rows get identical isolation scores, which normalise to zeros: no forest needed for that.
    if x is not None and len(frame) >= 4 and x.shape[1] and not (x == x[0]).all():
        raw = -_forest(len(frame), seed, trees=32).fit(x).score_samples(x)
        iso = _normalise(raw)
    else:
        iso = np.zeros(len(frame))
    # Alarm: the cell's alarming lines weighted by how few nodes print the same template in that window (one
    # node's Xid counts; the watchdog timeouts every node prints at once count little), log-scaled.
    alarm = np.zeros(len(frame))
    if cols:
        present = (frame[cols] > 0).astype(float)
        nodes_per_window = present.groupby(level="window").transform("sum")
        n_nodes = max(1, frame.index.get_level_values("node").nunique())
        unique = 1.0 - (nodes_per_window - 1.0).clip(lower=0.0) / n_nodes
        alarm = _normalise((np.log1p(frame[cols].astype(float)) * unique).sum(axis=1).to_numpy())
    scores = 0.35 * iso + 0.65 * alarm if cols else iso
    series = pd.Series(scores, index=frame.index)
    grid = series.unstack("window").fillna(0.0)
    window = auto_window(scan, window_seconds)
    full = np.arange(grid.columns.min(), grid.columns.max() + window / 2, window)
    return grid.reindex(columns=full, fill_value=0.0)
