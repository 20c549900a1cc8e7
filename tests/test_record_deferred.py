"""Progress lines read record by record (a CRI file, a scan without runs) wait for their values as a run's lines
do (``Scanner._add_deferred``), and the scan equals the one that parses every line's values at once."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from test_engine import signature

from l4lite.ingest.files import discover
from l4lite.ingest.reader import IngestOptions, iter_job
from l4lite.mining.miner import TemplateMiner
from l4lite.options import AnalyzeOptions
from l4lite.records import Accounting
from l4lite.scan.job import load_rules
from l4lite.scan.jobscan import METRIC_CAP
from l4lite.scan.metric_plans import MetricParser
from l4lite.scan.scanner import Scanner


def _job(tmp_path: Path) -> list[str]:
    rnd = random.Random(7)
    cri = tmp_path / "node001" / "0.log"  # a container's log: read record by record, its message behind a prefix
    cri.parent.mkdir()
    rows = []
    for i in range(1, int(METRIC_CAP * 1.5)):
        stamp = f"2025-11-29T04:{i // 60 % 60:02d}:{i % 60:02d}.{rnd.randrange(10**9):09d}Z"
        if i % 911 == 300:  # a NaN loss: flagged, never thinned
            rows.append(f"{stamp} stdout F [Rank 0] step={i}, loss=nan, grad_norm=1.000")
        elif i % 1300 == 650:  # a validation line: an implied phase, not a progress line
            rows.append(f"{stamp} stdout F [Rank 0] step={i}, val_loss={rnd.uniform(1, 3):.4f}")
        else:
            rows.append(f"{stamp} stdout F [Rank 0] step={i}, loss={rnd.uniform(1, 9):.4f}, "
                        f"grad_norm={rnd.uniform(0, 2):.3f}")
    cri.write_text("\n".join(rows) + "\n", encoding="utf-8")
    megatron = tmp_path / "node002" / "rank8.log"  # a NaN counter that flags some lines of a deferred shape
    megatron.parent.mkdir()
    megatron.write_text("".join(
        f" [2025-11-29 05:{i // 60 % 60:02d}:{i % 60:02d}] iteration {i:>8d}/   20000 | consumed samples: "
        f"{i * 64:>10d} | lm loss: {rnd.uniform(1, 9):.6E} | grad norm: {rnd.uniform(0, 2):.3f} | "
        f"number of nan iterations: {int(i % 1231 == 17):>3d} |\n" for i in range(1, int(METRIC_CAP * 1.5))),
        encoding="utf-8")
    return [str(tmp_path)]


def _scan(paths: list[str]) -> tuple[int, object]:
    acc = Accounting()
    scanner = Scanner(TemplateMiner(), load_rules(AnalyzeOptions()), bucket_seconds=5.0)
    scanner.add_many(iter_job(discover(paths, acc), IngestOptions(), acc, runs=False))
    waiting = sum(type(p[0]) is tuple for series in scanner._metrics.values() for p in series)
    return waiting, scanner.finish(acc)


def test_records_of_a_learnt_shape_wait_and_scan_as_parsed_at_once(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    paths = _job(tmp_path)
    waiting, deferred = _scan(paths)
    assert waiting > METRIC_CAP // 2  # most kept points of both nodes wait for their values
    with monkeypatch.context() as m:
        m.setattr(MetricParser, "deferred", lambda self, shape: None)  # every record's values parsed at once
        waiting_now, parsed = _scan(paths)
    assert waiting_now == 0
    assert signature(deferred) == signature(parsed)
    flagged = [p for p in deferred.metrics if p.flagged]
    assert len([p for p in flagged if p.node == "node001"]) == len(range(300, int(METRIC_CAP * 1.5), 911))
    assert len([p for p in flagged if p.node == "node002"]) == len(range(17, int(METRIC_CAP * 1.5), 1231))
    assert {m.kind for m in deferred.markers} >= {"train", "eval"}
