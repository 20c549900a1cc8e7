"""Where a fault was met, read from who printed it: one node's setup, or the whole job's.

A setting can be the job's (every node's launcher passed it, every rank runs the same code with it) or one node's
(its environment names an interface it lacks, its local disk was never staged, its shared memory is too small).
The words of the error are the same either way ("no interface named ib0", "No such file or directory"), so the
category a signature gives says nothing of the scope; the job's spatial pattern does (L4's spatial filter). A
setting every rank shares fails every rank that uses it, on every node: each node prints the error. A node's own
setting fails the ranks of that node, and the others then wait for them and print only cascades (a closed
connection, a timeout, their agent's teardown).

``node_setup`` names the node when the error was printed by several ranks and the same error line is told in more
than one of the ranks' files (a rank's own log beside the node's console: the launcher's copies; a kernel log is no
rank's), all of it on one node, by no process of any other node, while another node printed cascades: more than one
rank met it there, so it is not one process's accident, and no rank elsewhere did, so it is not the job's. One
process alone says less: a job-wide setting the thread blames is often shown by the one process whose log was kept
(``lone.one_node_reading`` decides that case); so do several processes in one file (a single machine's run kept as
one log, NCCL's pids in one rank's file), or lines of one excerpt spread over a rank's file and its node's other
logs: they are one machine's account, not witnesses of the node's ranks apart from the job's others.

``rank_own`` reads the same pattern one level down: one process printed the error and another rank of the same
node, which shares the node's setup, the job's settings and the code, printed only the loss of its peer (a closed
connection, a timeout) and nothing of the error. Whatever both ranks were given would have failed both; what one
rank alone met is its own (the batch its shard held, its process), so the error is no job-wide setting and that
rank's node is named. When the node's other ranks left no line of their own (one process's log kept, as a thread
shows it), nothing tells the two apart and the job-wide reading stands. Among the readings of that process's
error, one of a part of its own (a data record rather than the job's configuration) then gives the category.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from l4lite.detect.base import Finding
from l4lite.diagnose.lone import READ_FROM_LINES, lone_fault, peers_lost_it, printers, witnesses
from l4lite.diagnose.timeline import finding_key
from l4lite.records import Record
from l4lite.rules.components import is_cascade
from l4lite.scan.scanner import UNKNOWN_NODE, JobScan, is_host
from l4lite.vocab import GLOBAL_CATEGORIES

MIN_PROCESSES = 2  # ranks of the one node that printed the error, and files that tell the same error line
TAIL = 80  # characters of an error's last line compared across files
TRACEBACK = "Traceback (most recent call last)"


def error_tail(r: Record) -> str:
    """The end of a record's last line, numbers folded: the same error in a rank's own log and in its node's
    console, whatever stream prefix (``[default0]:``, ``[rank2]:``) each copy's line starts with."""
    lines = r.text.strip().splitlines()
    return re.sub(r"\d+", "0", lines[-1][-TAIL:] if lines else "")


def node_setup(scan: JobScan, findings: Sequence[Finding], primary: Finding) -> str | None:
    """The node whose own setup the primary's job-wide reading is, by who printed it (see the module); None
    when a second node printed it, when one process alone did, or when no other node lost its peers."""
    node = primary.node
    if primary.detector not in READ_FROM_LINES or node in (None, UNKNOWN_NODE):
        return None
    real = [n for n in scan.node_last if is_host(n)]
    if len(real) < 2 or node not in real:
        return None
    nodes, _ = printers(findings, primary.category)
    if nodes != {node}:
        return None
    told = [r for f in witnesses(findings, primary.category) for r in f.records if r.node in (None, node)]
    ranks = {r.rank for r in told if r.rank is not None}
    files: dict[str, set[str]] = {}  # the files that tell each error line (a node's kernel log is no rank's)
    for r in told:
        if r.source != "kernel":
            files.setdefault(error_tail(r), set()).add(r.file)
    if merged_repeats(findings, node, told) < MIN_PROCESSES and \
            (len(ranks) < MIN_PROCESSES or max((len(f) for f in files.values()), default=0) < MIN_PROCESSES):
        return None
    return node if peers_lost_it(scan, findings, node) else None


def merged_repeats(findings: Sequence[Finding], node: str, told: Sequence[Record]) -> int:
    """How many separate tracebacks ending in the same error line ``node`` printed into a log that holds other
    nodes' lines too (a job's merged ``srun --label`` file, one stream per node's launcher task): there each
    process raises once, so two tracebacks are two processes, whatever rank the stream's label reads as. A log of
    one node's alone (one machine's run kept as one file) tells nothing of how many processes wrote it."""
    shared = {r.file for f in findings for r in f.records if r.node not in (None, node, UNKNOWN_NODE)}
    seen: dict[tuple[str, str], set[int]] = {}
    for r in told:
        if r.file in shared and r.source != "kernel" and TRACEBACK in r.text:
            seen.setdefault((r.file, error_tail(r)), set()).add(r.line)
    return max((len(lines) for lines in seen.values()), default=0)


@dataclass(frozen=True)
class RankOwn:
    """One rank's own fault (``rank_own``): its node, the rank, and the reading of its error that names a part
    of its own (None when every reading of it is job-wide)."""

    node: str
    rank: int
    reading: Finding | None


def lost_only(findings: Sequence[Finding], node: str, struck: set[int]) -> set[int]:
    """The ranks of ``node`` other than ``struck`` that printed a lost peer or a timeout in their own lines."""
    ranks: set[int] = set()
    for f in findings:
        if f.node != node or not (f.role == "cascade" or any(is_cascade(r.text) for r in f.records[:3])):
            continue
        ranks.update(r.rank for r in f.records if r.rank is not None and r.node in (None, node))
    return ranks - struck


def rank_own(scan: JobScan, findings: Sequence[Finding], primary: Finding) -> RankOwn | None:
    """The rank whose own fault the primary's job-wide reading is (see the module): one process printed it, the
    other nodes lost it, and a rank of its own node printed only the loss; None otherwise. A launcher's account
    of the rank's failure counts among the readings of its error when the frames it carries named a component
    (the rank's own file read by torch.load): it tells the same process's error."""
    if not lone_fault(scan, findings, primary) or primary.node is None:
        return None
    _, procs = printers(findings, primary.category)
    struck = {int(k) for kind, k in procs if kind == "rank"}
    if len(struck) != 1 or not lost_only(findings, primary.node, struck):
        return None
    rank = next(iter(struck))
    own = [f for f in findings if f.detector in READ_FROM_LINES and f.node == primary.node
           and f.role != "cascade" and (f.role != "confirmation" or f.data.get("component"))
           and f.category not in ("unknown", primary.category)
           and f.category not in GLOBAL_CATEGORIES and not f.data.get("survived") and f.records
           and {r.rank for r in f.records if r.rank is not None} == struck
           and not any(is_cascade(r.text) for r in f.records[:3])]
    return RankOwn(primary.node, rank, min(own, key=finding_key) if own else None)
