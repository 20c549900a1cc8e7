"""The committed simulator suite's scoreboard, pinned: every scenario right on every column.

The simulator is not the judge of whether a detector works (the real corpus and the real jobs are, in
``tests/test_corpus_eval.py`` and ``tests/test_real_jobs.py``), but it holds shapes that are hard to get from real
logs (a slow node, overfitting, a hang with no error line), and a change that loses one of them fails here.
Reproduce with ``l4lite eval fixtures/suite``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from l4lite.evaluate.scoreboard import evaluate, pipeline_analyzer

SUITE = Path(__file__).resolve().parent.parent / "fixtures" / "suite"
FLOORS = {"status": 1.0, "detected": 1.0, "top1": 1.0, "phase": 1.0, "category": 1.0, "evidence_f1": 0.99}


@pytest.fixture(scope="module")
def board():  # type: ignore[no-untyped-def]
    jobs = sorted(p for p in SUITE.iterdir() if (p / "ground_truth.json").is_file())
    assert len(jobs) == 20
    return evaluate(jobs, {"l4lite": pipeline_analyzer()})


def test_every_scenario_of_the_simulator_suite_is_right(board) -> None:  # type: ignore[no-untyped-def]
    summary = board.summary("l4lite")
    assert summary["errors"] == 0 and summary["false_incident_rate"] == 0.0
    low = {k: round(summary[k], 3) for k, floor in FLOORS.items() if summary[k] < floor}
    wrong = sorted(r.job for r in board.results if r.method == "l4lite" and r.truth_status == "incident"
                   and not (r.top(1) and r.phase_ok and r.category_ok))
    assert (low, wrong) == ({}, [])
