"""`l4lite parse --jobs N`: a worker's shards of one run share the line shapes learnt (``worker_books``), so a
shape is learnt once per worker as in one process, and the records are those of one process."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from l4lite.export.parse_engine import finalized_batches, parse_parallel, worker_books


class Serial:
    """Every shard in this process, one after another: one worker reading all the shards."""

    workers = 2

    def map(self, fn: Any, items: Any) -> Any:
        return map(fn, items)


def syslog_job(root: Path, nodes: int = 4, lines: int = 600) -> Path:
    for n in range(nodes):
        folder = root / "job" / f"node{n:02d}"
        folder.mkdir(parents=True)
        rows = [f"Dec  6 10:{i // 60 % 60:02d}:{i % 60:02d} node{n:02d} kernel: LustreError: 11-0: "
                f"scratch-OST{i % 4:04x}-osc-ffff9a{i % 3:02x}: operation ost_write to node 10.0.{n}.{i % 250}"
                f"@o2ib failed: rc = -{i % 2 + 110}\n" for i in range(lines)]
        (folder / "syslog").write_text("".join(rows))
    return root / "job"


def records(results: Any) -> list[dict[str, Any]]:
    return [row for batch in finalized_batches(results) for row in batch.to_pylist()]


def learnt(books: list[dict[tuple, Any]]) -> int:
    """Shapes and folded shapes learnt into ``books``."""
    return sum(len(b.plans) + len(b.fold_index) + len(b.heads) for d in books for b in d.values())


def test_a_workers_later_shards_learn_no_shape_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    job = syslog_job(tmp_path)
    one = tmp_path / "one"
    one.mkdir()
    results, _, _ = parse_parallel([str(job)], None, Serial(), one)  # type: ignore[arg-type]
    assert len(results) > 1  # several shards, read here one after another
    shared = learnt([worker_books(str(one))])
    assert shared > 0

    per_shard: list[dict[tuple, Any]] = []
    monkeypatch.setattr("l4lite.export.parse_engine.worker_books", lambda job: per_shard.append({}) or per_shard[-1])
    two = tmp_path / "two"
    two.mkdir()
    alone, _, _ = parse_parallel([str(job)], None, Serial(), two)  # type: ignore[arg-type]
    assert len(per_shard) == len(results)
    assert learnt(per_shard) >= len(results) * shared  # each shard learnt every shape again
    assert records(results) == records(alone)


def test_books_are_kept_for_the_latest_run_only() -> None:
    first = worker_books("run-a")
    assert worker_books("run-a") is first
    assert worker_books("run-b") is not first
    assert worker_books("run-a") is not first  # run-a's were dropped when run-b came
    assert worker_books("") is not worker_books("")  # an unnamed run shares nothing
