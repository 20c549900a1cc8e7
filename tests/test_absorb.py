"""A line read from its own plan amid a run joins the run (``ingest.runs.RunReading._absorb``) instead of ending it.

The window reads the times of ISO headers only; a line whose plan reads a time the window does not (c10's
``[W515 07:06:42.829549331 ...]`` behind torchrun's ``[rankN]:``, TensorFlow's ``2021-01-12 20:45:46.201878: I``
behind OpenMPI's ``[1,3]<stderr>:``) used to end the run it sat in, so a format that writes one every few lines
was read in runs of five lines, each paying a run's fixed costs, and a log of such lines only (glog) in no run.
These tests check that such lines stay in (or make) runs and that what is read is what the per-line path and the
full reader read.
"""

from __future__ import annotations

import itertools
import random
import sys
from pathlib import Path

import pytest

from l4lite.ingest.files import discover
from l4lite.ingest.reader import IngestOptions, iter_job
from l4lite.ingest.shaperun import ShapeRun
from l4lite.records import Accounting

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

from test_runs import assert_spooled_and_scanned_alike, same_three_ways  # noqa: E402


def _zoo_job(tmp_path: Path, fmt: str) -> list[str]:
    import format_zoo

    gen, name = format_zoo.FORMATS[fmt]
    for node in range(2):
        f = tmp_path / "job" / f"node{node + 1:03d}" / name
        f.parent.mkdir(parents=True)
        lines = itertools.islice(gen(node, random.Random(node)), 40_000 * node, 40_000 * node + 3000)
        f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return [str(tmp_path / "job")]


def _mean_run(paths: list[str]) -> float:
    acc = Accounting()
    runs = lines = 0
    for item in iter_job(discover(paths, acc), IngestOptions(), acc, runs=True):
        if type(item) is ShapeRun:
            runs += 1
            lines += len(item)
    return lines / max(runs, 1)


@pytest.mark.parametrize("fmt", ["c10-rank", "mpi-tf", "glog", "ansi"])
def test_lines_whose_plan_reads_a_time_the_window_does_not_stay_in_their_run(tmp_path: Path, fmt: str) -> None:
    """Runs of the zoo's c10 and OpenMPI-tagged TensorFlow formats are long (before: 5 and 21 lines at the mean),
    glog and ANSI-coloured logs, whose times the window does not read at all, go in runs (before: none), and every
    record, the spool and the scan are those of the per-line path."""
    paths = _zoo_job(tmp_path, fmt)
    assert _mean_run(paths) >= 40
    assert same_three_ways(paths) > 5000
    assert_spooled_and_scanned_alike(paths, tmp_path)


def test_absorbed_lines_share_one_run_shape_per_line_shape(tmp_path: Path) -> None:
    """A glog line every third line of an ISO-timed log, in few shapes: the run table grows by a shape per line
    shape, not per line, and the records are the per-line path's (a wrong clock among them included)."""
    rnd = random.Random(3)
    lines = []
    for i in range(6000):
        t = 4 * 3600 + i * 0.7
        hh, mm, ss = int(t // 3600), int(t // 60 % 60), t % 60
        if i % 3 == 2:
            clock = "12 23:59:59.000001" if i == 3005 else f"29 {hh:02d}:{mm:02d}:{ss:09.6f}"
            lines.append(f"I11{clock} {rnd.choice((1234567, 7654321))} train.py:{rnd.choice((412, 415))}] "
                         f"step {i}, loss {rnd.uniform(1, 9):.4f}")
        else:
            lines.append(f"2025-11-29 {hh:02d}:{mm:02d}:{ss:06.3f} | INFO | step {i:6d} | loss "
                         f"{rnd.uniform(1, 9):.4f}")
    f = tmp_path / "node001" / "train.log"
    f.parent.mkdir()
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    paths = [str(tmp_path)]
    assert same_three_ways(paths) == 6000
    acc = Accounting()
    tables = {id(item.table): item.table for item in iter_job(discover(paths, acc), IngestOptions(), acc, runs=True)
              if type(item) is ShapeRun}
    assert sum(len(t) for t in tables.values()) < 40
    assert _mean_run(paths) >= 200
