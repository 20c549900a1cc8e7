"""Calibration of the incident's confidence: does "confidence 90 %" mean right nine times out of ten?

A verdict is counted right when its node (top-1, or blaming no node for a job-wide fault) and its category are
both right, wherever the truth scores them. Only incident jobs reported as incidents with a confidence count:
a missed incident has no verdict to trust. Three readings, so that a change shows whether the number got more
honest and not only whether the verdicts got better:

- the reliability table: per confidence bin, how many verdicts, their mean confidence and how many were right;
- the Brier score (mean squared gap between confidence and being right; lower is better);
- AUROC: the chance that a right verdict carries a higher confidence than a wrong one (0.5: no signal).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

BINS: tuple[float, ...] = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0001)


@dataclass(frozen=True)
class Scored:
    """One verdict's confidence and whether it was right."""

    confidence: float
    right: bool


def verdict_right(top1: bool | None, category_ok: bool | None) -> bool | None:
    """Right when every scored part (node, category) is right; None when the truth scores neither."""
    parts = [p for p in (top1, category_ok) if p is not None]
    return all(parts) if parts else None


def brier(points: Sequence[Scored]) -> float | None:
    return sum((p.confidence - p.right) ** 2 for p in points) / len(points) if points else None


def auroc(points: Sequence[Scored]) -> float | None:
    """Mann-Whitney AUROC of confidence for right against wrong verdicts (ties count half)."""
    pos = [p.confidence for p in points if p.right]
    neg = [p.confidence for p in points if not p.right]
    if not pos or not neg:
        return None
    wins = sum((a > b) + 0.5 * (a == b) for a in pos for b in neg)
    return wins / (len(pos) * len(neg))


def reliability(points: Sequence[Scored]) -> list[dict[str, Any]]:
    """One row per non-empty confidence bin: its range, count, mean confidence and share right."""
    rows: list[dict[str, Any]] = []
    for lo, hi in zip(BINS, BINS[1:], strict=False):
        inside = [p for p in points if lo <= p.confidence < hi]
        if inside:
            rows.append({"bin": f"{lo:.1f}-{min(hi, 1.0):.1f}", "n": len(inside),
                         "confidence": sum(p.confidence for p in inside) / len(inside),
                         "right": sum(p.right for p in inside) / len(inside)})
    return rows


def calibration(points: Sequence[Scored]) -> dict[str, Any]:
    """Brier, AUROC, expected calibration error and the reliability table of ``points``."""
    table = reliability(points)
    ece = sum(r["n"] * abs(r["confidence"] - r["right"]) for r in table) / len(points) if points else None
    return {"n": len(points), "right": sum(p.right for p in points), "brier": brier(points), "auroc": auroc(points),
            "ece": ece, "bins": table}


def format_calibration(summary: dict[str, Any]) -> str:
    """A short text block: one line of scores, then the reliability table."""
    def num(v: float | None) -> str:
        return "-" if v is None else f"{v:.3f}"
    lines = [f"confidence: n={summary['n']} right={summary['right']} brier={num(summary['brier'])} "
             f"auroc={num(summary['auroc'])} ece={num(summary['ece'])}"]
    lines += [f"  {r['bin']}: n={r['n']:4d} conf={r['confidence']:.2f} right={r['right']:.2f}"
              for r in summary["bins"]]
    return "\n".join(lines)
