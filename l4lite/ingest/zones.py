"""A node whose whole log is in another time zone: it logs naive local time (no offset written) while the job's
other nodes log UTC, so every one of its lines reads hours after (or before) the job's, and its last line after
everyone else's moves the phase, the suspect and the failure time.

Measured skew (``ingest.skew``) rests on lines every node writes at one moment, and most jobs have few of those
after start-up; ``ingest.jumps`` sees a clock change inside one file only. A node's clock is read as offset by a
zone when its whole time span is the other nodes' moved by one whole number of quarter hours (what zones differ
by; at most 14 hours, ``jumps.quarters``), and more than one piece of evidence says the same offset within ``TOLERANCE``:

- its first line against the other nodes' first lines (the job starts on every node within seconds);
- its last line against theirs (a failure ends every node's log within seconds);
- the skew measured over the events every node logs at one moment (``job.clock_skew``), when there is one;
- its files' write times, when the other nodes' files were last written within ``TOLERANCE`` of their last lines;
- the epoch seconds its torchelastic error files state (zone-free) against its last line, within ``STATED``
  (the agent logs its summary a little after the error file is written).

Any piece that was measured and says otherwise vetoes it: a node that joined late (a restart) ends with the
others, one that ran on starts with them, and neither is moved. The job's time is its majority's; when the nodes
split evenly (two nodes), only a node that zone-free evidence (write times, epoch seconds) places is moved. Its times are then read in the job's time
(``in_zone``); the times as written stay in the lines' text, and a warning names the node, the offset and the
evidence. An even split nothing places moves no time, but its offset is stated as the job's clock skew
(``split_skew``, when none was measured), so that phases and spans compare the nodes on one clock.

When comparing the nodes decides nothing (an even split with no zone-free evidence for one side, two nodes each
in a zone of its own, a peer whose folder names no node), ``JobClocks.anchored`` places each node against the
zone-free time its own error files state, confirmed by another clock of the job, a file no node is known for
included (see ``JobClocks``).

A zone belongs to a node, not to a file: a stream of several nodes' lines (``srun --label``, ``cat``) has each
line read by its own writer's zone (``in_writer_zones``). An error file no node is known for (every file renamed
into one folder) still states the job's time at the failure, whoever wrote it, and so can place an even split.
"""

from __future__ import annotations

import gzip
import os
import statistics
import zlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from l4lite.ingest.errorfile import stated_time
from l4lite.ingest.hostprefix import labelled_host
from l4lite.ingest.jumps import APART_LIMIT, quarters
from l4lite.ingest.spans import STATED, FileSpan, job_span
from l4lite.ingest.writerclocks import WriterSpan, writer_spans
from l4lite.records import Accounting, Record

TOLERANCE = 60.0  # seconds: how far one piece of evidence may lie from the whole quarter hours it gives
MAX_ERROR_FILE = 1 << 20  # bytes of a gzip'd error file inflated to read the time it states
ZONE_FREE = ("its files' write times", "its error files' epoch seconds", "an unplaced error file's epoch seconds")

T = TypeVar("T")


@dataclass
class NodeClock:
    """What one node's files say of its clock: its first and last sampled times, and the last sampled time and
    write time of each of its files (``None``: unknown)."""

    first: float
    last: float
    ends: list[tuple[float, float | None]]  # (last sampled time, write time) per file
    stated: list[float] = field(default_factory=list)  # epoch seconds its error files state


@dataclass
class ZoneShift:
    """A node read in the job's time: ``seconds`` to subtract from its times, and the evidence that agreed."""

    node: str
    seconds: float
    evidence: list[str]
    against: str = "the job's other nodes"  # what the offset is measured from

    def warning(self) -> str:
        hours = f"{self.seconds / 3600:+.2f}".rstrip("0").rstrip(".")
        return (f"node {self.node}: its clock reads {hours} h from {self.against} (another time zone, no "
                f"offset written; {', '.join(self.evidence)} agree); its times are read {abs(self.seconds):.0f} s "
                f"{'back' if self.seconds > 0 else 'forward'}")


def _written_lag(clock: NodeClock) -> float | None:
    """How far a node's files' last lines lie after their write times (the median), or None when unknown."""
    lags = [last - w for last, w in clock.ends if w is not None]
    return statistics.median(lags) if lags else None


def _offset(mine: NodeClock, others: list[NodeClock]) -> tuple[float, list[NodeClock]]:
    """The whole quarter hours a node's span lies from most other nodes' (its first and its last line both), and
    those nodes; (0.0, []) when no such offset is shared by more than half of them."""
    by: dict[float, list[NodeClock]] = {}
    for c in others:
        d = quarters(mine.first - c.first, TOLERANCE, APART_LIMIT)
        if d and quarters(mine.last - c.last, TOLERANCE, APART_LIMIT) == d:
            by.setdefault(d, []).append(c)
    best = max(by.items(), key=lambda kv: len(kv[1]), default=(0.0, []))
    return best if len(best[1]) > len(others) / 2 else (0.0, [])


def zone_shifts(clocks: Mapping[str, NodeClock], skew: Mapping[str, float],
                candidates: list[ZoneShift] | None = None) -> list[ZoneShift]:
    """The nodes to read in the job's time (see the module docstring). ``clocks``: node -> its ``NodeClock``;
    ``skew``: node -> its measured offset against the skew's reference (the reference 0.0); ``candidates``:
    ``zone_candidates`` when already worked out."""
    out = zone_candidates(clocks, skew) if candidates is None else candidates
    if len(out) < len(clocks) / 2:  # the job's time is its majority's
        return out
    placed = [z for z in out if set(z.evidence) & set(ZONE_FREE)]  # an even split: zone-free evidence decides
    return placed if len(placed) <= len(clocks) / 2 else []


def zone_candidates(clocks: Mapping[str, NodeClock], skew: Mapping[str, float]) -> list[ZoneShift]:
    """Every node whose span is the others' moved by whole quarter hours, all evidence agreeing (before the
    majority decides which clock is the job's)."""
    if len(clocks) < 2:
        return []
    out = []
    for node, mine in sorted(clocks.items()):
        others = [c for n, c in clocks.items() if n != node]
        seconds, away = _offset(mine, others)
        if not seconds:
            continue
        by_start = mine.first - statistics.median(c.first for c in away)
        by_end = mine.last - statistics.median(c.last for c in away)
        said = {"its first line": by_start, "its last line": by_end}
        if node in skew and len(skew) >= 2:
            said["simultaneous events"] = skew[node] - statistics.median(v for n, v in skew.items() if n != node)
        lag, lags = _written_lag(mine), [_written_lag(c) for c in others]
        if lag is not None and lags and all(x is not None and abs(x) <= TOLERANCE for x in lags):
            said["its files' write times"] = lag
        if mine.stated:
            said[ZONE_FREE[1]] = mine.last - max(mine.stated)
        agree = [what for what, offset in said.items()
                 if abs(offset - seconds) <= (STATED if what == ZONE_FREE[1] else TOLERANCE)]
        if len(agree) >= 2 and len(agree) == len(said):
            out.append(ZoneShift(node, seconds, agree))
    return out


def loosely_stated(candidates: list[ZoneShift], clocks: Mapping[str, NodeClock],
                   loose: Sequence[float]) -> list[ZoneShift]:
    """``candidates`` with the evidence of error files no path places (every file in one folder, named by a
    number): an epoch time they state is the job's time at the failure whoever wrote it, so a node whose last line
    lies its candidate offset from one of them (within ``STATED``) is that far off the job's time. Of an even
    split only the node off the job's clock is so placed; the other lies the offset the wrong way."""
    for z in candidates:
        if not set(z.evidence) & set(ZONE_FREE) and \
                any(abs(clocks[z.node].last - t - z.seconds) <= STATED for t in loose):
            z.evidence.append(ZONE_FREE[2])
    return candidates


def split_skew(clocks: Mapping[str, NodeClock], candidates: Sequence[ZoneShift]) -> dict[str, Any] | None:
    """The clock skew of an even split no evidence decides (two nodes, each a zone off the other): which clock is
    the job's is unknown, so no time is moved, but the offset is known and stated as a measured skew, so that
    what compares two nodes' times (phases, the job's span) puts them on one clock (``scan.clocks``)."""
    if not candidates or len(candidates) < len(clocks) / 2:
        return None
    reference = min(clocks)
    own = next((z.seconds for z in candidates if z.node == reference), None)  # its group's offset from the other
    others = {z.node: z for z in candidates if z.node != reference and z.seconds != own}
    if not others or len(others) + 1 < len(clocks) / 2:
        return None
    worst = max(others.values(), key=lambda z: abs(z.seconds))
    nodes = {n: {"seconds": z.seconds, "lines": 0, "strong": True, "spread": 0.0} for n, z in sorted(others.items())}
    return {"reference": reference, "threshold_seconds": TOLERANCE, "largest_seconds": abs(worst.seconds),
            "exceeds": True, "corrected": False, "nodes": nodes,
            "note": f"clocks disagree: {worst.node} is {worst.seconds:+.0f} s from {reference} (another time zone: "
                    f"{', '.join(worst.evidence)} agree; which clock is right is unknown, times are shown as logged)"}


@dataclass
class JobClocks:
    """Every clock of a job, gathered once from all its files, whatever their layout: each node's
    (``NodeClock``), each file's that no path or line places (a node folder renamed, a node's output named by
    its task: its writer is unknown, but its clock is still one of the job's), and the epoch seconds that error
    files no node is known for state (``loose``: the job's time at the failure, whoever wrote them).

    ``zone_shifts`` compares the nodes with each other; when that decides nothing (an even split, a peer whose
    folder names no host, two nodes each in a zone of its own), ``anchored`` places each node against the
    zone-free time its own error files state, and moves it only when another clock of the job confirms the
    offset: the whole quarter hours between the two clocks, at their first and at their last lines, are the
    difference of their offsets from the zone-free time. A job whose clocks all agree is left as logged, even
    when all of them read local time."""

    nodes: dict[str, NodeClock]
    unplaced: dict[str, NodeClock] = field(default_factory=dict)  # rel -> a file no node is known for
    loose: list[float] = field(default_factory=list)

    @staticmethod
    def whole(offset: float) -> float | None:
        """An offset between two clocks' lines as whole quarter hours (0.0 within ``TOLERANCE``), or None."""
        return 0.0 if abs(offset) <= TOLERANCE else (quarters(offset, TOLERANCE, APART_LIMIT) or None)

    def zone_free(self, clock: NodeClock, own_only: bool = False) -> float | None:
        """How far a clock's last line reads from the zone-free time at the failure (its own error files', else
        any the job states): whole quarter hours, 0.0 within ``STATED``, None when unknown or no whole quarter."""
        stated = clock.stated or ([] if own_only else [*self.loose, *(t for c in self.nodes.values() for t in c.stated)])
        if not stated:
            return None
        gap = clock.last - max(stated)
        return 0.0 if abs(gap) <= STATED else (quarters(gap, STATED) or None)

    def anchored(self) -> list[ZoneShift]:
        """The nodes read in the zone-free time (see the class docstring). A node's own error files give its
        offset at its end; every other clock whose offset is known must lie from it by the difference, at its last
        line, and one must lie whole quarter hours from it. A clock that springs forward while the job runs
        (daylight saving) has its first lines a whole quarter hour nearer its peers' than its last: its span is
        longer by the jump, it is read at the offset it started with, and ``jumps`` reads its later lines back."""
        others = {**self.nodes, **{f"file {rel}": c for rel, c in self.unplaced.items()}}
        out = []
        for node, mine in sorted(self.nodes.items()):
            own = self.zone_free(mine, own_only=True)
            if own is None:
                continue
            starts, apart, agree = set(), False, True
            for name, c in others.items():
                first, last = self.whole(mine.first - c.first), self.whole(mine.last - c.last)
                theirs = self.zone_free(c)
                if name == node or first is None or last is None or theirs is None:
                    continue  # not comparable: a late joiner, a restart, a clock nothing places
                agree = agree and own - theirs == last
                starts.add(own - max(last - first, 0.0))  # a jump forward (its span the longer) is its own
                apart = apart or bool(first or last)
            if agree and apart and len(starts) == 1 and (start := starts.pop()):
                out.append(ZoneShift(node, start, [ZONE_FREE[1], "another clock of the job"],
                                     "the time its error files state"))
        return out

    def shifts(self, skew: Mapping[str, float]) -> tuple[list[ZoneShift], list[ZoneShift]]:
        """The nodes to read in the job's time, and the candidates ``zone_shifts`` weighed (``split_skew``)."""
        candidates = loosely_stated(zone_candidates(self.nodes, skew), self.nodes, self.loose)
        return (zone_shifts(self.nodes, skew, candidates) or self.anchored()), candidates


def _stated(doc: Any) -> float | None:
    """The epoch seconds an error file states (its last field), from its tail; None if it states none. A gzip'd
    error file is the same file: its tail is read inflated (an error file is small, ``MAX_ERROR_FILE``)."""
    try:
        if getattr(doc, "compressed", False):
            with gzip.open(doc.path, "rb") as fh:
                tail = fh.read(MAX_ERROR_FILE)[-256:]
        else:
            with open(doc.path, "rb") as fh:
                fh.seek(max(0, os.fstat(fh.fileno()).st_size - 256))
                tail = fh.read()
        return stated_time(tail.decode("utf-8", "replace").rstrip())
    except (OSError, EOFError, zlib.error, TypeError, AttributeError):
        return None


def _error_file(rel: str) -> bool:
    """A torchelastic error file by its name (``error.json``, gzip'd or not)."""
    return rel.removesuffix(".gz").endswith(".json")


def error_times(files: Sequence[Any], docs: Sequence[Any]) -> dict[str, float]:
    """rel -> the epoch seconds each torchelastic error file of the job states (zone-free), read once per job."""
    return {doc.rel: t for doc in (*docs, *(f for f in files if _error_file(f.rel))) if (t := _stated(doc)) is not None}


def read_zones(ctx: Any, spans: Mapping[str, FileSpan], files: Sequence[Any], docs: Sequence[Any],
               accounting: Accounting | None, stated: Mapping[str, float] | None = None) -> bool:
    """Find the nodes whose whole log is in another time zone (``zone_shifts``), note them in
    ``ctx.node_shifts`` (``ctx``: the ``context.JobContext``) with a warning each, and move the job's span to
    the job's time; whether any was found. ``docs``: the job's JSON documents (error files)."""
    mtimes = {f.rel: getattr(f, "mtime", None) for f in files}
    clocks: dict[str, NodeClock] = {}
    unplaced: dict[str, NodeClock] = {}  # a file of one writer no path places: a clock of the job still
    for rel, span in spans.items():
        node = ctx.node_of(rel)
        if span.system:
            continue
        if node is None:
            if rel not in ctx.mixed and rel not in ctx.task_hosts:
                unplaced[rel] = NodeClock(span.first, span.last, [(span.last, mtimes.get(rel))])
            continue
        c = clocks.setdefault(node, NodeClock(span.first, span.last, []))
        c.first, c.last = min(c.first, span.first), max(c.last, span.last)
        c.ends.append((span.last, mtimes.get(rel)))
    ctx.writer_spans = {}
    merged = _merged_writers(ctx, spans)  # the writers of a merged file no own file gives a clock for
    for host, ws in (w for spans_of in merged.values() for w in spans_of.items()):
        if host not in clocks:  # a node with files of its own keeps their clock
            c = clocks.setdefault(host, NodeClock(ws.first, ws.last, []))
            c.first, c.last = min(c.first, ws.first), max(c.last, ws.last)
            c.stated += ws.stated
    loose: list[float] = []  # what error files no node is known for state: the job's time, whoever wrote them
    for rel, t in (error_times(files, docs) if stated is None else stated).items():  # torchelastic's error files
        node = ctx.node_of(rel)
        if node in clocks or node is None:
            (clocks[node].stated if node is not None else loose).append(t)
    skew = ctx.clock_skew.get("nodes", {})
    offsets = {n: float(v["seconds"]) for n, v in skew.items()} | ({ctx.clock_skew["reference"]: 0.0} if skew else {})
    shifts, candidates = JobClocks(clocks, unplaced, loose).shifts(offsets)
    if not shifts and not skew and (split := split_skew(clocks, candidates)) is not None:
        ctx.clock_skew = split
    written = {h: (w.first, w.last) for spans_of in merged.values() for h, w in spans_of.items()}
    for z in shifts:
        ctx.node_shifts[z.node] = z.seconds
        if z.node in written and not any(z.node == ctx.node_of(r) for r in spans):
            ctx.writer_spans[z.node] = written[z.node]
        if accounting is not None:
            accounting.warn(z.warning())
    if shifts and ctx.clock_skew:  # the skew stays as measured on the times as logged
        ctx.clock_skew["corrected"] = True
        ctx.clock_skew["note"] += "; " + ", ".join(z.node for z in shifts) + " read in the job's time (time zone)"
    if shifts:
        ctx.start, ctx.end = job_span([_in_job_time(s, merged.get(r), ctx.node_shifts)
                                       if r in merged else s._replace(first=s.first - d, last=s.last - d)
                                       if (d := ctx.node_shifts.get(ctx.node_of(r) or "", 0.0)) else s
                                       for r, s in spans.items()])
    return bool(shifts)


def _merged_writers(ctx: Any, spans: Mapping[str, FileSpan]) -> dict[str, dict[str, WriterSpan]]:
    """rel -> host -> its writer's span, for each merged file no path places whose writers' labels name hosts
    (``writerclocks``): a zone belongs to the writer, so each is a clock of the job of its own."""
    out = {}
    for rel, writers in getattr(ctx, "writer_lines", {}).items():
        span = spans.get(rel)
        if span is None or span.system or ctx.node_of(rel) is not None:
            continue
        hosts = ctx.task_hosts.get(rel, {})  # a label's host as its lines say; a pdsh prefix names its own
        named = {k: h for k in writers if (h := hosts.get(k) or labelled_host(k)) is not None}
        if len(got := writer_spans(writers, named.get, ctx.year, ctx.near_year)) > 1:
            out[rel] = got
    return out


def _in_job_time(span: FileSpan, writers: Mapping[str, WriterSpan] | None, shifts: Mapping[str, float]) -> FileSpan:
    """A merged file's span with each writer's part read in the job's time (its writers' spans moved)."""
    if not writers:
        return span
    firsts = [w.first - shifts.get(h, 0.0) for h, w in writers.items()]
    lasts = [w.last - shifts.get(h, 0.0) for h, w in writers.items()]
    return span._replace(first=min(firsts), last=max(lasts))


def in_zone(items: Iterator[T], seconds: float) -> Iterator[T]:
    """``items`` (one file's records and runs) with their times read ``seconds`` back."""
    if not seconds:
        yield from items
        return
    for item in items:
        if isinstance(item, Record):
            if item.time is not None:
                item.time -= seconds
        elif getattr(item, "times", None):
            item.retime(np.asarray(item.times, dtype=np.float64) - seconds)  # type: ignore[attr-defined]
        yield item


def in_writer_zones(items: Iterator[T], shifts: Mapping[str, float],
                    steps: Mapping[str, Sequence[float]] | None = None,
                    written: Mapping[str, tuple[float, float]] | None = None) -> Iterator[T]:
    """``items`` of a file no path places (one stream of several nodes' lines: ``srun --label``, ``cat``) with
    each line's time read back by its own writer's zone: the zone belongs to the node, not to the file, so a node
    read in the job's time in its own files is read so in a merged stream too. ``steps``: a writer whose clock
    stepped back (``steps.clock_steps``, times as written) has its ahead part read back first, as in its own files.
    ``written``: a writer known only in a merged file, by its first and last times as written: a line of it more
    than half its offset outside them is nearer the job's clock than its own (a component stamping UTC, an epoch)
    and is left as it reads."""
    if not shifts and not steps:
        yield from items
        return
    steps, written = steps or {}, written or {}

    def back(node: str | None, t: float) -> float:  # seconds the writer's time reads ahead of the job's
        step, seconds = steps.get(node or ""), shifts.get(node or "", 0.0)
        if (own := written.get(node or "")) is not None and not own[0] - abs(seconds) / 2 <= t <= own[1] + abs(seconds) / 2:
            seconds = 0.0
        return seconds + (step[0] if step is not None and step[1] < t <= step[2] else 0.0)

    for item in items:
        if isinstance(item, Record):
            if item.time is not None and (d := back(item.node, item.time)):
                item.time -= d
        elif getattr(item, "times", None):
            times = np.asarray(item.times, dtype=np.float64)
            nodes = item.line_names()  # type: ignore[attr-defined]
            if nodes is None:
                node = getattr(item, "node", None)
                gone = np.array([back(node, t) for t in times]) if node in steps or node in written \
                    else shifts.get(node or "", 0.0)
            else:
                gone = np.array([back(n, t) for (n, _, _), t in zip(nodes, times, strict=True)], dtype=np.float64)
            if np.any(gone):
                item.retime(times - gone)  # type: ignore[attr-defined]
        yield item
