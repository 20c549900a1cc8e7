"""Kernel lines whose kept tokens carry a new id on every line (``libc.so.6[7f3a1c2b+1f0e0]``): a run answers
them by their key without those tokens (``TemplateMiner.free_kept``) once each such token is checked, and gives
the ids, hits and state of ``add`` line by line, also where a token masks otherwise (all digits) or would join a
list of names."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
from scan_helpers import assert_runs_mine_as_lines

from l4lite.ingest.files import discover
from l4lite.ingest.reader import IngestOptions, iter_job
from l4lite.ingest.shaperun import ShapeRun
from l4lite.mining.miner import TemplateMiner
from l4lite.mining.runmine import mine_run
from l4lite.records import Accounting


def _kernel_log(tmp_path: Path, rnd: random.Random) -> Path:
    t = 1_764_388_862
    lines = []
    for k in range(5000):
        t += rnd.randrange(2)
        head = f"Nov 29 04:{(t // 60) % 60:02d}:{t % 60:02d} node07 kernel: [{k * 1.5 + 100:12.6f}] "
        r = rnd.random()
        if r < 0.6:  # a kept token with new hex letters on most lines, all digits on some
            tail = f"{rnd.getrandbits(20):05x}" if rnd.random() < 0.9 else f"{rnd.randrange(10**4, 10**5)}"
            msg = (f"python[{rnd.randrange(10**5, 10**6)}]: segfault at {rnd.getrandbits(44) | 1 << 43:x} ip "
                   f"{rnd.getrandbits(47):016x} error 4 in libc.so.6[{rnd.getrandbits(40) | 1 << 39:x}+{tail}]")
        elif r < 0.8:  # a kept token that may be a name of the stem of its neighbours: a list of names then
            last = rnd.choice(["ab3", f"{rnd.getrandbits(8):02x}9", "ab7"])
            msg = f"attach ab1 ab2 {last} done"
        else:
            msg = f"CPU{rnd.randrange(12)}: Core temperature above threshold, cpu clock throttled (total events = {k})"
        lines.append(head + msg)
    f = tmp_path / "node007" / "kern.log"
    f.parent.mkdir()
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return f


def answers_of(monkeypatch: pytest.MonkeyPatch, method: str) -> list[bool]:
    """The answers a ``TemplateMiner`` check gives from now on, in the order given."""
    checked: list[bool] = []
    original = getattr(TemplateMiner, method)

    def counted(self: TemplateMiner, *args: object) -> bool:
        ok = original(self, *args)
        checked.append(ok)
        return ok

    monkeypatch.setattr(TemplateMiner, method, counted)
    return checked


@pytest.mark.parametrize("seed", [3, 11])
def test_new_ids_in_kept_tokens_mine_in_runs_as_line_by_line(tmp_path: Path, seed: int,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    _kernel_log(tmp_path, random.Random(seed))
    acc = Accounting()
    items = list(iter_job(discover([str(tmp_path)], acc), IngestOptions(fold_shapes=True), acc, runs=True))
    assert sum(len(x) for x in items if type(x) is ShapeRun) > 2000
    checked = answers_of(monkeypatch, "kept_stays")
    assert_runs_mine_as_lines(items)
    assert checked.count(True) > 1000  # the premise: runs answered lines by their keys without those tokens
    assert checked.count(False) > 10  # and the check turned some away (all digits: <NUM>)


def _lustre_log(tmp_path: Path, rnd: random.Random) -> Path:
    """The zoo's storage lines (Lustre's ``scratch-OST00d3-osc-ffff8f2a9c01:`` new on every line, ``<IP>@o2ib``),
    where, late in the log, a few Lustre nodes are on another network or named (their kept token masks
    otherwise, and then the cluster takes a wildcard there)."""
    import itertools
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    import format_zoo

    lines = []
    for k, line in enumerate(itertools.islice(format_zoo.gen_storage(6, rnd), 12_000)):
        if k > 10_000 and "ost_connect" in line and rnd.random() < 0.05:
            line = line.replace("@o2ib", rnd.choice(["@o2ib1", "@tcp"])) if rnd.random() < 0.5 else \
                re.sub(r"node [0-9.]+@", f"node gw{rnd.randrange(10)}@", line)
        lines.append(line)
    f = tmp_path / "node007" / "syslog"
    f.parent.mkdir()
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return f


@pytest.mark.parametrize("seed", [5, 17])
def test_partly_free_kept_tokens_mine_in_runs_as_line_by_line(tmp_path: Path, seed: int,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Lustre lines whose OST token is new on every line where the cluster has a wildcard, and whose
    ``<IP>@o2ib`` must mask alike: a run answers them from the key's entry (``TemplateMiner.loose_answer``)
    and gives the ids, hits and state of ``add`` line by line, also once other networks and names come."""
    _lustre_log(tmp_path, random.Random(seed))
    acc = Accounting()
    items = list(iter_job(discover([str(tmp_path)], acc), IngestOptions(fold_shapes=True), acc, runs=True))
    assert sum(len(x) for x in items if type(x) is ShapeRun) > 8000
    checked = answers_of(monkeypatch, "same_fixed")
    assert_runs_mine_as_lines(items)
    assert checked.count(True) > 1000  # the premise: runs answered lines from the key's entry


def test_free_kept_tokens_learnt_once_serve_later_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Which kept tokens of a segfault line's shape are free is learnt from one line ``add`` answered and serves
    the shape's lines in every later run (``RunAnswers.free_shapes``), not in its own run only: ``add`` is called
    for fewer of those lines than there are runs that hold them, and the ids are still ``add``'s line by line."""
    _kernel_log(tmp_path, random.Random(7))
    acc = Accounting()
    items = list(iter_job(discover([str(tmp_path)], acc), IngestOptions(fold_shapes=True), acc, runs=True))
    # short runs, as a kernel log's lines of new shapes cut them
    runs = [x.part(a, a + 40) for x in items if type(x) is ShapeRun for a in range(0, len(x), 40)]
    with_segfault = sum(any("segfault" in s for s in run.texts) for run in runs)
    assert with_segfault > 20  # the premise: the shape is in many runs
    added: list[str] = []
    original = TemplateMiner.add

    def counted(self: TemplateMiner, message: str, *args: object) -> int:
        added.append(message)
        return original(self, message, *args)

    miner = TemplateMiner()
    monkeypatch.setattr(TemplateMiner, "add", counted)
    for run in runs:
        mine_run(run, miner)
    monkeypatch.setattr(TemplateMiner, "add", original)
    assert sum("segfault" in m for m in added) < with_segfault
    assert_runs_mine_as_lines(runs)
