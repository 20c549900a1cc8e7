"""torchelastic agents told apart, in one file or in files side by side: each node runs one agent, so two agents
that ran at once are two nodes' writers, whatever host the other lines name.

An agent is a glog pid that names its workers (``Sending process N closing signal``, ``failed ... (pid: N)``,
``pids.child_pid``), or whose lines come from the launcher's own modules (``torch/distributed/run.py``, the elastic
agent and its process context): a file's sampled ends may show its banner and not the lines naming its workers.
In one file, a node whose agent was restarted shows a second agent below the first and later in time; a ``cat``
of two nodes' consoles (or srun's unlabelled stream of two tasks) shows the second agent below the first but
logging before the first one's last line, since both ran at once: the file is mixed, and the one host its lines
name (the surviving node's failure summary) is not the writer of the other agent's lines (a preempted node's
``Received 15 death signal``, which names no host). Files apart have no line order: their agents ran at once when
their times overlap, each console reaching over its own span.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import NamedTuple

# glog's header: ``W1206 08:02:44.466000 30189 ...``: month, day, time of day and the writer's pid
_GLOG = re.compile(r"[IWEF](\d\d)(\d\d) (\d\d):(\d\d):(\d\d(?:\.\d+)?) +(\d+) ")
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

    def before(self, other: Span) -> bool:
        """Whether all of this pid's lines come above and no later than all of ``other``'s."""
        return self.last_line < other.first_line and self.last_time <= other.first_time


@dataclass
class GlogSpans:
    """The span of each glog pid of a file, fed a line at a time."""

    spans: dict[str, Span] = field(default_factory=dict)
    lines: int = 0
    launchers: set[str] = field(default_factory=set)  # pids whose lines come from the launcher's modules

    def feed(self, raw: str) -> None:
        self.lines += 1
        if raw[:1] not in "IWEF" or not raw[1:2].isdigit():
            return
        m = _GLOG.match(raw)
        if m is None:
            return
        if m[6] not in self.launchers and _LAUNCHER.match(raw, m.end()) and len(self.launchers) < MAX_PIDS:
            self.launchers.add(m[6])
        t = ((int(m[1]) * 31 + int(m[2])) * 24 + int(m[3])) * 3600 + int(m[4]) * 60 + float(m[5])
        s = self.spans.get(m[6])
        if s is None:
            if len(self.spans) < MAX_PIDS:
                self.spans[m[6]] = Span(self.lines, self.lines, t, t)
            return
        s.last_line = self.lines
        s.first_time, s.last_time = min(s.first_time, t), max(s.last_time, t)


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

