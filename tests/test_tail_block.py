"""A file's last block of lines, shorter than a block read in runs on its own (``RUN_BLOCK_LINES``), is read in
runs too once a block of the file was: the same records, accounting, spool and scan as line by line."""

from __future__ import annotations

import itertools
import random
import sys
from pathlib import Path

import pytest
from test_runs import same_three_ways, scan_counts, spool

from l4lite.ingest.files import CHUNK_BYTES, discover
from l4lite.ingest.reader import IngestOptions, iter_job
from l4lite.ingest.runs import RUN_BLOCK_LINES
from l4lite.ingest.shaperun import ShapeRun
from l4lite.records import Accounting

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import format_zoo  # noqa: E402


def _job(tmp_path: Path, fmt: str, tail_lines: int) -> tuple[list[str], int]:
    """One node's log of ``fmt`` a little over one read chunk: its last block holds about ``tail_lines`` lines.
    Returns the job's paths and the file's number of lines."""
    gen, name = format_zoo.FORMATS[fmt]
    lines: list[str] = []
    size = 0
    tail = 0
    for line in itertools.islice(gen(0, random.Random(3)), 200_000):
        lines.append(line)
        size += len(line.encode("utf-8")) + 1
        if size > CHUNK_BYTES:
            tail += 1
            if tail >= tail_lines:
                break
    f = tmp_path / "job" / "node001" / name
    f.parent.mkdir(parents=True)
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return [str(tmp_path / "job")], len(lines)


def _lines_in_runs(paths: list[str]) -> set[int]:
    acc = Accounting()
    out: set[int] = set()
    for item in iter_job(discover(paths, acc), IngestOptions(fold_shapes=True), acc, runs=True):
        if type(item) is ShapeRun:
            out.update(range(item.first, item.first + len(item)))
    return out


@pytest.mark.parametrize("fmt", ["nccl", "kernel", "composer"])
def test_the_last_short_block_of_a_file_reads_in_runs_and_the_same(tmp_path: Path, fmt: str) -> None:
    paths, n = _job(tmp_path, fmt, 600)
    in_runs = _lines_in_runs(paths)
    tail = range(n - 500, n + 1)  # lines of the last block, which has fewer than RUN_BLOCK_LINES
    assert RUN_BLOCK_LINES > 600  # the premise: the last block alone would be read line by line
    assert sum(k in in_runs for k in tail) > 0.8 * len(tail)
    assert same_three_ways(paths) > 5000
    a, state_a = spool(paths, True, tmp_path / "runs.arrows", fold=True)
    b, state_b = spool(paths, False, tmp_path / "lines.arrows")
    assert a.equals(b)
    assert state_a == state_b
    assert scan_counts(paths, True, 300, fold=True) == scan_counts(paths, False, 300)
