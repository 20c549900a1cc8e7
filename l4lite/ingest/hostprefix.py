"""pdsh's host prefix: a stream whose every line starts with the host that wrote it (``gpu-node-07: ...``,
``10.0.0.2: ...``), as ``pdsh -w`` prints it and so DeepSpeed's (``deepspeed --hostfile``) and accelerate's
multi-node launchers archive a whole job in one file.

A line's first word alone never says so: ``node1: reachable`` in an ordinary log is a message. A file is
host-prefixed when most of its first lines start with such a prefix and the same few hosts recur
(``host_prefixed``); then the prefix names each line's node and the rest of the line is read as any line.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Iterable

from l4lite.ingest.attribution import names_no_node, normalize_host

# "gpu-node-07: "  /  "10.0.0.2: "
HOST_PREFIX = re.compile(r"(\d{1,3}(?:\.\d{1,3}){3}|[A-Za-z][\w.-]{0,62}): ")
_IPV4 = re.compile(r"\d{1,3}(?:\.\d{1,3}){3}$")
_HOSTLIKE = re.compile(r"[a-z][a-z0-9-]*\d[a-z0-9-]*$")  # lowercase short names, as ``normalize_host`` gives
_HYPHENATED = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)+$")
_MODEL_SIZE = re.compile(r"(?:^|-)\d+(?:\.\d+)?[bmk]$")  # ``llama-7b``: a model, not a machine
PREFIX_LINES = 64  # non-blank first lines of a file that decide whether it is host-prefixed
PREFIX_SHARE = 0.8  # of them, the share that must start with a host
PREFIX_HOSTS = 16  # a merged job's few hosts recur: at most this many, and no more than half the lines (or 4)


@functools.lru_cache(maxsize=4096)
def _prefix_host(word: str) -> bool:
    """Whether a line's first word before ``": "`` names a machine: an IPv4 address, or a host-like name with a
    digit or a hyphen (``worker-1``, ``gpu-node-07.cluster``, ``compute-alpha``: as a process banner's host is
    judged) that no run, rank or part is named (``rank0``, ``step_3``). ``wandb:`` and ``INFO:`` are words."""
    if _IPV4.match(word):
        return True
    short = normalize_host(word)
    return bool(_HOSTLIKE.match(short) or _HYPHENATED.match(short)) and not names_no_node(short) \
        and not _MODEL_SIZE.search(short)


def host_prefix(line: str) -> re.Match[str] | None:
    """The ``host: `` prefix a host-prefixed file's line starts with (group 1 the host), else None."""
    m = HOST_PREFIX.match(line)
    return m if m is not None and _prefix_host(m[1]) else None


def host_prefixed(lines: Iterable[str]) -> bool:
    """Whether a file is a host-prefixed merge (pdsh): most of its first lines start with ``host: `` and the same
    few hosts recur. Decided per file, so that a message ``node1: ...`` in an ordinary log never names a host."""
    hosts: Counter[str] = Counter()
    n = 0
    for raw in lines:
        if not raw or raw.isspace():
            continue
        n += 1
        if (m := host_prefix(raw)) is not None:
            hosts[m[1]] += 1
        if n >= PREFIX_LINES:
            break
    total = sum(hosts.values())
    return n >= 2 and total >= PREFIX_SHARE * n and len(hosts) <= min(PREFIX_HOSTS, max(4, n // 2))


def prefix_host(line: str) -> str | None:
    """The host a host-prefixed file's line names as its writer (normalised as ``without_host_prefixes``'s)."""
    m = host_prefix(line)
    return normalize_host(m[1]) if m is not None else None


def strip_host_prefix(line: str) -> str:
    """A host-prefixed file's line without its host."""
    m = host_prefix(line)
    return line[m.end():] if m is not None else line


WRITER_LABEL = "host:"  # a host-prefixed line's writer label (``writerclocks``): the host its prefix names


def prefix_label(line: str) -> tuple[str, int] | None:
    """A pdsh line's writer label (``host:<host>``) and where its prefix ends, as ``attribution.stream_label``
    gives an ``srun --label`` task's; None for a line without a host prefix."""
    m = host_prefix(line) if line[:1].isalnum() else None
    return (WRITER_LABEL + normalize_host(m[1]), m.end()) if m is not None else None


def labelled_host(label: str) -> str | None:
    """The host a ``prefix_label`` names, else None (an ``srun`` task's or a pod's label names none by itself)."""
    return label[len(WRITER_LABEL):] if label.startswith(WRITER_LABEL) else None


def without_host_prefixes(*parts: list[str]) -> tuple[list[list[str]], Counter[str]]:
    """A host-prefixed file's lines (in parts: its head, its tail) without their hosts, and how many of its lines
    each host wrote: the writer of every line, as a header's host is."""
    hosts: Counter[str] = Counter()
    out = []
    for lines in parts:
        kept = []
        for line in lines:
            m = host_prefix(line)
            if m is not None:
                hosts[normalize_host(m[1])] += 1
                line = line[m.end():]
            kept.append(line)
        out.append(kept)
    return out, hosts
