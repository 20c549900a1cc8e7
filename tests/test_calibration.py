"""The calibration readings of eval: Brier, AUROC and the reliability table of the incident's confidence."""

from __future__ import annotations

from pathlib import Path

from l4lite.evaluate.calibration import Scored, auroc, brier, calibration, reliability, verdict_right
from l4lite.evaluate.scoreboard import score_job, summarize


def test_brier_and_auroc_reward_an_honest_confidence() -> None:
    honest = [Scored(0.9, True), Scored(0.9, True), Scored(0.2, False), Scored(0.3, True)]
    flat = [Scored(0.3, p.right) for p in honest]
    assert brier(honest) < brier(flat)
    assert auroc(honest) == 1.0 and auroc(flat) == 0.5
    assert auroc([Scored(0.9, True)]) is None  # no wrong verdict: nothing to rank against


def test_reliability_bins_say_how_often_each_confidence_was_right() -> None:
    rows = reliability([Scored(0.95, True), Scored(0.85, False), Scored(0.1, False), Scored(1.0, True)])
    assert [(r["bin"], r["n"], r["right"]) for r in rows] == [("0.0-0.2", 1, 0.0), ("0.8-1.0", 3, 2 / 3)]
    assert calibration([])["brier"] is None


def test_a_verdict_is_right_when_node_and_category_are() -> None:
    assert verdict_right(True, True) and not verdict_right(True, False) and not verdict_right(False, True)
    assert verdict_right(None, True) and verdict_right(None, None) is None


def test_summary_scores_the_incidents_confidence(tmp_path: Path) -> None:
    truth = {"status": "incident", "faulty_nodes": ["n1"], "category": "hardware"}
    right = score_job(tmp_path, truth, {"status": "incident", "suspects": [{"node": "n1"}], "category": "hardware",
                                        "confidence": 0.9}, "l4lite", 0.1)
    wrong = score_job(tmp_path, truth, {"status": "incident", "suspects": [{"node": "n2"}], "category": "hardware",
                                        "confidence": 0.4}, "l4lite", 0.1)
    missed = score_job(tmp_path, truth, {"status": "healthy", "confidence": None}, "l4lite", 0.1)
    cal = summarize([right, wrong, missed])["calibration"]
    assert cal["n"] == 2 and cal["right"] == 1 and cal["auroc"] == 1.0
    assert abs(cal["brier"] - (0.1 ** 2 + 0.4 ** 2) / 2) < 1e-9
