"""A ``tail --once --state`` run that stops where a writer is: in the middle of a traceback being written, or in a
file whose JSON records start after a few plain lines; the next run must read the job as ``analyze`` reads it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from l4lite.api import AnalyzeOptions, analyze
from l4lite.ingest.files import discover
from l4lite.ingest.reader import IngestOptions, read_file
from l4lite.live.options import STATE_FILE
from l4lite.live.tail import Tailer, TailOptions
from l4lite.records import Accounting

ROOT = Path(__file__).resolve().parent.parent
JOB = ROOT / "fixtures" / "real_jobs" / "001-ddp-exception"


def batch_records(folder: Path) -> int:
    accounting = Accounting()
    found = discover([str(folder)], accounting)
    options = IngestOptions()
    return sum(1 for f in found.files for _ in read_file(f, options, accounting))


def verdict(incident: object) -> tuple:
    return (incident.status, incident.suspects[0].node if incident.suspects else None, incident.phase,
            incident.category)


def once(folder: Path, state: Path) -> Tailer:
    tailer = Tailer(TailOptions(paths=[str(folder)], once=True, state_dir=str(state)))
    tailer.run()
    return tailer


def test_a_traceback_cut_by_a_once_run_is_read_whole_by_the_next(tmp_path: Path) -> None:
    # torchrun's console of a real job, cut after the fourth frame line of rank 3's traceback: the first run
    # completed the half it saw and committed past it, and the next run read the rest as a record of its own
    lines = (JOB / "a100-rack2-15" / "console.log").read_bytes().splitlines(keepends=True)
    folder, state = tmp_path / "job", tmp_path / "state"
    (folder / "a100-rack2-15").mkdir(parents=True)
    log = folder / "a100-rack2-15" / "console.log"
    log.write_bytes(b"".join(lines[:10]))
    first = once(folder, state)
    assert first.totals.records >= 1  # the half seen still made this run's verdict
    saved = json.loads((state / STATE_FILE).read_text())
    assert saved["follower"]["streams"][0]["line"] == 6  # committed up to the last complete record
    with open(log, "ab") as fh:
        fh.write(b"".join(lines[10:]))
    second = once(folder, state)
    assert second.totals.records == batch_records(folder)  # the traceback is one record, as analyze reads it
    assert second.totals.hits["python-exception"] == 1
    assert verdict(second.incident) == verdict(analyze([str(folder)], AnalyzeOptions(heatmap=False)))


def test_a_job_copied_whole_counts_the_same_in_one_run_or_two(tmp_path: Path) -> None:
    folder = tmp_path / "job"
    shutil.copytree(JOB / "a100-rack2-15", folder / "a100-rack2-15")
    tailer = once(folder, tmp_path / "state")
    assert tailer.totals.records == batch_records(folder)
