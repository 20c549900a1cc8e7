"""Helpers shared by the analyze, reader and mining tests: records and a tiny template miner without the real
ingest, a job of node folders written from lines, a job's spool read one way or another to compare a fast reader
with the plain one, and runs mined at once against their lines mined one by one."""

from __future__ import annotations

import hashlib
import random
import re
from dataclasses import astuple
from pathlib import Path
from typing import Any

import pyarrow.ipc as ipc
import pytest

from l4lite.export.spool import write_spool
from l4lite.ingest.files import discover
from l4lite.ingest.reader import IngestOptions, iter_job
from l4lite.ingest.shaperun import ShapeRun
from l4lite.mining.miner import TemplateMiner
from l4lite.mining.runmine import mine_run
from l4lite.options import AnalyzeOptions
from l4lite.records import Accounting, Record
from l4lite.rules import pack as pack_module
from l4lite.scan.job import scan_job


class DigitMiner:
    """A stand-in template miner: the template is the message with numbers masked."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}

    def add(self, message: str, key: bytes | None = None) -> int:
        template = re.sub(r"\d+(?:\.\d+)?", "<*>", message)
        return self.ids.setdefault(template, len(self.ids))

    def finalize(self) -> dict[int, tuple[str, str]]:
        return {cid: (hashlib.sha1(t.encode()).hexdigest()[:12], t) for t, cid in self.ids.items()}


def rec(message: str, *, node: str | None = "node1", rank: int | None = None, time: float | None = None,
        line: int = 1, file: str = "node1.log", level: str | None = None, source: str = "trainer",
        end_line: int | None = None, text: str | None = None) -> Record:
    return Record(file=file, line=line, end_line=end_line or line, node=node, rank=rank, gpu=None, source=source,
                  time=time, level=level, message=message, text=text if text is not None else message)


def spool_of(paths: list[str], options: IngestOptions, runs: bool, path: Path) -> tuple[object, dict, int]:
    """The spool table of ``paths`` read with ``options``, the miner's and accounting's state, and how many lines
    came in runs: a fast reader is compared with the plain one on all three."""
    acc = Accounting()
    miner = TemplateMiner()
    in_runs = 0

    def counted(items):  # type: ignore[no-untyped-def]
        nonlocal in_runs
        for item in items:
            if type(item) is ShapeRun:
                in_runs += len(item)
            yield item

    write_spool(counted(iter_job(discover(paths, acc), options, acc, runs=runs)), miner, path)
    with ipc.open_stream(path) as reader:
        table = reader.read_all()
    return table, {"templates": miner.finalize(), "hits": miner.hits, "accounting": acc.to_dict()}, in_runs


T0 = "2024-03-02 10:00:"


def node_job(tmp_path: Path, nodes: dict[str, list[str]]) -> Path:
    """A job of one ``train.log`` per node folder, from the lines given."""
    for node, lines in nodes.items():
        d = tmp_path / "job" / node
        d.mkdir(parents=True)
        (d / "train.log").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return tmp_path / "job"


def progress(n: int) -> list[str]:
    """``n`` seconds of ordinary training progress, one line a second from ``T0``."""
    return [f"{T0}{i:02d},000 INFO step {i} loss 2.{i:02d}" for i in range(n)]


def assert_runs_mine_as_lines(items: list, by_run: TemplateMiner | None = None,
                              by_line: TemplateMiner | None = None) -> None:
    """Mining the runs gives the ids, hits and state that mining their lines one by one gives."""
    by_run = TemplateMiner() if by_run is None else by_run
    by_line = TemplateMiner() if by_line is None else by_line
    got: list[int] = []
    want: list[int] = []
    for item in items:
        if type(item) is ShapeRun:
            got += mine_run(item, by_run)
            want += [by_line.add(r.message) for r in item.records()]
        else:
            got.append(by_run.add(item.message))
            want.append(by_line.add(item.message))
    assert got == want
    assert by_run.hits == by_line.hits
    assert by_run.to_state() == by_line.to_state()


def counted_scan(job: Path, monkeypatch: pytest.MonkeyPatch, *off: tuple[Any, str]) -> tuple[dict[str, Any], int]:
    """A job's rule hits and how many times the rule pack was asked (``RulePack.match_ids``), with each
    ``(module, name)`` of ``off`` replaced by a function answering None (a fast path switched off)."""
    calls = [0]
    match_ids = pack_module.RulePack.match_ids

    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return match_ids(self, *args, **kwargs)

    monkeypatch.setattr(pack_module.RulePack, "match_ids", counted)
    for module, name in off:
        monkeypatch.setattr(module, name, lambda *args: None)
    scan = scan_job([str(job)], AnalyzeOptions())
    monkeypatch.undo()
    return {"hit_totals": sorted(scan.hit_totals.items()),
            "hits": [(h.rule_id, astuple(h.record), h.groups) for h in scan.hits]}, calls[0]


def real_job_lines(rnd: random.Random, per_file: int, files: int = 60) -> list[str]:
    """Lines drawn with ``rnd`` from the real jobs' node-level files (at most ``per_file`` of each of ``files``
    files, none longer than 2,000 characters): real text for checks that a fast path answers as the plain one."""
    paths = sorted(p for p in (Path(__file__).resolve().parent.parent / "fixtures" / "real_jobs").glob("*/*/*")
                   if p.is_file())
    out: list[str] = []
    for path in rnd.sample(paths, min(files, len(paths))):
        lines = path.read_text(errors="replace").splitlines()
        out += [line for line in rnd.sample(lines, min(per_file, len(lines))) if len(line) <= 2000]
    return out
