"""Record readers for ``tail``: lines go in one at a time (as the follower delivers them), records come out.

``ingest.read_file`` reads whole files; tail needs the same parsing incrementally, with a record allowed to wait
for continuation lines across polls and a way to know which line the oldest unfinished record started on (the
follower's committed offset must not pass it). ``IngestLineReader`` drives the ingest stage's per-file parser
line by line; ``default_reader_factory`` makes one per followed stream, all sharing one rank -> node map.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol

from l4lite.ingest.agents import block_place, glog_pid
from l4lite.ingest.jobclock import in_job_time
from l4lite.ingest.jsonlog import HEAD_LINES, LATE_TRIES, learn_json_keys
from l4lite.ingest.jumps import peers_end, without_jumps
from l4lite.ingest.seconds import SecondOrder
from l4lite.records import Accounting, Record


class RecordReader(Protocol):
    """Turns one stream's lines into records; a record may wait for its continuation lines."""

    def feed(self, line_no: int, text: str) -> list[Record]: ...

    def flush(self) -> list[Record]: ...

    def expire(self, line_no: int) -> list[Record]:
        """Close records whose last line is ``line_no`` or earlier; return those now complete."""
        ...

    @property
    def pending_line(self) -> int | None:
        """First line of the record still being assembled, or None."""
        ...


# a stream's name -> its reader; a factory that takes a byte offset too (``ContextReaders``) is given where the
# stream is taken up when that is not its start (``RecordFeed.reader``)
ReaderFactory = Callable[..., RecordReader]


class Pushed:
    """An iterator that gives the one item pushed into it: drives a batch stage's generator over one file's records
    (one record out per record in) a record at a time, as tail's lines come."""

    __slots__ = ("item",)

    def __init__(self) -> None:
        self.item: Record | None = None

    def __iter__(self) -> Pushed:
        return self

    def __next__(self) -> Record:
        item, self.item = self.item, None
        if item is None:
            raise StopIteration
        return item

    def through(self, record: Record, stage: Iterator[Record]) -> Record:
        self.item = record
        return next(stage)


class IngestLineReader:
    """Incremental use of the ingest stage's per-file parser: lines go in one at a time, records come out as
    soon as they are complete (a record stays open until a line shows it ended, or ``flush``).

    ``ingest.read_file`` only reads whole files, so this drives its per-line step (``_FileReader._line``) and
    its output queue directly; the attribution, timestamps, multi-line rules and rank map are the same.
    """

    __slots__ = ("r", "max_chars", "n", "warn", "skipped", "_stale", "_hold", "_warned", "_ambiguous", "_partial",
                 "_plain_head", "_spotless", "_json_head", "_order", "_clocked", "_pushed", "_jumps", "_placer")

    def __init__(self, rel: str, options: Any, accounting: Accounting, mtime: float,
                 warn: Callable[[str], None], skipped: Counter[str] | None = None, *,
                 path: str | None = None, start: int = 0) -> None:
        from l4lite.ingest import reader as ingest
        from l4lite.ingest.files import InputFile
        from l4lite.ingest.streamnames import AMBIGUOUS

        self.r = ingest._FileReader(InputFile(path=rel, rel=rel, mtime=mtime), options, accounting,
                                    options.rank_map)
        self.max_chars = options.max_line_chars
        self.n = 0
        self.warn = warn
        self.skipped = skipped if skipped is not None else Counter()  # lines read into no record, by reason
        self._stale = ingest._STALE_LINES
        self._hold = ingest._HOLD_LINES
        self._ambiguous = AMBIGUOUS
        self._warned = False
        self._partial: int | None = None  # first line of a CRI or Docker partial line still waiting for its end
        self._plain_head = 0  # first non-empty lines without a CRI prefix, while that is undecided
        self._spotless = 0  # first non-empty lines that show no time spot (``timespots``), while that is undecided
        self._json_head: list[str] = []  # first non-empty lines, while the file's JSON keys (``jsonlog``) may grow
        self._order = SecondOrder()  # whole-second ties in file order, as ``read_file`` places them
        # a node logging in another time zone (``ingest.zones``), or whose clock stepped back (``ingest.steps``), is
        # read in the job's time by the function ``read_file`` reads it with (``ingest.jobclock``)
        ctx = self.r.ctx
        self._clocked = bool(ctx.node_shifts or ctx.clock_steps)
        # and a clock that jumps inside the file read back by its jump (``ingest.jumps``), where the other nodes'
        # ends are known: a finished job's (a running job's ends move on, and its re-reads correct it)
        self._pushed = Pushed()
        others_end = None if self.r.ctx.open_end else peers_end(self.r.ctx.node_ends, self.r.path_node)
        self._jumps = without_jumps(self._pushed, others_end) if others_end is not None else None
        # a file no path places: its records placed as ``read_file`` places them after its read (``pids.Placer``:
        # by an agent's pid, a summary's quote, a run between two lines of one node), each as its lines come
        self._placer = self.r.placer()
        if start > 0 and path is not None:
            self._resume(path, rel, mtime, start)

    def _resume(self, path: str, rel: str, mtime: float, start: int) -> None:
        """Start at byte ``start`` of the file (a restart from a committed offset, a context built again) knowing
        what its lines before tell, as a later piece of a large file does (``pieces.lead_of``, the file reader's
        ``learn_lead``): its format (CRI prefix, JSON keys) and time spot from its head, which host each stream
        is, and the clock from the lines just before; not from the lines that happen to come first here."""
        from l4lite.ingest.files import InputFile
        from l4lite.ingest.pieces import lead_of

        r = self.r
        piece = InputFile(path=path, rel=rel, mtime=mtime, size=start, start=start, stop=start)
        self._order.before = r.learn_lead(lead_of(piece), None, self._placer)
        self._json_head = [""] * HEAD_LINES  # the file's head was read: its keys are learnt
        self._plain_head = self._spotless = 0

    @property
    def pending_line(self) -> int | None:
        out = self.r.out
        first = out[0].line if out else None
        if self._partial is not None and (first is None or self._partial < first):
            first = self._partial  # its text is held in memory only: the offset must not pass it
        held = self._placer.held_line if self._placer is not None else None
        if held is not None and (first is None or held < first):
            return held  # complete records waiting for the line that places them
        return first

    @property
    def node_hint(self) -> str | None:
        """The node this file's lines were attributed to so far (the one host its lines name, else its path)."""
        host = self.r.file_host
        if host is not None and host != self._ambiguous:
            return host
        return self.r.path_node

    def feed(self, line_no: int, text: str) -> list[Record]:
        r = self.r
        if len(text) > self.max_chars:
            text = text[: self.max_chars]
        direct = None
        if r.cri is None and text:
            from l4lite.ingest.cri import CRI_HEAD_LINES, cri_prefix

            if cri_prefix(text):
                r.cri = True
            else:
                self._plain_head += 1
                r.cri = False if self._plain_head >= CRI_HEAD_LINES else None
        if r.cri:
            unwrapped = r.unwrap_cri(text)
            if unwrapped is None:  # a partial line: its text waits for the line that ends it
                self.skipped["cri_partial_joined"] += 1
                self.n += 1
                if self._partial is None:
                    self._partial = line_no
                return []
            if not r.cri_partial:
                self._partial = None
            text = unwrapped
        unwrapped: list[Record] = []
        head = self._json_head
        if text and len(head) < HEAD_LINES and not text.isspace() and \
                (r.json_keys is None or r.json_keys.text is not None and r.json_keys.inner is None):
            # the file's keys from its first records as they come, as ``read_file`` learns them from its head:
            # a line before the first record of the keys learnt is not one of their records either
            head.append(text)
            r.json_keys = learn_json_keys(head)
        if text and r.json_keys is None and text[-1:] == "}" and r.json_late < LATE_TRIES:
            r.late_json_keys(text, False)  # JSON records that begin after the file's head, as ``read_file`` finds them
        if text and r.spot is None:
            for printed in r.json_head((text,)):
                self._learn_spot(printed)
        if text and r.json_keys is not None:
            joined = r.join_parts(text, False)
            if joined is None:  # a Docker json-file part: its text waits for the record that ends its line
                self.skipped["json_partial_joined"] += 1
                self.n += 1
                if self._partial is None:
                    self._partial = line_no
                return []
            if not r.json_parts and not r.cri_partial:
                self._partial = None
            unwrapped, text = self._json_line(line_no, joined)
        if text and not (text[0] in " \t" and text.isspace()):
            try:
                direct = r._line(line_no, text)  # a finished single-line record, a blank marker, or None
                if direct is not None and not isinstance(direct, Record):
                    self.skipped["blank"] += 1  # blank once its prefixes are taken off
            except (IndexError, ValueError) as exc:  # a line the parser does not expect: counted, not parsed
                self.skipped["unparsed"] += 1
                if not self._warned:
                    self._warned = True
                    self.warn(f"{r.f.rel}:{line_no}: line not parsed ({exc.__class__.__name__})")
        else:
            self.skipped["blank"] += 1
        self.n += 1
        if not self.n & 255:
            if r.open and (len(r.open) > 1 or line_no - next(iter(r.open.values())).end > self._stale):
                r._close_stale(line_no)
            if r.hold and line_no > self._hold:
                r.hold = False
        out = r.out
        done = unwrapped + [direct] if isinstance(direct, Record) else unwrapped
        if out and out[0].closed and not r.hold:
            while out and out[0].closed:
                done.append(r._finish(out.popleft()))
        if r.block_starts and (pid := glog_pid(text)) in r.block_starts:  # another node's agent: its block begins
            r.new_block(r.block_starts, pid, line_no)
        return self._place(done)

    def _place(self, records: list[Record], flush: bool = False) -> list[Record]:
        """Records as ``read_file`` hands them on: in the job's time (``jobclock.in_job_time``), whole-second ties
        ordered, placed where no path places them (``pids.Placer``, which may hold some back for a later line: all
        given with ``flush``) and in a ``cat``'s agent blocks (``agents.block_place``)."""
        if self._clocked:
            records = list(in_job_time(iter(records), self.r.ctx, self.r.path_node))
        if self._jumps is not None:
            records = [self._pushed.through(record, self._jumps) for record in records]
        records = self._order.place(records)
        placer = self._placer
        if placer is not None:
            records = [settled for record in records for settled in placer.feed(record)]
            if flush:
                records += placer.flush()
        marks = self.r.block_marks
        if marks:
            for record in records:
                block_place(record, marks)
        return records

    def _json_line(self, line_no: int, text: str) -> tuple[list[Record], str]:
        """A JSON record's printed lines read as ``read_file`` reads them (``JsonReading.json_line``): the records
        its lines but the last finish, and the last line, which ``feed`` reads as any other; another line as is."""
        done: list[Record] = []
        step = self.r.json_line(line_no, text)
        try:
            while True:
                done.append(next(step))
        except StopIteration as stop:
            return done, stop.value

    def _learn_spot(self, text: str) -> None:
        """The file's time spot from its first lines as they come (``timespots.learn_spot`` of each): the first
        one a line shows, or none after ``LEARN_LINES`` lines that show none."""
        from l4lite.ingest.timespots import LEARN_LINES, learn_spot

        if text.isspace():
            return
        spot = learn_spot((text,), opening=not self._spotless)
        if spot:
            self.r.spot = spot
            return
        self._spotless += 1
        if self._spotless >= LEARN_LINES:
            self.r.spot = ""

    def expire(self, line_no: int) -> list[Record]:
        """Close the records that got no line after ``line_no`` (their continuation is not coming), and stop
        holding records back for a host name once the oldest waiting one is that old."""
        r = self.r
        for stream, op in list(r.open.items()):
            if op.end <= line_no:
                op.closed = True
                del r.open[stream]
        out = r.out
        if r.hold and out and out[0].line <= line_no:
            r.hold = False
        done = []
        while out and out[0].closed and not r.hold:
            done.append(r._finish(out.popleft()))
        return self._place(done)

    def flush(self) -> list[Record]:
        r = self.r
        held: list[Record] = []
        if r.cri_partial:  # the end of a partial line is not coming: its pieces so far make the line
            for text in r.cri_partial.values():
                if r.json_keys is not None:
                    unwrapped, text = self._json_line(self._partial or 0, text)
                    held.extend(unwrapped)
                direct = r._line(self._partial or 0, text)
                if isinstance(direct, Record):
                    held.append(direct)
            r.cri_partial.clear()
        self._partial = None
        r.hold = False
        for op in r.open.values():
            op.closed = True
        r.open.clear()
        out = r.out
        done = []
        while out:
            done.append(r._finish(out.popleft()))
        return self._place(done + held, flush=True)


class ContextReaders:
    """Per-stream record readers built on the ingest stage's parsing, reading with the job's context; they share
    one rank -> node map. ``refresh`` builds the context again from the files followed (``live.jobfacts``):
    readers made after it read with the new one."""

    resumes = True  # a reader may start inside a file (``__call__``'s ``start``)

    def __init__(self, root: str, warn: Callable[[str], None] | None = None, *, node_from: str | None = None,
                 rank_map: Any = None, paths: Sequence[str] = (), finished: bool = False) -> None:
        from l4lite.live.jobfacts import LiveContext

        self.root = root
        self.node_from = node_from
        self.facts = LiveContext(root, node_from, finished=finished)
        self.facts.build(paths)
        self.accounting = self.facts.accounting
        self.say = warn or (lambda message: None)
        self.skipped: Counter[str] = Counter()  # lines read into no record, by reason
        self.options = self._options(rank_map)
        self._tried = time.monotonic() if paths else 0.0

    def _options(self, rank_map: Any = None) -> Any:
        from l4lite.ingest.reader import IngestOptions

        options = IngestOptions(node_from=self.node_from)
        if rank_map is not None:
            options.rank_map = rank_map
        return options.use(self.facts.context)

    @property
    def context(self) -> Any:
        return self.facts.context

    @property
    def rank_map(self) -> Any:
        return self.options.rank_map

    def due(self, sizes: dict[str, int]) -> bool:
        return self.facts.due(sizes)

    def refresh(self, paths: Sequence[str]) -> bool:
        """Build the context again from ``paths``; True (and a fresh rank map for the readers made from now on)
        when it reads lines differently."""
        if not self.facts.build(paths):
            return False
        self.options = self._options()
        return True

    def __call__(self, rel: str, start: int = 0) -> RecordReader:
        """A reader of the stream ``rel`` from byte ``start`` on (its lines before read for what they tell)."""
        # Lines without a year take the job's year (learnt once files have lines), else the file's mtime.
        context = self.facts.context
        if context.year is None and time.monotonic() - self._tried >= 1.0:
            from l4lite.ingest.context import job_year

            self._tried = time.monotonic()
            context.year = job_year(self.facts.files([os.path.join(self.root, rel)]))
        path = os.path.join(self.root, rel)
        try:
            mtime = os.stat(path).st_mtime
        except OSError:
            mtime = time.time()
        return IngestLineReader(rel, self.options, self.accounting, mtime, self.say, self.skipped, path=path,
                                start=start)


def default_reader_factory(root: str, warn: Callable[[str], None] | None = None, *, node_from: str | None = None,
                           rank_map: Any = None, paths: Sequence[str] = (), finished: bool = False) -> ContextReaders:
    """Per-stream record readers (``ContextReaders``). ``paths``: the files there at start. As ``analyze`` does,
    the job's context (``ingest.context``: the node of each file, the year for timestamps printed without one,
    the boot time of nodes whose dmesg captures only carry uptimes) is built from them first; the job is still
    running, so its span stays open, unless ``finished`` (``tail --once``: the job as it stands)."""
    return ContextReaders(root, warn, node_from=node_from, rank_map=rank_map, paths=paths, finished=finished)
