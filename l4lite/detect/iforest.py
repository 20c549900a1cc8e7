"""Isolation forests over template-count vectors: spatial (a node unlike its peers) and temporal (a window unlike
the ones before), each reporting the templates that drive its score.

Vectors are log-scaled template counts (``log1p``), so that one chatty template does not drown the rest. The
spatial forest is fitted on all nodes of the job (L4's insight: nodes of one job should look alike); the
temporal forest is fitted on the job's own first windows (or a baseline job's windows) and scores the later
ones. Findings are "anomaly" evidence: they rank suspects and explain, they never make an incident alone.

``node_window_scores`` scores every (node, window) cell the same way, for the report's heatmap.

The forests are ``IsolationTrees`` (``l4lite.detect.isolation``): scikit-learn's estimator spends milliseconds
per tree on bookkeeping, two thirds of a small job's analysis, and importing it (and SciPy) costs more CPU than
analysing one. The counts are numpy tables (``detect.counts``): pandas, a third of a second of CPU to import, is
imported only to hand the heatmap to a caller as a frame (``node_window_scores``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from l4lite.detect.base import Detector, Finding
from l4lite.detect.counts import CountTable, cell_table, column_std, descending, node_table, window_table
from l4lite.detect.isolation import IsolationTrees
from l4lite.detect.windows import alarming_templates, auto_window
from l4lite.scan.scanner import JobScan

if TYPE_CHECKING:
    import pandas as pd

MAX_COLUMNS = 400
MAD_FLOOR = 0.01  # isolation scores of identical rows have no spread; z is measured against at least this
CONCENTRATION = 0.6  # a window anomaly names a node only when that node printed this share of its drivers


def _forest(n_rows: int, seed: int, trees: int = 48) -> IsolationTrees:
    # The rows are nodes or windows (tens to hundreds) and the informative columns few: 48 seeded trees keep the
    # scores stable.
    return IsolationTrees(n_estimators=trees, max_samples=min(256, max(2, n_rows)), random_state=seed)


def select_columns(table: CountTable, limit: int = MAX_COLUMNS) -> CountTable:
    """Keep the templates with the most variation across rows (bounded, for speed and memory)."""
    if len(table.cols) <= limit:
        return table
    keep = descending(column_std(np.log1p(table.values.astype(np.float64))))[:limit]
    return table.take([table.cols[k] for k in keep.tolist()])


def normalised(values: np.ndarray) -> np.ndarray:
    """Log-scaled counts with each row rescaled to the median row volume.

    Rows (nodes, windows) differ in volume for dull reasons (a partial first window, a node with more ranks);
    rescaling keeps what a row is made of and drops how much of it there is.
    """
    totals = values.sum(axis=1).astype(np.float64)
    positive = totals > 0
    scale = float(np.median(totals[positive])) if positive.any() else 1.0
    with np.errstate(invalid="ignore", divide="ignore"):
        rates = values.astype(np.float64) / np.where(positive, totals, np.nan)[:, None]
    return np.log1p(np.where(np.isnan(rates), 0.0, rates) * scale)


def informative(train: np.ndarray, test: np.ndarray, cols: list[str], min_shift: float = math.log(2.0),
                spread_factor: float = 4.0) -> list[str]:
    """Columns (of ``cols``) on which some test row departs from the training rows' median by more than noise.

    An isolation forest splits every feature alike, so columns that only carry noise isolate random rows;
    keeping the columns that actually move makes its scores mean something with few rows.
    """
    if not len(train):
        return []
    med = np.median(train, axis=0)
    mad = np.median(np.abs(train - med), axis=0)
    shift = np.abs(test - med).max(axis=0) if len(test) else np.full(len(cols), np.nan)
    keep = shift > np.maximum(min_shift, spread_factor * 1.4826 * mad)
    return [str(cols[k]) for k in np.flatnonzero(keep).tolist()]


def drivers(row: np.ndarray, reference: np.ndarray, cols: list[str], top: int = 3) -> list[tuple[str, float]]:
    """Templates whose (log) count in ``row`` differs most from the reference rows' median, with that difference."""
    if not len(reference):  # the median of no rows: NaN everywhere, which ``v > 0`` drops
        return []
    diff = np.log1p(row.astype(np.float64)) - np.median(np.log1p(reference.astype(np.float64)), axis=0)
    order = descending(diff)[:top].tolist()
    return [(str(cols[k]), float(diff[k])) for k in order if diff[k] > 0]


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
        self._baseline_windows: CountTable | None = None

    def fit(self, baseline: JobScan) -> IsolationForestDetector:
        """Use a healthy job's windows as the temporal reference instead of the job's own first windows."""
        table = window_table(baseline, self.window_seconds)
        if not table.empty:
            self._baseline_windows = table if self._baseline_windows is None else _stacked(self._baseline_windows,
                                                                                          table)
        return self

    def detect(self, scan: JobScan) -> list[Finding]:
        return self.spatial(scan) + self.temporal(scan)

    # ------------------------------------------------------------------ spatial
    def spatial(self, scan: JobScan) -> list[Finding]:
        table = node_table(scan)
        if len(table.rows) < self.min_nodes or not table.cols:
            return []
        norm = normalised(table.values)
        cols = informative(norm, norm, table.cols)
        if not cols:
            return []
        at = {c: k for k, c in enumerate(table.cols)}
        table = select_columns(table.take(cols))
        x = norm[:, [at[c] for c in table.cols]]
        forest = _forest(len(table.rows), self.seed).fit(x)
        raw = -forest.score_samples(x)
        med = float(np.median(raw))
        mad = max(float(np.median(np.abs(raw - med))), MAD_FLOOR)
        z = (raw - med) / (1.4826 * mad)
        order = np.argsort(-z)
        out: list[Finding] = []
        for i in order[: self.max_findings]:
            if z[i] < self.z_threshold:
                break
            node = str(table.rows[i])
            top = drivers(table.values[i], np.delete(table.values, i, axis=0), table.cols)
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
        frame = window_table(scan, self.window_seconds)
        if len(frame.rows) < self.min_windows or not frame.cols:
            return []
        if self._baseline_windows is not None:
            cols = sorted(set(frame.cols) | set(self._baseline_windows.cols))
            train, frame = _widened(self._baseline_windows, cols), _widened(frame, cols)
        else:
            n_fit = max(self.min_windows // 2, int(len(frame.rows) * self.fit_fraction))
            train = CountTable(frame.rows[:n_fit], frame.cols, frame.values[:n_fit])
        # Raw log counts of the alarming templates: a handful of new error lines in a busy window is the
        # signal, and a rate would drown it in the window's volume.
        ntrain, ntest = np.log1p(train.values.astype(np.float64)), np.log1p(frame.values.astype(np.float64))
        alarming = alarming_templates(scan)
        cols = [c for c in informative(ntrain, ntest, frame.cols, min_shift=0.5) if c in alarming]
        if not cols:
            return []
        cols = select_columns(frame.take(cols)).cols
        train, test = train.take(cols), frame.take(cols)
        at = {c: k for k, c in enumerate(frame.cols)}
        picked = [at[c] for c in cols]
        # Fitted on every window: a forest never splits on a column that is constant in its training rows,
        # and a template new near the failure is exactly that. The training windows only set the scale of z.
        both = ntest[:, picked] if self._baseline_windows is None else np.concatenate([ntrain[:, picked],
                                                                                         ntest[:, picked]])
        forest = _forest(len(both), self.seed).fit(both)
        ref_raw = -forest.score_samples(ntrain[:, picked])
        raw = -forest.score_samples(ntest[:, picked])
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
            start = float(test.rows[i])
            if first_train is not None and start < first_train:
                continue
            top = drivers(test.values[i], train.values, cols)
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


def _widened(table: CountTable, cols: list[str]) -> CountTable:
    """``table`` with columns ``cols``, a column it does not have all zeros (``reindex(columns=...)``)."""
    at = {c: k for k, c in enumerate(table.cols)}
    values = np.zeros((len(table.rows), len(cols)), table.values.dtype)
    for k, c in enumerate(cols):
        if c in at:
            values[:, k] = table.values[:, at[c]]
    return CountTable(table.rows, cols, values)


def _stacked(first: CountTable, then: CountTable) -> CountTable:
    """Both tables' rows, their columns in order of first appearance (``pd.concat(...).fillna(0)``)."""
    cols = list(dict.fromkeys(first.cols + then.cols))
    return CountTable(first.rows + then.rows, cols,
                      np.concatenate([_widened(first, cols).values, _widened(then, cols).values]))


@dataclass(frozen=True)
class ScoreGrid:
    """The heatmap's anomaly scores: per node (sorted) x window start (every window from the first to the last)."""

    nodes: list[str]
    windows: list[float]
    scores: np.ndarray  # float, len(nodes) x len(windows)

    @property
    def empty(self) -> bool:
        return not self.nodes or not self.windows


def score_grid(scan: JobScan, window_seconds: float | None = None, seed: int = 0) -> ScoreGrid:
    """Anomaly score in [0, 1] per node x window start: the report's heatmap.

    The isolation score of each (node, window) count vector over the informative alarming templates, blended
    with an alarm score that weighs those lines by how few nodes print them in the same window.
    """
    frame = cell_table(scan, window_seconds)
    if frame.empty:
        return ScoreGrid([], [], np.zeros((0, 0)))
    alarming = alarming_templates(scan)
    cols = [c for c in frame.cols if c in alarming]  # the heatmap shows trouble, not routine
    n = len(frame.rows)
    # Raw log counts: one Xid line in a busy window must count, which a rate would not.
    x = np.log1p(select_columns(frame.take(cols)).values.astype(np.float64)) if cols else None
    # Identical rows get identical isolation scores, which normalise to zeros: no forest needed for that.
    if x is not None and n >= 4 and x.shape[1] and not (x == x[0]).all():
        raw = -_forest(n, seed, trees=32).fit(x).score_samples(x)
        iso = _normalise(raw)
    else:
        iso = np.zeros(n)
    node_of = [r[0] for r in frame.rows]
    window_of = [r[1] for r in frame.rows]
    # Alarm: the cell's alarming lines weighted by how few nodes print the same template in that window (one
    # node's Xid counts; the watchdog timeouts every node prints at once count little), log-scaled.
    alarm = np.zeros(n)
    if cols:
        counts = frame.take(cols).values
        present = (counts > 0).astype(np.float64)
        windows = sorted(set(window_of))
        w_at = {w: k for k, w in enumerate(windows)}
        row_window = np.array([w_at[w] for w in window_of], np.int64)
        per_window = np.zeros((len(windows), len(cols)))
        np.add.at(per_window, row_window, present)
        nodes_per_window = per_window[row_window]
        n_nodes = max(1, len(set(node_of)))
        unique = 1.0 - np.clip(nodes_per_window - 1.0, 0.0, None) / n_nodes
        weighted = np.log1p(counts.astype(np.float64)) * unique
        alarm = _normalise(weighted.sum(axis=1))
    scores = 0.35 * iso + 0.65 * alarm if cols else iso
    nodes = sorted(set(node_of))
    n_at = {k: i for i, k in enumerate(nodes)}
    window = auto_window(scan, window_seconds)
    full = np.arange(min(window_of), max(window_of) + window / 2, window).tolist()
    f_at = {w: k for k, w in enumerate(full)}
    grid = np.zeros((len(nodes), len(full)))
    for node, w, v in zip(node_of, window_of, scores.tolist(), strict=True):
        k = f_at.get(w)
        if k is not None:  # ``reindex``: a window start the range does not hit exactly is left out
            grid[n_at[node], k] = v
    return ScoreGrid(nodes, full, grid)


def node_window_scores(scan: JobScan, window_seconds: float | None = None, seed: int = 0) -> pd.DataFrame:
    """``score_grid`` as a frame: nodes (rows) x window starts (columns)."""
    import pandas as pd
    grid = score_grid(scan, window_seconds, seed)
    if grid.empty:
        return pd.DataFrame()
    return pd.DataFrame(grid.scores, index=pd.Index(grid.nodes, name="node"), columns=pd.Index(grid.windows,
                                                                                                 name="window"))
