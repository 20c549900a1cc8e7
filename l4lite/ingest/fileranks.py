"""The rank of a process file that its path does not give, from what the process says of itself.

Launchers that name log files by a process id rather than a rank (Ray's ``worker-<worker id>-<job>-<pid>.err``,
``ray-train-sys-worker-<worker id>.log``) leave the rank to the lines: the process prints it once at start-up,
with the world size beside it (``Setting up process group for: env:// [rank=3, world_size=4]``, Lightning's
``GLOBAL_RANK: 3, MEMBER: 4/4``). A file whose start-up lines name one such rank is that rank's; a file that
names several (a driver echoing its workers) is nobody's. The other files of the same process, named by the same
long hex id, are the same rank's: without them a stuck rank's quiet console would have no rank to be missed by.
The same id places a process's files on a node: the node's own process manager (Ray's raylet) logs every worker
it starts by that id, so where its log is placed, the files named by the ids it started are placed too.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping

# a rank stated with the world size beside it: a process's own start-up line, not a mention of a peer
OWN_RANK = re.compile(r"\brank\s*[=:]\s*(\d+)\s*[,;]\s*world[_ ]size\s*[=:]\s*(\d+)"
                      r"|\bGLOBAL_RANK:\s*(\d+),\s*MEMBER:\s*\d+/(\d+)", re.IGNORECASE)
# a process id that names a process's files: Ray's worker ids are 56 hex digits, job and actor ids 32
PROCESS_ID = re.compile(r"(?<![0-9a-f])[0-9a-f]{32,}(?![0-9a-f])")
# the ids a node's process manager states as its own node's (Ray's raylet: the node id it sets, ``main.cc:711:
# Setting node ID node_id=5581...``, and each worker it starts, ``worker_pool.cc:564: Started worker process with
# pid 329 worker_id=927a...``)
OWN_ID = re.compile(r"(?:Started worker process with pid \d+ worker_id=|Setting node ID node_id=)([0-9a-f]{32,})\b")


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


def own_id(line: str) -> str | None:
    """An id a node's process manager states as its own node's (``OWN_ID``), or None."""
    return m[1] if "_id=" in line and (m := OWN_ID.search(line)) else None


def named_ids(line: str) -> list[str]:
    """The long hex ids a line names anywhere (a worker's file it tracks, a node id among its labels)."""
    return PROCESS_ID.findall(line)


def id_hosts(rels: Iterable[str], node_of: Callable[[str], str | None], started: Mapping[str, Iterable[str]],
             named: Mapping[str, Iterable[str]]) -> dict[str, str]:
    """The node of each file no path or line places whose name carries an id that a placed file's lines state as
    their node's own (``started``: rel -> the ids it states, ``OWN_ID``): Ray's ``worker-<id>-<job>-<pid>.err``,
    ``python-core-worker-<id>_<pid>.log`` and ``ray-train-*-<id>.log`` are the files of the worker its node's
    raylet started. A file whose name carries no id takes the node of the ids its lines name (``named``: rel ->
    ids), when they are all one node's: a node's raylet state dump names its own node id, its log monitor the
    files of its own workers; the head's control store names every node's and places nothing. An id that files
    of two nodes state places nothing."""
    hosts: dict[str, set[str]] = {}
    for rel, ids in started.items():
        if (host := node_of(rel)) is not None:
            for pid in ids:
                hosts.setdefault(pid, set()).add(host)
    out: dict[str, str] = {}
    for rel in rels:
        if node_of(rel) is not None or not hosts:
            continue
        ids = process_ids(rel) or set(named.get(rel, ()))
        found = {h for pid in ids for h in hosts.get(pid, ())}
        if len(found) == 1:
            out[rel] = found.pop()
    return out
