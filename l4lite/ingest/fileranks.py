"""The rank of a process file that its path does not give, from what the process says of itself.

Launchers that name log files by a process id rather than a rank (Ray's ``worker-<worker id>-<job>-<pid>.err``,
``ray-train-sys-worker-<worker id>.log``) leave the rank to the lines: the process prints it once at start-up,
with the world size beside it (``Setting up process group for: env:// [rank=3, world_size=4]``, Lightning's
``GLOBAL_RANK: 3, MEMBER: 4/4``). A file whose start-up lines name one such rank is that rank's; a file that
names several (a driver echoing its workers) is nobody's. The other files of the same process, named by the same
long hex id, are the same rank's: without them a stuck rank's quiet console would have no rank to be missed by.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

# a rank stated with the world size beside it: a process's own start-up line, not a mention of a peer
OWN_RANK = re.compile(r"\brank\s*[=:]\s*(\d+)\s*[,;]\s*world[_ ]size\s*[=:]\s*(\d+)"
                      r"|\bGLOBAL_RANK:\s*(\d+),\s*MEMBER:\s*\d+/(\d+)", re.IGNORECASE)
# a process id that names a process's files: Ray's worker ids are 56 hex digits, job and actor ids 32
PROCESS_ID = re.compile(r"(?<![0-9a-f])[0-9a-f]{32,}(?![0-9a-f])")


def own_rank(lines: Iterable[str]) -> int | None:
    """The one rank a file's lines state as their process's own (with a world size it fits in), else None."""
    ranks = set()
    for line in lines:
        if "ank" not in line and "ANK" not in line:
            continue
        for m in OWN_RANK.finditer(line):
            rank, world = (int(m[1]), int(m[2])) if m[1] is not None else (int(m[3]), int(m[4]))
            if rank < world:
                ranks.add(rank)
    return next(iter(ranks)) if len(ranks) == 1 else None


def process_ids(rel: str) -> set[str]:
    """The long hex ids a file's name carries (its process's, in a launcher that names files by them)."""
    return set(PROCESS_ID.findall(rel.rsplit("/", 1)[-1].lower()))


def sibling_ranks(rels: Iterable[str], ranks: Mapping[str, int]) -> dict[str, int]:
    """Ranks of the files named by the same process id as a file whose rank is known; an id two ranks claim
    gives none."""
    by_id: dict[str, set[int]] = {}
    for rel, rank in ranks.items():
        for pid in process_ids(rel):
            by_id.setdefault(pid, set()).add(rank)
    out: dict[str, int] = {}
    for rel in rels:
        if rel in ranks:
            continue
        found = {r for pid in process_ids(rel) for r in by_id.get(pid, ())}
        if len(found) == 1:
            out[rel] = found.pop()
    return out
