"""Torchelastic's per-rank log folders collected apart from their node (one shared ``logs/`` beside Slurm's
per-host ``--output`` files) take the node whose own lines name the folder (its failure summary's
``error_file:``), never ``unknown``."""

from __future__ import annotations

import shutil
from pathlib import Path

from l4lite.ingest.context import build_context
from l4lite.ingest.files import discover
from l4lite.ingest.logdirs import run_folder
from l4lite.records import Accounting

JOB = Path(__file__).resolve().parent.parent / "fixtures" / "real_jobs" / "083-ddp-bad_env"


def test_run_folder() -> None:
    assert run_folder("logs/run-083_0ybzhjzr/attempt_0/1/stderr.log") == "run-083_0ybzhjzr"
    assert run_folder("node-a/torchelastic/none_fczv137y/attempt_2/0/error.json") == "none_fczv137y"
    assert run_folder("logs/attempt_0/1/stderr.log") is None


def test_a_shared_log_folder_takes_the_node_that_names_it(tmp_path: Path) -> None:
    for node in ("cpu-node-a", "cpu-node-b"):
        shutil.copy(JOB / node / "console.log", tmp_path / f"train-4242-{node}.out")
        for run in (JOB / node / "torchelastic").iterdir():
            shutil.copytree(run, tmp_path / "logs" / run.name)
    acc = Accounting()
    ctx = build_context(discover([str(tmp_path)], acc).files, accounting=acc)
    for node in ("cpu-node-a", "cpu-node-b"):
        run = next((JOB / node / "torchelastic").iterdir()).name
        assert ctx.node_of(f"logs/{run}/attempt_0/0/stderr.log") == node
        assert ctx.node_of(f"logs/{run}/attempt_0/1/error.json") == node


def test_a_gzipd_console_names_its_log_folder_as_its_plain_copy_does(tmp_path: Path) -> None:
    import gzip

    for node in ("cpu-node-a", "cpu-node-b"):
        data = (JOB / node / "console.log").read_bytes()
        (tmp_path / f"train-4242-{node}.out.gz").write_bytes(gzip.compress(data))
        for run in (JOB / node / "torchelastic").iterdir():
            shutil.copytree(run, tmp_path / "logs" / run.name)
    acc = Accounting()
    ctx = build_context(discover([str(tmp_path)], acc).files, accounting=acc)
    for node in ("cpu-node-a", "cpu-node-b"):
        run = next((JOB / node / "torchelastic").iterdir()).name
        assert ctx.node_of(f"logs/{run}/attempt_0/0/stderr.log") == node
