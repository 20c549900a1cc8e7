"""Node folders named by their role (``worker-1``, ``rank-0``, ``pod-3``, a deployment's pod), not by the machine:
the host the lines state wins.

A launcher or an operator often names each node's folder by its place in the job. When the node level is such a
folder and no sampled line named its host (the level's aliases come from the files' sampled ends), its files are
read whole: the one host they name as their writer (a torchelastic agent's rendezvous name ``The node
'a100-rack2-15_4443_0' ...`` sits mid-file, a ``host :`` line of a summary, an NCCL header) is the node. A host
only mentioned (the endpoint a node cannot reach) is no writer and names nothing; a host that is already another
folder's stays that folder's.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from l4lite.ingest.writers import own_host, whole_writers

ROLE_WORDS = frozenset(["worker", "rank", "pod", "replica", "task", "proc", "process", "node", "host", "instance",
                        "member", "machine", "container", "executor", "trainer", "learner", "actor", "server"])
_TOKENS = re.compile(r"[-_.]")
# a Kubernetes pod of a deployment: ``<name>-<replica set hash>-<suffix>``, both generated from the alphabet
# Kubernetes uses for names (no vowels, no 0, 1, 3)
_POD = re.compile(r"[a-z0-9-]*[a-z0-9]-[bcdfghjklmnpqrstvwxz2456789]{6,10}-[bcdfghjklmnpqrstvwxz2456789]{5}")


def role_name(name: str) -> bool:
    """A name made of role words and numbers only, at least one of each (``worker-1``, ``rank_0``, ``pod-3``), or
    a deployment's generated pod name (``trainer-7c9d8b4f6d-x2k9p``): a place in the job, not a machine."""
    low = name.lower()
    if _POD.fullmatch(low):
        return True
    tokens = [t for t in _TOKENS.split(low) if t]
    words = [t for t in tokens if not t.isdigit()]
    return bool(words) and len(words) < len(tokens) and all(w in ROLE_WORDS for w in words)


def role_aliases(files: Sequence[Any], value: Callable[[str], str | None], aliases: Mapping[str, str],
                 names: Collection[str]) -> dict[str, str]:
    """Role folder name -> the one host its files' lines name as their writer, read whole (``writers.own_host``
    over all its files' mentions), for the level's role names that have no alias yet. ``value``: a file's name
    at the node level; ``names``: the level's names. A host two folders would take, or that already names a
    folder, is given to none."""
    taken = set(aliases.values()) | {n for n in names if not role_name(n)}
    by_name: dict[str, list[Any]] = {}
    for f in files:
        v = value(f.rel)
        if v is not None and v not in aliases and role_name(v) and (not names or v in names):
            by_name.setdefault(v, []).append(f)
    found: dict[str, str] = {}
    for name, group in sorted(by_name.items()):
        hosts: Counter[str] = Counter()
        for f in group:
            if (vote := whole_writers(f)) is not None:
                hosts.update(vote.hosts)
        if (host := own_host(hosts)) is not None and host not in taken and not role_name(host):
            found[name] = host
    counts = Counter(found.values())
    return {name: host for name, host in found.items() if counts[host] == 1}
