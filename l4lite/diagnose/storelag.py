"""The rank behind in the store: when every rank timed out waiting in the rendezvous store for a process group's
key, and their keys name different groups, the one rank waiting on the earliest group is the one whose setup went
apart.

``torch.distributed.new_group`` is collective: every rank creates the same groups in the same order, and the store
key a rank waits on carries the group's counter (``/default_pg/0//14//cpu//0/1``: group 14). Ranks that agree on the
layout wait, at worst, on the same group. When the ranks of one job wait on different groups at once, they did not
create the same groups: one rank's parallel layout (its tensor-parallel size, real job 183) differs, so it builds
other groups than its peers, which go on past the group it is stuck in and then wait in turn. Every rank times out
together and the launcher's first failure is whichever process exited first, so it names no node; the rank alone on
the lowest counter is the one that stopped first. The reading asks for every known rank's wait (at least
``MIN_RANKS``), on more than one node, two counters at least, and the lowest held by one rank only.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

from l4lite.detect.base import Finding
from l4lite.records import Record
from l4lite.scan.scanner import JobScan

_WAIT = re.compile(r"DistStoreError: wait timeout after \d+\s*ms, keys: \S*?//(\d+)//")
MIN_RANKS = 3  # two ranks on two counters tell no lone rank


class StoreLag(NamedTuple):
    """The rank alone on the earliest group, its node and its own wait records (first first)."""
    node: str
    rank: int
    records: list[Record]


def store_laggard(scan: JobScan, findings: Sequence[Finding]) -> StoreLag | None:
    """The rank waiting on the earliest process group while every other rank waits on a later one (see the
    module); None when not every known rank waited, the keys agree, or the earliest is shared."""
    low: dict[int, int] = {}
    recs: dict[int, dict[tuple[str, int], Record]] = {}
    for f in findings:
        for r in f.records:
            if r.rank is None or r.rank not in scan.rank_nodes:
                continue
            counters = {int(c) for c in _WAIT.findall(r.text)}
            if len(counters) != 1:  # none, or a launcher's report quoting several ranks' waits: not this rank's own
                continue
            low[r.rank] = min(low.get(r.rank, 1 << 62), *counters)
            recs.setdefault(r.rank, {})[(r.file, r.line)] = r
    if len(low) < MIN_RANKS or set(low) != set(scan.rank_nodes) or len(set(low.values())) < 2:
        return None
    if len({scan.rank_nodes[r] for r in low}) < 2:
        return None
    first = min(low.values())
    behind = [r for r, c in low.items() if c == first]
    if len(behind) != 1:
        return None
    rank = behind[0]
    own = [r for r in recs[rank].values() if {int(c) for c in _WAIT.findall(r.text)} == {first}]
    return StoreLag(scan.rank_nodes[rank], rank, sorted(own, key=lambda r: (r.file, r.line)))


def laggard_root(scan: JobScan, findings: Sequence[Finding], primary: Finding) -> Finding | None:
    """The lone rank behind in the store as the root, when it lies on another node than the primary's (the
    launcher's first failure among ranks that all timed out together). Its category stays unknown: a wait says
    where the layouts parted, not what the rank's own lines say of why."""
    lag = store_laggard(scan, findings)
    if lag is None or lag.node == primary.node or not lag.records:
        return None
    first = lag.records[0]
    return Finding(
        "storelag", "unknown", "root", primary.score,
        f"Every rank timed out in the store waiting for a process group, on different groups; rank {lag.rank} on "
        f"{lag.node} alone waited on the earliest: it created other groups than its peers (its parallel layout or "
        "configuration differs).", node=lag.node, rank=lag.rank, time=first.time,
        records=lag.records[:4], count=len(lag.records),
        data={"own_lines": True, "distinct_records": True, "store_laggard": True})
