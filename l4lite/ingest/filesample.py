"""What the two ends of each file say (``sample_file``), read once per file for ``context.build_context``: the
hosts its lines name as their writers, the years its dates carry, its first and last lines for their times, and
the ties between ranks, labels, pids and hosts that a job's files state near their start and end. Kept apart from
the job-level reasoning that weighs these samples against each other."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from l4lite.ingest.attribution import (
    ACTOR_PREFIX,
    actor_prefix,
    address_of,
    rank_from_path,
    stream_key,
    stream_label,
)
from l4lite.ingest.decode import without_escapes
from l4lite.ingest.fileends import file_ends
from l4lite.ingest.fileranks import own_rank
from l4lite.ingest.files import GZIP_MAGIC, stdin_sample
from l4lite.ingest.hostprefix import host_prefixed, without_host_prefixes
from l4lite.ingest.jsonlog import record_host
from l4lite.ingest.pids import AddressBook, PidFacts, PidReader, file_pids, pid_facts
from l4lite.ingest.skew import anchor_key, quick
from l4lite.ingest.spans import DatedLine, lone_years
from l4lite.ingest.timespots import learn_spot, strip_stream_prefixes
from l4lite.ingest.writers import (
    ELASTIC_RANK_LINE,
    HOST_BANNER,
    NCCL_WRITER,
    ON_HOST,
    SYSLOG_WRITER,
    UCX_WRITER,
    banner_host,
    on_host,
    plain_host,
    syslog_writer,
)

SAMPLE_LINES = 20  # lines of each end of a file read in full (times, dates, syslog hosts)
MAX_FILES = 2048  # files sampled; a job of more files has them sampled evenly (each folder gets its share)
_YEAR_DATE = re.compile(r"(?<!\d)(20\d\d|19\d\d|2[1-9]\d\d)[-/.](?:0[1-9]|1[0-2])[-/.](?:0[1-9]|[12]\d|3[01])(?!\d)")
_YEAR_CTIME = re.compile(r"\b(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) \w{3} +\d{1,2} \d\d:\d\d:\d\d (?:[A-Z]{2,5} )?(\d{4})\b")
# hosts that a line names as its writer
_RANK_NEAR = re.compile(r"\[rank(\d+)\]|\brank[=:]\s*(\d+)\b")
# hosts a line names as concerned, not as its writer
_SRUN_ERROR = re.compile(r"srun: error: ([A-Za-z0-9][\w.-]*): tasks? \d")
_UPTIME = re.compile(r"\[ *\d+\.\d+\] ")


@dataclass
class FileSample:
    """What the two ends of one file say."""

    hosts: Counter[str] = field(default_factory=Counter)  # hosts named as the writer of a line
    years: Counter[int] = field(default_factory=Counter)
    lines: list[str] = field(default_factory=list)  # first and last lines, for their times
    head: int = 0  # how many of ``lines`` are the file's first lines (a start known only when they hold a time)
    ties: list[tuple[int, str]] = field(default_factory=list)
    mentions: list[tuple[int, str]] = field(default_factory=list)  # from process banners: weaker than ``ties``
    system: int = 0  # lines of the node's own logs (syslog, kernel), not of the job's processes
    anchors: list[tuple[str, str | None, str]] = field(default_factory=list)  # (key, host in the line, line)
    labels: Counter[tuple[str, str]] = field(default_factory=Counter)  # (srun label, host its line names)
    label_streams: dict[str, set[str]] = field(default_factory=dict)  # srun label -> torchrun prefixes under it
    spot: str = ""  # where its lines carry their time when not first (``timespots``), learnt from its head
    addresses: Counter[tuple[str, str]] = field(default_factory=Counter)  # (IP, host named beside it or "": own)
    children: set[tuple[str, str]] = field(default_factory=set)  # (agent pid, worker pid): ``child_pid``
    owners: set[tuple[str, str]] = field(default_factory=set)  # (worker pid, host) from a failure summary
    on_hosts: set[str] = field(default_factory=set)  # hosts a process banner runs on (``ON_HOST``)
    banners: Counter[str] = field(default_factory=Counter)  # hosts banners of the file's own process run on
    own_rank: int | None = None  # the rank its process states at start-up (``fileranks.own_rank``)
    prefixed: bool = False  # pdsh's ``host: `` on its lines (``hostprefix.host_prefixed``, from its head)


def whole_pids(f: Any, s: FileSample, read: dict[str, PidReader], quotes: set[tuple[str, str, str | None]]) -> PidFacts:
    """``pid_facts`` of a whole file (from ``read`` where ``writers.vote_whole`` read it, else ``pids.file_pids``), or of
    stdin as far as it is held (``files.stdin_sample``); the addresses its lines tie to hosts go into its sample:
    a merged file's raylet start-up line (``address: IP ... hostname: NAME``) sits in its middle."""
    book = AddressBook(plain_host)
    if (reader := read.get(f.rel)) is not None:
        facts, book = reader.facts, reader.addresses or book
        quotes |= reader.quotes
    elif getattr(f, "path", None) != "-":
        facts = file_pids(f, banner_host, book, quotes)
    else:
        data = stdin_sample().data
        facts = pid_facts(data.decode(getattr(f, "encoding", None) or "utf-8", "replace").splitlines(),
                          banner_host, book, quotes) if not data.startswith(GZIP_MAGIC) else (set(), set())
    s.addresses = book.found or s.addresses
    return facts


def _own_banner(raw: str, rank: int, path_rank: int | None, label_streams: dict[str, set[str]],
                host: str) -> str | None:
    """The host of an unlabelled banner naming its file's own process (``process 2/4 on node-b`` in
    ``process_2.log``), else None. A labelled line's banner is left to ``stream_hosts`` (a mention, weaker than any
    host header); an ``srun --label`` label whose banners name several processes is a node's task, not a rank
    (``label_tasks``)."""
    key = stream_key(raw)
    if key is None:
        return host if rank == path_rank else None
    if key.isdigit():
        label_streams.setdefault(key, set()).add(f"rank{rank}")  # as a ``[rankN]:`` prefix under it
    return None


def sample_file(f: Any) -> tuple[FileSample, set[str]]:
    """A file's sample and the hosts its lines name as concerned (``srun: error: NODE``)."""
    s = FileSample()
    others: set[str] = set()
    head, tail = file_ends(f)
    if host_prefixed(head):  # pdsh: each line's host is its writer; the rest of it is read as any line
        (head, tail), s.hosts = without_host_prefixes(head, tail)
        s.prefixed = True
    # a file read whole in its head ends with the head's last lines: its span runs to its last line
    s.lines = head[:SAMPLE_LINES] + (tail[-SAMPLE_LINES:] if tail else head[SAMPLE_LINES:][-SAMPLE_LINES:])
    s.head = min(len(head), SAMPLE_LINES)
    s.spot = learn_spot(head)
    every = (*head, *tail)
    first, last = min(len(head), SAMPLE_LINES), len(every) - min(len(tail), SAMPLE_LINES)
    elastic_host: str | None = None
    path_rank = rank_from_path(getattr(f, "rel", "") or "")
    s.children, s.owners = pid_facts(every)
    s.own_rank = own_rank(x for x in without_escapes(head) if stream_key(x) is None
                          and ACTOR_PREFIX.search(x, 0, 200) is None)
    seen: list[str] = []  # the lines read below, and which of them carry a year
    dated: list[DatedLine] = []
    for i, raw in enumerate(every):
        # the sampled lines are read in full; the others only when they may name a host (most do not)
        if first <= i < last and elastic_host is None and "NCCL" not in raw and "ost" not in raw \
                and "OST" not in raw and "srun: error:" not in raw and " on " not in raw and not quick(raw) \
                and '"node' not in raw and 'pod_name"' not in raw:
            continue
        line = strip_stream_prefixes(raw, s.label_streams)
        seen.append(line)
        m = _YEAR_DATE.search(line, 0, 64) or _YEAR_CTIME.search(line, 0, 64)
        if m:
            s.years[int(m[1])] += 1
            dated.append(DatedLine(len(seen) - 1, int(m[1]), m[0]))
        host = None
        if "{" in line[:80] and (json_host := record_host(line)) is not None:
            host = plain_host(json_host)  # a JSON record's host key: its writer, as a header's host field is
        if host is None and (" NCCL " in line or "] NCCL" in line):
            m = NCCL_WRITER.search(line, 0, 160)
            host = plain_host(m[1]) if m else None
        if host is None and line[:1].isalnum():
            m = SYSLOG_WRITER.match(line)
            if m and (host := syslog_writer(m)) is not None:
                s.system += 1
        elif _UPTIME.match(line):
            s.system += 1
        if host is None and line.startswith("[") and ":" in line[:80]:
            m = UCX_WRITER.match(line)
            host = plain_host(m[1]) if m else None
        if host is None and ("host" in line or "Host" in line or "HOST" in line):
            m = HOST_BANNER.search(line)
            if m:
                host = plain_host(m[1])
                stripped = line.lstrip()
                elastic_host = host if stripped.startswith("host") else None
                r = _RANK_NEAR.search(line)
                if host and r:
                    s.ties.append((int(r[1] or r[2]), host))
        elif elastic_host is not None and line.lstrip().startswith("rank"):
            r = ELASTIC_RANK_LINE.match(line)
            if r:
                s.ties.append((int(r[1]), elastic_host))
            elastic_host = None
        if host is None and " on " in line and (m := ON_HOST.search(line)) and (on := on_host(m[2])):
            s.on_hosts.add(on)  # a known host of the job; which stream runs there is ``stream_hosts``'s to say
            if m[1] is not None:  # a process index or a rank: the global rank, tied to where it runs (a mention)
                s.mentions.append((int(m[1]), on))
            if m[1] is not None and (own := _own_banner(raw, int(m[1]), path_rank, s.label_streams, on)):
                s.banners[own] += 1  # a process index or a rank: the global rank (a task or worker may not be)
            elif (a := actor_prefix(raw)) is not None and a[2] is None:
                s.banners[on] += 1  # an actor on the driver's own node (its prefix names no other node's address)
        if host is not None:
            s.hosts[host] += 1
            if (labelled := stream_label(raw)) is not None:
                s.labels[(labelled[0], host)] += 1
        if "address" in line or "node IP" in line:
            address_of(line, s.addresses, plain_host)
        elif "ip=" in raw:  # a relayed actor's banner: the prefix's address is the host it names
            address_of(raw, s.addresses, plain_host, banner_host)
        if quick(raw):
            key = anchor_key(line)
            if key is not None:
                s.anchors.append((key, host, line))
        if "srun: error:" in line:
            m = _SRUN_ERROR.search(line)
            if m and plain_host(m[1]):
                others.add(plain_host(m[1]) or "")
    if dated:  # a date of another year that is no time of its line's, or of no line near it, votes for no year
        s.years -= lone_years(seen, dated, getattr(f, "mtime", None), s.spot)
    return s, others


def sampled_files(files: Sequence[Any]) -> list[Any]:
    whole = {}
    for f in files:  # pieces of one file are sampled once
        whole.setdefault(getattr(f, "path", ""), f)
    out = list(whole.values())
    if len(out) > MAX_FILES:
        step = len(out) / MAX_FILES
        out = [out[int(i * step)] for i in range(MAX_FILES)]
    return out
