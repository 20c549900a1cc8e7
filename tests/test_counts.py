"""The forests' numpy count tables and operations give what the pandas frames and their operations give."""

from __future__ import annotations

import math
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from frames_reference import count_frame, node_frame, window_frame
from scan_helpers import DigitMiner, rec

from l4lite.detect.counts import cell_table, column_std, descending, node_table, window_table
from l4lite.detect.iforest import (
    MAX_COLUMNS,
    IsolationForestDetector,
    drivers,
    informative,
    node_window_scores,
    normalised,
    score_grid,
    select_columns,
)
from l4lite.detect.isolation import IsolationTrees
from l4lite.detect.windows import alarming_templates, auto_window
from l4lite.scan.scanner import JobScan, scan_records

ROOT = Path(__file__).resolve().parents[1]


def _word(k: int) -> str:
    return "".join("abcdefghij"[int(d)] for d in str(k))


def _scan(seed: int, templates: int, nodes: int = 9) -> JobScan:
    """Random counts with many ties: few distinct counts per cell, some untimed and error lines."""
    rnd = random.Random(seed)
    records = []
    for line in range(1, rnd.randint(300, 1500) + 1):
        node = f"n{rnd.randrange(nodes):02d}"
        t = None if rnd.random() < 0.03 else 1000.0 + rnd.choice([rnd.uniform(0, 900), rnd.uniform(0, 60)])
        k = rnd.randrange(templates) if rnd.random() < 0.7 else rnd.randrange(3)
        level = "error" if k % 5 == 0 else "info"
        records.append(rec(f"event {_word(k)} done", node=node, time=t, line=line, level=level))
    return scan_records(records, DigitMiner(), bucket_seconds=rnd.choice([1.0, 5.0, 7.0]))


SEEDS = [(s, n) for s in range(6) for n in (4, 40, 450)]


@pytest.mark.parametrize("seed,templates", SEEDS)
def test_tables_hold_the_frames_counts_in_their_order(seed: int, templates: int) -> None:
    scan = _scan(seed, templates)
    for table, frame in ((node_table(scan), node_frame(scan)), (window_table(scan, 20.0), window_frame(scan, 20.0)),
                         (cell_table(scan, 20.0), count_frame(scan, 20.0))):
        assert table.rows == list(frame.index)
        assert table.cols == list(frame.columns)
        assert np.array_equal(table.values, frame.to_numpy())


@pytest.mark.parametrize("seed,templates", SEEDS)
def test_operations_equal_the_frames_operations(seed: int, templates: int) -> None:
    scan = _scan(seed, templates)
    frame, table = node_frame(scan), node_table(scan)
    totals = frame.sum(axis=1).astype(float)
    scale = float(totals[totals > 0].median()) if (totals > 0).any() else 1.0
    norm = np.log1p(frame.astype(float).div(totals.replace(0, np.nan), axis=0).fillna(0.0) * scale)
    assert np.array_equal(normalised(table.values), norm.to_numpy())
    train, test = norm.iloc[: len(norm) // 2 + 1], norm
    med = train.median(axis=0)
    mad = (train - med).abs().median(axis=0)
    keep = (test - med).abs().max(axis=0) > np.maximum(math.log(2.0), 4.0 * 1.4826 * mad)
    assert informative(train.to_numpy(), test.to_numpy(), table.cols) == [str(c) for c in keep[keep].index]
    # more than MAX_COLUMNS columns: the most spread ones, ties in pandas' order
    spread = np.log1p(frame).std(axis=0)
    assert np.array_equal(column_std(np.log1p(table.values.astype(float))), spread.to_numpy())
    small = 2
    picked = list(spread.sort_values(ascending=False).index[:small])
    assert select_columns(table, small).cols == picked
    for i in range(len(frame)):
        peers = frame.drop(index=frame.index[i])
        diff = (np.log1p(frame.iloc[i].astype(float)) - np.log1p(peers.astype(float)).median(axis=0)).sort_values(
            ascending=False)
        want = [(str(k), float(v)) for k, v in diff.head(3).items() if v > 0]
        assert drivers(table.values[i], np.delete(table.values, i, axis=0), table.cols) == want


def test_descending_orders_ties_as_pandas() -> None:
    rnd = random.Random(3)
    for n in (1, 2, 5, 17, 40, 300):
        values = np.array([rnd.choice([0.0, 0.5, 1.0, 2.0]) for _ in range(n)])
        assert descending(values).tolist() == list(pd.Series(values).sort_values(ascending=False).index)


@pytest.mark.parametrize("seed,templates", SEEDS)
def test_the_heatmap_scores_equal_the_frames(seed: int, templates: int) -> None:
    """The scores ``node_window_scores`` worked out from pandas frames before (its former code)."""
    scan = _scan(seed, templates)
    grid = score_grid(scan, 20.0)
    frame = count_frame(scan, 20.0)
    alarming = alarming_templates(scan)
    cols = [c for c in frame.columns if c in alarming]
    assert cols
    sub = frame[cols]
    if sub.shape[1] > MAX_COLUMNS:
        sub = sub[np.log1p(sub).std(axis=0).sort_values(ascending=False).index[:MAX_COLUMNS]]
    x = np.log1p(frame[list(sub.columns)].to_numpy(dtype=float))
    iso = np.zeros(len(frame))
    if len(frame) >= 4 and not (x == x[0]).all():
        raw = -IsolationTrees(n_estimators=32, max_samples=min(256, max(2, len(frame))), random_state=0).fit(
            x).score_samples(x)
        iso = (raw - raw.min()) / (raw.max() - raw.min()) if raw.max() - raw.min() >= 1e-12 else np.zeros_like(raw)
    present = (frame[cols] > 0).astype(float)
    nodes_per_window = present.groupby(level="window").transform("sum")
    n_nodes = max(1, frame.index.get_level_values("node").nunique())
    unique = 1.0 - (nodes_per_window - 1.0).clip(lower=0.0) / n_nodes
    alarm = (np.log1p(frame[cols].astype(float)) * unique).sum(axis=1).to_numpy()
    alarm = (alarm - alarm.min()) / (alarm.max() - alarm.min()) if np.ptp(alarm) >= 1e-12 else np.zeros_like(alarm)
    series = pd.Series(0.35 * iso + 0.65 * alarm, index=frame.index).unstack("window").fillna(0.0)
    window = auto_window(scan, 20.0)
    full = np.arange(series.columns.min(), series.columns.max() + window / 2, window)
    want = series.reindex(columns=full, fill_value=0.0)
    assert grid.nodes == list(want.index) and grid.windows == list(want.columns)
    assert np.array_equal(grid.scores, want.to_numpy())
    assert node_window_scores(scan, 20.0).equals(want.rename_axis(index="node", columns="window"))


def test_temporal_and_spatial_findings_unchanged_by_a_baseline_of_the_job_itself() -> None:
    scan = _scan(1, 40)
    det = IsolationForestDetector(window_seconds=20.0).fit(scan)
    assert det.temporal(scan) == IsolationForestDetector(window_seconds=20.0).fit(scan).temporal(scan)


def test_analyze_never_imports_pandas() -> None:
    """A job whose forests fit and whose heatmap is drawn, analysed whole without pandas (a third of a second of
    CPU to import, a third of a small job's analysis)."""
    code = ("import sys\nfrom l4lite import api\n"
            "inc = api.analyze('fixtures/jobs/ib-link-down')\n"
            "print(inc.status, bool(inc.extra.get('heatmap')), 'pandas' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["incident", "True", "False"]
