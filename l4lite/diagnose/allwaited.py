"""Every rank waited: when each rank of every node failed in a collective from its own side (its transport timed
out, or its peer's connection closed under it) and none raised anything else, none stopped in silence and none
was killed, the processes were all there and all waiting on one another: what failed is what lies between them.

A stuck or stopped rank prints no timeout of its own (its agent's SIGTERM ends it), a rank that left early prints
nothing, a killed one leaves its agent's signal line, and a rank with a fault of its own raises its own error: each
leaves a rank without such a wait. A cut or stalled link leaves none (real jobs 049, 050, 188, 191, 201: a node's
interface down, every rank of both nodes times out within a second). The reading asks for every rank of the job,
the same number on each node of two or more (ranks no host places counted as whole nodes of their own), and at
least one timeout (lost peers alone say someone left first);
it only names a category the localiser left unknown.
"""

from __future__ import annotations

import re

from l4lite.detect.base import Finding
from l4lite.scan.scanner import JobScan, is_host

# A collective's transport giving up: gloo's send/recv timeout and its lost or reset pair, NCCL's watchdog timeout.
# A launcher's or Ray's own lost connection (to its store, to its raylet) is not a rank's collective.
_WAIT = re.compile(r"(?:gloo|nccl)[^\n]*?(?:Timed out waiting \d+\s*ms for (?:send|recv) operation|"
                   r"Connection (?:closed|reset) by peer|Connection timed out)|"
                   r"Watchdog caught collective operation timeout", re.I)
_TIMEOUT = re.compile(r"Timed out waiting|timed out|timeout", re.I)
MIN_NODES = 2
# what the reading says, in the verdict's notes and its summary (the primary's own line names no component)
WHY = ("every rank of every node failed waiting in a collective and none stopped or raised an error of its own, "
       "which points to the link between them")


def all_ranks_waited(scan: JobScan) -> bool:
    """Whether every rank of the job, on every node, failed in a collective and in nothing else (see the module)."""
    nodes = {n: ranks for n, ranks in scan.node_ranks.items() if is_host(n) and ranks}
    if not nodes or len({len(r) for r in nodes.values()}) != 1:
        return False
    placed: set[int] = set().union(*nodes.values())
    # ranks whose lines no host placed (an `srun --label` task whose lines never name its machine) sit on nodes
    # no line names, as many per node as on the named ones
    unplaced = {r for n, rs in scan.node_ranks.items() if not is_host(n) for r in rs} - placed
    per = len(next(iter(nodes.values())))
    if len(unplaced) % per or len(nodes) + len(unplaced) // per < MIN_NODES:
        return False
    ranks = placed | unplaced
    if placed != set(scan.rank_nodes) or ranks != set(range(len(ranks))):
        return False  # a rank no line names: it may be the one that stopped in silence
    waited: set[int] = set()
    other: set[int] = set()
    timed_out = False
    for hit in scan.hits:
        r = hit.record
        if r.rank is None or r.rank_local or hit.advisory or hit.rule_id.startswith("elastic"):
            continue  # a launcher's summary quotes its ranks' errors: not a rank's own line
        if _WAIT.search(r.message):
            waited.add(r.rank)
            timed_out = timed_out or _TIMEOUT.search(r.message) is not None
        else:
            other.add(r.rank)
    return timed_out and waited == ranks and not other


def own_timeouts(findings: list[Finding], roles: dict[int, str], node: str) -> list[Finding]:
    """When every rank waited (``all_ranks_waited``), the suspect node's ranks' own collective timeouts are what
    shows the link failed: a cascade elsewhere, here they are the proof. Marks them root, their timeout kept as
    the line shown (``timeout_is_proof``), and returns them; a launcher's quote of them stays as it is."""
    told = []
    for f in findings:
        if f.node != node or roles.get(id(f)) != "cascade" or f.detector != "rules" or not f.records:
            continue
        r = f.records[0]
        if r.source == "launcher" or r.rank is None or not _WAIT.search(r.text[-4000:]) \
                or not _TIMEOUT.search(r.text[-4000:]):
            continue
        roles[id(f)] = "root"
        f.data["timeout_is_proof"] = True
        told.append(f)
    return told
