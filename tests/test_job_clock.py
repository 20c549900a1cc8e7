"""A job's clock facts worked out together (``ingest.jobclock``) and read alike by the batch and the live reader.

- A node five hours behind its peer (naive local time) whose clock also ran an hour fast until mid-job: its step
  shows only once the node is read in its zone (``119-ddp-eval_sigkill``: cpu-node-a logs 11:14, cpu-node-b 16:14).
- The live reader reads a stepped node back as ``read_file`` does (one function, ``jobclock.in_job_time``).
- A stream of several nodes' lines reads each stepped writer's ahead part back by its own step.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from l4lite.api import analyze
from l4lite.ingest.context import build_context
from l4lite.ingest.files import discover
from l4lite.ingest.jobclock import in_job_time
from l4lite.ingest.reader import IngestOptions, iter_records
from l4lite.live.reader import default_reader_factory
from l4lite.options import AnalyzeOptions
from l4lite.records import Accounting, Record

REAL = Path(__file__).resolve().parent.parent / "fixtures" / "real_jobs"
ZONED = REAL / "119-ddp-eval_sigkill"
STEPPED = REAL / "002-ddp-sigkill"
_ISO = re.compile(r"2026-12-05 11:14:(\d\d),(\d{3})")


def _ahead_until(job: Path, node: str, until_ms: int) -> None:
    """``node``'s ISO times of 11:14 before ``until_ms`` milliseconds into the minute an hour ahead (its clock ran
    fast until then, when it was stepped back), in every file of the node."""
    def later(m: re.Match[str]) -> str:
        ms = int(m.group(1)) * 1000 + int(m.group(2))
        return m.group(0).replace(" 11:", " 12:") if ms < until_ms else m.group(0)
    for f in (job / node).rglob("*.log"):
        f.write_text(_ISO.sub(later, f.read_text()))


def test_a_step_on_a_node_of_another_zone_is_found_in_the_jobs_time(tmp_path: Path) -> None:
    job = tmp_path / "job"
    shutil.copytree(ZONED, job)
    _ahead_until(job, "cpu-node-a", 27_200)
    plain = build_context(discover([str(ZONED)], Accounting()).files)
    ctx = build_context(discover([str(job)], Accounting()).files)
    assert plain.node_shifts == {"cpu-node-a": -18000.0}  # cpu-node-a is read five hours forward
    assert ctx.node_shifts == plain.node_shifts
    assert set(ctx.clock_steps) == {"cpu-node-a"} and ctx.clock_steps["cpu-node-a"][0] == 3600.0
    assert (ctx.start, ctx.end) == (plain.start, plain.end)  # the ahead hour moves no end
    got, base = analyze([str(job)], AnalyzeOptions()), analyze([str(ZONED)], AnalyzeOptions())
    assert (got.category, got.phase, got.failure_time) == (base.category, base.phase, base.failure_time)
    assert got.suspects[0].node == base.suspects[0].node


def _stepped_002(tmp_path: Path) -> Path:
    """002 with cpu-node-b an hour fast until between rank 3's and rank 2's first lines (``test_clock_steps``)."""
    job = tmp_path / "job002"
    shutil.copytree(STEPPED, job)
    ahead = {"W1203 14:38:35.": "W1203 15:38:35.", "2026-12-03 14:38:43,392": "2026-12-03 15:38:43,392"}
    for f in (job / "cpu-node-b").rglob("*.log"):
        text = f.read_text()
        for old, new in ahead.items():
            text = text.replace(old, new)
        f.write_text(text)
    return job


def test_the_live_reader_reads_a_stepped_node_back_as_the_batch_reader_does(tmp_path: Path) -> None:
    job = _stepped_002(tmp_path)
    files = discover([str(job)], Accounting()).files
    make = default_reader_factory(str(job), paths=[f.path for f in files], finished=True)
    assert set(make.context.clock_steps) == {"cpu-node-b"}
    batch = {(r.file, r.line): r.time for r in iter_records([str(job)], IngestOptions(), Accounting())}
    live: dict[tuple[str, int], float | None] = {}
    for f in files:
        reader = make(f.rel)
        for i, text in enumerate(Path(f.path).read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            live.update(((r.file, r.line), r.time) for r in reader.feed(i, text))
        live.update(((r.file, r.line), r.time) for r in reader.flush())
    stepped = {key: t for key, t in batch.items() if key[0].startswith("cpu-node-b")}
    end = build_context(discover([str(STEPPED)], Accounting()).files).end
    assert end is not None and max(t for t in stepped.values() if t is not None) <= end + 60.0  # read back
    assert {key: live.get(key) for key in stepped} == stepped


def test_a_merged_stream_reads_each_writers_step_back_by_its_own() -> None:
    class Ctx:
        clock_steps = {"b": [3600.0, 1000.0, 5000.0]}
        node_shifts = {"c": 600.0}

    records = [Record("all.log", i, i, node, None, None, "app", t, None, "x", "x")
               for i, (node, t) in enumerate((("a", 4600.0), ("b", 4600.0), ("b", 900.0), ("c", 1500.0), (None, 4600.0)), 1)]
    got = [r.time for r in in_job_time(iter(records), Ctx(), None)]
    assert got == [4600.0, 1000.0, 900.0, 900.0, 4600.0]  # b's ahead part back an hour, c by its zone
