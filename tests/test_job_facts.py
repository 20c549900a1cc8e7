"""Job-level facts that one odd file cannot move: a stale file of another job set apart by the job's time span."""

from __future__ import annotations

import json
import re
import shutil
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from l4lite.api import analyze
from l4lite.ingest.context import build_context
from l4lite.ingest.files import discover
from l4lite.ingest.reader import IngestOptions, iter_records
from l4lite.options import AnalyzeOptions, ExecutionOptions
from l4lite.records import Accounting


def _train(day: str, hour: int, node: str, last: str = "step 20 loss 2.1") -> str:
    return "".join(f"2026-12-{day} {hour:02d}:{m:02d}:00,000 INFO [rank0] host={node} step {m} loss 2.3\n"
                   for m in range(0, 50, 5)) + f"2026-12-{day} {hour:02d}:50:00,000 INFO {last}\n"


def _job(tmp_path: Path, stale: str) -> Path:
    job = tmp_path / "job"
    for node in ("node-a", "node-b"):
        (job / node).mkdir(parents=True)
        (job / node / "train.log").write_text(_train("03", 14, node))
    (job / "node-a" / "previous-train.log").write_text(stale)
    return job


def test_a_stale_file_of_the_day_before_is_set_apart_with_its_lines_counted(tmp_path: Path) -> None:
    stale = _train("02", 9, "node-z", "RuntimeError: CUDA error: an illegal memory access was encountered")
    job = _job(tmp_path, stale)
    acc = Accounting()
    records = list(iter_records([str(job)], IngestOptions(), acc))
    assert {r.file for r in records} == {"node-a/train.log", "node-b/train.log"}
    assert {r.node for r in records} == {"node-a", "node-b"}  # node-z, named only by the stale file, is no node
    assert acc.lines_skipped["set_apart"] == stale.count("\n")
    assert acc.files_skipped["set_apart"] == 1
    assert acc.balanced
    warning = next(w for w in acc.warnings if "previous-train.log" in w)
    assert "skipped (set_apart)" in warning and "2026-12-02 09:00:00" in warning and "before the job's" in warning
    ctx = build_context(discover([str(job)], Accounting()).files)
    assert ctx.start is not None and ctx.start >= 1796306400.0  # 2026-12-03 14:00 UTC: the stale file moved nothing


def test_a_file_within_hours_of_the_job_is_kept(tmp_path: Path) -> None:
    job = _job(tmp_path, _train("03", 16, "node-a"))  # a restart two hours later: the same job
    ctx = build_context(discover([str(job)], Accounting()).files)
    assert ctx.set_apart == {}


def test_a_file_whose_only_time_is_a_reset_clock_is_not_set_apart(tmp_path: Path) -> None:
    """A line dated 1970 is a clock reset, not another job: the reader refuses its time, the file stays the job's
    (it may hold the root error, as torchelastic's error.json does)."""
    job = _job(tmp_path, "1970-01-01 00:00:07,000 ERROR [rank0] RuntimeError: worker failed\n")
    ctx = build_context(discover([str(job)], Accounting()).files)
    assert ctx.set_apart == {}


def test_one_file_against_one_sets_nothing_apart(tmp_path: Path) -> None:
    job = tmp_path / "job"
    job.mkdir()
    (job / "train.log").write_text(_train("03", 14, "node-a"))
    (job / "old.log").write_text(_train("01", 14, "node-a"))
    ctx = build_context(discover([str(job)], Accounting()).files)
    assert ctx.set_apart == {}  # a tie says nothing about which file is the job's


def test_one_file_against_one_written_days_before_it_is_set_apart(tmp_path: Path) -> None:
    """One merged job file beside one stray file of another job: the tie is broken by the files' write times (a
    leftover of an earlier run was written before it); the stray file whose lines come after the job's is set
    apart all the same, and so is nothing when the write times are close."""
    import os

    job = tmp_path / "job"
    job.mkdir()
    (job / "train.log").write_text(_train("03", 14, "node-a"))
    (job / "old.log").write_text(_train("05", 14, "node-a"))  # dated after the job (a date read wrong), written before
    now = 1796400000.0
    os.utime(job / "train.log", (now, now))
    os.utime(job / "old.log", (now - 2 * 86400, now - 2 * 86400))
    ctx = build_context(discover([str(job)], Accounting()).files)
    assert set(ctx.set_apart) == {"old.log"} and "after the job's" in ctx.set_apart["old.log"]
    os.utime(job / "old.log", (now - 3600, now - 3600))  # an hour apart: nothing tells the two files apart
    assert build_context(discover([str(job)], Accounting()).files).set_apart == {}


def test_stdin_is_sampled_for_the_job_context_and_read_whole(tmp_path: Path, monkeypatch) -> None:
    import io
    import sys

    # one ``srun --label`` stream of two nodes: a launcher line of label 1 names no host; the labels' other lines do
    text = ("0: [default1]:2026-12-03 14:38:23,219 INFO [rank1] initialized process group: host=node-a\n"
            "1: [default1]:2026-12-03 14:38:23,219 INFO [rank3] initialized process group: host=node-b\n"
            "1: E1203 14:38:30.696000 16444 torch/distributed/elastic/multiprocessing/api.py:1002] "
            "failed (exitcode: 1) local_rank: 1 (pid: 16468) of binary: /usr/bin/python3\n")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode())))
    acc = Accounting()
    records = list(iter_records(["-"], IngestOptions(), acc))
    assert [r.node for r in records] == ["node-a", "node-b", "node-b"]
    assert [r.text for r in records] == text.splitlines()  # the sampled head is read again, once
    assert acc.lines_read == 3 and acc.balanced


def _rotated_lines() -> list[str]:
    """Ten steps of a log with a traceback after the sixth, to be cut into rotated pieces."""
    lines = [f"2026-12-03 14:00:{i:02d},000 INFO step {i} loss 2.3" for i in range(10)]
    lines[6:6] = ["Traceback (most recent call last):", '  File "train.py", line 9, in <module>',
                  "OSError: [Errno 28] No space left on device"]
    return lines


def test_a_rotated_log_reads_as_one_stream_named_by_its_pieces(tmp_path: Path) -> None:
    import gzip

    lines = _rotated_lines()
    job = tmp_path / "job" / "node-a"
    job.mkdir(parents=True)
    (job / "train.log.2.gz").write_bytes(gzip.compress(("\n".join(lines[:4]) + "\n").encode()))
    (job / "train.log.1").write_text("\n".join(lines[4:7]) + "\n")  # the traceback is cut after its first line
    (job / "train.log").write_text("\n".join(lines[7:]) + "\n")
    (job / "out.0").write_text(lines[0] + "\n")  # one file per task, not pieces of a rotated "out"
    (job / "out.1").write_text(lines[1] + "\n")
    files = discover([str(tmp_path / "job")], Accounting()).files
    assert [(f.rel, [p.rel for p in f.parts]) for f in files] == [
        ("node-a/out.0", []), ("node-a/out.1", []),
        ("node-a/train.log", ["node-a/train.log.2.gz", "node-a/train.log.1", "node-a/train.log"])]
    for opts in ({}, {"line_shapes": False, "line_runs": False}):
        acc = Accounting()
        got = [(r.file, r.line, r.end_line, r.text.split("\n")[-1])
               for r in iter_records([str(tmp_path / "job" / "node-a" / n) for n in
                                      ("train.log", "train.log.1", "train.log.2.gz")], IngestOptions(**opts), acc)]
        assert got[4:8] == [("train.log.1", 1, 1, lines[4]), ("train.log.1", 2, 2, lines[5]),
                            ("train.log.1", 3, 5, "OSError: [Errno 28] No space left on device"),
                            ("train.log", 3, 3, lines[9])], opts
        assert got[:2] == [("train.log.2.gz", 1, 1, lines[0]), ("train.log.2.gz", 2, 2, lines[1])]
        assert len(got) == 11
        assert acc.lines_read == len(lines) and acc.balanced


def test_a_rotated_streams_line_is_named_by_the_piece_it_is_in() -> None:
    from l4lite.records import RotatedStreams

    streams = RotatedStreams({"n/x.log": [(1, "n/x.log.2.gz"), (5, "n/x.log.1"), (8, "n/x.log")]})
    assert streams.piece_of("n/x.log", 4) == ("n/x.log.2.gz", 4, 4)
    assert streams.piece_of("n/x.log", 7, 9) == ("n/x.log.1", 3, 5)  # runs on into the next piece
    assert streams.piece_of("n/x.log", 8) == ("n/x.log", 1, 1)
    assert streams.piece_of("n/y.log", 8, 9) == ("n/y.log", 8, 9)  # not rotated: as it is


def test_the_scan_orders_a_rotated_log_as_one_stream_and_names_evidence_by_its_piece(tmp_path: Path) -> None:
    from l4lite.scan.job import scan_job

    lines = _rotated_lines()
    job = tmp_path / "job" / "node-a"
    job.mkdir(parents=True)
    (job / "train.log.1").write_text("\n".join(lines[:7]) + "\n")  # the traceback is cut after its first line
    (job / "train.log").write_text("\n".join(lines[7:]) + "\n")
    scan = scan_job([str(tmp_path / "job")], AnalyzeOptions())
    assert {h.record.file for h in scan.hits} == {"node-a/train.log"}  # the stream, numbered on through its pieces
    assert [(a, rel) for a, rel in scan.streams.starts["node-a/train.log"]] == [
        (1, "node-a/train.log.1"), (8, "node-a/train.log")]
    for execution in (ExecutionOptions(), ExecutionOptions(jobs=2)):  # one pass, and shards merged
        incident = analyze(str(tmp_path / "job"), AnalyzeOptions(), execution)
        root = next(e for e in incident.evidence if e.role == "root")
        assert (root.file, root.line, root.end_line) == ("node-a/train.log.1", 7, 9)
        assert root.text.splitlines()[0] == lines[6]


def test_runs_of_a_rotated_log_are_cut_at_its_pieces(tmp_path: Path) -> None:
    from l4lite.ingest.reader import iter_job
    from l4lite.ingest.shaperun import ShapeRun

    lines = [f"2026-12-03 14:{i // 60 % 60:02d}:{i % 60:02d},000 INFO step {i} loss 2.{i % 7}" for i in range(9000)]
    job = tmp_path / "job" / "node017"  # a node in the path: runs start at once
    job.mkdir(parents=True)
    for name, part in (("train.log.2", lines[:3000]), ("train.log.1", lines[3000:6100]), ("train.log", lines[6100:])):
        (job / name).write_text("\n".join(part) + "\n")
    acc = Accounting()
    items = list(iter_job(discover([str(job.parent)], acc), IngestOptions(), acc, runs=True))
    assert any(type(i) is ShapeRun for i in items)
    got = [(r.file, r.line, r.text) for i in items for r in (i.records() if type(i) is ShapeRun else [i])]
    want = [(f"node017/train.log{s}", n - a + 1, lines[n - 1]) for s, a, b in ((".2", 1, 3000), (".1", 3001, 6100),
                                                                                 ("", 6101, 9000)) for n in range(a, b + 1)]
    assert got == want


def test_folders_naming_a_kind_an_id_or_a_date_are_no_nodes(tmp_path: Path) -> None:
    line = "2026-12-03 14:00:00,000 INFO step 1 loss 2.3\n"
    names = ("2026-12-01", "job-12345", "attempt_1", "output", "part-0001", "trainer-7c9d8b4f6d-x2k9p", "worker-0")
    for name in names:
        (tmp_path / name).mkdir()
        (tmp_path / name / "train.log").write_text(line)
    nodes = {r.file.split("/")[0]: r.node for r in iter_records([str(tmp_path)], IngestOptions(), Accounting())}
    # no line names a host: a pod or a launcher's worker name is the best name there is, a kind or an id is none
    assert nodes == {**{n: None for n in names[:5]}, "trainer-7c9d8b4f6d-x2k9p": "trainer-7c9d8b4f6d-x2k9p",
                     "worker-0": "worker-0"}


def test_a_torchelastic_run_folder_is_no_node(tmp_path: Path) -> None:
    # no line names a host and the top folders are parts: ``run-044_h_bqya1n`` is torchelastic's run id and random
    # suffix, never host ``bqya1n``
    line = "2026-12-03 14:00:00,000 INFO step 1 loss 2.3\n"
    for part in ("part-0001", "part-0002"):
        where = tmp_path / part / "torchelastic" / "run-044_h_bqya1n" / "attempt_0" / "0"
        where.mkdir(parents=True)
        (where / "stdout.log").write_text(line)
    assert {r.node for r in iter_records([str(tmp_path)], IngestOptions(), Accounting())} == {None}


def test_a_kind_folder_holding_two_hosts_files_is_no_node() -> None:
    from l4lite.ingest.layout import infer_level

    rels = ["logs/000-console.log", "logs/001-stderr.log", "logs/002-console.log", "logs/003-stderr.log"]
    own = {"logs/000-console.log": "gpu-node-07", "logs/002-console.log": "gpu-node-12"}  # what their lines name
    assert infer_level(rels, own, set(own.values())).depth is None
    # a node's folder with one odd file (a launcher log naming a peer) stays the node level
    rels = ["node07/console.log", "node07/launcher.log", "node07/rank0.log", "node12/console.log"]
    own = {"node07/console.log": "node07", "node07/launcher.log": "node12", "node07/rank0.log": "node07",
           "node12/console.log": "node12"}
    assert infer_level(rels, own, set(own.values())).depth == 0
    # one file of each of two hosts in one folder (a flattened job): neither is the odd one, the folder is no node
    rels = ["flat/compute-alpha_console.log", "flat/compute-beta_console.log", "flat/attempt_0_0_stderr.log"]
    own = {rels[0]: "compute-alpha", rels[1]: "compute-beta"}
    assert infer_level(rels, own, set(own.values())).depth is None


def test_a_flattened_file_takes_the_host_its_name_spells_out(tmp_path: Path) -> None:
    # ``find . -type f`` copied into one folder, ``/`` turned into ``_``: the consoles name their hosts, the error
    # file and the worker's log only spell them in their names
    from l4lite.ingest.context import build_context
    from l4lite.ingest.files import discover

    flat = tmp_path / "flat"
    flat.mkdir()
    for host in ("compute-alpha", "compute-beta"):
        (flat / f"{host}_console.log").write_text(
            f"2026-12-03 14:00:00,000 INFO [rank0] initialized process group: host={host}\n" * 2)
        (flat / f"{host}_torchelastic_run-1_x_attempt_0_1_stderr.log").write_text("Traceback (most recent call last):\n")
        (flat / f"{host}_torchelastic_run-1_x_attempt_0_1_error.json").write_text('{"message": "boom"}\n')
    acc = Accounting()
    ctx = build_context(discover([str(tmp_path)], acc).files, accounting=acc)
    assert ctx.depth is None
    for host in ("compute-alpha", "compute-beta"):
        for name in ("console.log", "torchelastic_run-1_x_attempt_0_1_stderr.log", "torchelastic_run-1_x_attempt_0_1_error.json"):
            assert ctx.node_of(f"flat/{host}_{name}") == host


# ---- one bad time never moves a job: a real job of ``fixtures/real_jobs`` with one line of a wrong clock
REAL_JOBS = Path(__file__).resolve().parent.parent / "fixtures" / "real_jobs"
_STAMP = re.compile(r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3})")


def _facts(job: Path) -> tuple:
    found = json.loads(analyze([str(job)], AnalyzeOptions(), ExecutionOptions()).to_json())
    top = found["suspects"][0]["node"] if found["suspects"] else None
    return found["status"], found["phase"], found["category"], found["failure_time"], top


def _wrong(stamp: str, how: str) -> str:
    t = datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S")
    bad = {"1970": datetime(1970, 1, 1, 0, 0, 7), "2000": datetime(2000, 1, 1), "2099": datetime(2099, 6, 1, 12),
           "zone+9": t + timedelta(hours=9), "zone-9": t - timedelta(hours=9)}[how]
    return f"{bad:%Y-%m-%d %H:%M:%S}"


@pytest.mark.parametrize("name", ["001-ddp-exception", "011-hf-hang", "034-deepspeed-enospc", "031-deepspeed-sigkill", "039-ddp-worker_oom"])
def test_one_line_of_a_wrong_clock_moves_neither_time_phase_nor_node(tmp_path: Path, name: str) -> None:
    """A clock reset (1970, 2000), a far-future date and a time zone change (nine hours either way) on one line,
    a copy of a timed line in the middle, at the start or at the end of the faulty node's console or of another
    node's rank log (the ends are what the job's span is sampled from): the failure time, phase, category and
    faulty node stay those of the job as it is."""
    want = _facts(REAL_JOBS / name)
    truth = json.loads((REAL_JOBS / name / "ground_truth.json").read_text())
    faulty = truth["faulty_nodes"][0]
    logs = sorted(p for p in (REAL_JOBS / name).rglob("*.log") if _STAMP.search(p.read_text(errors="replace")))
    own = [p for p in logs if faulty in p.parts] or logs
    targets = [next((p for p in own if p.name == "console.log"), own[0]), next(p for p in logs if faulty not in p.parts)]
    for k, how in enumerate(("1970", "2000", "2099", "zone+9", "zone-9")):
        job = tmp_path / f"{how}" / name
        shutil.copytree(REAL_JOBS / name, job)
        src = targets[k % 2]
        path = job / src.relative_to(REAL_JOBS / name)
        lines = path.read_text().splitlines(keepends=True)
        timed = [i for i, line in enumerate(lines) if _STAMP.search(line)]
        i = (timed[len(timed) // 2], timed[0], timed[-1])[k % 3]
        m = _STAMP.search(lines[i])
        assert m is not None
        line = lines[i][:m.start()] + f"{_wrong(m[1], how)},{m[2]}" + lines[i][m.end():]
        path.write_text("".join(lines[:i + 1] + [line] + lines[i + 1:]))
        assert _facts(job) == want, (how, str(path.relative_to(job)))


def test_a_node_in_another_time_zone_leaves_the_job_s_span_and_phases_its_own() -> None:
    """111: every line of one node is stamped five hours behind its peer's (its processes ran with another TZ).
    The skew is measured as logged; the node's span, the simultaneous events and its error files' epoch seconds
    agree on five whole hours, so its times are read in the job's time (``ingest.zones``), said in a warning:
    a twenty-second job does not read as five hours of training and the failure time falls inside it."""
    found = json.loads(analyze([str(REAL_JOBS / "111-ddp-tz_exception")], AnalyzeOptions(),
                               ExecutionOptions()).to_json())
    job = found["job"]
    assert job["clock_skew"]["exceeds"] and abs(job["clock_skew"]["largest_seconds"] - 5 * 3600) < 2
    assert job["clock_skew"]["corrected"] and found["suspects"][0]["node"] == "llm-pretrain-7f9c4-worker-1"
    assert any("llm-pretrain-7f9c4-worker-0: its clock reads -5 h" in w for w in found["stats"]["warnings"])

    def at(text: str) -> float:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()

    start, end, failed = at(job["start"]), at(job["end"]), at(found["failure_time"])
    assert 0 < end - start < 60 and start <= failed <= end
    assert all(0 <= at(p["end"]) - at(p["start"]) < 60 for p in found["phases"])
    assert found["phase"] == "train"


def test_a_job_whose_clocks_agree_keeps_its_span_as_logged() -> None:
    found = json.loads(analyze([str(REAL_JOBS / "112-ddp-stray_date")], AnalyzeOptions(),
                               ExecutionOptions()).to_json())
    assert "clock" not in found["job"] and found["job"]["start"] < found["failure_time"] < found["job"]["end"]


@pytest.mark.parametrize("hours", [5, -5])
def test_a_node_hours_off_moves_neither_node_phase_nor_category(tmp_path: Path, hours: int) -> None:
    """114 with the first node's every time moved five hours (another time zone): that node logs the progress
    and the validation passes, the other node's rank is killed in one. Behind, its progress would read as
    stopped five hours before the job's end, a hang on the wrong node; ahead, its markers would sit hours from
    the kill. On the reference's clock (``scan.clocks``) the verdict is the job's as logged. 119 is the same
    job run with TZ=EST5 on that node."""
    from test_clock_skew import shift_text

    name = "114-ddp-eval_sigkill"
    want = _facts(REAL_JOBS / name)
    job = tmp_path / name
    shutil.copytree(REAL_JOBS / name, job)
    for p in (job / "compute-alpha").rglob("*.log"):
        p.write_text(shift_text(p.read_text(), hours * 3600.0))
    status, phase, category, _, top = _facts(job)
    assert (status, phase, category, top) == (want[0], want[1], want[2], want[4]) == \
        ("incident", "eval", "host", "compute-beta")
