"""The fp16 loss-scale signals of the health detector: a scale collapsed to 1 or below, halved again and again
after the run's start, or cut to its floor and never grown back.

A dynamic scaler starts high (2^16, 2^32) and halves on every overflow until it fits: a run of halvings from the
first reading, in the first ``warmup`` iterations, is that search and no fault. The search ends at the first
reading that keeps the scale of the one before it on the same trainer stream (a step without overflow) or grows
it; a run of halvings after that is no search even in the first iterations. Findings are anchored at the first
cut of the run that led to them (or at the progress line just before it that counts the skipped step: Megatron
prints the scale an iteration used, so its cut shows on the next line): that is where the overflows began, and
the checkpoint to resume from is before it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from l4lite.detect.base import Finding
from l4lite.records import Record
from l4lite.scan.scanner import MetricPoint


@dataclass(frozen=True)
class ScaleLimits:
    """Thresholds of the loss-scale signals (see ``HealthDetector``)."""

    warmup: int = 100
    low: float = 128.0
    halvings: int = 10
    low_halvings: int = 4
    floor: float = 8.0


def _finite(v: float | None) -> bool:
    return v is not None and math.isfinite(v)


def _record(p: MetricPoint) -> Record:
    return Record(file=p.file, line=p.line, end_line=p.line, node=p.node, rank=p.rank, gpu=None, source="trainer",
                  time=p.time, level="info", message=p.text, text=p.text)


def _steady(prev: MetricPoint, p: MetricPoint) -> bool:
    """Two progress lines of one trainer stream in a row with the same scale, the second counting no skipped
    step: a step that did not overflow. (With hysteresis, Megatron's and DeepSpeed's default, the scale is halved
    only on the second overflow in a row: the search shows each scale twice, the second time with a skip.)"""
    return (p.kind == "train" and prev.kind == "train" and (p.node, p.rank) == (prev.node, prev.rank)
            and p.loss_scale == prev.loss_scale and not p.skipped)


def loss_scale_findings(metrics: list[MetricPoint], limits: ScaleLimits, detector: str) -> list[Finding]:
    """The loss-scale findings of a job's metric points (at most one)."""
    pts = sorted((p for p in metrics if _finite(p.loss_scale) and p.loss_scale > 0),  # type: ignore[operator]
                 key=lambda p: (p.time if p.time is not None else math.inf, p.seq))
    if len(pts) < 2:
        return []
    run_start, cut, halvings = 0, None, 0.0
    last_of: dict[tuple[str | None, int | None], MetricPoint] = {(pts[0].node, pts[0].rank): pts[0]}
    prev = pts[0]
    high = pts[0].loss_scale or 0.0
    halved: list[Finding] = []  # a collapse later in the run says more than the halvings before it
    for i, p in enumerate(pts[1:], 1):
        assert p.loss_scale is not None and prev.loss_scale is not None
        same = last_of.get((p.node, p.rank))
        last_of[(p.node, p.rank)] = p
        if p.loss_scale > prev.loss_scale or (same is not None and _steady(same, p)):
            run_start, cut, halvings = i, None, 0.0  # the scaler grew again or held: the search or burst ended
        elif p.loss_scale < prev.loss_scale:
            cut = i if cut is None else cut
            halvings += math.log2(prev.loss_scale / p.loss_scale)
            first = pts[run_start]
            search = run_start == 0 and (first.iteration is None or first.iteration <= limits.warmup)
            k = cut - 1 if cut > 0 and pts[cut - 1].kind == "train" and (pts[cut - 1].skipped or 0) > 0 else cut
            start = pts[k]  # (k: the line of the step that overflowed; Megatron prints the scale it used)
            at = f" from iteration {start.iteration}" if start.iteration is not None else ""
            before = pts[max(cut - 1, 0)].loss_scale
            if p.loss_scale <= 1.0 and high > 1.0:
                return [_finding(start, f"the fp16 loss scale collapsed{at} from {before:.4g} to {p.loss_scale:.4g}",
                                 "loss_scale_collapse", detector, _copies(pts, start) + [_record(pts[cut])])]
            if not halved and not search and (halvings >= limits.halvings or (
                    halvings >= limits.low_halvings and p.loss_scale <= limits.low)):
                halved = [_finding(start, f"the fp16 loss scale was halved {halvings:.0f} times in a row{at}, from "
                                        f"{before:.4g} to {p.loss_scale:.4g}", "loss_scale_halving", detector,
                                 [_record(q) for q in pts[max(cut - 1, 0):i + 1]][-4:])]
        high = max(high, p.loss_scale)
        prev = p
    return halved or _floor(metrics, pts, limits, detector)


def _floor(metrics: list[MetricPoint], pts: list[MetricPoint], limits: ScaleLimits, detector: str) -> list[Finding]:
    """A scale cut to ``limits.floor`` or below after the search that never grew back: at so low a scale fp16
    gradients are barely scaled and still overflow (an excerpt may show only the last cuts)."""
    last = pts[-1]
    if last.loss_scale > limits.floor:  # type: ignore[operator]
        return []
    first = next((i for i, p in enumerate(pts) if p.kind == "overflow" and _past_search(metrics, p, limits)), None)
    if first is None:
        return []
    tail = pts[first:]  # from the first cut after the search: a scale that grew again found its level
    if any(b.loss_scale > a.loss_scale for a, b in zip(tail, tail[1:], strict=False)):  # type: ignore[operator]
        return []
    cuts = [p for p in tail if p.kind == "overflow"]
    at = f" at iteration {cuts[0].iteration}" if cuts[0].iteration is not None else ""
    return [_finding(last, f"the fp16 loss scale was cut to {last.loss_scale:.4g}{at}, long after the run's start, "
                           "and never grew back", "loss_scale_floor", detector, [_record(q) for q in cuts[:4]])]


def _past_search(metrics: list[MetricPoint], p: MetricPoint, limits: ScaleLimits) -> bool:
    """Whether ``p`` comes after the run's first ``limits.warmup`` iterations: by its own iteration, or by a
    progress line before it (by time, or earlier in its file) that counts more."""
    if p.iteration is not None:
        return p.iteration > limits.warmup
    for q in metrics:
        if q.kind != "train" or q.iteration is None or q.iteration <= limits.warmup:
            continue
        if (q.time is not None and p.time is not None and q.time <= p.time) or \
                (q.file == p.file and q.line < p.line):
            return True
    return False


def _copies(pts: list[MetricPoint], p: MetricPoint, limit: int = 3) -> list[Record]:
    """The line of ``p``'s iteration in every file that printed it (a rank's log and its node's console)."""
    if p.iteration is None:
        return [_record(p)]
    return [_record(q) for q in pts if q.iteration == p.iteration and q.kind == p.kind][:limit]


def _finding(p: MetricPoint, what: str, signal: str, detector: str, records: list[Record]) -> Finding:
    return Finding(detector, "numerical", "root", 0.75,
                   f"{what}: nearly every step overflows, the training cannot make progress", node=p.node,
                   rank=p.rank, time=p.time, records=records or [_record(p)],
                   data={"signal": signal, "iteration": p.iteration, "scope": "global"})
