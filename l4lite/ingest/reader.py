"""From a job's files to records: headers stripped, node/rank/GPU attributed, multi-line events joined.

``iter_records(paths, options, accounting)`` streams the records of a job, file by file (sorted by relative path),
each file's records in the order of their first line. Memory stays bounded: lines are read in chunks, and the only
state per file is one open record per prefix stream (a merged ``srun --label`` or torchrun file interleaves ranks,
so a rank's traceback continues on the next line *of that rank*), a reorder queue so that records still come out in
line order, and a short hold at the start of a file until its host is known.

Every line ends in exactly one record or in ``accounting.lines_skipped`` with a reason, so ``accounting.balanced``
always holds, however broken the input.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from l4lite.errors import L4Error
from l4lite.ingest import lineclass as lc
from l4lite.ingest.agents import glog_pid, in_agent_blocks
from l4lite.ingest.attribution import GLOBAL_WEIGHT, RankMap, compile_node_from, pod_hosts
from l4lite.ingest.context import JobContext, build_context
from l4lite.ingest.cri import CRI_HEAD_LINES, cri_prefix, without_cri_prefix
from l4lite.ingest.decode import PieceStart, iter_line_blocks, set_apart_file
from l4lite.ingest.errorfile import error_record_start, stated_time
from l4lite.ingest.files import DEFAULT_MAX_LINE_CHARS, InputFile, Job, discover
from l4lite.ingest.header import QUEUED, HeaderReading, ends_record, relayed
from l4lite.ingest.hostprefix import host_prefixed, strip_host_prefix
from l4lite.ingest.jobclock import in_job_time
from l4lite.ingest.jsonlog import LATE_TRIES, JsonReading, learn_json_keys
from l4lite.ingest.jumps import peers_end, without_jumps
from l4lite.ingest.lineclass import OpenRecord
from l4lite.ingest.pids import Placer
from l4lite.ingest.pieces import lead_of
from l4lite.ingest.rotation import read_chain
from l4lite.ingest.runs import RUN_BLOCK_LINES, RunReading
from l4lite.ingest.seconds import in_line_order, last_placed
from l4lite.ingest.shape import FOLD_DIGITS
from l4lite.ingest.shaperun import ShapeBook, ShapeRun
from l4lite.ingest.slurmnode import slurm_node
from l4lite.ingest.streamnames import AMBIGUOUS, StreamNames
from l4lite.ingest.timespots import LEARN_LINES, learn_spot
from l4lite.ingest.timestamps import TimestampParser
from l4lite.records import Accounting, Record, RotatedStreams

__all__ = ["IngestOptions", "RankMap", "iter_records", "iter_job", "prepare_job", "read_file"]

_HOLD_LINES = 1000  # lines held at the start of a file while its host is still unknown
_STALE_LINES = 5000  # an open multi-line record untouched for this many lines is closed
_SPACE_START = frozenset(" \t")
_KIND_STARTS = lc.KIND_STARTS
_BLANK = object()  # _line's answer for a line that is blank once its prefixes are removed


@dataclass
class IngestOptions:
    """How to read a job. ``context`` holds the job-level facts (``context.build_context``: nodes of files, year,
    span, boot anchors), built once per job and shared by every shard; ``node_from`` and ``year`` are only used
    to build it when none is given (an explicit ``year`` also wins over the context's). ``rank_map`` collects
    rank -> node ties across the files read with these options, and ``shape_books`` the line shapes learnt in
    them (``shaperun.ShapeBook``)."""

    node_from: str | None = None
    max_line_chars: int = DEFAULT_MAX_LINE_CHARS
    year: int | None = None
    max_record_lines: int = 2000
    rank_map: RankMap = field(default_factory=RankMap)
    boot_anchors: dict[str, float] = field(default_factory=dict)  # node -> boot wall time (the context's)
    line_shapes: bool = True  # read lines of an already seen shape from remembered offsets (same records)
    line_runs: bool = True  # and runs of such lines a block at a time (``l4lite.ingest.runs``; same records)
    # and runs of syslog and dmesg lines by their folded shapes (``HeaderReading._learn_folded``; same records).
    # Their run shapes give no message shape: the miner takes each message by its own key (parse, analyze)
    fold_shapes: bool = False
    shape_books: dict[tuple, ShapeBook] = field(default_factory=dict, repr=False, compare=False)
    context: JobContext | None = None
    # when given, a rotated log's records keep its stream's name and line numbers, its pieces noted here (the
    # scan's: the diagnosis orders them as one stream); else each record is named by its piece (``parse``)
    streams: RotatedStreams | None = None

    def shape_book(self, context: tuple) -> ShapeBook:
        """The book of the files that read a shape alike (see ``ShapeBook``)."""
        book = self.shape_books.get(context)
        if book is None:
            book = self.shape_books[context] = ShapeBook()
        return book

    def use(self, context: JobContext) -> IngestOptions:
        """Read with ``context``: its rank ties seed the rank map, its boot anchors are the options'."""
        self.context = context
        for i, (rank, host) in enumerate((*context.rank_ties, *context.mention_ties)):  # a mention: weakest
            self.rank_map.tie(rank, host, GLOBAL_WEIGHT - 2 if i < len(context.rank_ties) else 0)
        self.boot_anchors.update(context.boot_anchors)
        return self

    def job_context(self) -> JobContext:
        """The context to read with: the one given, else one that reads each path alone."""
        if self.context is None:
            self.context = JobContext(node_from=self.node_from, year=self.year)
        return self.context


def iter_records(paths: Sequence[str], options: IngestOptions, accounting: Accounting) -> Iterator[Record]:
    """All records of a job (see ``sources.discover`` for what a path may be)."""
    job = discover(paths, accounting)
    yield from iter_job(job, options, accounting)


def iter_job(job: Job, options: IngestOptions, accounting: Accounting,
             runs: bool = False) -> Iterator[Record | ShapeRun]:
    """``iter_records`` of a discovered job (``runs``: see ``_FileReader.run``)."""
    prepare_job(job, options, accounting)
    for input_file in job.files:
        yield from read_file(input_file, options, accounting, runs=runs)


def prepare_job(job: Job, options: IngestOptions, accounting: Accounting) -> JobContext:
    """The job's context (``context.build_context``), built once before its files are read one by one (so that
    shards can read files independently), unless the options carry one already."""
    if options.context is None:
        options.use(build_context(job.files, options.node_from, year=options.year, accounting=accounting))
    return options.context  # type: ignore[return-value]


def read_file(input_file: InputFile, options: IngestOptions, accounting: Accounting,
              rank_map: RankMap | None = None, runs: bool = False) -> Iterator[Record | ShapeRun]:
    """The records of one file, in the order of their first line (``runs``: see ``_FileReader.run``)."""
    try:
        node_re = compile_node_from(options.node_from)
    except ValueError as exc:
        raise L4Error(str(exc)) from None
    # not this job's file, or no log at all (a JSON document): its lines are counted as skipped, never read
    why = input_file.not_log or options.job_context().set_apart.get(input_file.rel)
    if why is not None:
        set_apart_file(input_file, why, accounting, reason="not_a_log" if input_file.not_log else "set_apart")
        return iter(())
    reader = _FileReader(input_file, options, accounting, rank_map if rank_map is not None else options.rank_map)
    placed = None  # where a piece's lead left the file's clock (whole-second ties across the cut)
    if input_file.is_piece and input_file.start > 0:
        placed = reader.learn_lead(lead_of(input_file), node_re)
    placer = reader.placer()
    items = reader.zoned(reader.run(runs and placer is None))
    others_end = peers_end(reader.ctx.node_ends, reader.path_node)
    if others_end is not None:  # a clock's jump (``jumps``), read against the other nodes' ends
        items = without_jumps(items, others_end)
    items = in_line_order(items, placed)
    if input_file.parts and options.streams is not None:  # a rotated log: one stream, its pieces noted
        options.streams.starts[input_file.rel] = reader.pieces  # filled as the chain is read
    elif input_file.parts:
        items = read_chain(items, reader.pieces)
    items = placer.place(items) if placer is not None else items  # hostless lines by pid, quote, block (``pids``)
    return in_agent_blocks(items, reader.block_marks) if reader.blocks else items


class _FileReader(StreamNames, HeaderReading, RunReading, JsonReading):
    """Reads one file; see the module docstring for the state it keeps."""

    def __init__(self, input_file: InputFile, options: IngestOptions, accounting: Accounting,
                 rank_map: RankMap) -> None:
        self.f = input_file
        self.opt = options
        self.acc = accounting
        self.rank_map = rank_map
        self.pieces: list[PieceStart] = []  # where each piece of a rotated log starts, as it is read
        self.ctx = ctx = options.job_context()
        self.path_node, self.path_rank = ctx.node_of(input_file.rel), ctx.rank_of(input_file.rel)
        self.task_hosts = ctx.task_hosts.get(input_file.rel)  # srun label -> host, in a file of several nodes
        # an ``srun --label`` label is the task's rank unless the job showed each task running several ranks
        self.label_ranks = input_file.rel not in ctx.label_tasks
        self.default_source = lc.default_source(input_file.rel)
        self.ts = TimestampParser(options.year if options.year is not None else ctx.year, ctx.written or input_file.mtime,
                                  options.year if options.year is not None else ctx.near_year,
                                  ctx.around if options.year is None else None, ctx.day_first)
        if self.path_node is not None and self.path_node in options.boot_anchors:
            self.ts.set_prescan_anchor(0, options.boot_anchors[self.path_node])
        self.open: dict[str, OpenRecord] = {}
        self.out: deque[OpenRecord] = deque()
        self.streams: dict[str, list] = {}  # stream -> [host, gpu] seen on lines of that stream
        self.mixed = input_file.rel in ctx.mixed  # lines of several hosts: its bare stream names none of them
        self.file_host: str | None = AMBIGUOUS if self.mixed else None  # its one host, if one
        # where another node's agent starts in a ``cat`` of consoles: its streams are that node's, learnt anew
        self.blocks = ctx.blocks.get(input_file.rel, ()) if self.mixed else ()
        self.block_marks: list[tuple[int, str | None]] = []  # (line, host of its agent) where each block begins
        self.block_starts: set[str] = set(self.blocks)  # the agents whose block has not begun yet
        self.hold = self.path_node is None and self.file_host is None
        self.last_time: float | None = None
        self.last_open: OpenRecord | None = None  # the latest record that may take continuation lines
        self.hosts: dict[str, str] = pod_hosts(self.task_hosts)  # host as written -> normalised (a pod: its lines')
        self.local_streams: set[str] = set()  # streams whose rank is a local rank ([defaultN]:)
        self.future = self.ctx.future_limit(self.f.mtime, self.f.rel)  # times after this are wrong clocks (see _future_time)
        self.past = self.ctx.past_limit(self.f.rel)  # and times before this
        self.future_lines = 0
        self.nameless = 0  # records that got neither a node nor a rank
        self.cri: bool | None = None  # a container log with CRI line prefixes (decided on its first lines)
        self.cri_partial, self.cri_first_time = {}, {}  # per stream, partial lines' text so far and first time
        self.spot: str | None = None  # where the file's lines carry their time (``timespots``), once learnt
        self.init_runs(options.shape_book(self._book_key()))

    def placer(self) -> Placer | None:
        """What places the records of a file no path places by what the job's whole read found (``pids.Placer``):
        hostless lines by their agent's pid, a traceback by the summary quoting its exception, a run between two
        lines of one node; None for a file its path places, or a job that found none of it."""
        if self.path_node is not None or not (self.ctx.pids or self.ctx.quoted):
            return None
        return Placer(self.ctx.pids, self.ctx.quoted)

    def _book_key(self) -> tuple:
        """Files that read a shape alike share what they learn (``shaperun.ShapeBook``). Whether the path names a node
        changes no plan today; it stays in the key so that a plan that comes to depend on it cannot leak across."""
        key: tuple = (self.default_source, self.path_rank is not None, self.path_node is not None, self.label_ranks)
        if self.host_prefixed:  # a shape's first word is its host here, a message's word elsewhere
            key += ("host:",)
        return key + (self.spot,) if self.spot else key

    def learn_spot(self, lines: Sequence[str]) -> None:
        """Learn the file's time spot from its first lines (``timespots.learn_spot``) and take the shape book
        of the files that read alike."""
        if self.cri:
            lines = [without_cri_prefix(x) for x in lines[:4 * LEARN_LINES]]
        lines = self.json_head(lines)
        if self.host_prefixed:
            lines = [strip_host_prefix(x) for x in lines[:4 * LEARN_LINES]]
        self.spot = learn_spot(lines)
        if self.spot:
            self.init_runs(self.opt.shape_book(self._book_key()))

    def zoned(self, items: Iterator[Record | ShapeRun]) -> Iterator[Record | ShapeRun]:
        """``items`` in the job's time (``zones``): by the file's node's zone, or in a file no path places (several
        nodes' lines) by each line's writer's; a node's clock stepped back (``steps``) is read back first."""
        return in_job_time(items, self.ctx, self.path_node)

    def learn_lead(self, lead: Sequence[InputFile], node_re: re.Pattern[str] | None,
                   placer: Placer | None = None) -> float | None:
        """Start a piece of a file (``l4lite.ingest.pieces``) knowing what the lines before it tell: which host and GPU
        each ``srun --label`` or torchrun stream is, the file's host and rank ties (from the file's first lines,
        NCCL's start-up), its format (CRI prefix, JSON keys, as its head shows them) and the clock (from the lines
        just before the piece); with ``placer``, where its records were placed (``pids.Placer.lead``: the node of
        the run the piece starts inside). Their records are dropped: the
        pieces before this one have them, but the time the last of them is placed at is returned."""
        if not lead:
            return None
        warm = _FileReader(lead[0], self.opt, Accounting(), self.rank_map)

        def records() -> Iterator[Record]:
            for part in lead:
                warm.f = part
                warm.block_marks = []  # the agent whose line comes last just before the piece: the block it is in
                yield from warm.run()  # type: ignore[misc]

        timed = self.zoned(records())
        placed = last_placed(placer.lead(timed) if placer is not None else timed)
        if warm.block_marks:  # inside a ``cat``'s agent block: its lines up to the next block are that agent's
            self.block_marks = [(0, warm.block_marks[-1][1])]
        self.streams, self.file_host, self.hosts = warm.streams, warm.file_host, warm.hosts
        self.local_streams, self.ts, self.last_time = warm.local_streams, warm.ts, warm.last_time
        if warm.host_prefixed is not None and self.host_prefixed is None:
            self.host_prefixed = warm.host_prefixed
            if warm.host_prefixed:
                self.init_runs(self.opt.shape_book(self._book_key()))
        if warm.spot is not None and self.spot is None:
            self.spot = warm.spot
            if warm.spot:
                self.init_runs(self.opt.shape_book(self._book_key()))
        self.hold = self.hold and warm.file_host is None and not warm.streams
        if self.cri is None and warm.cri is not None:  # the file's format, as its head shows it
            self.cri, self.json_keys, self.json_late = warm.cri, warm.json_keys, warm.json_late
        return placed

    # ------------------------------------------------------------------------------------------ main loop
    def run(self, runs: bool = False) -> Iterator[Record | ShapeRun]:
        """The file's records in the order of their first line; with ``runs``, a stretch of one-line records of
        known shapes comes as one ``ShapeRun`` (``l4lite.ingest.runs``) instead of record by record.

        A block of lines is read line by line, or, when it is long enough, in segments (``_runs_or_lines``): runs,
        and stretches of lines for the per-line loop below (the only one, so that a small file reads through one
        generator, as before runs)."""
        acc = self.acc
        skipped_blank = 0
        lines_read = 0
        direct = 0  # single-line records emitted without queueing
        out = self.out
        line = self._line
        planned = self._planned
        planned_simple = self._planned_simple
        plans = self.plans
        opened = self.open
        finish = self._finish
        use_runs = self.opt.line_runs and self.opt.line_shapes and not self.cri and not self.blocks
        # agents whose first line starts a block: the streams' hosts are forgotten there
        starts = self.block_starts = set(self.blocks)
        lineno = 0
        joined = 0  # CRI partial lines and Docker's 16 KiB parts, joined to the next line (``join_parts``)
        in_runs = False  # a block of the file was long enough to be read in runs
        cri, jkeys = bool(self.cri), self.json_keys  # a piece's: its file's head (``learn_lead``)
        try:
            for first, block in iter_line_blocks(self.f, acc, self.opt.max_line_chars, self.pieces):
                if self.cri is None and block:
                    head = [x for x in block[:4 * CRI_HEAD_LINES] if x][:CRI_HEAD_LINES]
                    self.cri = cri = any(cri_prefix(x) for x in head)
                    self.json_keys = jkeys = learn_json_keys(head, cri)  # structured logs: ``jsonlog``
                    use_runs = use_runs and not cri  # runs read the raw lines' shapes; a JSON record off the runs is unwrapped
                if self.host_prefixed is None and block:  # pdsh's ``host: `` on every line: the file's first lines say
                    self.host_prefixed = host_prefixed(block)
                    if self.host_prefixed:
                        self.init_runs(self.opt.shape_book(self._book_key()))
                if self.spot is None and block:
                    self.learn_spot(block)
                whole = ((first, block, None),)
                # a file's blocks after one read in runs are too, the last one of fewer lines as well
                in_runs = use_runs and (in_runs or len(block) >= RUN_BLOCK_LINES)
                for segment in self._runs_or_lines(first, block) if in_runs else whole:
                    if type(segment) is ShapeRun:
                        lines_read += len(segment)
                        direct += len(segment)
                        if runs:
                            yield segment
                        else:
                            yield from segment.records()
                        continue
                    lineno, lines, keys = segment
                    plans = self.plans
                    k = -1
                    for s in lines:
                        k += 1
                        lines_read += 1
                        if jkeys is None and s[-1:] == "}" and self.json_late < LATE_TRIES:
                            jkeys = self.late_json_keys(s, cri)
                        if cri or jkeys is not None:
                            s = self.join_parts(s, cri)
                            if s is None:
                                joined += 1
                                lineno += 1
                                continue
                        if jkeys is not None:
                            s = yield from self.json_line(lineno, s)
                        if not s or (s[0] in _SPACE_START and s.isspace()):
                            skipped_blank += 1
                        else:
                            r = None
                            # a plan reads the line where nothing is open or queued, or where the one open
                            # record is of the unprefixed stream and the line's header ends it (``_ends``)
                            if (plans or self.head_lengths) and not self.hold and \
                                    (not out and not opened or (len(out) == 1 and len(opened) == 1
                                                                and opened.get("") is out[0])):
                                key = keys[k] if keys is not None else \
                                    s.encode("utf-8", "surrogatepass").translate(FOLD_DIGITS)
                                plan = plans.get(key)
                                if plan is not None:
                                    if not out or ends_record(plan):
                                        r = planned_simple(lineno, s, plan) if len(plan) == 6 else \
                                            planned(lineno, s, plan)
                                elif self.head_lengths:
                                    plan = self.head_plan(key)
                                    if plan is not None and (not out or ends_record(plan)):
                                        r = self._head_planned(lineno, s, key, plan, True)
                                        if r is QUEUED:  # it opens a record: queued as _line queues it
                                            lineno += 1
                                            while out[0].closed:  # the record it closed
                                                yield finish(out.popleft())
                                            if starts and (pid := glog_pid(s)) in starts:  # as below
                                                self.new_block(starts, pid, lineno - 1)
                                            continue
                                if r is not None:
                                    r.shape = key
                                    if out:  # as _line closes it: this line's header says it is not a continuation
                                        out[0].closed = True
                                        del opened[""]
                                        yield finish(out.popleft())
                            if r is None:
                                r = line(lineno, s)
                            if r is not None:
                                if r is _BLANK:
                                    skipped_blank += 1
                                else:
                                    direct += 1
                                    yield r
                        lineno += 1
                        if out and out[0].closed and not self.hold:
                            while out and out[0].closed:
                                yield finish(out.popleft())
                        if starts and (pid := glog_pid(s)) in starts:  # another node's agent: its block begins
                            self.new_block(starts, pid, lineno - 1)
                lineno = first + len(block)
                if self.open and (len(self.open) > 1
                                  or lineno - next(iter(self.open.values())).end > _STALE_LINES):
                    self._close_stale(lineno)
                if self.hold and lineno > _HOLD_LINES:
                    self.hold = False
            yield from self.flush_parts(lineno - 1)
            self.hold = False
            for op in self.open.values():
                op.closed = True
            self.open.clear()
            while out:
                yield finish(out.popleft())
            if self.nameless:
                acc.warn(f"{self.f.rel}: no node in its path or lines: its {self.nameless} record(s) count under "
                         "node 'unknown' (name the node with --node-from REGEX)")
            if self.ts.undated:
                acc.warn(f"{self.f.rel}: {self.ts.undated} line(s) dated with no real date (first: "
                         f"{self.ts.undated_text!r}): kept, timed as the line before")
        finally:
            acc.lines_read += lines_read
            acc.lines_in_records += direct
            acc.records += direct
            if skipped_blank:
                acc.skip_lines("blank", skipped_blank)
            self.count_joined(joined)
            # records still queued when the consumer stopped early are counted so that the books balance
            for op in out:
                acc.skip_lines("unconsumed", op.n)
            out.clear()

    def new_block(self, starts: set[str], pid: str, line: int) -> None:
        """Another node's agent begins its block of a ``cat`` at ``line``: what the lines above said of their
        streams is forgotten, and a record that nothing else places takes that agent's host (its pid's,
        ``ctx.pids``; ``agents.in_agent_blocks``)."""
        starts.discard(pid)
        self.streams = {}
        self.block_marks.append((line, self.ctx.pids.get(pid)))

    def _line(self, lineno: int, s: str) -> Record | OpenRecord | None:
        """Handle one non-blank line.

        Returns a finished single-line record when it can be emitted at once (the fast path), ``_BLANK`` when the
        line is blank after its prefixes, else None (the line was queued or joined an open record).
        """
        h = self._header(s)
        if h is None:
            return _BLANK
        pos, rank, global_rank, local_rank, host, gpu, nccl, header, t, level, p, source, spans = h
        head_source = source
        stream = s[:pos].rstrip(" ")  # "[rank0]:" and "[rank0]: " are one stream: the blank belongs to the text
        if local_rank and stream not in self.local_streams:
            self.local_streams.add(stream)
        if t is None or ((t > self.future or t < self.past) and self._future_time(lineno, t)):
            # a relayed copy is not the driver's time; an error file's line states its own
            t = None if relayed(s, pos) or self.last_time is None else \
                stated_time(s) if error_record_start(s, pos) else self.last_time
        else:
            self.last_time = t
        # ---- continuation of this stream's open record?
        op = self.open.get(stream)
        if not header:
            content = s[pos:]
            if op is not None and (op.kind != lc.K_LINE or content.startswith(lc.CONTINUATION_STARTS)
                                   or content.startswith(lc.WHAT_STARTS)) \
                    and op.n < self.opt.max_record_lines and lc.continues(op, content, self.rank_map):
                op.add(lineno, lc.unlabelled(s, bool(self.host_prefixed)) if stream else s)
                if op.closed:
                    del self.open[stream]
                self.last_open = op
                return None
            # c10 prefixes only the first line of a message with [rankN]: its hint lines, "Exception raised
            # from" and frames come unprefixed: they continue the latest open record of another stream
            last = self.last_open
            if not stream and last is not None and last is not op and not last.closed \
                    and content.startswith(lc.STRONG_CONTINUATION) and last.n < self.opt.max_record_lines \
                    and lc.continues(last, content, self.rank_map):
                last.add(lineno, s)
                if last.closed:
                    self.open.pop(last.stream, None)
                return None
        msg = s[p:].strip() if p else s.strip()
        if not msg:
            msg = s[pos:].strip()
        if "\r" in msg:
            segs = [x for x in msg.split("\r") if x.strip()]
            msg = segs[-1].strip() if segs else ""
            spans = None
        # ---- attribution from the line
        if host is not None or gpu is not None:
            self._saw(stream, host, gpu, rank if global_rank else None, msg if nccl else None)
        rank_in_msg = False
        if rank is None:
            rank = self.path_rank
            if rank is None and ("[Rank " in msg or "[rank" in msg):
                rank = lc.rank_in_message(msg)
                rank_in_msg = True
        if "global_ranks=[" in msg:
            self._global_ranks(msg)
            spans = None
        if msg.startswith(("srun: error: ", "slurmstepd: error: ")):
            about = slurm_node(msg, self.rank_map)
            if about is not None:
                host = about
            spans = None
        node = host if host is not None else self.path_node
        # ---- kind of record, level and source
        rkind = lc.record_kind(msg) if msg[:1] in _KIND_STARTS else lc.K_LINE
        if level is None:
            level = "error" if rkind == lc.K_TB else lc.content_level(msg)
        if nccl:
            source = "nccl"
        elif source is None or source == "other":
            source = lc.classify(s, msg) or source or self.default_source
            if spans is not None and lc.source_by_digits(msg):
                spans = None
        elif source == "kernel":
            source = lc.kernel_or_storage(msg)
            if spans is not None and lc.source_by_digits(msg, kernel=True):
                spans = None
        # ---- emit now, queue closed, or keep open for continuation lines
        # a NCCL line (complete, from another thread) or a line in a traceback's frames leaves the open record open
        kept = op is not None and (nccl or header and rkind == lc.K_LINE and lc.interleaved(op))
        if op is not None and not kept:
            op.closed = True
            del self.open[stream]
        if nccl or (rkind == lc.K_LINE and level != "error"):
            if not self.out and not self.hold:
                if spans is not None and op is None and not self.open:
                    self._learn(s, msg, spans, pos, p, global_rank, local_rank, nccl, level, source, rank_in_msg,
                                head_source)
                if (node is None and (self.streams or rank is not None)) or (gpu is None and stream):
                    node, gpu = self._fill(stream, node, rank, gpu)
                if node is None and rank is None:
                    self.nameless += 1
                return Record(self.f.rel, lineno, lineno, node, rank, gpu, source, t, level, msg, s,
                              rank_local=local_rank)
            new = OpenRecord(lineno, node, rank, gpu, source, t, level, msg, s, rkind, stream)
            new.closed = True
        else:
            if spans is not None and not pos and not self.hold and self.opt.line_shapes:
                # a line that opens a record teaches its header's plan too (storage headers open one each line)
                self._learn_header(s, msg, spans, pos, p, nccl, head_source)
            new = OpenRecord(lineno, node, rank, gpu, source, t, level, msg, s, rkind, stream)
            new.closed = kept
            if not kept:
                self.open[stream] = self.last_open = new
        self.out.append(new)
        return None

    def _future_time(self, lineno: int, t: float) -> bool:
        """A time later than the file was last written and than now, far after the job's span, or years before
        it: a wrong clock. Its line keeps the time of the line before (so one node's broken clock cannot stretch
        the job's timeline to a distant year), in its file's order, and is counted."""
        self.future = self.ctx.future_limit(self.f.mtime, self.f.rel)  # a long-lived reader (tail) moves the limit with the clock
        if self.past <= t <= self.future:
            return False
        if not self.future_lines:
            when = ("in the future (after the file was last written, or far after the rest of the job)"
                    if t > self.future else "years before the rest of the job" if t < self.ctx.past_limit()
                    else "far before the rest of its file and of the job")
            self.acc.warn(f"{self.f.rel}:{lineno}: time stamped {when}; such times are ignored (wrong clock?)")
        self.future_lines += 1
        return True

    def _close_stale(self, lineno: int) -> None:
        for stream, op in list(self.open.items()):
            if lineno - op.end > _STALE_LINES:
                op.closed = True
                del self.open[stream]

    def _finish(self, op: OpenRecord) -> Record:
        node, gpu = op.node, op.gpu
        if op.kind == lc.K_ELASTIC:
            lc.finish_elastic(op, self.rank_map)
            node = node or op.node
        elif op.kind == lc.K_TB:
            op.source = lc.classify(op.message, op.message) or op.source
        if node is None or (gpu is None and op.stream):
            node, gpu = self._fill(op.stream, node, op.rank, gpu)
            if node is None and op.rank is None:
                self.nameless += 1
        acc = self.acc
        acc.lines_in_records += op.n
        acc.records += 1
        text = op.first if op.parts is None else "\n".join(op.parts)
        return Record(self.f.rel, op.line, op.end, node, op.rank, gpu, op.source, op.time, op.level, op.message,
                      text, rank_local=op.rank is not None and op.stream in self.local_streams)
