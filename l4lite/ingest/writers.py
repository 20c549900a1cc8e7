"""The hosts a job's lines name as their writers, read alike from a file's sampled ends and from all its lines.

``context`` samples the two ends of every file; a file that only those ends place on a host is read through once
more (``whole_writers``): a ``cat`` of several nodes' logs shows one node at its head and another at its tail, or
one at both, and the nodes in its middle only when it is read whole.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from l4lite.ingest.attribution import names_no_node, normalize_host
from l4lite.ingest.files import GZIP_MAGIC, stdin_sample
from l4lite.ingest.layout import is_loopback
from l4lite.ingest.lineclass import LEVEL_WORDS
from l4lite.ingest.pids import whole_lines
from l4lite.ingest.timespots import strip_stream_prefixes

# hosts that a line names as its writer
NCCL_WRITER = re.compile(r"(?:^|[\s\]:>])([A-Za-z0-9][\w.-]*):\d+:\d+ \[\d+\] ")
SYSLOG_WRITER = re.compile(r"(?:[A-Z][a-z]{2} +\d{1,2} \d\d:\d\d:\d\d(?:\.\d+)?|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d"
                           r"(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)) ([A-Za-z0-9][\w.-]*) ([\w./@-]+?)(?:\[\d+\])?: ")
UCX_WRITER = re.compile(r"\[([A-Za-z0-9][\w.-]*):\d+ *:\d+:\d+\] ")
HOST_BANNER = re.compile(r"(?<![\w.-])(?:host|hostname|host name|Hostname|HOSTNAME|Host)\s*[=:]\s*([A-Za-z0-9][\w.-]*)")
# a numbered process naming the host it runs on (``process 2/4 on compute-beta: 1 local device(s)``, ``rank 3 on
# node-b``): the host is the line's writer; an endpoint (``on node-a:29500``) is not
ON_HOST = re.compile(r"\b(?:(?:[Pp]rocess|[Rr]ank)[ _-]?(\d{1,6})|(?:[Tt]ask|[Ww]orker)[ _-]?\d{1,6})(?:/\d+| of \d+)? "
                      r"(?:is )?(?:(?:running|up) )?on "
                      r"(?:host |node )?([A-Za-z0-9][\w.-]*[\w])(?![\w.-]|:\d)")
ELASTIC_RANK_LINE = re.compile(r"\s*rank\s*: (\d+)")
_HAS_LETTER = re.compile(r"[A-Za-z]")
_IP = re.compile(r"\d{1,3}([.-])\d{1,3}\1\d{1,3}\1\d{1,3}$")


def plain_host(raw: str) -> str | None:
    """A host as lines name it; None for loopback names and bare numbers (a port, a pid)."""
    h = normalize_host(raw)
    if not h or is_loopback(h) or not (_HAS_LETTER.search(h) or _IP.match(h)):
        return None
    return h


def on_host(raw: str) -> str | None:
    """The host of a process banner (``ON_HOST``) when it looks like a machine: a hyphen or a digit in it (``on
    the``, ``on cpu`` are words), and not a device, a part or a run (``gpu-0``, ``attempt_1``)."""
    h = plain_host(raw)
    return h if h and ("-" in h or any(c.isdigit() for c in h)) and not names_no_node(h) else None


def syslog_writer(m: re.Match[str]) -> str | None:
    """The host of a syslog header (``SYSLOG_WRITER``), or None: a level word where the host or the program sits
    is a logger's line (``<time> <logger> INFO: ...``, Python's ``%(name)s %(levelname)s``), which names no host."""
    if m[1] == "kernel" or m[1] in LEVEL_WORDS or m[2] in LEVEL_WORDS:
        return None
    return plain_host(m[1])


def writer_host(raw: str) -> str | None:
    """The host a line names as its writer, read as the context's sample reads it (an NCCL header, a syslog host
    field, a UCX tag, a ``host=`` banner or a torchelastic summary's ``host :``), or None."""
    if "NCCL" in raw and (m := NCCL_WRITER.search(raw, 0, 200)):
        return plain_host(m[1])
    if raw[:1].isalnum() and (m := SYSLOG_WRITER.match(raw)) and (host := syslog_writer(m)) is not None:
        return host
    if raw[:1] == "[" and (m := UCX_WRITER.match(raw)):
        return plain_host(m[1])
    if ("ost" in raw or "OST" in raw) and (m := HOST_BANNER.search(raw)):
        return plain_host(m[1])
    return None


def own_host(hosts: Counter[str]) -> str | None:
    """The host a file's lines name as their writer when they name one (at least 3 in 4 of the mentions)."""
    if not hosts:
        return None
    host, n = hosts.most_common(1)[0]
    return host if n * 4 >= 3 * sum(hosts.values()) else None


def task_hosts(labels: Counter[tuple[str, str]]) -> dict[str, str]:
    """The host of each ``srun --label`` label of a file whose lines name at least one (3 in 4 of a label's
    mentions, as ``own_host``); labels of several hosts are left out."""
    by_label: dict[str, Counter[str]] = {}
    for (label, host), n in labels.items():
        by_label.setdefault(label, Counter())[host] += n
    return {label: h for label, c in by_label.items() if (h := own_host(c)) is not None}


class WholeVote(NamedTuple):
    """What all of a file's lines say of their writers: the hosts named, and the ranks tied to a host by a
    torchelastic failure summary (``host :`` then ``rank :``) or a process banner (``process 2/4 on node-b``)."""

    hosts: Counter[str]
    ties: list[tuple[int, str]]
    mentions: list[tuple[int, str]]  # from banners: weak, as a labelled stream's own mention of its host


def vote_lines(lines: Iterable[str], also: Callable[[str], None] | None = None) -> WholeVote:
    """The writers named by ``lines`` and the rank ties of their failure summaries; ``also`` is handed each line
    on the same pass (``pids.PidReader.feed``)."""
    hosts: Counter[str] = Counter()
    ties: list[tuple[int, str]] = []
    mentions: list[tuple[int, str]] = []
    elastic: str | None = None
    for raw in lines:
        if also is not None:
            also(raw)
        line = strip_stream_prefixes(raw)
        host = writer_host(line)
        if host is not None:
            hosts[host] += 1
            elastic = host if line.lstrip().startswith("host") else None
        elif elastic is not None and line.lstrip().startswith("rank"):
            if r := ELASTIC_RANK_LINE.match(line):
                ties.append((int(r[1]), elastic))
            elastic = None
        if host is None and " on " in line and (m := ON_HOST.search(line)) and m[1] is not None \
                and (on := on_host(m[2])):
            mentions.append((int(m[1]), on))  # ``process 2/4 on node-b``: the global rank and where it runs
    return WholeVote(hosts, ties, mentions)


def whole_writers(f: Any, also: Callable[[str], None] | None = None) -> WholeVote | None:
    """``vote_lines`` of a whole file (``files.InputFile``, through ``pids.whole_lines``: a rotated log's pieces
    in order, a gzip file inflated), or None when it cannot be read whole cheaply (stdin not held whole, a file
    over ``PID_SCAN_BYTES``)."""
    if getattr(f, "path", None) == "-":
        data, whole = stdin_sample()
        if not whole or data.startswith(GZIP_MAGIC):
            return None
        return vote_lines(data.decode(getattr(f, "encoding", None) or "utf-8", "replace").splitlines(), also)
    lines = whole_lines(f)
    return vote_lines(lines, also) if lines is not None else None


def banner_host(message: str) -> str | None:
    """The host a process banner names (``process 2/4 on node-b``), its writer's host, or None."""
    return on_host(m[2]) if (m := ON_HOST.search(message)) else None
