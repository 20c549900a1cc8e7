"""A node's clock ahead at the end, found against the zone-free time its processes' error files state
(``ingest.statedsteps``), read back as a step by the batch and the live reader alike; and a line flushed an hour
late, before its file's and the job's start, taken for a wrong clock (``JobContext.past_limit``).

``126-ddp-save_killed``: gpu-node-12 logs naive local time and springs forward an hour (daylight saving) between
its console's sampled lines and its ranks' restart, whose one-line ``stderr.log`` files then lie wholly an hour past
every peer. No file shows the jump in its sampled times; each rank's ``error.json`` states the failure's epoch.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from l4lite.api import analyze
from l4lite.ingest.context import build_context
from l4lite.ingest.files import discover
from l4lite.ingest.reader import IngestOptions, iter_records
from l4lite.ingest.spans import FileSpan
from l4lite.ingest.statedsteps import stated_steps
from l4lite.live.reader import default_reader_factory
from l4lite.options import AnalyzeOptions
from l4lite.records import Accounting

REAL = Path(__file__).resolve().parent.parent / "fixtures" / "real_jobs"
JOB = REAL / "126-ddp-save_killed"
_AFTER_JUMP = re.compile(r"2026-12-05 18:11:4(\d)")  # the ISO lines of the restart, gpu-node-12's clock an hour on


def _jumped(tmp_path: Path) -> Path:
    job = tmp_path / "job126"
    shutil.copytree(JOB, job)
    for f in (job / "gpu-node-12").rglob("*.log"):
        f.write_text(_AFTER_JUMP.sub(r"2026-12-05 19:11:4\1", f.read_text()))
    return job


def test_a_ranks_log_an_hour_past_its_error_file_is_read_back(tmp_path: Path) -> None:
    job = _jumped(tmp_path)
    plain = build_context(discover([str(JOB)], Accounting()).files)
    ctx = build_context(discover([str(job)], Accounting()).files)
    assert plain.clock_steps == {}
    assert set(ctx.clock_steps) == {"gpu-node-12"} and ctx.clock_steps["gpu-node-12"][0] == 3600.0
    assert (ctx.start, ctx.end) == (plain.start, plain.end)  # the ahead hour moves no end
    assert ctx.node_shifts == {}
    got, base = analyze([str(job)], AnalyzeOptions()), analyze([str(JOB)], AnalyzeOptions())
    assert (got.category, got.phase, got.failure_time) == (base.category, base.phase, base.failure_time)
    assert got.suspects[0].node == base.suspects[0].node == "gpu-node-07"


def test_the_live_reader_reads_such_a_file_back_as_the_batch_reader_does(tmp_path: Path) -> None:
    job = _jumped(tmp_path)
    files = discover([str(job)], Accounting()).files
    make = default_reader_factory(str(job), paths=[f.path for f in files], finished=True)
    assert set(make.context.clock_steps) == {"gpu-node-12"}
    batch = {(r.file, r.line): r.time for r in iter_records([str(job)], IngestOptions(), Accounting())}
    live: dict[tuple[str, int], float | None] = {}
    for f in files:
        if not f.rel.startswith("gpu-node-12/"):
            continue
        reader = make(f.rel)
        for i, text in enumerate(Path(f.path).read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            live.update(((r.file, r.line), r.time) for r in reader.feed(i, text))
        live.update(((r.file, r.line), r.time) for r in reader.flush())
    moved = {key: t for key, t in batch.items() if key[0].startswith("gpu-node-12/")}
    assert moved and max(t for t in moved.values() if t is not None) <= make.context.end + 60.0
    assert {key: live.get(key) for key in moved} == moved


def _span(first: float, last: float) -> FileSpan:
    return FileSpan(False, first, last, True, (first, last), 1)


def test_only_a_file_past_its_error_file_and_past_its_peers_gives_a_step() -> None:
    node = {"a/r0/stderr.log": "a", "a/r0/error.json": "a", "b/console.log": "b", "a/console.log": "a"}.get
    peers = {"b/console.log": _span(1000.0, 2000.0), "a/console.log": _span(1000.0, 1500.0)}
    stated = {"a/r0/error.json": 2000.0}
    ahead = {**peers, "a/r0/stderr.log": _span(5590.0, 5600.0)}
    assert stated_steps(ahead, stated, node, {}, {}) == {"a": [3600.0, 5530.0, 5600.0]}
    # a rank that hung for an hour before its error file: its lines lie before the stated time, not after
    assert stated_steps({**peers, "a/r0/stderr.log": _span(1000.0, 1400.0)}, {"a/r0/error.json": 5000.0},
                        node, {}, {}) == {}
    # a watchdog that fires half an hour after its peers stopped, and its error file with it: no offset
    assert stated_steps({**peers, "a/r0/stderr.log": _span(3790.0, 3800.0)}, {"a/r0/error.json": 3800.0},
                        node, {}, {}) == {}
    # read back, the file would lie before every peer: not the job's clock
    assert stated_steps({**peers, "a/r0/stderr.log": _span(5590.0, 5600.0)}, {"a/r0/error.json": 200.0},
                        node, {}, {}) == {}
    # a node whose clock stepped is left to its step
    assert stated_steps(ahead, stated, node, {}, {"a": [3600.0, 0.0, 0.0]}) == {}


def test_a_line_flushed_an_hour_late_before_its_file_and_the_job_moves_nothing(tmp_path: Path) -> None:
    """gpu-node-12's last ISO line (and its traceback) formatted an hour before the lines above it sat in a worker's
    stdout buffer until it exited: read as written it is the job's first failure, on the wrong node."""
    job = tmp_path / "job126"
    shutil.copytree(JOB, job)
    console = job / "gpu-node-12" / "console.log"
    console.write_text(console.read_text().replace("2026-12-05 18:11:42,194", "2026-12-05 17:11:42,194"))
    got, base = analyze([str(job)], AnalyzeOptions()), analyze([str(JOB)], AnalyzeOptions())
    assert (got.category, got.phase, got.failure_time) == (base.category, base.phase, base.failure_time)
    assert got.suspects[0].node == base.suspects[0].node == "gpu-node-07"
    assert any("far before the rest of its file" in w for w in got.to_dict()["stats"]["warnings"])
