"""Kernel lines whose kept tokens carry a new id on every line (``libc.so.6[7f3a1c2b+1f0e0]``): a run answers
them by their key without those tokens (``TemplateMiner.free_kept``) once each such token is checked, and gives
the ids, hits and state of ``add`` line by line, also where a token masks otherwise (all digits) or would join a
list of names."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from l4lite.ingest.files import discover
from l4lite.ingest.reader import IngestOptions, iter_job
from l4lite.ingest.runs import ShapeRun
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


@pytest.mark.parametrize("seed", [3, 11])
def test_new_ids_in_kept_tokens_mine_in_runs_as_line_by_line(tmp_path: Path, seed: int,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    _kernel_log(tmp_path, random.Random(seed))
    acc = Accounting()
    items = list(iter_job(discover([str(tmp_path)], acc), IngestOptions(fold_shapes=True), acc, runs=True))
    assert sum(len(x) for x in items if type(x) is ShapeRun) > 2000
    checked = []
    stays = TemplateMiner.kept_stays

    def counted(self: TemplateMiner, token: str, form: bytes | None = None) -> bool:
        ok = stays(self, token, form)
        checked.append(ok)
        return ok

    monkeypatch.setattr(TemplateMiner, "kept_stays", counted)
    by_run, by_line = TemplateMiner(), TemplateMiner()
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
    assert checked.count(True) > 1000  # the premise: runs answered lines by their keys without those tokens
    assert checked.count(False) > 10  # and the check turned some away (all digits: <NUM>)
