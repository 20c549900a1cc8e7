"""Helpers over a trainer's metric points: where an unstepped point sits among the steps, the median of counts, and
the order of a rank's points printed to two files at once."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from l4lite.scan.jobscan import MetricPoint

__all__ = ["align_copies", "counted_median", "step_of"]


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


def align_copies(points: list[MetricPoint]) -> list[MetricPoint]:
    """The points with the ``seq`` of a rank's second file restarted where that file begins in time when the two
    files run side by side (a rank's own log and the agent's ``--tee`` copy of it in the console, both named by
    one global rank): the scan counts a node's and rank's points on across its files, which orders a restarted
    attempt's file after the first one's, but puts a copy's whole series after the original's, so that its first
    (low) values read as a recovery after the original's last. A file whose first point is timed no later than
    the last point already counted for its node and rank is such a copy; a later file (or an untimed one) keeps
    the scan's numbers. Points are copied, never changed in place (the scan is shared)."""
    first_seq: dict[tuple[str, str | None, int | None], int] = {}
    for p in points:
        f = (p.file, p.node, p.rank)
        if f not in first_seq or p.seq < first_seq[f]:
            first_seq[f] = p.seq
    earlier: dict[tuple[str | None, int | None], list[float]] = {}  # the times counted on, per node and rank
    latest: dict[tuple[str | None, int | None], float] = {}
    shifts: dict[tuple[str, str | None, int | None], int | None] = {}  # what a file's seq of a rank moves by
    out: list[MetricPoint] = []
    for p in points:
        times = earlier.setdefault((p.node, p.rank), [])
        f = (p.file, p.node, p.rank)
        if f not in shifts:
            shifts[f] = None
            if p.time is not None and times and p.time <= latest[(p.node, p.rank)]:
                shifts[f] = sum(1 for t in times if t < p.time) + 1 - first_seq[f]
        shift = shifts[f]
        if shift is None:
            if p.time is not None:
                times.append(p.time)
                latest[(p.node, p.rank)] = max(p.time, latest.get((p.node, p.rank), p.time))
            out.append(p)
        else:
            out.append(replace(p, seq=p.seq + shift))
    return out
