"""One line with a valid but wrong time (a clock stepped for a moment, a line flushed late, a time quoted from
another run) beside lines of the right clock: it must not move the job's facts (its span, a node's clock skew)
nor lend its time to the records after it. Built on the real two-node job ``002-ddp-sigkill`` (a rank killed by
SIGKILL on cpu-node-a: a host fault in the train phase), one line of cpu-node-b's console edited."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from l4lite.api import analyze
from l4lite.ingest.context import JobContext, build_context
from l4lite.ingest.files import discover
from l4lite.ingest.reader import IngestOptions, iter_records
from l4lite.ingest.spans import no_spikes
from l4lite.options import AnalyzeOptions
from l4lite.records import Accounting

JOB = Path(__file__).resolve().parent.parent / "fixtures" / "real_jobs" / "002-ddp-sigkill"
PEER_LINE = "[default0]:2026-12-03 14:38:43,396 INFO [rank2] initialized process group"


def _job(tmp_path: Path, old: str, new: str) -> Path:
    """A copy of the real job with cpu-node-b's console line that starts with ``old`` starting with ``new``."""
    job = tmp_path / "job"
    shutil.copytree(JOB, job)
    console = job / "cpu-node-b" / "console.log"
    text = console.read_text()
    assert old in text
    console.write_text(text.replace(old, new, 1))
    return job


def _context(job: Path) -> JobContext:
    return build_context(discover([str(job)], Accounting()).files)


def test_a_time_off_its_neighbours_by_more_than_the_file_spans_is_no_span() -> None:
    t0 = 1796308715.0
    late = [t0, t0 + 8.0, t0 + 8.0 - 3599.99, t0 + 10.0, t0 + 16.0]  # formatted an hour earlier, flushed late
    assert no_spikes(late) == [t0, t0 + 8.0, t0 + 10.0, t0 + 16.0]
    assert no_spikes([t0, t0 + 5.0, t0 + 9.0, t0 - 3000.0]) == [t0, t0 + 5.0, t0 + 9.0]  # a last line before all
    assert no_spikes([t0 + 3000.0, t0, t0 + 5.0, t0 + 9.0]) == [t0, t0 + 5.0, t0 + 9.0]  # a first line after all
    # a hang cut hours later, a start long before the rest, a file that moves on: all kept
    for kept in ([t0, t0 + 5.0, t0 + 9.0, t0 + 7200.0], [t0 - 7200.0, t0, t0 + 5.0], [t0, t0 + 100.0, t0 + 200.0]):
        assert no_spikes(kept) == kept


@pytest.mark.parametrize("new", ["[default0]:2026-12-03 13:38:43,396",  # flushed an hour late
                                 "[default0]:2025-12-03 14:38:43,396"])  # a clock stepped a year back for one line
def test_one_wrong_line_moves_neither_the_span_nor_the_skew(new: str, tmp_path: Path) -> None:
    plain = _context(JOB)
    ctx = _context(_job(tmp_path, PEER_LINE[:len(new)], new))
    assert (ctx.start, ctx.end) == (plain.start, plain.end)
    assert not ctx.clock_skew.get("exceeds"), ctx.clock_skew  # the line is the node's only skew anchor
    incident = analyze([str(_job(tmp_path / "again", PEER_LINE[:len(new)], new))], AnalyzeOptions())
    assert (incident.category, incident.phase) == ("host", "train")


def test_a_good_date_years_before_its_file_lends_no_time(tmp_path: Path) -> None:
    job = _job(tmp_path, PEER_LINE, '{"event": "sample", "created": 1709294400}\n' + PEER_LINE)
    records = list(iter_records([str(job)], IngestOptions(), Accounting()))
    mine = {r.line: r for r in records if r.file == "cpu-node-b/console.log"}
    sample, after = mine[6], mine[7]  # the JSON line, read as a record of its own, and the line it came before
    assert "sample" in sample.text and "process group" in after.text
    assert sample.time is not None and time.gmtime(sample.time).tm_year == 2026  # the line before's time
    assert after.time is not None and time.gmtime(after.time).tm_year == 2026


def test_a_file_of_no_sampled_time_lends_no_quoted_date_to_the_failure(tmp_path: Path) -> None:
    """Real job 145 (``/dev/shm`` too small): the failing rank's stderr carries no time of its own; a job script's
    ``date`` of the run it resumes, printed into it, is the only time there and is not the failure's."""
    job = tmp_path / "job"
    shutil.copytree(JOB.parent / "145-hf-shm_small", job)
    stderr = next((job / "a100-rack2-15" / "torchelastic").rglob("0/stderr.log"))
    lines = stderr.read_text().splitlines(keepends=True)
    stderr.write_text("".join([*lines[:25], "Fri Mar  1 12:00:00 UTC 2024\n", *lines[25:]]))
    incident = analyze([str(job)], AnalyzeOptions())
    assert incident.failure_time is not None and incident.failure_time.startswith("2026-12-05"), incident.failure_time


def test_a_long_job_whose_files_open_with_untimed_lines_keeps_its_early_times(tmp_path: Path) -> None:
    """Rank logs that open with NCCL's untimed start-up lines: their sampled first lines give no time, their
    sampled last lines the job's last day. Their early lines, days before, are the job's own times, not a wrong
    clock: a file's start is known only from its first lines, and the job's start only from such files."""
    day = 86400.0
    t0 = time.mktime((2026, 11, 29, 4, 0, 0, 0, 0, 0)) - time.timezone
    for node in ("node01", "node02"):
        (tmp_path / node).mkdir()
        head = [f"{node}:5270:5671 [0] NCCL INFO Channel {k:02d}/0 : 0[0] -> 1[1] via P2P/IPC/read\n" for k in range(40)]
        body = [time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t0 + i * 3600)) + f",000 INFO iteration {i}\n"
                for i in range(100)]
        (tmp_path / node / "rank0.log").write_text("".join(head + body))
    ctx = _context(tmp_path)  # no file's first lines give a time: where the job starts is not known
    assert ctx.start is not None and ctx.end is not None and not ctx.file_starts
    records = [r for r in iter_records([str(tmp_path)], IngestOptions(), Accounting()) if r.text.endswith("iteration 1")]
    assert len(records) == 2 and all(r.time is not None and abs(r.time - (t0 + 3600)) < 1 for r in records)
    # another rank's log whose first lines are timed sets the job's start; the untimed files' early lines stay
    (tmp_path / "node02" / "rank1.log").write_text("".join(body))
    ctx = _context(tmp_path)
    assert ctx.start is not None and abs(ctx.start - t0) < 1 and ctx.end is not None and ctx.end - ctx.start > 4 * day
    records = [r for r in iter_records([str(tmp_path)], IngestOptions(), Accounting())
               if r.file.endswith("rank0.log") and r.text.endswith("iteration 1")]
    assert len(records) == 2 and all(r.time is not None and abs(r.time - (t0 + 3600)) < 1 for r in records)
