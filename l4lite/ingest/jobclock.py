"""A job's clock facts (a node's clock stepped back, a node's time zone) worked out together once per job, and
applied to a file's records and runs by one function that the batch reader and the live reader both call.

The two facts depend on each other. A step is seen against the peers' span: a node's ahead part lies past every
peer's last time. A node that logs five hours behind its peer (naive local time) never lies past it as written,
so a step looked for before ``zones`` read the node in the job's time is missed, and the ahead hour then moves the
job's span, its skew anchor and its phases. Zones, in turn, are read from spans that the ahead part stretches. So
``settle_clocks`` looks for steps on the times as written, places the zones, and, when a zone moved a node, looks
again for steps on the times read in each node's zone; a step found only there is kept when the zones worked out
again with it are the ones it was found with (else the first reading stands). Last, a process's log whose clock is
whole quarter hours ahead of its node's (``fileclock``: against the time its error file states) is read back, and
the span, skew and zones are worked out again with it; when the zones change with it, the reading without it stands.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

from l4lite.ingest.fileclock import file_offsets
from l4lite.ingest.spans import FileSpan, span_of
from l4lite.ingest.steps import clock_steps, in_step, stepped
from l4lite.ingest.zones import in_writer_zones, in_zone
from l4lite.records import Accounting

T = TypeVar("T")

Place = Callable[[dict[str, FileSpan], Accounting], None]


def settle_clocks(ctx: Any, spans: Mapping[str, FileSpan], place: Place, accounting: Accounting | None,
                  stated: Mapping[str, float] | None = None) -> None:
    """Set ``ctx.clock_steps``, ``ctx.file_shifts`` and, through ``place``, the rest of the job's time
    (``place(spans, warnings)``: the job's span from the stepped spans, the skew, the zones in ``ctx.node_shifts``;
    warnings to ``warnings``). ``ctx``: the ``context.JobContext``; ``spans``: each file's sampled span as written;
    ``stated``: error file rel -> the epoch seconds it states. See the module docstring for the order."""
    def attempt(steps: dict[str, list[float]], files: dict[str, float] | None = None) -> Accounting:
        ctx.clock_steps, ctx.node_shifts, ctx.clock_skew, ctx.file_shifts = steps, {}, {}, files or {}
        said = Accounting()
        read = moved_spans(spans, files) if files else spans
        place(stepped_spans(read, ctx.node_of, steps) if steps else dict(read), said)
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
    if stated:  # a process's log ahead of its node's clock, against the time its error file states
        steps, zones = ctx.clock_steps, dict(ctx.node_shifts)
        files = file_offsets(stepped_spans(spans, ctx.node_of, steps) if steps else spans, stated, ctx.node_of,
                             zones, steps)
        if files:
            kept = said
            said = attempt(steps, files)
            for rel, seconds in sorted(files.items()):
                said.warn(f"{rel}: its clock reads {seconds / 3600:g} h ahead of its node's (the time its error "
                          "file states, and its peers' span): read back by it")
            if ctx.node_shifts != zones:  # the zones do not hold with it: the reading without it stands
                said = kept
                attempt(steps)
    if accounting is not None:
        for message in said.warnings:
            accounting.warn(message)


def stepped_spans(spans: Mapping[str, FileSpan], node_of: Callable[[str], str | None],
                  steps: Mapping[str, list[float]]) -> dict[str, FileSpan]:
    """Each file's span with its node's ahead part read back (``steps.stepped``)."""
    return {rel: span_of(v.system, stepped(v.times, steps.get(node_of(rel) or "")), v.heads) for rel, v in spans.items()}


def moved_spans(spans: Mapping[str, FileSpan], files: Mapping[str, float]) -> dict[str, FileSpan]:
    """Each file's span with the files of a clock ahead of their node's read back (``fileclock``)."""
    return {rel: span_of(v.system, [t - files[rel] for t in v.times], v.heads) if rel in files else v
            for rel, v in spans.items()}


def in_job_time(items: Iterator[T], ctx: Any, node: str | None, rel: str | None = None) -> Iterator[T]:
    """One file's records and runs in the job's time: a file of one node (``node``) by its own clock's offset from
    its node's (``fileclock``, ``rel`` the file), its node's clock's step back (``steps``) and then its zone
    (``zones``); a file no path places (several nodes' lines) line by line by its writer's. Both readers,
    ``ingest.reader`` (a whole file) and ``live.reader`` (lines as they come), call this."""
    if node is not None:
        own = ctx.file_shifts.get(rel, 0.0) if rel is not None else 0.0
        return in_zone(in_step(items, ctx.clock_steps.get(node)), ctx.node_shifts.get(node, 0.0) + own)
    return in_writer_zones(items, ctx.node_shifts, ctx.clock_steps)
