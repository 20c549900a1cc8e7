"""The hosts a job's lines name as their writers, read alike from a file's sampled ends and from all its lines.

``context`` samples the two ends of every file; a file that only those ends place on a host is read through once
more (``whole_writers``): a ``cat`` of several nodes' logs shows one node at its head and another at its tail, or
one at both, and the nodes in its middle only when it is read whole.
"""

from __future__ import annotations

import copy
import io
import os
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from l4lite.ingest.agents import agent_starts, agents_at_once
from l4lite.ingest.attribution import (
    TORCHRUN_PREFIX,
    mixed_hosts,
    names_no_node,
    normalize_host,
    stream_label,
)
from l4lite.ingest.files import GZIP_MAGIC, stdin_sample
from l4lite.ingest.hostprefix import PREFIX_LINES, PREFIX_SHARE, prefix_label
from l4lite.ingest.jsonlog import record_host
from l4lite.ingest.layout import is_loopback
from l4lite.ingest.lineclass import LEVEL_WORDS
from l4lite.ingest.pids import PID_SCAN_BYTES, RDZV_NODE, AddressBook, PidReader, whole_lines
from l4lite.ingest.timespots import strip_stream_prefixes
from l4lite.ingest.writerclocks import WriterLines, feed_writer

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
LABEL_START = frozenset(" 0123456789")  # what an ``srun --label`` line starts with
_PREFIX_START = frozenset(" 0123456789[")
MAX_PAIRS = 4096  # distinct (global, local) rank pairs kept per file
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
    field, a UCX tag, a ``host=`` banner or a torchelastic summary's ``host :``, a JSON record's host key; the
    agent's own rendezvous name, ``The node 'node-b_21635_0' ...``), or None."""
    if "{" in raw[:80] and (json_host := record_host(raw)) is not None:
        return plain_host(json_host)
    if "NCCL" in raw and (m := NCCL_WRITER.search(raw, 0, 200)):
        return plain_host(m[1])
    if raw[:1].isalnum() and (m := SYSLOG_WRITER.match(raw)) and (host := syslog_writer(m)) is not None:
        return host
    if raw[:1] == "[" and (m := UCX_WRITER.match(raw)):
        return plain_host(m[1])
    if ("ost" in raw or "OST" in raw) and (m := HOST_BANNER.search(raw)):
        return plain_host(m[1])
    if "node '" in raw and (m := RDZV_NODE.search(raw)):
        return plain_host(m[1])
    return None


def prefix_rank(raw: str, pos: int) -> int | None:
    """The global rank of the torchrun prefixes at ``pos`` (``[rank1]:`` after any ``[default1]:``), or None."""
    return prefix_ranks(raw, pos)[0]


def prefix_ranks(raw: str, pos: int) -> tuple[int | None, int | None]:
    """The global and the local rank of the torchrun prefixes at ``pos`` (``[default1]:[rank3]:``: 3 and 1; either
    None where its prefix is not there)."""
    local = None
    while (t := TORCHRUN_PREFIX.match(raw, pos)) is not None:
        if t[1] == "rank":
            return int(t[2]), local
        if t[1] == "default":
            local = int(t[2])
        pos = t.end()
    return None, local


def rank_bases(pairs: Iterable[tuple[int, int]]) -> set[int]:
    """The first global rank of the node of each ``(global, local)`` pair of torchrun's prefixes: torchrun gives a
    node's workers the global ranks ``base + local``, ``base`` its group rank times its workers, so one node's
    console shows one base whatever rank writes, and lines of two bases in one file are two nodes' workers
    (a ``cat`` of two consoles; ``[default0]:[rank0]:`` above ``[default0]:[rank2]:``), named or not."""
    return {g - loc for g, loc in pairs if g >= loc}


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
    # ``srun --label`` label -> what its lines say of their writer: the hosts they name, the global ranks of the
    # torchrun prefixes under it (``0: [rank1]: ...``), wherever they sit in the file (``label_hosts``)
    labels: Counter[tuple[str, str]]
    label_ranks: Counter[tuple[str, int]]
    ranks: Counter[int]  # the global ranks of the torchrun prefixes of all its lines (``rank_host``)
    bases: frozenset[int] = frozenset()  # the nodes' first ranks its ``[defaultL]:[rankG]:`` lines show (``rank_bases``)
    # label -> the lines that open and close its part, and what its error records state (``writerclocks``)
    writers: dict[str, WriterLines] = {}  # noqa: RUF012 - a NamedTuple's default, never changed in place


class LineVote:
    """``vote_lines`` a line at a time, so that a file read whole once can be read on from where it stopped
    (``WholeReads``)."""

    def __init__(self) -> None:
        self.hosts: Counter[str] = Counter()
        self.ties: list[tuple[int, str]] = []
        self.mentions: list[tuple[int, str]] = []
        self.labels: Counter[tuple[str, str]] = Counter()
        self.label_ranks: Counter[tuple[str, int]] = Counter()
        self.ranks: Counter[int] = Counter()
        self.pairs: set[tuple[int, int]] = set()  # (global, local) of torchrun's paired prefixes
        self.elastic: str | None = None  # a failure summary's ``host :`` waiting for its ``rank :`` line
        self.writers: dict[str, WriterLines] = {}
        self.prefixes: list[int] | None = [0, 0]  # (lines, host-prefixed lines) of the first; None: no pdsh merge

    def _prefix(self, raw: str) -> tuple[str, int] | None:
        """``raw``'s pdsh writer label (``hostprefix.prefix_label``) while the file may be a pdsh merge: once most
        of its first lines are not host-prefixed, no line is looked at again."""
        got = prefix_label(raw)
        seen = self.prefixes
        if seen is not None and seen[0] < PREFIX_LINES:
            seen[0] += 1
            seen[1] += got is not None
            if seen[0] == PREFIX_LINES and seen[1] < PREFIX_SHARE * PREFIX_LINES:
                self.prefixes = None
        return got

    def feed(self, raw: str) -> None:
        line = strip_stream_prefixes(raw)
        host = writer_host(line)
        labelled = stream_label(raw)
        label = labelled[0] if labelled is not None else None
        if label is not None:
            feed_writer(self.writers, label, raw, labelled[1])
        elif self.prefixes is not None and (prefixed := self._prefix(raw)) is not None:
            feed_writer(self.writers, prefixed[0], raw, prefixed[1])  # pdsh's ``host: ``: its writer, for its clock
        if raw[:1] in _PREFIX_START and (pair := prefix_ranks(raw, labelled[1] if labelled else 0))[0] is not None:
            rank, local = pair
            self.ranks[rank] += 1
            if local is not None and len(self.pairs) < MAX_PAIRS:
                self.pairs.add((rank, local))
            if label is not None:
                self.label_ranks[(label, rank)] += 1
        if host is not None:
            self.hosts[host] += 1
            if label is not None:
                self.labels[(label, host)] += 1
            self.elastic = host if line.lstrip().startswith("host") else None
        elif self.elastic is not None and line.lstrip().startswith("rank"):
            if r := ELASTIC_RANK_LINE.match(line):
                self.ties.append((int(r[1]), self.elastic))
            self.elastic = None
        if host is None and " on " in line and (m := ON_HOST.search(line)) and m[1] is not None \
                and (on := on_host(m[2])):
            self.mentions.append((int(m[1]), on))  # ``process 2/4 on node-b``: the global rank and where it runs

    def vote(self) -> WholeVote:
        """What the lines fed so far say (copies: feeding more changes nothing handed out)."""
        return WholeVote(Counter(self.hosts), list(self.ties), list(self.mentions), Counter(self.labels),
                         Counter(self.label_ranks), Counter(self.ranks), frozenset(rank_bases(self.pairs)),
                         {k: copy.deepcopy(w) for k, w in self.writers.items()} if len(self.writers) > 1 else {})


def vote_lines(lines: Iterable[str], also: Callable[[str], None] | None = None) -> WholeVote:
    """The writers named by ``lines`` and the rank ties of their failure summaries; ``also`` is handed each line
    on the same pass (``pids.PidReader.feed``)."""
    vote = LineVote()
    for raw in lines:
        if also is not None:
            also(raw)
        vote.feed(raw)
    return vote.vote()


def _tied(rank_ties: Iterable[tuple[int, str]]) -> dict[int, str]:
    """rank -> its host, for the ranks the job ties to one host only."""
    hosts_of: dict[int, set[str]] = {}
    for rank, host in rank_ties:
        hosts_of.setdefault(rank, set()).add(host)
    return {r: next(iter(h)) for r, h in hosts_of.items() if len(h) == 1}


def rank_host(vote: WholeVote, rank_ties: Iterable[tuple[int, str]]) -> str | None:
    """The host of a file no path places, without stream labels, whose ``[rankN]:`` lines are all of ranks the job
    ties to that one host: torchelastic's ``stderr.log`` of global rank 3 in a shared log folder is rank 3's
    node's, its lines without a prefix (a progress bar, a warning) too. A rank tied to no host or to two, or ranks
    of two hosts, give none: a ``cat`` of several nodes' consoles may show one node's ranks far more often than
    another's, and the ranks it shows of the other may be tied to none."""
    if vote.labels or vote.label_ranks:
        return None
    tied = _tied(rank_ties)
    hosts = {tied.get(rank, "") for rank in vote.ranks}
    return next(iter(hosts)) or None if len(hosts) == 1 else None


def label_hosts(vote: WholeVote, rank_ties: Iterable[tuple[int, str]]) -> dict[str, str]:
    """label -> host in an ``srun --label`` file read whole: the host its lines name as their writer (3 in 4 of
    the label's mentions, ``task_hosts``), else the one host the job ties every rank of its ``[rankN]:`` lines to
    (a failure summary's ``host :`` and ``rank :``). A reader of the merged file does the same: the label is the
    task, and the task runs where its lines, or its ranks, say it does. Ranks tied to two hosts tie no label."""
    out = task_hosts(vote.labels)
    tied = _tied(rank_ties)
    by_label: dict[str, Counter[str]] = {}
    for (label, rank), n in vote.label_ranks.items():
        by_label.setdefault(label, Counter())[tied.get(rank, "")] += n
    for label, c in by_label.items():
        if label not in out and "" not in c and len(c) == 1:
            out[label] = next(iter(c))
    return out


class JobVote(NamedTuple):
    """``vote_whole``'s answer: the rank ties and banner mentions the files read whole state, and each file's
    own vote."""

    ties: list[tuple[int, str]]
    mentions: list[tuple[int, str]]
    files: dict[str, WholeVote]
    # the most nodes one file shows at once: torchelastic agents running at once (``agents_at_once``) or workers
    # of distinct first ranks (``rank_bases``)
    agents: int = 0
    # rel -> the pids of the agents of other nodes whose first line starts a block of a mixed file (``agent_starts``)
    blocks: dict[str, list[str]] = {}  # noqa: RUF012 - a NamedTuple's default, never changed in place


def new_pid_reader() -> PidReader:
    """The pid reader a whole read of a file feeds (``vote_whole``)."""
    return PidReader(banner_host, AddressBook(plain_host), ids=True)


def vote_whole(nodes: dict[str, str | None], mixed: list[str], placed: Sequence[Any], unplaced: Sequence[Any],
               tasks: set[str], labelled: set[str], read: dict[str, PidReader],
               reads: WholeReads | None = None) -> JobVote:
    """Files that only their sampled ends placed on a host are voted again on all their lines: a ``cat`` of several
    nodes' logs shows one node at its head and another at its tail, or one in both, and the nodes in its middle
    only when it is read through. A file whose lines name several writers is mixed (``mixed`` gains it, ``nodes``
    loses it: its hostless lines are placed by pid, rank or not at all, never all on the host its first lines
    name); one whose lines name another host as their one writer takes it. Gives the rank ties that the mixed files
    and the files no path or line places (a labelled merged stream) state anywhere in them: failure summaries'
    (``ties``), process banners' (``mentions``, weak like a labelled stream's own mention of its host, and only
    where a label is a node's task over several ranks, ``tasks``: where a label is a rank, its own banner is
    ``stream_hosts``'s to weigh). In a file without labels, a banner is its writer's own word and ties its rank as
    a summary does. Pids are read on the same pass (``read``: rel -> its ``PidReader``). ``reads``: what earlier
    builds of a growing job read of each file (``WholeReads``): only the bytes written since are read."""
    ties: list[tuple[int, str]] = []
    mentions: list[tuple[int, str]] = []
    files: dict[str, WholeVote] = {}
    blocks: dict[str, list[str]] = {}
    agents = 0

    def read_whole(f: Any) -> WholeVote | None:
        kept = reads.take(f) if reads is not None else None  # read on from the last build's reading
        if kept is not None:
            whole, reader = kept
        else:
            reader = new_pid_reader()
            whole = whole_writers(f, reader.feed)
        if whole is not None:
            read[f.rel] = reader  # a stdin not held whole is left to the reading of its sample
            files[f.rel] = whole
        return whole

    for f in unplaced:
        if (vote := read_whole(f)) is not None:
            ties += vote.ties + (vote.mentions if f.rel not in tasks and f.rel not in labelled else [])
            mentions += vote.mentions if f.rel in tasks else []
            pids = read[f.rel]
            agents = max(agents, at_once := agents_at_once(pids.glog, pids.children), len(vote.bases))
            if at_once:
                blocks[f.rel] = agent_starts(pids.glog, pids.children)
            if (at_once or len(vote.bases) > 1) and vote.hosts and f.rel not in mixed:
                # two nodes' agents or workers: the one host named is one's
                mixed.append(f.rel)
            elif f.rel not in tasks and f.rel not in mixed and not vote.labels and not vote.label_ranks and \
                    (host := own_host(vote.hosts)) is not None:
                # its one writer, named only in its middle (an agent's rendezvous name); a file whose sampled ends
                # already name several writers (a pdsh merge's ``host:`` prefixes) stays no one host's
                nodes[f.rel] = host
    for f in placed:
        if (vote := read_whole(f)) is None or not vote.hosts:
            continue
        pids = read[f.rel]
        agents = max(agents, at_once := agents_at_once(pids.glog, pids.children), len(vote.bases))
        if at_once:
            blocks[f.rel] = agent_starts(pids.glog, pids.children)
        if mixed_hosts(vote.hosts) or len({h for _, h in pids.owners}) > 1 or at_once or len(vote.bases) > 1:
            # several writers named, or processes of two hosts stating their pids (each agent's failure summary,
            # its rendezvous name), or two nodes' agents or workers (``rank_bases``): a ``cat`` whose lines read as
            # their pids and blocks say
            nodes.pop(f.rel, None)
            if f.rel not in mixed:
                mixed.append(f.rel)
            ties += vote.ties + vote.mentions  # no label here to weigh a banner against: its writer's own word
        elif (host := own_host(vote.hosts)) is not None:
            nodes[f.rel] = host
    mixed.sort()
    return JobVote(ties, mentions, files, agents, {rel: b for rel, b in blocks.items() if rel in mixed and b})


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


@dataclass
class _Kept:
    """One file as far as a ``WholeReads`` has read it: its complete lines up to ``offset``."""

    ident: tuple[int, int]  # (device, inode)
    head: bytes  # its first bytes and those just before ``offset``, to tell a file replaced or rewritten
    offset: int
    vote: LineVote
    pids: PidReader
    tail: bytes = b""


class WholeReads:
    """The whole reads of ``vote_whole`` kept across context builds of a job that grows (``tail`` builds its
    context again as files appear and grow, ``live.jobfacts``): each file's complete lines are read once, a build
    reading only the bytes written since the last. The answer is a whole read's: a file that shrank or whose first
    bytes changed is read again from its start, and a last line still being written is read into copies only.
    Plain UTF-8 files only; others are read whole as before."""

    def __init__(self) -> None:
        self.kept: dict[str, _Kept] = {}
        self.bytes_read = 0  # what the builds read, for the record

    def take(self, f: Any) -> tuple[WholeVote | None, PidReader] | None:
        """``f``'s vote and pid reader over all its lines, reading only its new bytes; None for a file it does
        not keep (the caller reads it whole)."""
        path = getattr(f, "path", None)
        if not path or path == "-" or getattr(f, "parts", ()) or getattr(f, "compressed", False) or \
                (getattr(f, "encoding", None) or "utf-8").lower() not in ("utf-8", "utf8"):
            return None
        try:
            with open(path, "rb") as fh:
                st = os.fstat(fh.fileno())
                if st.st_size > PID_SCAN_BYTES:
                    return None, new_pid_reader()  # too large to read whole, as ``pids.whole_lines`` says
                kept = self.kept.get(f.rel)
                if kept is None or kept.ident != (st.st_dev, st.st_ino) or st.st_size < kept.offset or \
                        fh.read(len(kept.head)) != kept.head or os.pread(fh.fileno(), len(kept.tail),
                                                                         kept.offset - len(kept.tail)) != kept.tail:
                    kept = self.kept[f.rel] = _Kept((st.st_dev, st.st_ino), b"", 0, LineVote(), new_pid_reader())
                fh.seek(kept.offset)
                data = fh.read(st.st_size - kept.offset)
        except OSError:
            return None
        self.bytes_read += len(data)
        if not kept.offset:
            kept.head = data[:64]
        end = data.rfind(b"\n") + 1
        _feed(data[:end], kept.vote, kept.pids)
        kept.offset += end
        kept.tail = (kept.tail + data[:end])[-64:]
        vote, pids = kept.vote, kept.pids
        if end < len(data):  # a last line without its end yet: read as a whole read reads it, into copies
            vote, pids = copy.deepcopy((vote, pids))
            _feed(data[end:], vote, pids)
        return vote.vote(), copy.deepcopy(pids)


def _feed(data: bytes, vote: LineVote, pids: PidReader) -> None:
    """Lines of ``data`` as ``pids.whole_lines`` reads them (text mode: universal newlines, bad bytes replaced)."""
    for raw in io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="replace"):
        pids.feed(raw)
        vote.feed(raw)
