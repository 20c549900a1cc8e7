"""Isolation forests: a node unlike its peers, a window unlike the ones before, and the templates behind them."""

from __future__ import annotations

import random

from scan_helpers import DigitMiner, rec

from l4lite.detect.iforest import IsolationForestDetector, node_window_scores
from l4lite.scan.scanner import JobScan, scan_records

NODES = [f"n{k:02d}" for k in range(12)]


def _job(odd_node: str | None = None, burst_at: float | None = None) -> JobScan:
    rnd = random.Random(1)
    records = []
    line = 0
    for i in range(600):
        t = 1000.0 + i
        for node in NODES:
            line += 1
            msg = rnd.choice(["iteration step done", "dataloader prefetch ok", "heartbeat from rank"])
            records.append(rec(msg, node=node, time=t, line=line))
            if node == odd_node and i % 3 == 0:
                records.append(rec("NCCL WARN NET/IB retrying send", node=node, time=t, line=line, level="warning"))
            if burst_at is not None and t >= burst_at and node == "n07":
                records.append(rec("Lustre: request timed out", node=node, time=t, line=line, level="error"))
    return scan_records(records, DigitMiner())


def test_spatial_forest_finds_the_odd_node_and_its_template() -> None:
    scan = _job(odd_node="n05")
    found = IsolationForestDetector().spatial(scan)
    assert found and found[0].node == "n05" and found[0].role == "anomaly"
    tid = found[0].data["drivers"][0]
    assert "retrying" in scan.templates[tid].template
    assert IsolationForestDetector().spatial(_job()) == []


def test_temporal_forest_finds_the_late_burst() -> None:
    scan = _job(burst_at=1500.0)
    found = IsolationForestDetector(window_seconds=30.0).temporal(scan)
    assert found, "expected an anomalous window"
    top = found[0]
    assert top.data["window"] >= 1470.0 and top.node == "n07"
    assert "Lustre" in scan.templates[top.data["drivers"][0]].template


def test_heatmap_scores_are_bounded_and_cover_every_node() -> None:
    scan = _job(burst_at=1500.0)
    grid = node_window_scores(scan, 60.0)
    assert sorted(grid.index) == NODES
    assert grid.to_numpy().min() >= 0.0 and grid.to_numpy().max() <= 1.0
    node, window = grid.stack().idxmax()
    assert node == "n07" and window >= 1500.0
