"""A run's whole-second ties placed in file order (``ingest.seconds``): only the rows that tie are placed one by
one, with the same times as placing every row."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import numpy as np

from l4lite.ingest import seconds
from l4lite.ingest.seconds import in_line_order, tie_rows

T0 = datetime(2026, 12, 3, 14, 55, 0, tzinfo=UTC).timestamp()


class _Run:
    """What ``in_line_order`` reads of a run: its times, texts and ``retime``."""

    def __init__(self, times: list[float], texts: list[str]) -> None:
        self.times = times
        self.texts = texts

    def retime(self, times: np.ndarray) -> None:
        self.times = times.tolist()


def _text(t: float, own: bool) -> str:
    stamp = datetime.fromtimestamp(int(t), UTC)
    return f"Dec  3 {stamp:%H:%M:%S} node07 kernel: step" if own else "    at frame 3"


_PLACED = seconds._placed


def _reference(times: list[float], texts: list[str], before: float | None) -> list[float]:
    out = []
    for t, text in zip(times, texts, strict=True):
        before = _PLACED(t, before, text)
        out.append(before)
    return out


def _random_run(rng: random.Random) -> tuple[list[float], list[str]]:
    times, texts = [], []
    t = T0
    for _ in range(rng.randint(1, 60)):
        step = rng.choice([0.0, 0.0, 0.0, 1.0, 2.0, 0.25, -1.0])
        t = t + step
        if rng.random() < 0.1:
            t = float(np.floor(t)) + rng.choice([0.5, 0.9996])
        elif rng.random() < 0.6:
            t = float(np.floor(t))
        times.append(t)
        texts.append(_text(t, rng.random() < 0.8))
    return times, texts


def test_a_run_placed_at_its_ties_only_matches_placing_every_row(monkeypatch) -> None:
    rng = random.Random(7)
    calls = []
    placed = seconds._placed

    def counted(t, before, text):  # type: ignore[no-untyped-def]
        calls.append(t)
        return placed(t, before, text)

    monkeypatch.setattr(seconds, "_placed", counted)
    lines = ties = 0
    for _ in range(400):
        times, texts = _random_run(rng)
        before = rng.choice([None, T0 - 5, T0, T0 + 0.5, T0 + 0.9995])
        want = _reference(times, texts, before)
        lines += len(times)
        run = _Run(list(times), texts)
        out = list(in_line_order(iter([run]), before))
        assert out[0].times == want
        ties += len(tie_rows(np.array(times), before))
    # the rows that tie and nothing else went through ``_placed``
    assert len(calls) == ties < lines / 2


def test_a_thousand_lines_of_one_second_stay_in_it() -> None:
    times = [T0] * 1200
    texts = [_text(T0, True)] * 1200
    run = _Run(list(times), texts)
    out = list(in_line_order(iter([run])))[0].times
    assert out == _reference(times, texts, None)
    assert max(out) < T0 + 1 and out[1] == T0 + 0.001


def test_lines_without_a_time_keep_none_when_later_lines_tie() -> None:
    """A run of NCCL lines printed before the trainer's first stamp has no time on its first rows; placing the
    ties further on must leave those rows untimed (a NaN would be read downstream as a time)."""
    times: list[float | None] = [None, None, None, T0, T0, T0 + 1]
    texts = ["node07:5283:5708 [0] NCCL INFO Bootstrap"] * 3 + [_text(T0, True)] * 2 + [_text(T0 + 1, True)]
    run = _Run(list(times), texts)  # type: ignore[arg-type]
    out = list(in_line_order(iter([run])))[0].times
    assert out[:3] == [None, None, None]
    assert out[3:] == [T0, T0 + 0.001, T0 + 1]
