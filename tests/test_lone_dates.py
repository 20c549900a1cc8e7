"""A date of another year printed amid a run's lines (a job script's ``date`` of the run it resumes, a checkpoint's
time quoted in a message) is no time of the job: it must not give the job's yearless lines (glog's ``I1204``) its
year. Built on the real job ``076-jax-nan`` (JAX, NaN loss: glog lines only, no year in any line)."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from l4lite.api import analyze
from l4lite.ingest.context import build_context
from l4lite.ingest.files import discover
from l4lite.ingest.spans import DatedLine, lone_years
from l4lite.options import AnalyzeOptions
from l4lite.records import Accounting

JOB = Path(__file__).resolve().parent.parent / "fixtures" / "real_jobs" / "076-jax-nan"
QUOTED = ["INFO resuming: checkpoint saved at 2024-03-01 12:00:00 (step 1200)\n", "Fri Mar  1 12:00:00 UTC 2024\n"]


def test_a_date_of_another_year_amid_the_runs_lines_gives_no_year(tmp_path: Path) -> None:
    job = tmp_path / "job"
    shutil.copytree(JOB, job)
    log = job / "h100-sxm-031" / "process_0.log"
    lines = log.read_text().splitlines(keepends=True)
    log.write_text("".join([*lines[:17], *QUOTED, *lines[17:]]))
    plain = build_context(discover([str(JOB)], Accounting()).files)
    ctx = build_context(discover([str(job)], Accounting()).files)
    assert ctx.year == plain.year and (ctx.start, ctx.end) == (plain.start, plain.end)
    incident = analyze([str(job)], AnalyzeOptions())
    base = analyze([str(JOB)], AnalyzeOptions())
    assert (incident.category, incident.phase, incident.failure_time) == (base.category, base.phase, base.failure_time)


def test_a_date_that_agrees_with_the_lines_near_it_keeps_its_vote() -> None:
    written = time.mktime((2026, 12, 6, 12, 0, 0, 0, 0, 0))  # an archive copied two years after its job
    banner = ["Thu Dec  3 14:00:00 UTC 2024", "I1203 14:00:01.000000 1 train.py:1] step 1"]
    assert lone_years(banner, [DatedLine(0, 2024, "Thu Dec  3 14:00:00 UTC 2024")], written) == {}
    iso = ["2024-12-03 14:00:00,000 INFO a", "2024-12-03 14:00:05,000 INFO b"]
    assert lone_years(iso, [DatedLine(0, 2024, "2024-12-03"), DatedLine(1, 2024, "2024-12-03")], written) == {}
    assert lone_years(iso[:1], [DatedLine(0, 2024, "2024-12-03")], written) == {}  # one timed line: no neighbour
    amid = ["I1203 14:00:01.000000 1 train.py:1] step 1", "Fri Mar  1 12:00:00 UTC 2024",
            "I1203 14:00:02.000000 1 train.py:1] step 2", "INFO saved at 2024-03-01 12:00:00"]
    assert lone_years(amid, [DatedLine(1, 2024, "Fri Mar  1 12:00:00 UTC 2024"), DatedLine(3, 2024, "2024-03-01")],
                      written) == {2024: 2}
