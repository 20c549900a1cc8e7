"""A rank that aborts without a line of its own is the peer the other ranks lost (real job 117)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from l4lite.api import AnalyzeOptions, analyze
from l4lite.evaluate.scoreboard import job_paths

JOB = Path(__file__).resolve().parent.parent / "fixtures" / "real_jobs" / "117-ddp-silent_abort"


def _verdict(job: Path) -> dict:
    return analyze(job_paths(job), AnalyzeOptions()).to_dict()


def test_a_rank_that_aborted_silently_is_blamed_over_a_rank_that_lost_its_peer() -> None:
    inc = _verdict(JOB)
    assert inc["suspects"][0]["node"] == "gpu-node-12"
    assert inc["category"] == "software"  # the signal's own reading, not "a fault elsewhere"
    assert "without a line of its own" in inc["summary"]
    assert any(e["file"] == "gpu-node-12/console.log" and e["line"] == 25 for e in inc["evidence"])


def test_an_abort_after_the_rank_s_own_watchdog_timeout_stays_a_cascade(tmp_path: Path) -> None:
    """The NCCL watchdog aborts a rank after its own timeout line: such an abort is no silent one."""
    job = tmp_path / "job"
    shutil.copytree(JOB, job)
    console = job / "gpu-node-12" / "console.log"
    lines = console.read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if re.search(r"failed \(exitcode: -6\)", line))
    lines.insert(at, "[default1]:[rank3]:[E1205 15:54:13.100000000 ProcessGroupNCCL.cpp:632] [Rank 3] Watchdog "
                     "caught collective operation timeout: WorkNCCL(SeqNum=57, OpType=ALLREDUCE, NumelIn=1, "
                     "NumelOut=1, Timeout(ms)=600000) ran for 600043 milliseconds before timing out.\n")
    console.write_text("".join(lines))
    inc = _verdict(job)
    assert "without a line of its own" not in inc["summary"]


@pytest.mark.parametrize("exitcode", ["-15"])
def test_the_agent_s_own_sigterm_is_never_read_as_a_silent_abort(tmp_path: Path, exitcode: str) -> None:
    job = tmp_path / "job"
    shutil.copytree(JOB, job)
    console = job / "gpu-node-12" / "console.log"
    text = console.read_text()
    text = text.replace("exitcode  : -6 (pid: 1588)  (SIGABRT)", f"exitcode  : {exitcode} (pid: 1588)  (SIGTERM)")
    console.write_text(text)
    inc = _verdict(job)
    assert "without a line of its own" not in inc["summary"]
