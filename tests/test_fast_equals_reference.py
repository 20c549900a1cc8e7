"""The scan's fast paths for rules (the folded gate memo, needed literals, rules per shape on runs and records)
give the incident of the per-line reference: every record matched by ``RulePack.match`` of a pack without
them. Checked on the format zoo's kernel, storage, NCCL and Composer jobs, the simulator's suite and the real
jobs; an incident is compared whole but for its timings."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from l4lite import api
from l4lite.ingest.context import build_context
from l4lite.ingest.files import discover
from l4lite.ingest.reader import IngestOptions, iter_job
from l4lite.ingest.shaperun import ShapeRun
from l4lite.options import AnalyzeOptions
from l4lite.records import Accounting
from l4lite.rules.pack import RulePack

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import format_zoo  # noqa: E402


class PerLine:
    """A rule pack seen without its per-shape answers: the scan matches every record and every run's line with
    ``match``, as a pack without the fast paths does (``fold=False``)."""

    def __init__(self, pack: RulePack) -> None:
        self._pack = pack

    def __getattr__(self, name: str) -> Any:
        if name in ("line_rules", "match_line", "could_match_line"):
            raise AttributeError(name)
        return getattr(self._pack, name)


def untimed(data: Any) -> Any:
    if isinstance(data, dict):
        return {k: untimed(v) for k, v in data.items() if "seconds" not in k}
    if isinstance(data, list):
        return [untimed(v) for v in data]
    return data


def incident(job: Path, rules: Any, monkeypatch: pytest.MonkeyPatch) -> dict:
    monkeypatch.setattr(api, "load_rules", lambda options: rules)
    found = api.analyze([str(job)], AnalyzeOptions())
    return untimed(json.loads(found.to_json()))


def both(job: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[dict, dict]:
    return (incident(job, RulePack.load(), monkeypatch),
            incident(job, PerLine(RulePack.load(fold=False)), monkeypatch))


@pytest.mark.parametrize("fmt", ["kernel", "storage", "nccl", "composer", "torchtitan", "json-lines"])
def test_zoo_jobs(fmt: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    format_zoo.generate(fmt, tmp_path / fmt, 24_000)
    fast, reference = both(tmp_path / fmt, monkeypatch)
    assert fast == reference
    assert fast["evidence"] or fmt in ("nccl", "composer", "torchtitan", "json-lines")  # kernel, storage: rules


@pytest.mark.parametrize("fmt", ["torchtitan", "json-lines"])
def test_zoo_times_after_a_tag_or_in_a_json_field_are_read(fmt: str, tmp_path: Path) -> None:
    """torchtitan's ``[titan] <time>`` and a JSON logger's ``"time"`` field give every line its time, read in runs
    (``ingest.timespots``), and the job its span."""
    format_zoo.generate(fmt, tmp_path / fmt, 48_000)  # 3,000 lines a file: long enough for runs
    acc = Accounting()
    items = list(iter_job(discover([str(tmp_path / fmt)], acc), IngestOptions(), acc, runs=True))
    times = [t for item in items for t in (item.times if type(item) is ShapeRun else [item.time])]
    assert len(times) == 48_000 and None not in times
    assert sum(len(item) for item in items if type(item) is ShapeRun) > 0.9 * len(times)
    ctx = build_context(discover([str(tmp_path / fmt)], Accounting()).files)
    assert ctx.start == min(times) and ctx.end is not None and ctx.end > ctx.start


SUITE = sorted(p for p in (ROOT / "fixtures" / "suite").iterdir() if p.is_dir())
REAL = sorted(p for p in (ROOT / "fixtures" / "real_jobs").iterdir() if p.is_dir())


@pytest.mark.parametrize("job", SUITE + REAL, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fixture_jobs(job: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fast, reference = both(job, monkeypatch)
    assert fast == reference
