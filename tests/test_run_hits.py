"""A run's rule hits decided per distinct message of a shape and counted at once (``RunPath._hits_at_once``) give
the hits, their evidence and their totals that matching each line's record one by one (``Scanner.add_many`` of
records, the per-line reference) gives, with evidence that fills in the middle of a run and lines that meet no
rule, the same rule, or several.
"""

from __future__ import annotations

import itertools
import random
import sys
from pathlib import Path
from typing import Any

import pytest

from l4lite.ingest.files import discover
from l4lite.ingest.reader import IngestOptions, iter_job
from l4lite.mining.miner import TemplateMiner
from l4lite.records import Accounting

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import format_zoo  # noqa: E402


def _scan(paths: list[str], runs: bool, hit_cap: int) -> Any:
    from l4lite.options import AnalyzeOptions
    from l4lite.scan.job import load_rules
    from l4lite.scan.scanner import Scanner

    acc = Accounting()
    options = IngestOptions(fold_shapes=True)  # as ``analyze`` reads: kernel and storage lines in folded shapes
    scanner = Scanner(TemplateMiner(), load_rules(AnalyzeOptions()), bucket_seconds=5.0, hit_cap=hit_cap)
    scanner.add_many(iter_job(discover(paths, acc), options, acc, runs=runs))
    return scanner.finish(acc, options.rank_map.as_dict())


def _hits(scan: Any) -> tuple[list[tuple], dict]:
    return (sorted((h.rule_id, h.record.file, h.record.line, h.record.node, h.record.message,
                    sorted(h.groups.items())) for h in scan.hits), scan.hit_totals)


def _mixed_job(root: Path) -> list[str]:
    """Kernel and storage lines of the zoo interleaved in one file per node (runs of both, one node each), and a
    node of kernel lines alone: many lines meet rules, with new ids on most of them."""
    for node in (1, 2):
        rnd = random.Random(node)
        kernel = format_zoo.FORMATS["kernel"][0](node, random.Random(node))
        storage = format_zoo.FORMATS["storage"][0](node, random.Random(node + 10))
        out: list[str] = []
        for _ in range(400):
            out += itertools.islice(kernel if rnd.random() < 0.5 else storage, rnd.randrange(5, 40))
        f = root / f"node{node:03d}" / "syslog"
        f.parent.mkdir()
        f.write_text("\n".join(out) + "\n", encoding="utf-8")
    lone = root / "node003" / "kern.log"
    lone.parent.mkdir()
    lone.write_text("\n".join(itertools.islice(format_zoo.FORMATS["kernel"][0](3, random.Random(3)), 6000)) + "\n",
                    encoding="utf-8")
    return [str(root)]


@pytest.mark.parametrize("hit_cap", [200, 3])
def test_hits_counted_at_once_are_the_hits_of_each_record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          hit_cap: int) -> None:
    """The hits (rule, line, node, message, groups) and per-rule totals of a runs scan equal the record scan's;
    the runs scan took most rule lines without a look at each (so the batch path is what is compared)."""
    from l4lite.scan.runpath import RunPath

    paths = _mixed_job(tmp_path)
    looked: list[int] = []
    given: list[int] = []
    at_once = RunPath._hits_at_once

    def spy(self: Any, run: Any, busy: set[int], *args: Any) -> list[int]:
        out = at_once(self, run, busy, *args)
        given.append(sum(1 for x in run.shapes if x in busy))
        looked.append(len(out))
        return out

    monkeypatch.setattr(RunPath, "_hits_at_once", spy)
    runs = _hits(_scan(paths, True, hit_cap))
    records = _hits(_scan(paths, False, hit_cap))
    assert runs == records
    assert len(runs[0]) > 20 and sum(runs[1].values()) > len(runs[0])  # evidence kept, and more hits counted
    assert sum(given) > 5000 and sum(looked) < sum(given) / 2

