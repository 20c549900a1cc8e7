"""The readings `benchmarks/verdict_study.py` and `benchmarks/model_cv.py --prior` score an abstention or a prior
correction with: what counts as a gain, a loss, and a reweighted probability."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from model_cv import reweighted  # noqa: E402
from verdict_study import Reading, Verdict, lexicon_reading, tally  # noqa: E402

from l4lite.rules import components  # noqa: E402


def verdict(truth: str) -> Verdict:
    return Verdict("c", "x", truth, "unknown", "nothing", ())


def test_a_reading_is_a_gain_when_right_a_loss_when_the_thread_found_no_cause() -> None:
    pairs = [(verdict("host"), Reading("host", 0.4)), (verdict("unknown"), Reading("host", 0.4)),
             (verdict("storage"), Reading("host", 0.4))]
    assert tally(pairs) == (1, 1, 1)


def test_the_lowered_lexicon_floor_reads_one_weak_word_and_is_put_back() -> None:
    floor = components.MIN_SCORE
    line = "Traceback (most recent call last):"  # one weak software word, under the shipped floor
    assert components.component(line) is None
    got = lexicon_reading([line], 1.0)
    assert got is not None and got.category == "software"
    assert floor == components.MIN_SCORE


def test_a_cascade_line_gives_the_lowered_lexicon_nothing() -> None:
    line = "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1)"
    assert components.is_cascade(line)
    assert lexicon_reading([line], 1.0) is None


def test_a_prior_factor_below_one_can_move_the_best_class() -> None:
    p = {"user_config": 0.45, "host": 0.35, "software": 0.2}
    q = reweighted(p, {"user_config": 0.5})
    assert sum(q.values()) == pytest.approx(1.0)
    assert max(q, key=lambda c: q[c]) == "host"
    assert reweighted(p, {}) == pytest.approx(p)
