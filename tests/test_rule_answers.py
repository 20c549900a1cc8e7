"""A run's lines that rules meet are answered once per message (``RunPath._rule_answers_of``): the scan is the
per-record scan's, with fewer pattern searches, and a line whose every matched rule has its evidence full is
counted without a record."""

from __future__ import annotations

import itertools
import random
import sys
from pathlib import Path

import pytest

from l4lite.ingest.files import discover
from l4lite.ingest.reader import IngestOptions, iter_job
from l4lite.mining.miner import TemplateMiner
from l4lite.options import AnalyzeOptions
from l4lite.records import Accounting
from l4lite.rules.pack import RulePack
from l4lite.scan.job import load_rules
from l4lite.scan.jobscan import HIT_CAP
from l4lite.scan.scanner import Scanner

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_engine import signature  # noqa: E402


def _zoo_job(tmp_path: Path, fmt: str, lines: int) -> list[str]:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    import format_zoo

    gen, name = format_zoo.FORMATS[fmt]
    for node in range(2):
        f = tmp_path / fmt / f"node{node + 1:03d}" / name
        f.parent.mkdir(parents=True)
        f.write_text("\n".join(itertools.islice(gen(node, random.Random(node)), lines)) + "\n", encoding="utf-8")
    return [str(tmp_path / fmt)]


def _scan(paths: list[str], runs: bool) -> tuple[dict, Scanner]:
    acc = Accounting()
    options = IngestOptions(fold_shapes=runs)
    scanner = Scanner(TemplateMiner(), load_rules(AnalyzeOptions()), bucket_seconds=5.0)
    scanner.add_many(iter_job(discover(paths, acc), options, acc, runs=runs))
    return signature(scanner.finish(acc, options.rank_map.as_dict())), scanner


@pytest.mark.parametrize("fmt", ["storage", "kernel"])
def test_rule_answers_by_message_scan_as_line_by_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      fmt: str) -> None:
    paths = _zoo_job(tmp_path, fmt, 6000)
    calls: list[int] = []
    search = RulePack.match_line

    def counted(self: RulePack, *args: object, **kwargs: object) -> object:
        calls.append(1)
        return search(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(RulePack, "match_line", counted)
    plain, _ = _scan(paths, False)
    searched = len(calls)
    calls.clear()
    fast, scanner = _scan(paths, True)
    assert fast == plain
    totals = scanner.finish(Accounting(), {}).hit_totals
    assert max(totals.values()) > 5 * HIT_CAP  # most hits only counted: their evidence was full
    # the lines of repeated messages (``nfs: server fs3 ... not responding``) are searched once each
    assert len(calls) < (0.75 if fmt == "storage" else 0.95) * searched
