"""Choose the node x time window length by measurement on a simulated suite.

For every incident job with a faulty node and a fault time, the job is scanned once (5 s buckets) and, for each
candidate window length, two things are scored:

- heatmap hit: the (node, window) cell with the highest isolation score lies on the faulty node, within two
  windows of the fault time (what the report's heatmap shows first);
- temporal hit: the isolation forest's most anomalous window (``IsolationForestDetector.temporal``) starts
  within two windows of the fault time.

It prints one row per window length with both hit rates and the time the scoring took, so the default in
``l4lite.detect.windows.DEFAULT_WINDOW`` can be read off (the shortest length with the best hit rates).

    .venv/bin/python benchmarks/window_length.py fixtures/suite [--windows 10,30,60,120,300]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import datetime
from pathlib import Path

from l4lite.detect.iforest import IsolationForestDetector, node_window_scores
from l4lite.options import AnalyzeOptions
from l4lite.scan.job import scan_job


def _epoch(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def _short(name: str) -> str:
    return name.split(".", 1)[0].lower()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("suite", help="suite folder (jobs with ground_truth.json)")
    ap.add_argument("--windows", default="10,20,30,60,120,300", help="window lengths in seconds, comma-separated")
    args = ap.parse_args(argv)
    windows = [float(w) for w in args.windows.split(",")]
    jobs = []
    for truth_file in sorted(Path(args.suite).glob("*/ground_truth.json")):
        truth = json.loads(truth_file.read_text())
        if truth.get("status") == "incident" and truth.get("faulty_nodes") and truth.get("fault_time"):
            jobs.append((truth_file.parent, truth))
    if not jobs:
        print("no incident jobs with a faulty node and a fault time", file=sys.stderr)
        return 2
    scans = [(scan_job([str(d)], AnalyzeOptions()), t) for d, t in jobs]
    print(f"{len(scans)} incident jobs with a faulty node")
    print(f"{'window_s':>8}  {'heatmap_hit':>11}  {'temporal_hit':>12}  {'seconds':>7}")
    for w in windows:
        started = time.perf_counter()
        heat = temporal = 0
        for scan, truth in scans:
            fault = _epoch(truth["fault_time"])
            faulty = {_short(n) for n in truth["faulty_nodes"]}
            grid = node_window_scores(scan, w)
            if not grid.empty:
                node, start = grid.stack().idxmax()
                heat += _short(str(node)) in faulty and abs(float(start) - fault) <= 2 * w
            found = IsolationForestDetector(window_seconds=w, max_findings=1).temporal(scan)
            temporal += bool(found) and abs(float(found[0].data["window"]) - fault) <= 2 * w
        n = len(scans)
        print(f"{w:8.0f}  {heat / n:11.1%}  {temporal / n:12.1%}  {time.perf_counter() - started:7.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
