"""A fault every node met alike: the suspect node's last words are every node's last words.

A node fault leaves one node saying something of its own (an Xid, a CUDA error, a lost link) while its peers
print cascades: watchdog timeouts, broken pipes, the agent's SIGTERM. A fault of the whole job (a setting every
rank was given, a dataset every rank reads, a library every rank loads) makes a rank of every node print the same
lines and stop there. Then whichever node the localiser put first (the one whose other ranks printed no cascade,
the one whose progress stopped first) is an accident of timing: what it said, every node said.

``said_alike`` reads the lines the suspect node printed last (templates it first printed within ``CLOSING``
seconds of its last line, new to the job there, neither cascades nor teardown nor progress lines). The fault is
job-wide when there is at least one such template and each of them was printed by every node (three at least)
within ``ALIKE_SECONDS`` of the suspect's, by a rank that went on to no cascade of its own: a rank that printed
the same checkpoint notice as every other and then timed out waiting for the stuck one did not fail alike.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

from l4lite.detect.base import Finding
from l4lite.diagnose.evidence import own_time
from l4lite.diagnose.ownlines import TEARDOWN
from l4lite.records import Record
from l4lite.rules.components import component, is_cascade
from l4lite.scan.scanner import UNKNOWN_NODE, JobScan

CLOSING = 60.0  # seconds before a node's last line in which its closing lines start
ALIKE_SECONDS = 120.0  # as the localiser's: copies of one error this close in time were one event
MIN_NODES = 3  # two nodes printing the same line is too little to call a fault job-wide
MAX_RECORDS = 6
BURST_SECONDS = 5.0  # the lines shown: those this close to the last of them
SCORE = 0.25  # as the components finding: below every signature


class SharedWords(NamedTuple):
    """The suspect's closing lines every node printed alike, and the nodes that printed them."""

    finding: Finding
    nodes: list[str]

    def in_own_words(self) -> Finding:
        """The finding, its category read from its lines when they name a component (lexicon, then the learned
        model): when the lines every node printed last stand in for a hang or a lost peer, which names no
        component, the words they share say what the job failed on (a NaN loss, a missing file)."""
        named = component("\n".join(r.text for r in self.finding.records), learned=True)
        if named is not None:
            self.finding.category = named.category
            self.finding.data["component"] = ", ".join(named.words)
        return self.finding


def _when(r: Record) -> float | None:
    t = own_time(r) or r.time
    return t if t is not None and math.isfinite(t) else None


def _went_on(r: Record, cascades: dict[tuple[str, int | None], int]) -> bool:
    """Whether the rank that printed ``r`` printed a cascade further down its file."""
    last = cascades.get((r.file, r.rank))
    return last is not None and last > r.line


def said_alike(scan: JobScan, findings: Sequence[Finding], node: str | None,
               category: str = "unknown") -> SharedWords | None:
    """The suspect ``node``'s closing lines when every node printed them alike; None otherwise (see the module).
    The finding takes the verdict's ``category``: lines every node printed alike say where the fault is, not
    what it is."""
    if node is None:
        return None
    nodes = {n for n in scan.rank_nodes.values() if n in scan.node_last} or set(scan.node_last)
    nodes = {n for n in nodes if n != UNKNOWN_NODE and not n.startswith("rank:")}
    if node not in nodes or len(nodes) < MIN_NODES:
        return None
    end = scan.node_last[node][0]
    if end is None:
        return None
    metric_lines = {(p.file, p.line) for p in scan.metrics}
    cascades: dict[tuple[str, int | None], int] = {}
    for f in findings:
        for r in f.records:
            if is_cascade(r.text) and not TEARDOWN.search(r.text[:4000]):
                key = (r.file, r.rank)
                cascades[key] = max(cascades.get(key, 0), r.line)

    def closing(r: Record) -> bool:
        return (r.file, r.line) not in metric_lines and r.source != "launcher" and \
            not is_cascade(r.text) and not TEARDOWN.search(r.text[:4000])

    shown: list[Record] = []
    failing: list[Record] = []
    for (tid, where), recs in scan.exemplars.items():
        if where != node or not recs:
            continue
        first = recs[0]
        t = _when(first)
        stat = scan.templates.get(tid)
        if t is None or t < end - CLOSING or stat is None or not closing(first):
            continue
        if stat.first_time is not None and stat.first_time < end - CLOSING - ALIKE_SECONDS:
            continue  # a line the job printed long before it failed is routine, not its last words
        for other in nodes:
            copies = scan.exemplars.get((tid, other)) or []
            if not any(((c := _when(r)) is None or abs(c - t) <= ALIKE_SECONDS) and not _went_on(r, cascades)
                       for r in copies):
                return None  # a node that did not print it, or printed it and went on to lose a peer
        shown.append(first)
        if not any(_went_on(r, cascades) for other in nodes for r in scan.exemplars.get((tid, other)) or []):
            failing.append(first)  # printed only by ranks that stopped there: no start-up line every rank printed
    if not shown:
        return None
    shown = failing or shown
    # the burst at the end is what the node said as it failed (the start-up lines of a short job close it too)
    last = max(_when(r) or end for r in shown)
    burst = [r for r in shown if (_when(r) or end) >= last - BURST_SECONDS]
    burst.sort(key=lambda r: (_when(r) or end, r.file, r.line))
    recs = sorted(burst[-MAX_RECORDS:], key=lambda r: (r.file, r.line))
    first = recs[0]
    finding = Finding("components", category, "symptom", SCORE,
                      "Every node printed these lines last, alike: a fault of the whole job, not of one node.",
                      node=node, rank=first.rank, gpu=first.gpu, time=first.time, severity="warning",
                      records=recs, count=len(recs),
                      data={"own_lines": True, "said_alike": True, "distinct_records": True})
    return SharedWords(finding, sorted(nodes))
