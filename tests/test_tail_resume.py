"""A ``tail --once --state`` run that stops where a writer is: in the middle of a traceback being written, or in a
file whose JSON records start after a few plain lines; the next run must read the job as ``analyze`` reads it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from l4lite.api import AnalyzeOptions, analyze
from l4lite.ingest.context import build_context
from l4lite.ingest.files import discover
from l4lite.ingest.reader import IngestOptions, iter_records, read_file
from l4lite.live.options import STATE_FILE
from l4lite.live.reader import default_reader_factory
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


def fed(root: Path, rel: str, first: int) -> list:
    """The records of ``rel`` from line ``first`` on, read by a tail reader taken up there (``start``: its bytes)."""
    lines = (root / rel).read_bytes().splitlines(keepends=True)
    make = default_reader_factory(str(root), paths=[str(root / rel)], finished=True)
    reader = make(rel, sum(map(len, lines[:first - 1]))) if first > 1 else make(rel)
    got = []
    for no, line in enumerate(lines[first - 1:], first):
        got.extend(reader.feed(no, line.decode().rstrip("\n")))
    return got + reader.flush()


def whole(root: Path) -> list:
    files = discover([str(root)], Accounting()).files
    return list(iter_records([str(root)], IngestOptions().use(build_context(files)), Accounting()))


@pytest.mark.parametrize(("job", "rel", "first"), [("078-jax-exception_srun", "slurm-4178.out", 102),
                                                   ("047-ddp-host_oom_srun", "slurm-4147.out", 83)])
def test_a_reader_taken_up_inside_a_file_reads_on_as_the_whole_file_reads(tmp_path: Path, job: str, rel: str,
                                                                           first: int) -> None:
    # a tail resumed from its state (or reading on with a rebuilt job context) takes a Slurm job's merged output
    # up at a record's start: learning the file from the lines that happened to come first there, its untimed
    # lines lost the time of the lines before them (078: 46 records) and its format went unlearnt
    shutil.copy(ROOT / "fixtures" / "real_jobs" / job / rel, tmp_path / rel)
    expected = [r.as_row() for r in whole(tmp_path) if r.line >= first]
    assert [r.as_row() for r in fed(tmp_path, rel, first)] == expected


def test_json_records_after_plain_lines_are_read_as_analyze_reads_them(tmp_path: Path) -> None:
    # a real rank's JSON logger output after the launcher's plain lines (a ``cat`` of both, more lines than the
    # head the keys are learnt from): tail kept the records as raw JSON text, analyze reads the lines they carry
    src = next((ROOT / "fixtures" / "real_jobs" / "104-ddp-json_exception").glob(
        "dgx-b200-11/torchelastic/*/attempt_0/0/stderr.log"))
    launcher = (ROOT / "fixtures" / "real_jobs" / "001-ddp-exception" / "a100-rack2-15" / "console.log").read_text()
    plain = [x for x in launcher.splitlines(True) if x.startswith("W1203")] * 5
    log = tmp_path / "dgx-b200-11" / "stderr.log"
    log.parent.mkdir()
    log.write_text("".join(plain) + src.read_text())
    expected = [r.as_row() for r in whole(tmp_path)]
    got = fed(tmp_path, "dgx-b200-11/stderr.log", 1)
    assert [r.as_row() for r in got] == expected
    assert any("Traceback" in r.text and not r.text.lstrip().startswith("{") for r in got)


def test_a_context_build_reads_only_the_bytes_written_since_the_last(tmp_path: Path) -> None:
    # a Slurm job's merged output names no node by its path: a build reads it whole (its writers, rank ties, pids);
    # tail builds the context again as the job grows, and each build read the whole file again
    from l4lite.live.jobfacts import LiveContext

    data = (ROOT / "fixtures" / "real_jobs" / "078-jax-exception_srun" / "slurm-4178.out").read_bytes()
    log = tmp_path / "slurm-4178.out"
    cut = data.index(b"\n", len(data) // 2) + 1
    log.write_bytes(data[:cut] + data[cut:cut + 20])  # the last line half written
    facts = LiveContext(str(tmp_path))
    facts.build([str(log)])
    assert facts.reads.bytes_read == cut + 20
    log.write_bytes(data)
    facts.build([str(log)])
    assert facts.reads.bytes_read == len(data) + 20  # the half line again, nothing before it
    fresh = build_context(discover([str(tmp_path)], Accounting()).files, open_end=True)
    assert facts.context.to_dict() == fresh.to_dict()
    log.write_bytes(data[:cut].replace(b"compute-alpha", b"compute-gamma"))  # truncated, written again: read anew
    facts.build([str(log)])
    fresh = build_context(discover([str(tmp_path)], Accounting()).files, open_end=True)
    assert facts.context.to_dict() == fresh.to_dict()
