"""Where a fault was met, read from who printed it: one node's setup, or the whole job's.

A setting can be the job's (every node's launcher passed it, every rank runs the same code with it) or one node's
(its environment names an interface it lacks, its local disk was never staged, its shared memory is too small).
The words of the error are the same either way ("no interface named ib0", "No such file or directory"), so the
category a signature gives says nothing of the scope; the job's spatial pattern does (L4's spatial filter). A
setting every rank shares fails every rank that uses it, on every node: each node prints the error. A node's own
setting fails the ranks of that node, and the others then wait for them and print only cascades (a closed
connection, a timeout, their agent's teardown).

``node_setup`` names the node when the error line was printed by several ranks and told in more than one of the
ranks' files (their own logs beside the node's console; a kernel log is no rank's), all of it on one node, by no
process of any other node, while another node printed cascades: more than one rank met it there, so it is not one
process's accident, and no rank elsewhere did, so it is not the job's. One process alone says less: a job-wide
setting the thread blames is often shown by the one process whose log was kept (``lone.one_node_reading`` decides
that case); so do several processes in one file (a single machine's run kept as one log, NCCL's pids in one rank's
file): they are one machine's account, not witnesses of the node's ranks apart from the job's others.
"""

from __future__ import annotations

from collections.abc import Sequence

from l4lite.detect.base import Finding
from l4lite.diagnose.lone import READ_FROM_LINES, peers_lost_it, printers, witnesses
from l4lite.scan.scanner import UNKNOWN_NODE, JobScan, is_host

MIN_PROCESSES = 2  # ranks of the one node that printed the error, and files that tell it


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
    files = {r.file for r in told if r.source != "kernel"}  # the ranks' streams: a node's kernel log is none of them
    if len(ranks) < MIN_PROCESSES or len(files) < MIN_PROCESSES:
        return None
    return node if peers_lost_it(scan, findings, node) else None
