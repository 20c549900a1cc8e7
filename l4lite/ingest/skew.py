"""Clock skew between a job's nodes, from lines that every node writes at (nearly) the same moment.

Each node stamps its lines with its own clock. When two clocks differ by more than the gap between a root cause on
one node and its echo on another, "the earliest error" is the wrong one. Some lines are simultaneous by
construction, because the event they report completes for every participant at once:

- a torchelastic rendezvous round closing (``has joined round N of the rendezvous 'ID'``: every agent logs it when
  the round completes, not when it joined);
- the watchdog timeout of one collective (``SeqNum=N, OpType=OP`` of one process group): every rank that entered
  it at the same step times out after the same timeout;
- the first ``initialized process group`` line of a node: ``init_process_group`` returns only once every rank
  has connected;
- a gloo ``Timed out waiting Nms for send/recv``: the blocked ranks entered the collective in lockstep.

Each such event gives a key; a node's time for a key is its earliest line with it. Against a reference node (the
one with most keys), a node's offset is the median of its differences over the keys both share, so one late line
(a rank that entered the collective late, a retried rendezvous) does not move it; the number of keys it rests on
is reported with it. Times are not corrected with it (``docs/layouts.md`` says why).

Rendezvous rounds and process-group starts are strong events: they complete for everyone at once. Timeouts are
weak: a rank that entered the collective seconds after its peers times out seconds after them on the same clock,
so a skew that rests on timeouts alone is flagged only when ``MIN_WEAK_EVENTS`` of them agree.
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from l4lite.ingest.steps import step_back
from l4lite.ingest.timespots import strip_stream_prefixes
from l4lite.ingest.timestamps import TimestampParser

SKEW_THRESHOLD = 1.0  # seconds: beyond this, events of two nodes closer than the skew may be shown out of order
_IN_SPAN = 0.001  # seconds: an anchor's time within its file's sampled span, as parsed twice
MIN_WEAK_EVENTS = 3  # timeouts alone flag a skew only when this many agree: one rank entering late explains fewer

_ROUND = re.compile(r"has joined round (\d+) of the rendezvous '([^']+)'")
_SEQ = re.compile(r"SeqNum=(\d+), OpType=(\w+)")
_PG = re.compile(r"PG ID (\d+)|pg_id=(\d+)")
_PG_INIT = re.compile(r"\binitialized process group\b", re.I)
_GLOO = re.compile(r"Timed out waiting (\d+)ms for (?:send|recv) operation")


def quick(raw: str) -> bool:
    """Whether a line may be an anchor: cheap substring tests before any regex."""
    return "SeqNum=" in raw or "joined round" in raw or "process group" in raw or "Timed out waiting" in raw


def anchor_key(line: str) -> str | None:
    """The simultaneous event a line reports, as a key shared by every node that reports it, or None."""
    if "joined round" in line:
        m = _ROUND.search(line)
        return f"rendezvous {m[2]} round {m[1]}" if m else None
    if "SeqNum=" in line:
        low = line.lower()
        if "timeout" not in low and "timed out" not in low:
            return None  # a completed or enqueued collective is logged by each rank when it gets there
        m = _SEQ.search(line)
        if not m:
            return None
        pg = _PG.search(line)
        return f"collective pg{(pg[1] or pg[2]) if pg else '?'} {m[2]} seq {m[1]} timeout"
    if "Timed out waiting" in line:
        m = _GLOO.search(line)
        return f"gloo timeout {m[1]}ms" if m else None
    if _PG_INIT.search(line):
        return "process group initialized"
    return None


def is_strong(key: str) -> bool:
    """Whether an event key completes for every node at once (not a timeout, which a late rank shifts)."""
    return key.startswith("rendezvous ") or key == "process group initialized"


@dataclass
class NodeOffset:
    """One node's clock against the reference's: ``seconds`` to subtract from its times, over ``lines`` keys."""

    seconds: float
    lines: int
    spread: float  # the median distance of the keys' differences from their median: how sure the estimate is
    strong: int = 0  # how many of the keys are strong events (rendezvous rounds, process-group starts)

    @property
    def firm(self) -> bool:
        """Whether the offset rests on enough to call the clocks different rather than a rank late."""
        return self.strong > 0 or self.lines >= MIN_WEAK_EVENTS


@dataclass
class ClockSkew:
    """The job's clock skew: offsets of the nodes that share keys with the reference."""

    reference: str | None = None
    offsets: dict[str, NodeOffset] = field(default_factory=dict)
    threshold: float = SKEW_THRESHOLD

    @property
    def largest(self) -> float:
        return max((abs(o.seconds) for o in self.offsets.values()), default=0.0)

    @property
    def exceeds(self) -> bool:
        """A node's offset beyond the threshold and clearly beyond its own lines' disagreement."""
        return any(abs(o.seconds) > self.threshold and abs(o.seconds) > 2 * o.spread and o.firm
                   for o in self.offsets.values())

    def note(self) -> str:
        """One sentence for the report."""
        if self.reference is None or not self.offsets:
            return "not measured: no line that several nodes write at the same moment"
        worst = max(self.offsets, key=lambda n: abs(self.offsets[n].seconds))
        o = self.offsets[worst]
        events = f"{o.lines} simultaneous event" + ("s" if o.lines != 1 else "")
        where = f"{worst} is {o.seconds:+.3f} s from {self.reference} ({events})"
        if self.exceeds:
            return (f"clocks disagree: {where}; events on different nodes less than {abs(o.seconds):.1f} s apart "
                    "may be out of order (times are shown as logged)")
        if abs(o.seconds) > self.threshold:
            return (f"clocks not shown to disagree: {where}, but timeouts alone also differ when a rank enters a "
                    "collective late")
        return f"clocks agree within {self.threshold:g} s: {where}"

    def to_dict(self) -> dict[str, Any]:
        return {"reference": self.reference, "threshold_seconds": self.threshold,
                "largest_seconds": round(self.largest, 3), "exceeds": self.exceeds, "corrected": False,
                "nodes": {n: {k: round(v, 3) if isinstance(v, float) else v for k, v in asdict(o).items()}
                          for n, o in sorted(self.offsets.items())},
                "note": self.note()}


def estimate(anchors: Iterable[tuple[str, str, float]], threshold: float = SKEW_THRESHOLD) -> ClockSkew:
    """The skew from ``(node, key, time)`` triples (see the module docstring)."""
    first: dict[str, dict[str, float]] = {}
    for node, key, t in anchors:
        keys = first.setdefault(node, {})
        if key not in keys or t < keys[key]:
            keys[key] = t
    if len(first) < 2:
        return ClockSkew(threshold=threshold)
    reference = max(sorted(first), key=lambda n: len(first[n]))
    ref = first[reference]
    out = ClockSkew(reference=reference, threshold=threshold)
    for node, keys in sorted(first.items()):
        if node == reference:
            continue
        diffs = [t - ref[k] for k, t in keys.items() if k in ref]
        if diffs:
            med = statistics.median(diffs)
            strong = sum(1 for k in keys if k in ref and is_strong(k))
            out.offsets[node] = NodeOffset(med, len(diffs), statistics.median(abs(d - med) for d in diffs), strong)
    return out if out.offsets else ClockSkew(threshold=threshold)


def job_skew(ctx: Any, files: Sequence[Any], anchors_of: dict[str, list[tuple[str, str | None, str]]]
             ) -> dict[str, Any]:
    """The clock skew between the job's nodes (``estimate``), from the sampled lines that every node writes at the
    same moment (``anchors_of``: per file, (key, host named in the line, line)); each line counts for the host it
    names, else for its file's node (``ctx``: the ``context.JobContext``). Empty for a job of one node. A line
    whose time lies outside its own file's sampled span (``spans.no_spikes`` left it out: a clock stepped for one
    line, a line flushed late) is no anchor: one such line would be the whole skew of its node."""
    mtimes = {f.rel: getattr(f, "mtime", None) for f in files}
    anchors: list[tuple[str, str, float]] = []
    nodes: set[str] = set()
    for rel, found in anchors_of.items():
        node = ctx.node_of(rel)
        if node:
            nodes.add(node)
        if not found:
            continue
        parser = TimestampParser(ctx.year, ctx.written or mtimes.get(rel), ctx.near_year, ctx.around, ctx.day_first)
        limit = ctx.future_limit(mtimes.get(rel))
        lo, hi = ctx.file_starts.get(rel, -math.inf) - _IN_SPAN, ctx.file_ends.get(rel, math.inf) + _IN_SPAN
        for key, host, line in found:
            t = parser.parse(strip_stream_prefixes(strip_stream_prefixes(line)))[0]
            who = host or node
            if t is not None and who in ctx.clock_steps:  # a clock stepped back: its ahead part read back
                t = step_back(t, ctx.clock_steps[who])
            if t is not None and t <= limit and lo <= t <= hi and who:
                nodes.add(who)
                anchors.append((who, key, t))
    if len(nodes) < 2:
        return {}
    return estimate(anchors).to_dict()
