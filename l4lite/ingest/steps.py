"""A node's clock stepped back while the job ran: it ran fast (a bad time source, a clock set in another zone)
until ``chronyd``'s ``makestep`` or an NTP step set it right, and the node logged on. Its lines before the step
read later than every peer's, those after it in step with them.

Read as written, the lines before the step lie after the job's end: the job's end, its phases and a skew anchor
move by the step. A file shows the step only where two of its sampled times go back by it; the node's other files
(a rank's short ``stderr.log`` written wholly before the step) do not. So the step is worked out once per node
from all its files' sampled times (``spans.FileSpan.times``) against its peers', and every time of the node
that lies in the ahead part is read back by it, in every file of the node. A step is taken only when all hold:

- two consecutive sampled times of one of the node's files go back by whole quarter hours (within
  ``MAX_PAUSE``): what a clock set from another zone, or an hour off, is stepped back by;
- the time before the step lies past every peer's last time, and back by the step it lies within the peers'
  span; the time after it lies within the peers' span (after the step the node is in step with them);
- all the node's steps agree.

A line flushed an hour late (written before the lines above it) goes back too, but the time before it is no
later than the peers': no step. Only times past the peers' end that back by the step fall within their span are
read back, so a node that logs on after its peers stopped (a hang's last line) keeps its times.

A node that logs in another zone is compared in the job's time (``shifts``): ``ingest.jobclock`` looks for steps
again once ``zones`` has placed the nodes, and applies both facts to a file's lines for the batch and the live
reader alike.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TypeVar

import numpy as np

from l4lite.ingest.jumps import MAX_PAUSE, quarters
from l4lite.ingest.spans import FileSpan
from l4lite.records import Record

T = TypeVar("T")


def clock_steps(spans: Mapping[str, FileSpan], node_of: Callable[[str], str | None],
                shifts: Mapping[str, float] | None = None) -> dict[str, list[float]]:
    """Each stepped node's step (see the module docstring) as ``[seconds, after, until]``: the node's times later
    than ``after`` and up to ``until`` (as written) are ``seconds`` ahead: from its first time past the peers'
    that back by the step lies within their span, to where the clock stood when it was stepped. ``spans``: each
    file's sampled span (the peers' spans without their own wrong lines) and times in file order; ``shifts``:
    node -> seconds its zone is ahead (``zones``), so that a node five hours behind its peer is compared in the
    job's time (its ahead part lies past the peer's end only there); ``after`` and ``until`` stay as written.
    Plain lists, for the job context travels as JSON to other processes."""
    by_node: dict[str, list[str]] = {}
    for rel in spans:
        if (node := node_of(rel)) is not None:
            by_node.setdefault(node, []).append(rel)
    if len(by_node) < 2:
        return {}
    shifts = shifts or {}
    out: dict[str, list[float]] = {}
    for node, rels in by_node.items():
        own = shifts.get(node, 0.0)
        times = [[t - own for t in spans[rel].times] for rel in rels]
        if not any(quarters(b - a) > 0 for ts in times for b, a in zip(ts, ts[1:], strict=False)):
            continue  # no time goes back by whole quarter hours: the common case, the peers not looked at
        peers = [(spans[r], shifts.get(other, 0.0)) for other, rs in by_node.items() if other != node for r in rs]
        lo = min(s.first - d for s, d in peers) - MAX_PAUSE
        hi = max(s.last - d for s, d in peers) + MAX_PAUSE
        found = {(d, a + d) for ts in times for b, a in zip(ts, ts[1:], strict=False)
                 if (d := quarters(b - a)) > 0 and b > hi and lo <= b - d <= hi and lo <= a <= hi}
        if len({d for d, _ in found}) != 1:
            continue
        d = next(iter(found))[0]
        ahead = [t for ts in times for t in ts if t > hi and lo <= t - d <= hi]
        # the ahead part: from the node's first time past the peers to the step (as the clock read it then)
        out[node] = [d, max(hi, min(ahead) - MAX_PAUSE) + own, max(*ahead, *(at for _, at in found)) + own]
    return out


def step_back(t: float, step: Sequence[float] | None) -> float:
    """A time of a stepped node as the job's clock reads it (``step``: ``clock_steps``'s, or None)."""
    if step is None or not step[1] < t <= step[2]:
        return t
    return t - step[0]


def in_step(items: Iterator[T], step: Sequence[float] | None) -> Iterator[T]:
    """``items`` (one file of a stepped node: records and runs, times as written) with the times of the ahead part
    read back by the step."""
    if step is None:
        yield from items
        return
    seconds, after, until = step
    for item in items:
        if isinstance(item, Record):
            if item.time is not None:
                item.time = step_back(item.time, step)
        elif getattr(item, "times", None):
            times = np.asarray(item.times, dtype=np.float64)
            ahead = (times > after) & (times <= until)
            if ahead.any():
                item.retime(np.where(ahead, times - seconds, times))  # type: ignore[attr-defined]
        yield item


def stepped(times: Sequence[float], step: Sequence[float] | None) -> list[float]:
    """A file's sampled times with the ahead part read back (``step``: its node's, or None)."""
    return list(times) if step is None else [step_back(t, step) for t in times]

