"""Torchelastic's per-rank log folders collected apart from their node (one shared ``logs/`` beside Slurm's
per-host ``--output`` files) take the node whose own lines name the folder (its failure summary's
``error_file:``), never ``unknown``."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

from l4lite.ingest.context import JobContext, build_context
from l4lite.ingest.files import discover
from l4lite.ingest.logdirs import run_folder
from l4lite.records import Accounting

JOB = Path(__file__).resolve().parent.parent / "fixtures" / "real_jobs" / "083-ddp-bad_env"


def test_run_folder() -> None:
    assert run_folder("logs/run-083_0ybzhjzr/attempt_0/1/stderr.log") == "run-083_0ybzhjzr"
    assert run_folder("node-a/torchelastic/none_fczv137y/attempt_2/0/error.json") == "none_fczv137y"
    assert run_folder("logs/attempt_0/1/stderr.log") is None


NODES = ("cpu-node-a", "cpu-node-b")


def _shared_logs(tmp_path: Path, gzipped: bool) -> dict[str, str]:
    """Job 083 collected as Slurm's per-host outputs (gzip'd or not) beside one shared ``logs/`` folder of the
    agents' run folders; run folder -> the node whose console names it."""
    runs = {}
    for node in NODES:
        out = tmp_path / f"train-4242-{node}.out"
        data = (JOB / node / "console.log").read_bytes()
        if gzipped:
            out.with_name(out.name + ".gz").write_bytes(gzip.compress(data))
        else:
            out.write_bytes(data)
        for run in (JOB / node / "torchelastic").iterdir():
            shutil.copytree(run, tmp_path / "logs" / run.name)
            runs[run.name] = node
    return runs


def _context(tmp_path: Path) -> JobContext:
    acc = Accounting()
    return build_context(discover([str(tmp_path)], acc).files, accounting=acc)


def test_a_shared_log_folder_takes_the_node_that_names_it(tmp_path: Path) -> None:
    runs = _shared_logs(tmp_path, gzipped=False)
    ctx = _context(tmp_path)
    for run, node in runs.items():
        assert ctx.node_of(f"logs/{run}/attempt_0/0/stderr.log") == node
        assert ctx.node_of(f"logs/{run}/attempt_0/1/error.json") == node


def test_a_gzipd_console_names_its_log_folder_as_its_plain_copy_does(tmp_path: Path) -> None:
    runs = _shared_logs(tmp_path, gzipped=True)
    ctx = _context(tmp_path)
    for run, node in runs.items():
        assert ctx.node_of(f"logs/{run}/attempt_0/0/stderr.log") == node
