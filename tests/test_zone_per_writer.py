"""A node's time zone belongs to the node, not to a file: in one stream of several nodes' lines (``srun --label``
output of a whole job) each line is read in the job's time by its own writer's zone, as in the node's own files."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from l4lite.api import analyze
from l4lite.ingest.zones import in_writer_zones
from l4lite.options import AnalyzeOptions
from l4lite.records import Record

JOB = Path(__file__).resolve().parent.parent / "fixtures" / "real_jobs" / "143-ddp-tz_exception"
LOG_DIR = re.compile(r"(?:^|/)([^/]+/attempt_\d+/\d+/[^/]+)$")


def _labelled(dest: Path) -> None:
    """The job as ``srun --label`` leaves it: every node's console in one labelled file, torchelastic's log folders
    (written to disk by each node's agent) in one shared ``logs/``."""
    nodes = sorted(p.name for p in JOB.iterdir() if p.is_dir() and not p.name.startswith("_"))
    out: list[str] = []
    for i, node in enumerate(nodes):
        for f in sorted((JOB / node).rglob("*")):
            if not f.is_file():
                continue
            rel = f.relative_to(JOB / node).as_posix()
            if m := LOG_DIR.search(rel):
                (dest / "logs" / m[1]).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(f, dest / "logs" / m[1])
            else:
                out += [f"{i}: {line}" for line in f.read_text().splitlines()]
    (dest / "job.out").write_text("\n".join(out) + "\n")


def test_a_labelled_stream_reads_each_line_in_its_writers_zone(tmp_path: Path) -> None:
    # 143's trn-sjc2-r08-n3 logs New York time, five hours behind its peer; its own log folder tells so (the error
    # files' epoch seconds), and its console lines in the merged stream must be read in the job's time too
    plain = analyze([str(JOB)], AnalyzeOptions())
    _labelled(tmp_path)
    merged = analyze([str(tmp_path)], AnalyzeOptions())
    assert plain.failure_time is not None and plain.failure_time.startswith("2026-12-05T23:30")
    assert merged.failure_time == plain.failure_time
    assert merged.suspects[0].node == plain.suspects[0].node


def test_records_move_by_their_own_nodes_zone_only() -> None:
    def rec(node: str | None, t: float) -> Record:
        return Record("job.out", 1, 1, node, None, None, "app", t, "INFO", "x", "x")

    got = list(in_writer_zones(iter([rec("a", 100.0), rec("b", 100.0), rec(None, 100.0)]), {"a": -18000.0}))
    assert [r.time for r in got] == [18100.0, 100.0, 100.0]
