"""A run's cells, counts and exemplars counted with numpy (``scan.runtables``) equal the per-line steps of
``RunPath._add_run_lines`` they replace, down to the order in which each table took its keys; the rule hits
counted per run equal those counted line by line."""

from __future__ import annotations

import math
import random
import sys
from dataclasses import astuple
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from l4lite.options import AnalyzeOptions
from l4lite.scan import job as scan_job_module
from l4lite.scan.job import scan_job
from l4lite.scan.runtables import FirstSeen, RunTables, bucket_codes
from l4lite.scan.scanner import Scanner

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import format_zoo  # noqa: E402


def test_bucket_codes_are_python_floor_division() -> None:
    rnd = random.Random(7)
    times = [rnd.uniform(1.6e9, 1.8e9) for _ in range(2000)] + [rnd.uniform(0, 1e6) for _ in range(2000)]
    times += [1764391853.0, 1764391855.0, 0.0, 5.0, 9.999999999]
    for width in (5.0, 10.0, 0.1, 3.3, 640.0):
        got = bucket_codes(np.array(times), width).tolist()
        assert got == [int(t // width) for t in times]


def test_first_seen_orders_by_first_line() -> None:
    codes = np.array([7, 3, 7, 9, 3, 3, 1], np.int64)
    seen = FirstSeen(codes)
    assert seen.values == [7, 3, 9, 1]
    assert seen.first.tolist() == [0, 1, 3, 6]
    assert seen.counts == [2, 3, 1, 1]
    assert [seen.values[i] for i in seen.inverse.tolist()] == codes.tolist()


def _scanner_tables(job: Path, monkeypatch: pytest.MonkeyPatch, at_once: bool) -> dict[str, Any]:
    kept: list[Scanner] = []

    class Kept(Scanner):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            kept.append(self)

    monkeypatch.setattr(scan_job_module, "Scanner", Kept)
    if not at_once:
        monkeypatch.setattr(RunTables, "_tables_at_once", lambda self, run, cids, node: False)
    scan = scan_job([str(job)], AnalyzeOptions())
    monkeypatch.undo()
    (scanner,) = kept
    return {
        "cells": [(k, v[0], v[1] if v[1] != math.inf else None, v[2] if v[2] != -math.inf else None)
                  for k, v in scanner._cells.items()],
        "counts": list(scanner._counts.items()),
        "exemplars": [(k, [astuple(r) for r in v]) for k, v in scanner._exemplars.items()],
        "exemplar_count": scanner._exemplar_count,
        "hit_totals": list(scan.hit_totals.items()),
        "hits": [(h.rule_id, astuple(h.record), h.groups) for h in scan.hits],
        "bucket_seconds": scanner.bucket_seconds,
    }


@pytest.mark.parametrize("fmt", ["kernel", "storage", "megatron"])
def test_run_tables_equal_line_by_line(fmt: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    format_zoo.generate(fmt, tmp_path / fmt, 64_000)  # 4,000 lines a file: read in runs
    at_once = _scanner_tables(tmp_path / fmt, monkeypatch, True)
    by_line = _scanner_tables(tmp_path / fmt, monkeypatch, False)
    assert at_once["counts"] and at_once["exemplars"]
    assert at_once == by_line
