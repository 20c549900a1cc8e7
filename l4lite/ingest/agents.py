"""torchelastic agents told apart, in one file or in files side by side: each node runs one agent, so two agents
that ran at once are two nodes' writers, whatever host the other lines name.

An agent is a glog pid that names its workers (``Sending process N closing signal``, ``failed ... (pid: N)``,
``pids.child_pid``), or whose lines come from the launcher's own modules (``torch/distributed/run.py``, the elastic
agent and its process context): a file's sampled ends may show its banner and not the lines naming its workers.
In one file, a node whose agent was restarted shows a second agent below the first and later in time; a ``cat``
of two nodes' consoles (or srun's unlabelled stream of two tasks) shows the second agent below the first but
logging before the first one's last line, since both ran at once: the file is mixed, and the one host its lines
name (the surviving node's failure summary) is not the writer of the other agent's lines (a preempted node's
``Received 15 death signal``, which names no host). An agent's console goes on after its own last glog line with its
workers' lines (``[default0]:2026-12-06 07:33:27,868 ...``): the agent reaches as far in time as the dated lines
below it before the next agent's first line (``Span.reach``), so a second node's agent that started at the same
moment as the first (both launched by one ``srun``) and then is cat'ed below the first node's training lines
still ran beside it. Files apart have no line order: their agents ran at once when their times overlap, each
console reaching over its own span.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, NamedTuple

from l4lite.ingest.attribution import TORCHRUN_PREFIX

# glog's header: ``W1206 08:02:44.466000 30189 ...``: month, day, time of day and the writer's pid
_GLOG = re.compile(r"[IWEF](\d\d)(\d\d) (\d\d):(\d\d):(\d\d(?:\.\d+)?) +(\d+) ")
# a date and time of day in a line's head (a worker's logger under torchrun's tee prefix): month, day, time of day
_DATED = re.compile(r"\d{4}-(\d\d)-(\d\d)[ T](\d\d):(\d\d):(\d\d(?:[.,]\d+)?)")
_DATED_HEAD = 80  # characters of a line searched for its date
# the modules only torchelastic's launcher process runs: its main, its agent, the process context of its workers
_LAUNCHER = re.compile(r"torch/distributed/(?:run\.py|elastic/agent/|elastic/multiprocessing/api\.py)")
MAX_PIDS = 4096  # distinct glog pids followed per file (a worker's glog lines carry its own pid)


@dataclass
class Span:
    """Where a pid's glog lines sit in its file (line numbers) and in time (seconds of the year, from glog's
    month, day and time of day: enough to order lines of one job)."""

    first_line: int
    last_line: int
    first_time: float
    last_time: float
    reach: float = -1.0  # a launcher's: the latest time of the dated lines below it before the next launcher's

    def before(self, other: Span) -> bool:
        """Whether all of this pid's lines, and the lines below it that it reaches, come above and no later than
        all of ``other``'s."""
        return self.last_line < other.first_line and max(self.last_time, self.reach) <= other.first_time


@dataclass
class GlogSpans:
    """The span of each glog pid of a file, fed a line at a time."""

    spans: dict[str, Span] = field(default_factory=dict)
    lines: int = 0
    launchers: set[str] = field(default_factory=set)  # pids whose lines come from the launcher's modules
    current: Span | None = None  # the span of the launcher whose line came last: the lines below are its console's

    def feed(self, raw: str) -> None:
        self.lines += 1
        m = _GLOG.match(raw) if raw[:1] in "IWEF" and raw[1:2].isdigit() else None
        if m is None:
            if self.current is not None and (d := _DATED.search(raw, 0, _DATED_HEAD)) is not None:
                t = _seconds(d[1], d[2], d[3], d[4], d[5].replace(",", "."))
                self.current.reach = max(self.current.reach, t)
            return
        if m[6] not in self.launchers and _LAUNCHER.match(raw, m.end()) and len(self.launchers) < MAX_PIDS:
            self.launchers.add(m[6])
        t = _seconds(m[1], m[2], m[3], m[4], m[5])
        s = self.spans.get(m[6])
        if s is None:
            if len(self.spans) < MAX_PIDS:
                s = self.spans[m[6]] = Span(self.lines, self.lines, t, t)
        else:
            s.last_line = self.lines
            s.first_time, s.last_time = min(s.first_time, t), max(s.last_time, t)
        if m[6] in self.launchers:
            self.current = s
        elif self.current is not None:  # a worker's own glog line is its agent's console's too
            self.current.reach = max(self.current.reach, t)


def _seconds(month: str, day: str, hour: str, minute: str, second: str) -> float:
    """Seconds of the year from a month, day and time of day (enough to order the lines of one job)."""
    return ((int(month) * 31 + int(day)) * 24 + int(hour)) * 3600 + int(minute) * 60 + float(second)


def _glog(epochs: Iterable[float | None]) -> list[float]:
    """Epoch times on glog's scale (``GlogSpans``: seconds of the year from month, day and time of day)."""
    out = []
    for epoch in epochs:
        if epoch is not None:
            t = datetime.fromtimestamp(epoch, UTC)
            out.append(((t.month * 31 + t.day) * 24 + t.hour) * 3600 + t.minute * 60 + t.second + t.microsecond / 1e6)
    return out


def agents_at_once(spans: GlogSpans, children: Iterable[tuple[str, str]]) -> int:
    """How many agents of a file (pids that name their workers) ran at once with another: neither's lines all
    above and no later than the other's (0 when none did). Each is a node of its own."""
    agents = [spans.spans[a] for a in sorted({a for a, _ in children} | spans.launchers) if a in spans.spans]
    return sum(any(not a.before(b) and not b.before(a) for b in agents if b is not a) for a in agents)


def agent_starts(spans: GlogSpans, children: Iterable[tuple[str, str]]) -> list[str]:
    """The pids of the agents whose first line begins a node's block of a ``cat`` of several nodes' consoles: the
    first agent and those that ran at once with an agent above them (``agents_at_once``); none when no two ran at
    once. Lines below such a start are not told by what the lines above it said of their streams (a
    ``[default0]:`` prefix is every node's first local rank). Pids, not line numbers: a whole read splits lines at
    a carriage return, the reader does not."""
    agents = sorted(((a, spans.spans[a]) for a in {a for a, _ in children} | spans.launchers if a in spans.spans),
                    key=lambda pa: pa[1].first_line)
    starts = [pid for i, (pid, b) in enumerate(agents) if any(not a.before(b) for _, a in agents[:i])]
    return [agents[0][0], *starts] if starts else []


def glog_pid(raw: str) -> str | None:
    """The writer's pid of a glog line (``W1206 08:02:44.466000 30189 ...``), or None."""
    m = _GLOG.match(raw) if raw[:1] in "IWEF" and raw[1:2].isdigit() else None
    return m[6] if m else None


def in_agent_blocks(records: Iterable[Any], marks: list[tuple[int, str | None]]) -> Iterator[Any]:
    """Records of a ``cat`` of several nodes' consoles: a copy the agent wrote into its console (its workers' lines
    after torchrun's ``--tee`` prefix, ``[default0]:``) that nothing else placed (its lines, stream, rank or pid)
    takes the host the job ties to the pid of the agent whose block holds it. ``marks`` are (line, host) where
    each agent's block begins, filled by the reader as it reads (a record comes after the line it ends on was
    read). Only the tee copies: a block reaches to the next agent's first line, and what lies between two
    consoles (a node's kernel log, its ranks' own files) may be another node's, cat'ed in any order."""
    for r in records:
        if marks:
            block_place(r, marks)
        yield r


def block_place(r: Any, marks: list[tuple[int, str | None]]) -> None:
    """``in_agent_blocks`` of one record (``tail`` places its records as they come)."""
    if getattr(r, "node", "") is None and (t := TORCHRUN_PREFIX.match(r.text)) and t[1] == "default":
        i = bisect_right(marks, r.line, key=_first) - 1
        if i >= 0 and marks[i][1] is not None:
            r.node = marks[i][1]


def _first(mark: tuple[int, str | None]) -> int:
    return mark[0]


class FileAgents(NamedTuple):
    """What one file read whole shows of its agents: its glog spans, its ``(agent, worker)`` pairs, and its own
    first and last times (epoch seconds, None if unknown): an agent's console runs as long as the agent does, from
    its workers' first lines (copied to it) to the agent's last words."""

    spans: GlogSpans
    children: Iterable[tuple[str, str]]
    first: float | None = None
    last: float | None = None


def agents_overlapping(files: Iterable[FileAgents]) -> int:
    """How many agents of several files ran at once with an agent of other files: their times overlap, a file's
    one agent reaching over the file's own span (files apart have no line order to weigh; one pid in two files is
    one agent; two agents of one file are ``agents_at_once``'s to weigh, by their order in it). A folder of files
    whose agents overlap holds several nodes' logs."""
    times: dict[str, tuple[float, float]] = {}
    where: dict[str, set[int]] = {}
    for i, (spans, children, first, last) in enumerate(files):
        mine = [a for a in sorted({a for a, _ in children} | spans.launchers) if a in spans.spans]
        ends = (first, last) if len(mine) == 1 else (None, None)
        for a in mine:
            s = spans.spans[a]
            lo, hi = times.get(a, (s.first_time, s.last_time))
            times[a] = (min(lo, s.first_time, *_glog(ends[:1])), max(hi, s.last_time, *_glog(ends[1:])))
            where.setdefault(a, set()).add(i)
    return sum(any(b != a and where[a].isdisjoint(where[b]) and lo <= hi_a and lo_a <= hi
                   for b, (lo, hi) in times.items()) for a, (lo_a, hi_a) in times.items())

