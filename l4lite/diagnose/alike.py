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
from l4lite.diagnose.timeline import finding_key
from l4lite.diagnose.traits import quoted_elsewhere, said_key
from l4lite.ingest.relay import relayed_copies
from l4lite.records import Record
from l4lite.rules.components import component, is_cascade
from l4lite.scan.scanner import JobScan, is_host

CLOSING = 60.0  # seconds before a node's last line in which its closing lines start
ALIKE_SECONDS = 120.0  # as the localiser's: copies of one error this close in time were one event
MIN_NODES = 3  # two nodes printing the same line is too little to call a fault job-wide
MAX_RECORDS = 6
BURST_SECONDS = 5.0  # the lines shown: those this close to the last of them
SCORE = 0.25  # as the components finding: below every signature
# parts each node has its own of: their faults strike one node, and its peers then lose it (cascades)
NODE_LOCAL = frozenset({"network", "gpu_hardware", "host"})
# What every node stopped at alike when neither its words nor the verdict's own reading name a part: the fault is
# the job's, and of the job's own parts the code, the data and the numbers each have words of their own (a
# traceback's exception, a corrupt record, a NaN) that the lexicon reads; what is left unnamed is the settings
# every rank was given (a checkpoint of another shape, a storage limit of the pod, a launch argument).
UNSAID = "user_config"


class SharedWords(NamedTuple):
    """The suspect's closing lines every node printed alike, and the nodes that printed them."""

    finding: Finding
    nodes: list[str]


def _when(r: Record) -> float | None:
    t = own_time(r) or r.time
    return t if t is not None and math.isfinite(t) else None


def _went_on(r: Record, cascades: dict[tuple[str, int | None], int]) -> bool:
    """Whether the rank that printed ``r`` printed a cascade further down its file."""
    last = cascades.get((r.file, r.rank))
    return last is not None and last > r.line


def ranked_hosts(scan: JobScan) -> set[str]:
    """The machines the job's ranks ran on (every machine the records name when no rank is tied to one)."""
    nodes = {n for n in scan.rank_nodes.values() if n in scan.node_last} or set(scan.node_last)
    return {n for n in nodes if is_host(n)}


def said_alike(scan: JobScan, findings: Sequence[Finding], node: str | None,
               category: str = "unknown") -> SharedWords | None:
    """The suspect ``node``'s closing lines when every node printed them alike; None otherwise (see the module).
    The finding's category is what the words of all the alike lines name together (the lexicon, then the learned
    model): the setting, dataset or library every rank met; the verdict's ``category`` (one rule's reading of one
    line) only when their words name none, and ``UNSAID`` when that is ``unknown`` too (the verdict was inferred from
    a stall or a peer's timeout, which read no line of the fault). A part each node has its own of (its links, its GPUs, its host)
    does not fail on every node alike at once: when the words name one, what the nodes shared was their
    configuration of it (an interface every rank was told to use, a node count every agent was given)."""
    if node is None:
        return None
    nodes = ranked_hosts(scan)
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
    named = component("\n".join(r.text for r in recs), learned=True)
    category = named.category if named is not None else (category if category != "unknown" else UNSAID)
    if category in NODE_LOCAL:  # what every node met alike at once is a setting they share, not their parts
        category = "user_config"
    finding = Finding("components", category, "symptom", SCORE,
                      "Every node printed these lines last, alike: a fault of the whole job, not of one node.",
                      node=node, rank=first.rank, gpu=first.gpu, time=first.time, severity="warning",
                      records=recs, count=len(recs),
                      data={"own_lines": True, "said_alike": True, "distinct_records": True})
    return SharedWords(finding, sorted(nodes))


def failed_alike(scan: JobScan, findings: list[Finding], roles: dict[int, str], primary: Finding) -> list[str]:
    """Every node of the job (with ranks, at least two), when each logged the primary's signed root error at
    about the same time; else []. The same truncated checkpoint, dataset file, configuration or code bug
    fails every rank alike, while a node fault leaves the other nodes with cascades, not with its own error.
    A line's inherited time stands in for one it lacks: the copies of one error are often untimed. A generic
    signature (an exception no rule knows) counts only where every node printed the same line (its template):
    that it raised something is not yet that it raised the same thing."""
    if primary.detector != "rules" or primary.rule is None or primary.category == "unknown" or \
            primary.data.get("inferred"):
        return []
    said = said_key(primary) if primary.data.get("fallback") else None
    if primary.data.get("fallback") and said is None:
        return []
    nodes = ranked_hosts(scan)
    if len(nodes) < 2:
        return []

    def when(f: Finding) -> float | None:
        t = finding_key(f)[0]
        return t if math.isfinite(t) else f.time

    t0 = when(primary)
    alike = {f.node for f in findings if roles[id(f)] == "root" and f.rule == primary.rule
             and (said is None or said_key(f) == said) and not relayed_copies(f.records)
             and not quoted_elsewhere(scan, f)
             and (t0 is None or (t := when(f)) is None or abs(t - t0) <= ALIKE_SECONDS)}
    return sorted(nodes) if nodes <= alike else []
