"""``mining.runmine.mine_run`` keeps its memo of kept-token getters across an ``add`` that changed no cluster:
such an ``add`` rewrites the cache entry of its own key only (``TemplateMiner.filed``), so the other keys' getters
stand. It looks a shape's key up in its hex-folded form, under which the miner files it, so that NCCL init lines
(``comm 0xd481636bf2``, a new shape on every line) share one key. NCCL lines of the format zoo then call ``add``
for under a tenth of their lines and ask for a getter less often than that, and still give the ids, hits and
state of ``add`` line by line, also with a cache small enough to be emptied while a run is mined. A key's
entry rewritten with its kept tokens where they were keeps its getter (what runs learnt by it still answers)."""

from __future__ import annotations

import itertools
import random
import sys
from pathlib import Path

import pytest
from scan_helpers import assert_runs_mine_as_lines

from l4lite.ingest.files import discover
from l4lite.ingest.reader import IngestOptions, iter_job
from l4lite.ingest.shaperun import ShapeRun
from l4lite.mining.miner import TemplateMiner
from l4lite.records import Accounting

_LINES = 8000


def _nccl_items(tmp_path: Path) -> list:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    import format_zoo

    gen, name = format_zoo.FORMATS["nccl"]
    f = tmp_path / "job" / "node001" / name
    f.parent.mkdir(parents=True)
    f.write_text("\n".join(itertools.islice(gen(0, random.Random(3)), _LINES)) + "\n", encoding="utf-8")
    acc = Accounting()
    return list(iter_job(discover([str(tmp_path / "job")], acc), IngestOptions(fold_shapes=True), acc, runs=True))


class _Counted(TemplateMiner):
    """A miner that counts ``kept_getter`` and ``add`` calls."""

    def __init__(self, **kwargs: int) -> None:
        super().__init__(**kwargs)
        self.getter_calls = 0
        self.add_calls = 0

    def kept_getter(self, key: bytes):  # type: ignore[no-untyped-def]
        self.getter_calls += 1
        return super().kept_getter(key)

    def add(self, message: str, key: bytes | None = None, wide: bool = False) -> int:
        self.add_calls += 1
        return super().add(message, key, wide)


@pytest.mark.parametrize("cache_size", [100_000, 7])
def test_nccl_runs_keep_their_getters_across_adds_that_change_nothing(tmp_path: Path, cache_size: int) -> None:
    items = _nccl_items(tmp_path)
    assert sum(len(x) for x in items if type(x) is ShapeRun) > 6000
    by_run = _Counted(cache_size=cache_size)
    assert_runs_mine_as_lines(items, by_run, TemplateMiner(cache_size=cache_size))
    if cache_size == 7:  # the premise: the cache of entries was emptied while runs were mined
        assert by_run.key_resets > 10
    else:  # the premise: many adds, few of which changed a cluster; each emptied the memo before
        assert by_run.changes < 20
        assert by_run.add_calls < _LINES / 10
        assert by_run.getter_calls < by_run.add_calls


def test_a_rewritten_entry_keeps_its_getter() -> None:
    miner = TemplateMiner()
    first = miner.add("CPU7: Core temperature above threshold, cpu clock throttled (total events = 5)")
    key = b"CPU0: Core temperature above threshold, cpu clock throttled (total events = 0)"
    getter = miner.kept_getter(key)
    assert getter is not None
    miner.filed = None
    assert miner.add("CPU8: Core temperature above threshold, cpu clock throttled (total events = 9)") == first
    assert miner.filed == key  # the entry was written again (``CPU8:`` is new to the key)
    assert miner.kept_getter(key) is getter
