"""A job's clock facts (a node's clock stepped back, a node's time zone) worked out together once per job, and
applied to a file's records and runs by one function that the batch reader and the live reader both call.

The two facts depend on each other. A step is seen against the peers' span: a node's ahead part lies past every
peer's last time. A node that logs five hours behind its peer (naive local time) never lies past it as written,
so a step looked for before ``zones`` read the node in the job's time is missed, and the ahead hour then moves the
job's span, its skew anchor and its phases. Zones, in turn, are read from spans that the ahead part stretches. So
``settle_clocks`` looks for steps on the times as written, places the zones, and, when a zone moved a node, looks
again for steps on the times read in each node's zone; a step found only there is kept when the zones worked out
again with it are the ones it was found with (else the first reading stands). Last, a node whose clock no file
shows stepping, but whose process's log lies whole quarter hours past the time the process's error file states
(``statedsteps``), takes that as its step, and the span, skew and zones are worked out again with it; when the
zones change with it, the reading without it stands.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

from l4lite.ingest.spans import FileSpan, span_of
from l4lite.ingest.statedsteps import stated_steps
from l4lite.ingest.steps import clock_steps, in_step, stepped
from l4lite.ingest.zones import in_writer_zones, in_zone
from l4lite.records import Accounting

T = TypeVar("T")

Place = Callable[[dict[str, FileSpan], Accounting], None]


def settle_clocks(ctx: Any, spans: Mapping[str, FileSpan], place: Place, accounting: Accounting | None,
                  stated: Mapping[str, float] | None = None) -> None:
    """Set ``ctx.clock_steps`` and, through ``place``, the rest of the job's time (``place(spans, warnings)``: the
    job's span from the stepped spans, the skew, the zones in ``ctx.node_shifts``; warnings to ``warnings``).
    ``ctx``: the ``context.JobContext``; ``spans``: each file's sampled span as written; ``stated``: error file rel
    -> the epoch seconds it states. See the module docstring for the order."""
    def attempt(steps: dict[str, list[float]]) -> Accounting:
        ctx.clock_steps, ctx.node_shifts, ctx.clock_skew = steps, {}, {}
        said = Accounting()
        place(stepped_spans(spans, ctx.node_of, steps) if steps else dict(spans), said)
        return said

    first = clock_steps(spans, ctx.node_of)
    said = attempt(first)
    if ctx.node_shifts:  # a node read in another zone: a step may show only in the job's time
        zones = dict(ctx.node_shifts)
        again = clock_steps(spans, ctx.node_of, zones)
        if again != first:
            said = attempt(again)
            if ctx.node_shifts != zones:  # the zones do not hold with the step: the first reading stands
                said = attempt(first)
    if stated:  # a node's clock ahead at the end, against the time its processes' error files state
        steps, zones = ctx.clock_steps, dict(ctx.node_shifts)
        more = stated_steps(stepped_spans(spans, ctx.node_of, steps) if steps else spans, stated, ctx.node_of,
                            zones, steps)
        if more:
            kept = said
            said = attempt({**steps, **more})
            for node, step in sorted(more.items()):
                said.warn(f"{node}: its clock reads {step[0] / 3600:g} h ahead at the end (its lines past the time "
                          "its error files state, and past its peers' end): read back by it")
            if ctx.node_shifts != zones:  # the zones do not hold with it: the reading without it stands
                said = kept
                attempt(steps)
    if accounting is not None:
        for message in said.warnings:
            accounting.warn(message)


def stepped_spans(spans: Mapping[str, FileSpan], node_of: Callable[[str], str | None],
                  steps: Mapping[str, list[float]]) -> dict[str, FileSpan]:
    """Each file's span with its node's ahead part read back (``steps.stepped``)."""
    return {rel: span_of(v.system, stepped(v.times, steps.get(node_of(rel) or "")), v.heads, v.lines,
                         v.first_at)
            for rel, v in spans.items()}


def in_job_time(items: Iterator[T], ctx: Any, node: str | None) -> Iterator[T]:
    """One file's records and runs in the job's time: a file of one node (``node``) by its clock's step back
    (``steps``) and then its zone (``zones``); a file no path places (several nodes' lines) line by line by its
    writer's. Both readers, ``ingest.reader`` (a whole file) and ``live.reader`` (lines as they come), call this."""
    # a clock with no step and no zone to read back hands its items on as they are, through no generator of its
    # own (a file read record by record passes every line through each)
    if node is not None:
        step, seconds = ctx.clock_steps.get(node), ctx.node_shifts.get(node, 0.0)
        if step is not None:
            items = in_step(items, step)
        return in_zone(items, seconds) if seconds else items
    if not ctx.node_shifts and not ctx.clock_steps:
        return items
    return in_writer_zones(items, ctx.node_shifts, ctx.clock_steps, getattr(ctx, "writer_spans", None))
