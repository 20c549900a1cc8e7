"""Nodes the other ranks point at: the one the NCCL watchdog's reports leave out, and the odd rank of a check that
compared every rank with the others.

``lagging_node``: when every rank timed out, the ranks that lag in collective sequence numbers, the peer whose
address the lost connections name, or the only node whose ranks never reported the timed-out collective that
every other node's ranks reported, is the one that went away.

``odd_rank_node``: some checks compare every rank with the others and fail on every rank at once. As it wraps
the model, DistributedDataParallel gathers each rank's parameter count and every rank whose count differs from
another's raises, saying so: "Rank 0 has 28 params, while rank 1 has inconsistent 40 params". Every node prints
the error, which then reads job-wide; but each line names a rank, and the ranks that hold the common model all
name the odd one, while the odd one names the first rank it differs from. The rank that more than half of the
ranks that spoke name (at least two of them, itself not among them) is the one whose model, code or config
differs: its node is the one to look at, as for a node's own setup (``spatial.node_setup``). Its own copies of
the error are the root evidence, first; the copies of the ranks that named it confirm (``odd_rank_shown``).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from typing import NamedTuple

from l4lite.detect.base import Finding
from l4lite.diagnose.evidence import node_of_lost_peer, ranks_behind
from l4lite.records import Record
from l4lite.scan.scanner import JobScan, is_host

# a rank's own count beside the rank it finds inconsistent with it
_NAMED = re.compile(r"\bRank (\d{1,9}) has \d{1,12} \w{1,20}, while rank (\d{1,9}) has inconsistent\b")
MIN_SPEAKERS = 2  # ranks that must name the same odd rank


def lagging_node(scan: JobScan, findings: Sequence[Finding]) -> str | None:
    """The node the NCCL watchdog points at: the ranks that lag in sequence numbers, else the only node whose
    ranks never reported the timed-out collective that every other node's ranks reported."""
    cascades = [f for f in findings if f.role == "cascade"]
    behind = ranks_behind(cascades)
    node = next((scan.rank_nodes.get(r) for r in behind if r in scan.rank_nodes), None) or \
        node_of_lost_peer(scan, cascades)  # else the peer whose address the cascades say they lost
    if node is not None:
        return node
    nodes = [n for n in scan.node_last if is_host(n)]
    # First the watchdog's own reports, then any cascade (broken pipes, resets, teardown): the node that stayed
    # silent while every other one reported losing a peer is the one that went away.
    for chosen in ([f for f in cascades if f.rule and "watchdog" in f.rule], cascades):
        reported = {r.node or scan.rank_nodes.get(r.rank if r.rank is not None else -1)
                    for f in chosen for r in f.records}
        reported.discard(None)
        silent = [n for n in nodes if n not in reported]
        if len(reported) >= 2 and len(silent) == 1:
            return silent[0]
    return None


def odd_rank(findings: Sequence[Finding], primary: Finding) -> int | None:
    """The rank that most ranks printing the primary's check name as the one that differs (see the module)."""
    said: dict[int, int] = {}  # speaker -> the rank it names
    for f in findings:
        if f.detector != primary.detector or f.rule != primary.rule:
            continue
        for r in f.records:
            m = _NAMED.search(r.text)
            if m is not None and m.group(1) != m.group(2):
                said[int(m.group(1))] = int(m.group(2))
    if not said:
        return None
    rank, count = Counter(said.values()).most_common(1)[0]
    if count < MIN_SPEAKERS or 2 * count <= len(said) or said.get(rank) == rank:
        return None
    return rank


def odd_rank_node(scan: JobScan, findings: Sequence[Finding], primary: Finding) -> str | None:
    """The node of ``odd_rank``, when the job's lines tie that rank to a node."""
    rank = odd_rank(findings, primary)
    return scan.rank_nodes.get(rank) if rank is not None else None


class Shown(NamedTuple):
    """A verdict's findings in the order shown, their roles, and the records shown of each."""
    findings: list[Finding]
    roles: list[str]
    records: list[list[Record]]


def odd_rank_shown(shown: Shown, primary: Finding, odd: int, kept: int) -> Shown:
    """The check every rank failed, shown as the odd rank's failure: of the root findings of the primary's rule,
    the odd rank's copies stay root; the other ranks' copies, which name it, become one confirmation (at most
    ``kept`` of them), shown right after the root, and a finding left with none of the odd rank's copies a
    confirmation. Root entries come first, in their order."""
    roles = list(shown.roles)
    records: list[list[Record]] = []
    named: list[Record] = []
    for k, (f, recs) in enumerate(zip(shown.findings, shown.records, strict=True)):
        if roles[k] == "root" and f.rule == primary.rule:
            named += [r for r in recs if r.rank != odd]
            recs = [r for r in recs if r.rank == odd]
            if not recs:
                roles[k] = "confirmation"
        records.append(recs)
    findings = list(shown.findings)
    if named:
        findings.append(replace(primary, records=named[:kept]))
        roles.append("confirmation")
        records.append(named[:kept])
    last = len(findings) - 1 if named else -1  # the ranks that named it, right after the root
    order = sorted(range(len(findings)), key=lambda k: (roles[k] != "root", k != last, k))
    return Shown([findings[k] for k in order], [roles[k] for k in order], [records[k] for k in order])
