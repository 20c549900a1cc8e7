"""Where a fault was met, read from who printed it: one node's setup, or the whole job's.

A setting can be the job's (every node's launcher passed it, every rank runs the same code with it) or one node's
(its environment names an interface it lacks, its local disk was never staged, its shared memory is too small).
The words of the error are the same either way ("no interface named ib0", "No such file or directory"), so the
category a signature gives says nothing of the scope; the job's spatial pattern does (L4's spatial filter). A
setting every rank shares fails every rank that uses it, on every node: each node prints the error. A node's own
setting fails the ranks of that node, and the others then wait for them and print only cascades (a closed
connection, a timeout, their agent's teardown).

``node_setup`` names the node when the error line was printed by several ranks and told in more than one file (the
ranks' own logs beside the node's console), all of it on one node, by no process of any other node, while another
node printed cascades: more than one rank met it there, so it is not one process's accident, and no rank elsewhere
did, so it is not the job's. One process alone says less: a job-wide setting the thread blames is often shown by the
one process whose log was kept (``lone.one_node_reading`` decides that case); so do several processes in one file (a
single machine's run kept as one log, NCCL's pids in one rank's file): they are one machine's account, not witnesses
of the node's ranks apart from the job's others.

Time says the rest for one process (``met_in_training``): a setting every rank shares is met where it is first used,
by every rank alike, at start-up or in the first step. When every rank ran steps through the same code (the job
logged training steps) and then one process alone raised the error in a training or evaluation step, while the
other nodes only lost it, the setting held for everyone; what that process met then (its batch, its node) did not.
A save or a load is left alone: one rank often does it for all.
"""

from __future__ import annotations

from collections.abc import Sequence

from l4lite.detect.base import Finding
from l4lite.diagnose.lone import (
    READ_FROM_LINES,
    lone_fault,
    one_node_reading,
    peers_lost_it,
    printers,
    witnesses,
)
from l4lite.diagnose.phasing import failure_time_of, node_trackers, phase_of
from l4lite.scan.scanner import UNKNOWN_NODE, JobScan, is_host

MIN_PROCESSES = 2  # ranks of the one node that printed the error, and files that tell it
MIN_STEPS = 3  # training steps the job ran (by its logged iterations) before one rank's error
SLACK = 1.0  # seconds: a launcher's failure time is stated to the second (as ``phasing.iteration_of`` allows)
EVERY_RANK = ("train", "eval")  # phases whose steps every rank runs alike (a save or a load may be rank 0's alone)


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
    files = {r.file for r in told}
    if len(ranks) < MIN_PROCESSES or len(files) < MIN_PROCESSES:
        return None
    return node if peers_lost_it(scan, findings, node) else None


def met_in_training(scan: JobScan, findings: Sequence[Finding], primary: Finding) -> bool:
    """Whether one process alone met the primary's error in a training or evaluation step after the job had logged
    ``MIN_STEPS`` steps (see ``one_rank_mid_training``)."""
    if not lone_fault(scan, findings, primary):
        return False
    trackers, job_events = node_trackers(scan)
    if phase_of(primary, scan, trackers, job_events, findings) not in EVERY_RANK:
        return False
    t = failure_time_of(scan, primary, findings)
    steps = {p.iteration for p in scan.metrics if p.kind == "train" and p.iteration is not None
             and (t is None or p.time is None or p.time <= t + SLACK)}
    # steps run between the first and the last logged (a trainer may log every few steps, or resume at a high one)
    return len(steps) >= 2 and max(steps) - min(steps) + 1 >= MIN_STEPS


def node_kept(scan: JobScan, findings: Sequence[Finding], primary: Finding, category: str | None) -> str | None:
    """Why a verdict made job-wide by its primary's reading keeps the primary's node after all (a note for the
    incident), or None: the ranks of one node met it and the others only lost them (``node_setup``), one process's
    error the category does not hold job-wide (``lone.one_node_reading``), or one process met it mid-training
    (``met_in_training``)."""
    if node_setup(scan, findings, primary) is not None:
        return "the ranks of one node met this setting and the other nodes only lost them: that node's own setup"
    if one_node_reading(scan, findings, primary, category):
        return "a job-wide reading of one process's error, which the other nodes only lost: its node is kept"
    if met_in_training(scan, findings, primary):
        return "one process met this mid-training, after every rank had run steps alike: its node is kept"
    return None
