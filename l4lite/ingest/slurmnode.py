"""The node a Slurm error line names: ``srun: error: node017: tasks 8-15: ...`` and ``slurmstepd``'s cancel."""

from __future__ import annotations

import re

from l4lite.ingest.attribution import RankMap, normalize_host

SRUN_ERROR = re.compile(r"srun: error: ([A-Za-z0-9][\w.-]*): tasks? (\d+)(?:-(\d+))?: ")
STEPD_NODE = re.compile(r"\bON ([A-Za-z0-9][\w.-]*) CANCELLED AT\b")


def slurm_node(msg: str, rank_map: RankMap) -> str | None:
    """``srun: error: node017: tasks 8-15: Exited ...`` ties tasks to a host; both name the node concerned."""
    m = SRUN_ERROR.match(msg)
    if m:
        host = normalize_host(m[1])
        first = int(m[2])
        last = int(m[3]) if m[3] else first
        for r in range(first, min(last, first + 4096) + 1):
            rank_map.tie(r, host)
        return host
    m = STEPD_NODE.search(msg)
    return normalize_host(m[1]) if m else None
