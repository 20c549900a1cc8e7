"""Helpers over a trainer's metric points: where an unstepped point sits among the steps, the median of counts."""

from __future__ import annotations

from collections import Counter

from l4lite.scan.jobscan import MetricPoint

__all__ = ["counted_median", "step_of"]


def step_of(points: list[MetricPoint], p: MetricPoint) -> int | None:
    """The iteration of a point that prints none (a progress bar's ``loss=22.1``): the step the last stepped line
    before it in its own file stated (by time when its file has none). The first bad line of a divergence is
    where it began, so the run's last step (the fallback of a finding without an iteration) says too late."""
    if p.iteration is not None:
        return p.iteration
    same = [q for q in points if q.iteration is not None and q.file == p.file and q.line <= p.line]
    if same:
        return max(same, key=lambda q: q.line).iteration
    if p.time is None:
        return None
    timed = [q for q in points if q.iteration is not None and q.node == p.node and q.time is not None
             and q.time <= p.time]
    return max(timed, key=lambda q: (q.time, q.iteration)).iteration if timed else None


def counted_median(counts: Counter[int]) -> float:
    """The median of a multiset given as value counts, as ``statistics.median`` gives it on the expanded list."""
    total = sum(counts.values())
    lo_rank, hi_rank = (total - 1) // 2, total // 2
    lo = hi = None
    seen = 0
    for value in sorted(counts):
        seen += counts[value]
        if lo is None and seen > lo_rank:
            lo = value
        if seen > hi_rank:
            hi = value
            break
    assert lo is not None and hi is not None
    return lo if lo == hi else (lo + hi) / 2
