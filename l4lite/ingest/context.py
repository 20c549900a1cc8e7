"""Facts about a whole job, worked out once before its lines are read, so that one odd file or line cannot move
them, and every entry point (analyze, parse with one process or many, tail, Dask workers) reads the job alike.

``build_context(files, node_from)`` reads what the two ends of each of the job's files say (``filesample``; a file
no path places is read whole, ``writers``, ``pids``) and gives a ``JobContext``: plain data, sent as is to shards
and workers:

- the node of every file: the folder level or file name that names nodes in the whole job (``layout``), checked
  against the hosts the lines name; a file outside that level takes the one host its own lines name;
- rank -> host ties that the sampled lines show (``host=`` banners next to ``[rankN]``, torchelastic summaries),
  and the rank a process file states of itself (``fileranks``);
- the job's year, by a vote of its files (each file votes once, for the year most of its dated lines carry), so
  that formats without a year (glog, syslog) get it even when one file carries a wild date; and whether slashed
  dates put the day first (``dateorder``);
- the job's time span from its files' first and last times, robust to the extreme: a dmesg capture that starts
  at the node's boot weeks earlier, or one line dated 2099, does not stretch it; files whose whole span lies far
  outside it are set apart (``spans``);
- each node's clock: a time zone or a step back (``jobclock``), the boot time of nodes whose dmesg captures carry
  only uptimes (``boots.boot_anchors``), and the clock skew between nodes, from lines every node writes at the
  same moment (``skew``), reported only.
"""

from __future__ import annotations

import math
import re
import time as _time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from l4lite.errors import L4Error
from l4lite.ingest.agents import agents_overlapping
from l4lite.ingest.attribution import (
    address_nodes,
    compile_node_from,
    host_from_dirs,
    inherited_hosts,
    known_hosts_pattern,
    mixed_hosts,
    names_no_node,
    node_from_regex,
    rank_from_path,
    stream_hosts,
    stream_key,
    tie_streams,
)
from l4lite.ingest.boots import boot_anchors, is_kernel_log
from l4lite.ingest.dateorder import day_first
from l4lite.ingest.fileends import file_ends
from l4lite.ingest.fileranks import id_hosts, sibling_ranks
from l4lite.ingest.files import stdin_sample
from l4lite.ingest.filesample import FileSample, sample_file, sampled_files, whole_pids
from l4lite.ingest.hostprefix import host_prefixed, labelled_host, prefix_host
from l4lite.ingest.jobclock import settle_clocks
from l4lite.ingest.jumps import APART_LIMIT, node_ends
from l4lite.ingest.layout import (
    NodeLevel,
    infer_level,
    kind_split,
    layout_parts,
    spelled_hosts,
    value_at,
    varying_hosts,
)
from l4lite.ingest.logdirs import LinePrefix, log_dir_hosts, tee_hosts
from l4lite.ingest.pids import (
    PidReader,
    Quoted,
    file_agents,
    pid_hosts,
    quoted_hosts,
)
from l4lite.ingest.rolenames import role_aliases
from l4lite.ingest.skew import job_skew
from l4lite.ingest.spans import (
    BEFORE_OWN,
    FUTURE_SLACK,
    PAST_SLACK,
    SPIKE_SECONDS,
    FileSpan,
    apart_files,
    clockless,
    dated_middle,
    first_written,
    job_span,
    sampled_spans,
    vote_year,
)
from l4lite.ingest.writerclocks import WriterLines
from l4lite.ingest.writers import (
    WholeReads,
    label_hosts,
    own_host,
    rank_host,
    task_hosts,
    vote_whole,
)
from l4lite.ingest.zones import error_times, read_zones
from l4lite.records import Accounting

# one process's file by the launcher's layout (torchelastic's ``<run>_<random>/attempt_N/<local_rank>/``)
_RANK_FOLDER = re.compile(r"(?:^|/)attempt_\d+/\d+/[^/]+$")


def _host_of_dirs(rel: str) -> str | None:
    """The host a file's folders name (a file name alone, ``latin1.log``, ``0.log``, never names a node), leaving
    out the folders a launcher's layout names (torchelastic's ``<run_id>_<random>/attempt_N/<local_rank>``:
    ``run-044_h_bqya1n`` is a run, not host ``bqya1n``)."""
    dirs = rel.replace("\\", "/").split("/")[:-1]
    skip = layout_parts(dirs)
    return host_from_dirs("/".join(d for i, d in enumerate(dirs) if i not in skip) + "/_") if skip else host_from_dirs(rel)


def _lone_host_folder(rels: Sequence[str], files: Sequence[Any], samples: dict[str, FileSample],
                      ctx: JobContext) -> dict[str, str | None]:
    """rel -> None for every file of a job whose one host-like folder holds them all (the submit host's
    ``login-01/`` a job's logs were copied to) while the job shows several nodes: a file naming several hosts, two
    other hosts named, or torchelastic agents of two nodes running at once. Read alone, each file's folder names
    that host; read together, the files say the folder is where they were put, not who wrote them, and their
    lines place them instead (as in a folder named ``logs/``). A job of one node under its host's folder keeps
    it."""
    hosts = {_host_of_dirs(r) for r in rels}
    if len(hosts) != 1 or None in hosts:
        return {}
    host = next(iter(hosts))
    named = set().union(*(v.hosts for v in samples.values())) - {host} if samples else set()
    several = bool(ctx.mixed) or len(named) > 1
    if not several:
        agents_of = file_agents({}, files, ctx.file_starts, ctx.file_ends)
        several = agents_overlapping([a for r in rels if (a := agents_of(r)) is not None]) > 1
    return dict.fromkeys(rels) if several else {}


@dataclass
class JobContext:
    """What the whole job says before any line is scanned (see the module docstring). Plain data."""

    node_from: str | None = None
    depth: int | None = None  # folder level naming nodes (-1: the file name), see ``layout.infer_level``
    layout: str = ""  # how the nodes were found, for the record and the report
    aliases: dict[str, str] = field(default_factory=dict)  # folder name -> the host its lines name
    nodes: dict[str, str | None] = field(default_factory=dict)  # rel -> node where the level does not say
    names: list[str] = field(default_factory=list)  # the level's names that are nodes (file names: one family)
    legacy: bool = True  # no job-level evidence at all: each file's folders read alone (``host_from_dirs``)
    rank_ties: list[tuple[int, str]] = field(default_factory=list)
    # rank -> host that only a labelled stream's own lines name (``stream_hosts``): weaker than any line's tie
    mention_ties: list[tuple[int, str]] = field(default_factory=list)
    # rel -> srun label -> the host its lines name: in one ``srun --label`` file of several nodes, the label
    # says which node wrote a line (a task per node runs torchrun, whose ranks are not the labels)
    task_hosts: dict[str, dict[str, str]] = field(default_factory=dict)
    # rel -> label -> the lines each writer of a merged file opens and closes its part with (``writerclocks``)
    writer_lines: dict[str, dict[str, WriterLines]] = field(default_factory=dict)
    # files whose ``srun --label`` labels are tasks of several ranks each (``srun --label torchrun``: one task per
    # node, its lines prefixed ``[default0]:``, ``[default1]:``): there a label is a node's index, never a rank
    label_tasks: list[str] = field(default_factory=list)
    pids: dict[str, str] = field(default_factory=dict)  # an agent's or worker's pid -> its host (``pid_hosts``)
    quoted: dict[str, Quoted] = field(default_factory=dict)  # exception -> host its summary names (``quoted_hosts``)
    mixed: list[str] = field(default_factory=list)  # files naming several hosts (``mixed_hosts``): no one host's
    agents: int = 0  # the most torchelastic agents one file shows running at once: nodes, named or not
    year: int | None = None
    near_year: int | None = None  # the year most files are in, counting their write times: dates far off it are wrong
    around: float | None = None  # the middle of the dated files' spans: a date without a year is in the year nearest it
    written: float | None = None  # without dated files, the first write time of the job's files: years are guessed from it
    day_first: bool = False  # slashed dates (``03/12/2026``) are day first (``dateorder``): one reading per job
    start: float | None = None
    end: float | None = None
    open_end: bool = False  # a job still running (tail): lines after ``end`` are expected
    boot_anchors: dict[str, float] = field(default_factory=dict)
    clock_skew: dict[str, Any] = field(default_factory=dict)  # ``skew.ClockSkew.to_dict``; empty: one node
    # rel -> why the file is not this job's: its whole span lies far outside the job's (a stale file of another
    # job, an earlier run); its lines are counted as skipped, never read as the job's (``decode.set_apart_file``)
    set_apart: dict[str, str] = field(default_factory=dict)
    # rel -> the last time sampled from the file (files whose sampled lines gave no time are not in it)
    file_ends: dict[str, float] = field(default_factory=dict)
    # rel -> the file's first sampled time, for files whose first lines gave one (else its start is not known)
    file_starts: dict[str, float] = field(default_factory=dict)
    node_ends: dict[str, float] = field(default_factory=dict)  # node -> its files' last sampled time (``jumps``)
    node_shifts: dict[str, float] = field(default_factory=dict)  # node -> seconds its zone is ahead (``zones``)
    # node -> the first and last times, as written, of a node known only as a merged file's writer in another zone:
    # its lines far outside them are in the job's time already (``zones.in_writer_zones``)
    writer_spans: dict[str, tuple[float, float]] = field(default_factory=dict)
    clock_steps: dict[str, list[float]] = field(default_factory=dict)  # node -> its clock's step back (``steps``)
    # IPv4 address -> the node it belongs to, as the job's lines state it (Ray's raylet: ``address: IP ...
    # hostname: NAME``; ``Local node IP: IP`` in a node's own file): a line that names its origin by address
    # (``(RayTrainWorker pid=.., ip=IP)``) is that node's
    addresses: dict[str, str] = field(default_factory=dict)
    ranks: dict[str, int] = field(default_factory=dict)  # rel -> the rank its process states (``fileranks``)
    # rel -> the pids of the agents whose first line starts another node's block in a mixed file (a ``cat`` of
    # several nodes' consoles, ``agents.agent_starts``): its streams' hosts are learnt again from the block's lines
    blocks: dict[str, list[str]] = field(default_factory=dict)

    def node_of(self, rel: str) -> str | None:
        """The node a file's path or its job-level facts give (lines may still name another, per line)."""
        if rel in self.nodes:
            return self.nodes[rel]
        if self.node_from:
            regex = compile_node_from(self.node_from)
            node = node_from_regex(rel, regex) if regex is not None else None
            if node is not None:
                return node
        if self.depth is not None:
            name = value_at(rel, self.depth)
            if name is None or (self.names and name not in self._name_set()):
                return None
            return self.aliases.get(name, name)
        if self.legacy:
            return _host_of_dirs(rel)
        return None

    def _name_set(self) -> frozenset[str]:
        cached = self.__dict__.get("_names")
        if cached is None or cached[0] is not self.names:
            cached = self.__dict__["_names"] = (self.names, frozenset(self.names))
        return cached[1]

    def rank_of(self, rel: str) -> int | None:
        rank = rank_from_path(rel)
        return self.ranks.get(rel) if rank is None else rank

    def future_limit(self, mtime: float | None, rel: str | None = None) -> float:
        """Times after this are a wrong clock: later than the file was written and than now, or (a finished job)
        far later than the job's span and than the file's own sampled end (``file_ends``), by more than an hour or
        the span's own length: the sampled ends of the files bound the times of their lines, so a line later than
        that is one wrong line (a clock set ahead, another time zone) that must not stretch the job. A file whose
        sampled lines gave no time has no such bound: its lines may go a day past the job's span. A node whose
        clock stepped back (``clock_steps``) wrote its ahead part up to the step's end: those times are read back."""
        now = _time.time()
        limit = (now if mtime is None else max(mtime, now)) + FUTURE_SLACK
        if self.end is not None and self.start is not None and not self.open_end:
            own = self.file_ends.get(rel) if rel is not None else None
            if own is None:
                return min(limit, self.end + max(FUTURE_SLACK, self.end - self.start))
            step = self.clock_steps.get(self.node_of(rel) or "") if self.clock_steps and rel is not None else None
            own = max(own, step[2] - SPIKE_SECONDS) if step else own
            return min(limit, max(self.end, own) + max(SPIKE_SECONDS, self.end - self.start))
        return limit

    def past_limit(self, rel: str | None = None) -> float:
        """Times before this are a wrong clock: years before the job's span (a reset clock; none when the span is
        unknown), or farther before both the file's own first sampled time and the job's start than half an hour
        (``BEFORE_OWN``; two zones apart for a file whose first lines gave no time) or the job's span lasts: a good
        date off (a clock stepped for a moment, a line flushed late, a time quoted from another run) must not
        stretch the job back to it. A file whose first lines gave no time (NCCL's untimed start-up lines, a
        banner) has no start of its own and is held to the job's start, which only files
        whose first lines gave a time set (``spans.job_span``), unless it is a kernel log (its uptimes reach back to
        the node's boot)."""
        if self.start is None:
            return -math.inf
        own = self.file_starts.get(rel) if rel is not None else None
        if rel is None or self.end is None or not self.file_starts or (own is None and is_kernel_log(rel)):
            return self.start - PAST_SLACK  # no start of the job or of a kernel log is known: only years
        first, apart = (self.start, APART_LIMIT) if own is None else (min(self.start, own), BEFORE_OWN)
        return max(self.start - PAST_SLACK, first - max(apart, self.end - self.start))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> JobContext:
        data = dict(data)
        for key in ("rank_ties", "mention_ties"):
            data[key] = [(int(r), str(h)) for r, h in data.get(key, [])]
        return cls(**data)


# ------------------------------------------------------------------------------------------------ the context
def build_context(files: Sequence[Any], node_from: str | None = None, *, year: int | None = None,
                  accounting: Accounting | None = None, open_end: bool = False,
                  whole_reads: WholeReads | None = None) -> JobContext:
    """The job's context from its files (``files.InputFile``); ``year`` overrides the vote; ``whole_reads``: the
    files an earlier build of the growing job read whole, read on from there. Raises L4Error for a bad
    ``node_from`` pattern."""
    try:
        compile_node_from(node_from)
    except ValueError as exc:
        raise L4Error(str(exc)) from None
    ctx = JobContext(node_from=node_from, open_end=open_end)
    docs = [f for f in files if getattr(f, "not_log", "")]
    documents = sorted({f.rel for f in docs})  # a JSON document (an error file)
    files = [f for f in files if not getattr(f, "not_log", "")]  # names no node and no time in its lines
    if open_end:  # a stream still being written is not waited for
        files = [f for f in files if not getattr(f, "is_stdin", False)]
    samples: dict[str, FileSample] = {}
    concerns: dict[str, set[str]] = {}
    for f in sampled_files(files):
        samples[f.rel], concerns[f.rel] = sample_file(f)
    # ---- time first: a file that is not this job's says nothing about its nodes either
    ctx.day_first = day_first((ln for v in samples.values() for ln in v.lines), (getattr(f, "mtime", None) for f in files))
    ctx.year, ctx.near_year = (year, year) if year is not None else vote_year(((rel, v.years) for rel, v in samples.items()), files)
    spans = sampled_spans(files, samples, ctx.year, ctx.near_year, day_first=ctx.day_first)
    ctx.around = dated_middle(spans, {rel: v.years for rel, v in samples.items()}, ctx.near_year) if year is None else None
    ctx.written = first_written(files) if ctx.around is None and year is None else None
    if ctx.around is not None or ctx.written is not None:  # dates without a year: one year for the whole job
        spans = sampled_spans(files, samples, ctx.year, ctx.near_year, ctx.around, ctx.written, ctx.day_first)
    error_at = error_times(files, docs)  # zone-free times of the failure: files that end there are the job's
    ctx.set_apart = apart_files(spans, {f.rel: getattr(f, "mtime", None) for f in files},
                                list(error_at.values())) if not open_end else {}
    if ctx.set_apart:
        for rel in ctx.set_apart:
            samples.pop(rel, None)
            concerns.pop(rel, None)
            spans.pop(rel, None)
        files = [f for f in files if f.rel not in ctx.set_apart]
        if year is None:  # a file set apart has no say in the year either (its dates may be years before the job's)
            ctx.year, ctx.near_year = vote_year(((rel, v.years) for rel, v in samples.items()), files)
            ctx.around = dated_middle(spans, {rel: v.years for rel, v in samples.items()}, ctx.near_year)
            ctx.written = first_written(files) if ctx.around is None else None
            spans = sampled_spans(files, samples, ctx.year, ctx.near_year, ctx.around, ctx.written, ctx.day_first)
    _set_span(ctx, spans, files)
    rels = sorted({f.rel for f in files})
    concerned: set[str] = set().union(*concerns.values()) if concerns else set()
    # a file whose host lines carry ``srun --label`` labels holds as many nodes as labels, whatever its sampled
    # part shows (a stream's first part may hold one node's lines only): each label's host is its own
    ctx.mixed = sorted(rel for rel, s in samples.items() if mixed_hosts(s.hosts))  # several hosts' lines
    # the one host a file's lines name as their writer; else the one its own process's banners name
    own = {rel: h for rel, s in samples.items()
           if not s.labels and (h := own_host(s.hosts) or (None if s.hosts else own_host(s.banners))) is not None}
    # ---- nodes
    named = set().union(*(s.hosts for s in samples.values())) | concerned if samples else set()
    level = infer_level(rels, own, named) if not node_from else NodeLevel()
    ctx.depth, ctx.layout, ctx.aliases = level.depth, level.how, dict(level.aliases)
    if level.depth is not None and level.depth >= 0:  # ``worker-1``: the host its lines state, read whole
        ctx.aliases.update(role_aliases(sampled_files(files), level.value, ctx.aliases, level.names))
    if node_from:
        ctx.layout = "--node-from"
    if level.depth is not None:
        ctx.names = list(level.names)
        if level.depth < 0:
            names = {n for r in rels if (n := value_at(r, -1))}
            ctx.names = sorted(set(level.names) | (names & (set(own.values()) | concerned)))
    ctx.legacy = level.depth is None and not own and not node_from
    if ctx.legacy and rels:
        ctx.layout = "paths read one by one"
        ctx.nodes.update(_lone_host_folder(rels, files, samples, ctx))
    by_lines: set[str] = set()
    # the one folder that holds the whole job, aliased to the one host its lines name (``login-01/``, ``flat/``):
    # its name says nothing of a file whose own lines name a host, which is read as under ``logs/`` (its sampled
    # ends first, then all its lines: a console whose head names the master's host may be another node's)
    lone = level.depth is not None and level.depth >= 0 and len({level.value(r) for r in rels} - {None}) == 1
    for rel in rels:
        node = ctx.node_of(rel) if not ctx.legacy else None
        if lone and rel in own and level.value(rel) in ctx.aliases:
            node = None
        if node is None and rel in own:
            ctx.nodes[rel] = own[rel]  # outside the level (or no level): the one host its lines name
            by_lines.add(rel)
    for rel, host in varying_hosts(rels).items():  # ``train-4242-node0421.out``: the part its siblings do not share
        if ctx.node_of(rel) is None:
            ctx.nodes[rel] = host
    # a folder that names no machine (``logs/``) stands for the one host its sampled files name: its other files
    # are voted on all their lines too, so a file whose lines name another host (once, mid-file) is that host's.
    # So does the one folder that holds the whole job under a name that is not the host its lines name (``flat/``,
    # the submit host's ``login-01/``): that the job's lines name one host says nothing of the nodes they do not
    # name, whose agents may have run beside it (``kind_split``)
    kind = {r for r in rels if r not in own and (v := level.value(r)) in ctx.aliases and (lone or names_no_node(v))}
    tasks = {rel for rel, s in samples.items() if any(len(v) > 1 for v in s.label_streams.values())}
    labelled = {rel for rel, s in samples.items() if any(map(stream_key, s.lines))}
    unsure = [f for f in sampled_files(files) if f.rel not in by_lines and ctx.node_of(f.rel) is None]
    read: dict[str, PidReader] = {}
    whole = vote_whole(ctx.nodes, ctx.mixed, [f for f in sampled_files(files) if f.rel in by_lines | kind], unsure, tasks,
                       labelled, read, whole_reads)
    ctx.nodes.update({rel: None for rel in kind if rel in ctx.mixed})  # several hosts' lines: none by its folder
    split = kind_split(kind, ctx.nodes, ctx.aliases, level, file_agents(read, files, ctx.file_starts, ctx.file_ends),
                       rels)
    ctx.nodes.update(split.nodes)
    ctx.agents = max(whole.agents, split.agents)
    ctx.blocks = {rel: b for rel, b in whole.blocks.items() if rel in ctx.mixed}
    # each writer's ends in a merged file (``writerclocks``): a pdsh prefix is a writer's label in a pdsh file only
    ctx.writer_lines = {rel: kept for rel, vote in whole.files.items()
                        if (kept := {k: w for k, w in vote.writers.items() if labelled_host(k) is None
                                     or (rel in samples and samples[rel].prefixed)})}
    ties = [t for s in samples.values() for t in s.ties] + whole.ties
    by_ranks = {rel: host for rel, vote in whole.files.items()  # a rank's file no path places: its ranks' node
                if ctx.node_of(rel) is None and rel not in ctx.mixed and (_RANK_FOLDER.search(rel) or rel in split.nodes)
                and (host := rank_host(vote, ties)) is not None}
    ctx.nodes.update(by_ranks)
    # ``train-4242-cpu-node-a.out``: siblings' parts that no one name reads as a host, where no line says otherwise
    placed = {rel: node for rel in rels if (node := ctx.node_of(rel)) is not None}
    varied = {rel: host for rel, host in varying_hosts(rels, placed, loose=True).items() if rel not in placed
              and rel not in ctx.mixed}
    ctx.nodes.update(varied)
    if not ctx.legacy and named:  # a file whose name spells out a host the lines name (``node-b_stderr.log``)
        ctx.nodes.update(spelled_hosts((*rels, *documents), ctx.node_of, named))
    if not ctx.legacy or by_ranks:  # files naming no host take their rank's or their folder's, as the job names them
        ctx.nodes.update(inherited_hosts(rels, ctx.node_of, ties, split.apart))
    ctx.nodes.update(id_hosts(rels, ctx.node_of, {rel: r.started for rel, r in read.items()},
                              {rel: r.named or () for rel, r in read.items()}))
    if not ctx.legacy or varied or ctx.mixed:  # an agent's log folder apart from its node (a shared ``logs/``)
        # the node naming it, or whose console holds its copies: over a kind folder's host (``logs/``, one host named)
        weak = {r for r in (*rels, *documents) if r not in ctx.nodes and names_no_node(level.value(r) or "a1")}
        firm, pdsh = (lambda rel: None if rel in weak else ctx.node_of(rel)), LinePrefix(host_prefixed, prefix_host)
        ctx.nodes.update(log_dir_hosts((*files, *docs), files, firm, pdsh))
        ctx.nodes.update(tee_hosts((*files, *docs), files, firm, pdsh))  # a rank's file by its console copies
    if not ctx.layout and own:
        ctx.layout = "hosts named in lines"
    for rel, s in samples.items():
        if s.labels and (labelled := task_hosts(s.labels)):
            ctx.task_hosts[rel] = labelled
        if any(len(streams) > 1 for streams in s.label_streams.values()):
            ctx.label_tasks.append(rel)
    # labelled streams whose lines name a known host: the hosts the paths give, and those the lines name as their
    # writers or as where a process runs, so that a job whose folders name no host still finds its streams' hosts
    on_hosts = set().union(*(s.on_hosts for s in samples.values())) if samples else set()
    known = known_hosts_pattern({ctx.node_of(rel) for rel in rels} | named | on_hosts)
    for f in sampled_files(files) if known is not None else ():
        if f.rel in samples and ctx.node_of(f.rel) is None and any(map(stream_key, samples[f.rel].lines)):
            ctx.mention_ties += tie_streams(ctx.task_hosts, f.rel, stream_hosts((x for e in file_ends(f) for x in e), known),
                                            f.rel in ctx.label_tasks)
    # pids tie an agent's hostless lines to its node where no path names one: such a file is read whole for them
    quotes: set[tuple[str, str, str | None]] = set()
    facts = [whole_pids(f, samples[f.rel], read, quotes) if ctx.node_of(f.rel) is None
             else (samples[f.rel].children, samples[f.rel].owners) for f in sampled_files(files) if f.rel in samples]
    ctx.pids = pid_hosts([c for k, _ in facts for c in k], [o for _, own in facts for o in own])
    ctx.quoted = quoted_hosts(quotes)  # tracebacks placed by the failure summary that quotes their exception
    for rel, reader in read.items():  # a file its whole read placed still states the addresses in its middle
        if rel in samples and ctx.node_of(rel) is not None and reader.addresses is not None and reader.addresses.found:
            samples[rel].addresses = samples[rel].addresses + reader.addresses.found
    ctx.addresses = address_nodes({rel: s.addresses for rel, s in samples.items()}, ctx.node_of)
    stated = {rel: s.own_rank for rel, s in samples.items() if s.own_rank is not None and rank_from_path(rel) is None}
    ctx.ranks = {**stated, **sibling_ranks((r for r in rels if rank_from_path(r) is None), stated)}
    seen: set[tuple[int, str]] = set()
    for rel in (*rels, ""):
        for tie in samples.get(rel, FileSample()).ties if rel else whole.ties:
            if tie not in seen:
                seen.add(tie)
                ctx.rank_ties.append(tie)
    for rel, vote in whole.files.items():  # each label of a merged stream where its lines or ranks say it runs
        if vote.labels or vote.label_ranks:
            ctx.task_hosts[rel] = {**ctx.task_hosts.get(rel, {}), **label_hosts(vote, ctx.rank_ties)}
    for rel in ctx.blocks:  # a ``cat`` of several nodes' consoles: ``[default0]:`` is every node's first local rank
        if rel in ctx.task_hosts:
            ctx.task_hosts[rel] = {label: h for label, h in ctx.task_hosts[rel].items() if not label.startswith("[")}
    # banner ties of files no path places are mentions: weakest, after a stream's own (``reader`` reads them so)
    unplaced = [rel for rel in rels if ctx.node_of(rel) is None and rel in tasks]
    for tie in (*(t for rel in unplaced for t in samples.get(rel, FileSample()).mentions), *whole.mentions):
        if tie not in seen and tie not in ctx.mention_ties:
            ctx.mention_ties.append(tie)
    if files:
        ctx.boot_anchors = boot_anchors(files, ctx.node_of, ctx.year,
                                        accounting if accounting is not None else Accounting())
    def place(read: dict[str, FileSpan], said: Accounting) -> None:  # the time facts that follow the steps
        _set_span(ctx, read, files)
        ctx.clock_skew = job_skew(ctx, files, {rel: s.anchors for rel, s in samples.items()})
        read_zones(ctx, read, files, docs, said, error_at)  # a node in another time zone: read in the job's time
    settle_clocks(ctx, spans, place, accounting, error_at)  # a node's clock stepped, read with the zones (``jobclock``)
    ctx.node_ends = node_ends({r: t - ctx.node_shifts.get(ctx.node_of(r) or "", 0.0) for r, t in ctx.file_ends.items()},
                              ctx.node_of)
    return ctx


def _set_span(ctx: JobContext, spans: dict[str, FileSpan], files: Sequence[Any]) -> None:
    """The job's span, and each file's sampled start and end, from the files' spans. A file whose one timed line
    is a date it quotes (``spans.clockless``) has neither: its lines are held to the job's span, so the quoted
    date is refused as a wrong clock's instead of dating the lines after it."""
    ctx.start, ctx.end = job_span(list(spans.values()))
    if ctx.end is not None:  # a stream sampled at its head only has no known end
        partial = {f.rel for f in files if getattr(f, "is_stdin", False) and not stdin_sample().whole}
        ctx.file_ends = {rel: v.last for rel, v in spans.items() if rel not in partial and not clockless(v)}
        ctx.file_starts = {rel: v.first for rel, v in spans.items() if v.headed and not clockless(v)}


def job_year(files: Sequence[Any]) -> int | None:
    """The year most of a job's files carry (see ``build_context``)."""
    return vote_year(((f.rel, sample_file(f)[0].years) for f in sampled_files(files)), files)[0]
