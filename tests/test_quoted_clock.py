"""A rank's untimed stderr whose only timed line is a date it quotes (a job script's ``date`` of the run it
resumes, a data record's ``created``): the file has no clock of its own, so the quoted date neither widens the
times its reader accepts nor dates the traceback after it."""

from __future__ import annotations

import json
import shutil
from datetime import datetime
from pathlib import Path

import pytest

from l4lite.api import analyze
from l4lite.options import AnalyzeOptions

JOB = Path(__file__).resolve().parent.parent / "fixtures" / "real_jobs" / "184-megatron-idx_truncated"
STDERR = "h100-sxm-044/torchelastic/run-184_7kma87m3/attempt_0/0/stderr.log"


def _when(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


@pytest.mark.parametrize("quoted", [
    ["INFO resuming: checkpoint saved at 2024-03-01 12:00:00 (step 1200)", "Fri Mar  1 12:00:00 UTC 2024"],
    ['{"event": "sample", "shard": 17, "created": 1709294400, "tokens": 2048}'],
])
def test_a_date_a_file_quotes_amid_untimed_lines_dates_nothing(tmp_path: Path, quoted: list[str]) -> None:
    job = tmp_path / JOB.name
    shutil.copytree(JOB, job)
    path = job / STDERR
    lines = path.read_text(encoding="utf-8").splitlines()
    mid = len(lines) // 2
    path.write_text("\n".join(lines[:mid] + quoted + lines[mid:]) + "\n", encoding="utf-8")
    truth = json.loads((JOB / "ground_truth.json").read_text())
    incident = analyze([str(job)], AnalyzeOptions())
    assert incident.failure_time is not None
    assert abs(_when(incident.failure_time) - _when(truth["fault_time"])) < 60  # not 2024-03-01 12:00:00
    assert incident.category == truth["category"]

