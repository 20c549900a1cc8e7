"""``--jobs auto``: one process for small inputs and stdin, one per core (at most one per file) for large ones."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from l4lite.cli.main import main
from l4lite.scale.parallel import auto_jobs, input_size, jobs_argument


def _job(tmp_path: Path, files: int, size: int) -> Path:
    job = tmp_path / "job"
    for i in range(files):
        f = job / f"node{i:02d}" / "train.log"
        f.parent.mkdir(parents=True)
        f.write_bytes(b"x" * (size - 1) + b"\n")
    return job


def test_small_input_stays_in_one_process(tmp_path: Path) -> None:
    job = _job(tmp_path, 4, 1000)
    assert auto_jobs([str(job)], threshold=10_000, cores=8) == 1


def test_large_input_uses_a_process_per_core_at_most_one_per_file(tmp_path: Path) -> None:
    job = _job(tmp_path, 4, 10_000)
    assert auto_jobs([str(job)], threshold=10_000, cores=2) == 2
    assert auto_jobs([str(job)], threshold=10_000, cores=8) == 4  # 4 small files (too small to cut), 4 processes
    assert auto_jobs([str(job)], threshold=10_000, cores=1) == 1
    assert auto_jobs([str(job), "-"], threshold=10_000, cores=8) == 1  # stdin is one stream
    assert input_size([str(job / "node00" / "train.log"), str(tmp_path / "missing")], 1) == (10_000, 1)


def test_jobs_argument() -> None:
    assert jobs_argument("auto") == 0 and jobs_argument("AUTO") == 0 and jobs_argument("3") == 3
    for bad in ("0", "-2", "many"):
        with pytest.raises(argparse.ArgumentTypeError):
            jobs_argument(bad)


def test_cli_rejects_a_bad_jobs_value(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["analyze", "fixtures/jobs/ib-link-down", "--jobs", "0", "--no-store"])
    assert exc.value.code == 2 and "--jobs must be at least 1" in capsys.readouterr().err
