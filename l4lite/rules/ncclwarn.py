"""What an NCCL WARN line says failed: the reading of its payload, for the generic NCCL error it led to.

NCCL reports most faults to the framework as one of a few generic results (``ncclSystemError`` / "unhandled
system error", "unhandled cuda error", "internal error", "invalid usage", "remote process exited or there was a
network error"). The cause is in the WARN line the same rank printed just before: the call that failed and its
error. The payload (the text after ``NCCL WARN``) is read by what the failing call means:

- a CUDA error string (``Cuda failure 'out of memory'``), an errno, the transport source file: as anywhere
  (``exceptions.named``);
- the verbs calls and NCCL's IB and socket transports (``ibv_create_qp``, ``NET/IB``, ``NET/Socket``, a connect
  or a receive that failed): network;
- the shared-memory segment (``posix_fallocate``, ``shm_open``, ``/dev/shm``), the topology, graph or XML file,
  a ring that does not contain a rank, versions that do not match, no usable interface: configuration.

A WARN that names none of these (a proxy's "Failed to execute operation", a bare "-> 2" trail) gives nothing;
nor does one that reports a peer's loss (a connection closed or reset by the peer: ``components.is_cascade``), nor
an IB completion status (its rules give each status its own role: a flush after an earlier error is a cascade).
"""

from __future__ import annotations

import re
from typing import NamedTuple

from l4lite.rules.components import is_cascade
from l4lite.rules.exceptions import named

WARN = "NCCL WARN"

# (category, pattern over the payload), first hit wins: configuration before network (a missing interface is
# a setting, though it names the socket transport)
NCCL_CALLS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("user_config", re.compile(
        r"posix_fallocate|shm_open|/dev/shm|shared memory segment|failed to extend|does not contain rank|"
        r"XML Import|NCCL_TOPO_FILE|NCCL_GRAPH_FILE|version mismatch|mismatched NCCL version|"
        r"no (?:socket )?interface found|NCCL_SOCKET_IFNAME|Duplicate GPU", re.I)),
    ("oom", re.compile(r"Cuda failure (?:\d{1,4} )?'out of memory'|Failed to CUDA (?:calloc|malloc|host alloc)",
                       re.I)),
    ("network", re.compile(
        r"\b(?:wrap_)?ibv_\w{1,40}|NET/IB\b|NET/Socket\b|\bConnect to\b|Call to (?:connect|recv|send|accept|poll)\b|"
        r"Connection (?:refused|timed out)|No route to host|Network is unreachable|async event", re.I)),
)

# an IB completion status: its rules read each status with its own role (a flush after an earlier error is a cascade)
COMPLETION = re.compile(r"Got completion", re.I)


class WarnReading(NamedTuple):
    """The category an NCCL WARN line's payload gives and the words that gave it."""

    category: str
    words: str


def payload(text: str) -> str | None:
    """The text after ``NCCL WARN`` on the line; None for a line that is no NCCL warning."""
    i = text.find(WARN)
    return text[i + len(WARN):].strip() if i >= 0 else None


def read_warn(text: str) -> WarnReading | None:
    """What the failing call of an NCCL WARN line means; None when its payload names nothing."""
    said = payload(text)
    if not said or is_cascade(text) or COMPLETION.search(said):
        return None
    for category, pattern in NCCL_CALLS:
        m = pattern.search(said)
        if m is not None:
            return WarnReading(category, m.group(0))
    found = named(text.split("\n", 1)[0])  # a CUDA error string, an errno, the transport's source file
    if found is not None and found.category != "unknown":
        return WarnReading(found.category, found.name)
    return None
