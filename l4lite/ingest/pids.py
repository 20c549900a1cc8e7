"""Process ids and addresses as the lines of a job tie them to hosts.

torchelastic's agent names its workers' pids, its failure summary names each failed worker's host and pid, and a
process's banner names the host its glog header's id runs on: together they tie an id to a host, so that a merged
file's hostless lines are placed by the id in their header (``named_by_pid``). A file no path places is read
whole for these facts, and for the addresses its lines tie to hosts on the same pass (``pid_facts``).
"""

from __future__ import annotations

import gzip
import os
import re
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from l4lite.ingest.agents import FileAgents, GlogSpans
from l4lite.ingest.attribution import (
    ELASTIC_FIELD,
    ELASTIC_RANK,
    MPI_TAG,
    SRUN_LABEL,
    TORCHRUN_PREFIX,
    address_of,
    normalize_host,
    strip_stream_prefix,
)
from l4lite.ingest.fileranks import named_ids, own_id

# torchelastic's agent writes glog lines (``W1203 14:40:04.257000 19477 torch/...] Sending process 19644 closing
# signal SIGTERM``): the header's number is the agent's pid, the message names its workers' pids; the failure
# summary names each failed worker's host and pid (``host : node-b`` ... ``exitcode : -15 (pid: 19644)``)
GLOG_PID = re.compile(r"[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+ +(\d+) ")
_CHILD_PID = re.compile(r"(?:Sending process|\(pid:) (\d+)\b")
SUMMARY_PID = re.compile(r"\s*exitcode\s*: .*\(pid: (\d+)\)")
# torchelastic's dynamic rendezvous names each agent ``<host>_<pid>_<n>`` (``The node 'node-b_21635_0' has failed
# to send a keep-alive heartbeat``): the agent's own glog lines carry that pid in their header
RDZV_NODE = re.compile(r"[\]:] The node '([A-Za-z][\w.-]*?)_(\d+)_\d+' ")


def child_pid(line: str) -> tuple[str, str] | None:
    """``(agent pid, worker pid)`` that an agent's glog line names, or None."""
    m = GLOG_PID.match(line)
    c = _CHILD_PID.search(line, m.end()) if m else None
    return (m[1], c[1]) if m and c else None


def pid_hosts(children: Iterable[tuple[str, str]], owners: Iterable[tuple[str, str]]) -> dict[str, str]:
    """pid -> host: a worker's from the failure summary that names its host, an agent's from its workers'. A pid
    tied to two hosts (pids repeat across machines) ties none."""
    hosts: dict[str, set[str]] = {}
    for pid, host in owners:
        hosts.setdefault(pid, set()).add(host)
    for agent, worker in children:
        for host in tuple(hosts.get(worker, ())):
            hosts.setdefault(agent, set()).add(host)
    return {pid: next(iter(h)) for pid, h in hosts.items() if len(h) == 1}


def named_by_pid(records: Iterable[Any], pids: dict[str, str],
                 quoted: dict[str, Quoted] | None = None) -> Iterator[Any]:
    """Records of a file whose path names no node, a line that names no host taking the host the job ties to the
    pid in its glog header (``pid_hosts``): in a merged file, the agent's ``Sending process N closing signal``
    is its node's. A record with no header of its own right after such a line, timed by it (the traceback the
    process printed to its stream after its last logged step), is that process's too; any other line ends it.
    Then the tracebacks a failure summary quotes (``quote_place``), then ``between_one_node``: ``Placer`` a record at a
    time, which ``tail`` drives as its lines come."""
    return Placer(pids, quoted or {}).place(records)


class Placer:
    """``named_by_pid`` a record at a time: ``feed`` gives the records placed so far (none while a run between two
    records of one node waits for its end), ``flush`` the rest unplaced (the file's end, or a stream gone quiet).
    The state it keeps is that of a read of the file from its start: the host a glog pid named on the record before
    (``pid_place``) and the run ``between_one_node`` holds."""

    __slots__ = ("pids", "quoted", "last", "between")

    def __init__(self, pids: dict[str, str], quoted: dict[str, Quoted]) -> None:
        self.pids, self.quoted = pids, quoted
        self.last: tuple[str, float | None] | None = None  # the host a pid named on the record before, and its time
        self.between = BetweenOneNode()

    def feed(self, r: Any) -> list[Any]:
        self.last = pid_place(r, self.pids, self.last)
        if self.quoted:
            quote_place(r, self.quoted)
        return self.between.feed(r)

    def flush(self) -> list[Any]:
        return self.between.flush()

    def place(self, records: Iterable[Any]) -> Iterator[Any]:
        """Every record of a whole read, placed (``feed`` each, then ``flush``)."""
        for r in records:
            yield from self.feed(r)
        yield from self.flush()

    def lead(self, records: Iterable[Any]) -> Iterator[Any]:
        """``records`` (the lines before where a read starts inside its file, handed on before) go through, to
        leave the state a read from the file's start would have there; the run they end in is not handed on."""
        for r in records:
            self.feed(r)
            yield r
        self.between.held = []

    @property
    def held_line(self) -> int | None:
        """The first line of the records held, or None."""
        return self.between.held[0].line if self.between.held else None


class Quoted(NamedTuple):
    """The one host whose failure summaries quote an exception line, and the local ranks they quote it for."""

    host: str
    local_ranks: frozenset[str]


# a summary entry's ``traceback :`` field ends where its frame lines and the exception line (indented) end
_FIELD_END = re.compile(r"[=-]{8}|\[\d+\]:\s*$")
_MODULE = re.compile(r"(?:[A-Za-z_]\w*\.)+(?=\w+:)")  # ``torch.distributed.DistStoreError:`` -> its class name
_ERROR_FILE = re.compile(r'\{"message": ?\{"message": ?"')  # torchelastic's ``error.json``, one JSON line


def exception_key(text: str) -> str | None:
    """What a record's exception says, as a failure summary quotes it: the last line without its stream label,
    indentation and module path (``RuntimeError: ... Unable to find address for: ib0``); None for a line that
    says no exception, and for an ``error.json`` record (``errorfile.error_record_places`` places those by the
    records of the process that raised it; placing them here too cost 032's evidence in a ``cat``)."""
    last = strip_stream_prefix(text[text.rfind("\n") + 1:]).strip()
    if _ERROR_FILE.match(last) is not None:
        return None
    last = _MODULE.sub("", last, count=1)
    head = last.split(":", 1)[0]
    return last if ": " in last and head.isidentifier() and head[0].isupper() else None


def quoted_hosts(quotes: Iterable[tuple[str, str, str | None]]) -> dict[str, Quoted]:
    """exception key -> ``Quoted`` from ``(exception line, host, local rank)`` that failure summaries state. An
    exception that summaries of two hosts quote (every node failed alike) places nothing."""
    hosts: dict[str, set[str]] = {}
    ranks: dict[str, set[str]] = {}
    for line, host, local in quotes:
        if (key := exception_key(line)) is not None:
            hosts.setdefault(key, set()).add(host)
            ranks.setdefault(key, set()).update((local,) if local is not None else ())
    return {k: Quoted(next(iter(h)), frozenset(ranks[k])) for k, h in hosts.items() if len(h) == 1}


def quote_place(r: Any, quoted: dict[str, Quoted]) -> None:
    """A hostless record (``r``) whose exception a failure summary quotes is the process's the summary names: the
    summary (``host : node-12``, ``rank : 2 (local_rank: 0)``, ``traceback : ...``) is the agent's account of the
    traceback its worker printed, wherever a ``cat`` put that traceback (first in its node's console, before any
    of the node's own lines). A ``[defaultN]:`` label must be a local rank the summary names; a record with a
    global rank is left to its rank's host."""
    if r.node is None and (key := exception_key(r.text)) is not None and key in quoted:
        q = quoted[key]
        last = r.text[r.text.rfind("\n") + 1:]
        start = m.end() if (m := SRUN_LABEL.match(last) or MPI_TAG.match(last)) else 0
        label = TORCHRUN_PREFIX.match(last, start)
        if (label is None and r.rank is None) or (label is not None and _local_only(last[start:])
                                                  and label[2] in q.local_ranks):
            r.node = q.host


BLOCK_RECORDS = 2000  # hostless records held while waiting for the next placed one


def between_one_node(records: Iterable[Any]) -> Iterator[Any]:
    """A run of records that no line places (no host, no rank, no stream label but a local rank's, ``_local_only``)
    between two records of one node,
    with no record of another node or stream between them, is that node's: a ``cat`` of several nodes' files holds
    each file whole, so what sits inside one node's block (a thread's glog line whose id no banner ties, a stack
    dump after it) was written there. A run longer than ``BLOCK_RECORDS`` stays unplaced."""
    between = BetweenOneNode()
    for r in records:
        yield from between.feed(r)
    yield from between.flush()


class BetweenOneNode:
    """``between_one_node`` a record at a time: ``feed`` gives the records whose placing is settled, in order;
    ``flush`` the run still held, unplaced (the node of the last record placed is kept: a run that a quiet stream
    cut short and that then goes on is still placed by the record that ends it)."""

    __slots__ = ("held", "before")

    def __init__(self) -> None:
        self.held: list[Any] = []
        self.before: str | None = None  # the node of the last record placed, when nothing else came after it

    def feed(self, r: Any) -> list[Any]:
        held, before = self.held, self.before
        labelled = _labelled(r.text)
        local = labelled and r.node is None and _local_only(r.text)
        if r.node is None and (r.rank is None or local) and before is not None and (local or not labelled):
            held.append(r)
            if len(held) > BLOCK_RECORDS:  # too long a run for one node's block: left unplaced
                self.held, self.before = [], None
                return held
            return []
        node = None if labelled else r.node
        # a rank's line placed by its global rank (``[default0]:[rank2]:``) inside its node's block does not end the
        # block: the console's local-rank lines before it are the node's, and so is an error record (one line, its
        # node's, which ``errorfile`` could not tie to a rank); the unlabelled lines of a rank's own file (its
        # ``stdout.log``) stay apart: placed without their rank they read as the node's console (merged-plain 052)
        ranked = labelled and r.node is not None and r.node == before
        if ranked:
            node = before
        if node is not None and node == before:
            for h in held:
                if not ranked or _labelled(h.text) or _ERROR_FILE.match(h.text):
                    h.node = node
        self.held, self.before = [], node
        held.append(r)
        return held

    def flush(self) -> list[Any]:
        held, self.held = self.held, []
        return held


def _local_only(text: str) -> bool:
    """Whether a line's only label is torchrun's local rank (``[default0]:``, not followed by ``[rank2]:``): local
    ranks repeat on every node, so in a ``cat`` of several nodes' consoles the label says nothing of whose it is
    and its block does (the node's agent lines around it). A label repeated (``[default1]: [default1]:``, two
    writes of one rank's stream meeting on a line) is still a local rank's only."""
    m = TORCHRUN_PREFIX.match(text)
    if m is None or m[1] == "rank":
        return False
    while (again := TORCHRUN_PREFIX.match(text, m.end())) is not None:
        if again[0].strip() != m[0].strip():
            return False
        m = again
    return True


def _labelled(text: str) -> bool:
    """Whether a line carries a stream label or a rank prefix (its stream, not its neighbours, says whose it is)."""
    return bool(text) and (text[0].isdigit() or text[0] in " [(") and strip_stream_prefix(text) != text


def pid_place(r: Any, pids: dict[str, str],
              last: tuple[str, float | None] | None) -> tuple[str, float | None] | None:
    """``named_by_pid``'s first step on one record: a hostless glog line takes its pid's host, a headerless record
    timed by it right after it the same; ``last``: the host a pid named on the record before and its time (None
    when none did), returned for the next record."""
    if r.node is not None:
        return None
    if (m := GLOG_PID.match(strip_stream_prefix(r.text))) is not None:
        r.node = pids.get(m[1])
        return (r.node, r.time) if r.node is not None else None
    if last is not None and r.rank is None and r.time is not None and r.time == last[1]:
        r.node = last[0]
        return last
    return None


@dataclass
class AddressBook:
    """The (IP, host) statements a file's lines make (``address_of``; host "": the file's own address), and how a
    host named beside an address is read (loopback names and bare numbers are none)."""

    host_of: Callable[[str], str | None]
    found: Counter[tuple[str, str]] = field(default_factory=Counter)


PID_SCAN_BYTES = 64 << 20  # a file naming no node is read whole for its pids up to this size (a merged console)
PidFacts = tuple[set[tuple[str, str]], set[tuple[str, str]]]


class PidReader:
    """``pid_facts`` a line at a time, so that a pass that reads a whole file for something else (``writers``'
    vote of its writers) gathers its pids too, and the file is read once. With ``ids`` it also notes the long hex
    ids its lines name and those they state as their node's own (``fileranks.id_hosts``)."""

    def __init__(self, banner: Callable[[str], str | None] | None = None,
                 addresses: AddressBook | None = None, ids: bool = False) -> None:
        self.banner, self.addresses = banner, addresses
        self.children: set[tuple[str, str]] = set()
        self.owners: set[tuple[str, str]] = set()
        self.host: str | None = None  # a failure summary's ``host :`` waiting for its ``exitcode`` line
        # (exception line, host, local rank) a summary entry's ``traceback :`` field quotes (``quoted_hosts``)
        self.quotes: set[tuple[str, str, str | None]] = set()
        self.entry: tuple[str, str | None] | None = None  # (host, local rank) of the summary entry being read
        self.quote: str | None = None  # inside its ``traceback :`` field: the last line read so far
        self.quoting = False
        self.started: set[str] = set()  # ids its lines state as their node's own (``fileranks.id_hosts``)
        self.named: set[str] | None = set() if ids else None  # the long hex ids its lines name (``ids``)
        self.glog = GlogSpans()  # where each glog pid's lines sit (``agents.agents_at_once``)

    def feed(self, raw: str) -> None:
        banner = self.banner
        self.glog.feed(raw)
        if self.quoting and self._quoted(raw):
            return
        if self.named is not None and (found := named_ids(raw)):
            self.named.update(found)
            if (own := own_id(raw)) is not None:
                self.started.add(own)
                return
        if self.addresses is not None and ("address" in raw or "ip=" in raw):
            address_of(strip_stream_prefix(raw), self.addresses.found, self.addresses.host_of, banner)
        if "(pid: " not in raw and "Sending process" not in raw and "host" not in raw and "local_rank" not in raw \
                and "traceback" not in raw and (banner is None or " on " not in raw) and "node '" not in raw:
            return
        line = strip_stream_prefix(raw)
        if (g := GLOG_PID.match(line)) and (n := RDZV_NODE.search(line, g.end())) and n[2] == g[1]:
            self.owners.add((n[2], normalize_host(n[1])))
            return
        m = ELASTIC_FIELD.match(line)
        if m and m[1] in ("rank", "traceback"):
            self._entry_field(m[1], m[2])
        if m and m[1] == "host":
            self.host = normalize_host(m[2]) if m[2].strip() else None
            self.entry = (self.host, None) if self.host else None
        elif self.host is not None and (p := SUMMARY_PID.match(line)):
            self.owners.add((p[1], self.host))
            self.host = None
        elif (c := child_pid(line)) is not None:
            self.children.add(c)
        elif banner is not None and (g := GLOG_PID.match(line)) and (own := banner(line[g.end():])):
            self.owners.add((g[1], own))

    def _entry_field(self, name: str, value: str) -> None:
        """A summary entry's rank (its local rank kept) or the start of its quoted traceback."""
        if self.entry is None:
            return
        if name == "rank":
            r = ELASTIC_RANK.match(value.strip())
            self.entry = (self.entry[0], r[2] if r else None)
        elif value.startswith("Traceback"):  # not ``To enable traceback see: ...`` (no error file)
            self.quoting, self.quote = True, None

    def _quoted(self, raw: str) -> bool:
        """Whether a line belongs to the traceback a summary entry quotes (indented under ``traceback :``); at
        the field's end its last line, the exception, is noted with the entry's host and local rank."""
        line = strip_stream_prefix(raw)
        text = line.strip()
        if not text or (line[:1].isspace() and not _FIELD_END.match(text) and not ELASTIC_FIELD.match(line)):
            self.quote = text or self.quote
            return True
        if self.quote is not None and self.entry is not None:
            self.quotes.add((self.quote, *self.entry))
        self.quoting, self.quote, self.entry = False, None, None
        return False

    @property
    def facts(self) -> PidFacts:
        return self.children, self.owners


def pid_facts(lines: Iterable[str], banner: Callable[[str], str | None] | None = None,
              addresses: AddressBook | None = None,
              quotes: set[tuple[str, str, str | None]] | None = None) -> PidFacts:
    """The ``(agent pid, worker pid)`` pairs (``child_pid``) and ``(worker pid, host)`` pairs (a failure summary's
    ``host :`` line, then its ``exitcode : N (pid: P)`` line; a glog line whose message is its process's banner,
    ``banner`` telling the host it names: absl's ``process 2/4 on node-b``) that lines state. With ``addresses``,
    the addresses the lines tie to hosts are counted into it on the same pass (``address_of``); with ``quotes``,
    the exceptions failure summaries quote go into it (``PidReader.quotes``)."""
    reader = PidReader(banner, addresses)
    for raw in lines:
        reader.feed(raw)
    if quotes is not None:
        quotes |= reader.quotes
    return reader.facts


def file_pids(f: Any, banner: Callable[[str], str | None] | None = None,
              addresses: AddressBook | None = None,
              quotes: set[tuple[str, str, str | None]] | None = None) -> PidFacts:
    """``pid_facts`` of a whole file (``files.InputFile``: a rotated log through all its pieces, a gzip file
    inflated); none for stdin or one too large."""
    lines = whole_lines(f)
    return pid_facts(lines, banner, addresses, quotes) if lines is not None else (set(), set())


def _read_parts(parts: list[tuple[str, bool]], encoding: str) -> Iterator[str]:
    for path, compressed in parts:
        try:
            with (gzip.open(path, "rt", encoding=encoding, errors="replace") if compressed
                  else open(path, encoding=encoding, errors="replace")) as fh:
                yield from fh
        except (OSError, EOFError, zlib.error):  # unreadable or cut short: the reader warns about it
            return


def whole_lines(f: Any, limit: int = PID_SCAN_BYTES) -> Iterator[str] | None:
    """A whole file's lines, read once: a rotated log's pieces oldest first (``x.log.2.gz``, ``x.log.1``,
    ``x.log``: one stream, so a pid's statement in an older piece still names its host), a gzip file inflated;
    None for stdin, a pipe or a file over ``limit`` bytes (a gzip piece counts ten times its size)."""
    path = getattr(f, "path", None)
    if not path or path == "-":
        return None
    parts = getattr(f, "parts", ()) or (f,)
    try:
        size = sum(os.path.getsize(p.path) * (10 if getattr(p, "compressed", False) else 1) for p in parts)
    except OSError:
        return None
    if size > limit:
        return None
    return _read_parts([(p.path, bool(getattr(p, "compressed", False))) for p in parts],
                       getattr(f, "encoding", None) or "utf-8")


def whole_agents(f: Any) -> FileAgents | None:
    """What a whole file (``whole_lines``) shows of its torchelastic agents (``agents.FileAgents``), or None."""
    lines = whole_lines(f)
    if lines is None:
        return None
    reader = PidReader()
    for raw in lines:
        reader.feed(raw)
    return FileAgents(reader.glog, reader.children)


def file_agents(read: dict[str, PidReader], files: Iterable[Any], starts: dict[str, float],
                ends: dict[str, float]) -> Callable[[str], FileAgents | None]:
    """rel -> what its file shows of its agents: from its whole read (``read``) if it was read whole, else read
    whole now (``whole_agents``), with the file's sampled first and last times (``starts``, ``ends``); None for a
    path not among ``files``."""
    by_rel = {f.rel: f for f in files}

    def agents_of(rel: str) -> FileAgents | None:
        if (reader := read.get(rel)) is not None:
            return FileAgents(reader.glog, reader.children, starts.get(rel), ends.get(rel))
        found = whole_agents(by_rel[rel]) if rel in by_rel else None
        return found._replace(first=starts.get(rel), last=ends.get(rel)) if found is not None else None
    return agents_of
