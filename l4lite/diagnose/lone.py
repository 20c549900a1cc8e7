"""A job-wide reading of one process's error: is there anything that shows the other nodes share it?

A configuration every rank was given, a code bug every rank runs, a divergence of the one shared model: each
strikes every rank, and every rank then says so (``alike`` finds a fault that every node printed). When one
process on one node printed an error that was read as job-wide, and the other nodes printed nothing of it but
cascades (they lost their peer, their watchdog timed out, their agent tore them down), the job itself says that
the others met no such fault; they waited for the one that did. An engineer on call then looks at that node,
unless the reading rests on more than words that sound like configuration. ``one_node_reading`` keeps the node
when the job-wide reading was the lexicon's or the learned model's (a line no signature knows), or when the
verdict's final category, after the exception's own words and the suspect's own lines, is not a job-wide one
(a rule read a configuration, the traceback says a library's attribute is missing). A signature of a job-wide
fault whose category the verdict keeps stays job-wide even on one node: the thread that blames a docker
network or a world size often shows it on the one machine that printed it. The same error from a second process
or a second node shows the fault shared either way.

Signals of the training itself (a loss read from the progress lines, a NaN counter) stay job-wide: the numbers
are the shared model's, whichever rank logs them; unless the line they followed names a part of one node's own
(``told_on_its_own``: a CUDA error, a truncated record that one process alone met).
"""

from __future__ import annotations

from collections.abc import Sequence

from l4lite.detect.base import Finding
from l4lite.diagnose.traits import is_global
from l4lite.ingest.attribution import NCCL_HEADER
from l4lite.ingest.relay import relayed_copies
from l4lite.records import Record
from l4lite.rules.components import is_cascade
from l4lite.scan.scanner import UNKNOWN_NODE, JobScan, is_host
from l4lite.vocab import GLOBAL_CATEGORIES

# findings whose category is read from a line's words (a rule, the lexicon, a new line's words), not the numbers
READ_FROM_LINES = frozenset({"rules", "components", "filters"})


def process_of(r: Record) -> tuple[str, str] | None:
    """Who printed a line: its rank, else the pid of its NCCL header; None when the line tells neither."""
    if r.rank is not None:
        return "rank", str(r.rank)
    m = NCCL_HEADER.search(r.text[:200])
    return ("pid", m.group(2)) if m else None


def witnesses(findings: Sequence[Finding], category: str) -> list[Finding]:
    """The findings that say a line of ``category`` was printed, read from its words: not a cascade, a launcher's
    confirmation, a line training outlived, an advisory, a driver's relayed copy of a worker's line, nor warnings
    that only name a part (``mentions_only``)."""
    return [f for f in findings if f.detector in READ_FROM_LINES and f.category == category
            and f.role not in ("cascade", "confirmation") and not f.data.get("survived")
            and not f.data.get("advisory") and not relayed_copies(f.records) and not mentions_only(f)]


def mentions_only(f: Finding) -> bool:
    """A lexicon reading of warnings alone: a warning that names a part ("it is recommended to set the environment
    variable X") says the process went on, not that the part failed it, so it witnesses no error of that part. The
    ranks that got further print more of them (a library warns at its first forward): counted, they would make an
    error that one node's ranks met before training look printed on every node."""
    return f.detector == "components" and bool(f.records) and all(r.level == "warning" for r in f.records)


def printers(findings: Sequence[Finding], category: str) -> tuple[set[str], set[tuple[str, str]]]:
    """The nodes and the processes that printed a line of ``category`` read from its words (relayed copies
    aside: a driver repeating a worker's line is not a second witness). A line's NCCL pid counts beside its
    rank: one rank's file can hold the lines of several processes of a single-node run."""
    nodes: set[str] = set()
    procs: set[tuple[str, str]] = set()
    for f in witnesses(findings, category):
        if f.node is not None:
            nodes.add(f.node)
        for r in f.records:
            if r.node is not None:
                nodes.add(r.node)
            who = process_of(r)
            if who is not None:
                procs.add(who)
            m = NCCL_HEADER.search(r.text[:200])
            if m is not None and who is not None and who[0] == "rank":
                procs.add(("pid", m.group(2)))
        procs.update(("rank", str(k)) for k in f.data.get("ranks") or ())
    nodes.discard(UNKNOWN_NODE)
    return nodes, procs


def peers_lost_it(scan: JobScan, findings: Sequence[Finding], node: str) -> bool:
    """Whether another node of the job printed a cascade (a lost peer, a timeout, a teardown): the others waited
    for something, rather than stopping of their own accord."""
    for f in findings:
        if f.node in (None, node, UNKNOWN_NODE) or f.node not in scan.node_last:
            continue
        if f.role == "cascade" or any(is_cascade(r.text) for r in f.records[:3]):
            return True
    return False


def lone_fault(scan: JobScan, findings: Sequence[Finding], primary: Finding) -> bool:
    """Whether the primary's job-wide reading rests on one process of one node while the other nodes only lost
    it (see the module): then the node is kept. False for a training signal, a finding on no node, a job of one
    node, or an error a second process or node printed too."""
    if primary.detector not in READ_FROM_LINES or primary.node in (None, UNKNOWN_NODE):
        return False
    real = [n for n in scan.node_last if is_host(n)]
    if len(real) < 2 or primary.node not in real:
        return False
    nodes, procs = printers(findings, primary.category)
    pids = {p for p in procs if p[0] == "pid"}
    ranks = procs - pids
    if nodes - {primary.node} or len(ranks) > 1 or len(pids) > 1:
        return False
    return peers_lost_it(scan, findings, primary.node)


def told_on_its_own(scan: JobScan, findings: Sequence[Finding], primary: Finding, told: Finding) -> bool:
    """Whether a training signal's cause, the error line the numbers followed (``diverged.diverged_because``),
    is one process's own: a category of a node's part or work (not a job-wide one), printed by that process
    alone on the signal's node (or on the one node, when the signal names none) while the others lost it."""
    if is_global(told) or told.node is None or primary.node not in (None, told.node):
        return False
    return lone_fault(scan, findings, told)


def one_node_reading(scan: JobScan, findings: Sequence[Finding], primary: Finding, category: str | None) -> bool:
    """Whether a verdict made job-wide by its primary's first reading should keep the node after all: one
    process alone printed the line while the other nodes only lost it (``lone_fault``), and either the verdict's
    final category (after the exception's own words, the suspect's own lines) names no job-wide fault, or the
    job-wide reading was the lexicon's or the learned model's, not a signature's. A signature of a job-wide
    fault that the category still agrees with keeps the job-wide verdict: a configuration the thread blames may
    show on the one node that printed it."""
    if category in GLOBAL_CATEGORIES and primary.detector == "rules":
        return False
    return lone_fault(scan, findings, primary)
