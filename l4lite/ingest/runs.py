"""Runs of one-line records of known shapes, worked out a window of lines at a time.

Ingest reads the first line of a shape (its bytes with digits folded, ``l4lite.ingest.shape``) in full and later lines
of that shape from the same offsets (``ingest._FileReader._planned_simple`` and ``_planned``). Most lines of a
long training log are of a few such shapes: an ISO timestamp, the logger's fields, a progress line whose numbers
change. This module does that reading for a window of up to ``WINDOW_LINES`` lines at once: the shapes of all
lines from one byte translation of the window, the times of the lines of known shapes from one numpy gather of
their timestamp digits (``plan_block``). What is left per line is building its record, and the consumers that
can do without one take the run as it is (``ShapeRun``): ``l4lite parse`` puts it into its Arrow columns, its
text straight from the window's UTF-8 (``l4lite.export.spool``); the scan counts it per shape (``Scanner._add_run``);
and both mine it per shape (``mining.runmine.mine_run``).

A run takes lines whose shape starts with an ISO timestamp (bare, in brackets, or after blanks as Megatron-LM
prints it), after nothing or after a stream prefix that names a global rank (``srun --label``, ``[rankN]:``),
with no host or GPU in the line and ASCII up to the end of the timestamp. The reader (``RunReading``) takes a run only where it would have read each of its lines with a plan
(no record open, nothing queued or held), and does for the first line of a new minute what the per-line path
does (``TimestampParser.learn_minute``). So the records are those of the per-line path, which stays the
reference (``IngestOptions(line_runs=False)``); the tests compare both, and the scans of both.
"""

from __future__ import annotations

from collections.abc import Iterator
from operator import itemgetter
from typing import Any, Union

import numpy as np

from l4lite.ingest.attribution import NCCL_RANK
from l4lite.ingest.blocks import POW10_INT, BlockPlan, RunShape, TableRows, plan_block, run_shape
from l4lite.ingest.clocks import ClockCache, clock_times
from l4lite.ingest.firstsight import first_sight
from l4lite.ingest.heap import keep_freed_memory
from l4lite.ingest.planlearn import MAX_PLANS
from l4lite.ingest.shape import fold_class, fold_ids
from l4lite.ingest.shaperun import ShapeBook, ShapeRun
from l4lite.ingest.stretch import ShapeFlags, known_stretch

MIN_BLOCK_LINES = 64  # a smaller window is read line by line: the numpy set-up would cost more than it saves
RUN_BLOCK_LINES = 2048  # a block (a small file) of fewer lines is read line by line: runs would not pay back
WINDOW_LINES = 4096  # lines worked out at once, at most (a file's first windows are smaller: see _runs_or_lines)
MIN_CLOCK_RUN = 16  # a shorter run of syslog or dmesg lines is read line by line (see _block)
STRETCH_LINES = 8  # lines read one by one between runs before looking again (a shape they teach may start one)
_ONE_OFF_SHAPES = 8192  # shapes of lines taken into runs from their header's plan, kept before the book restarts
# what RunReading._runs_or_lines yields: a run, or a stretch (first line number, lines, their keys or None)
Segment = Union["ShapeRun", tuple[int, list[str], "list[bytes] | None"]]


def _prefix_keys(buf: np.ndarray, starts: np.ndarray, at: list[int]) -> np.ndarray:
    """One value per line, equal for equal names: lines of one shape differ only in their digits, so the digits
    at ``at`` (those of a stream prefix and of the rank) read as one number tell the names apart. (Numbers sort
    several times faster than bytes; more than 18 digits are told apart by their bytes.)"""
    if not at:
        return np.zeros(len(starts), dtype=np.int64)
    if len(at) <= 18:
        digits = buf[starts[:, None] + np.array(at)].astype(np.int64) - 48
        return digits @ POW10_INT[len(at) - 1::-1]
    width = max(at) + 1
    return np.ascontiguousarray(buf[starts[:, None] + np.arange(width)]).view(f"V{width}").ravel()


class RunReading:
    """How ``ingest._FileReader`` takes runs: mixed into it, it uses the reader's state (``run_index`` and
    ``run_table``, the shapes its pass has learnt, from its ``ShapeBook``; ``out``, ``open`` and ``hold``,
    whether it would read the next line with the simple plan; ``ts``, ``future``, ``last_time``, the names of its
    file and streams). It hands the stretches between runs back to the reader's per-line loop
    (``_FileReader.run``)."""

    def init_runs(self, book: ShapeBook) -> None:
        keep_freed_memory()  # the windows' arrays reuse the memory of the window before (``heap``)
        self.book = book
        self.use_book()
        self.clock_cache = ClockCache()
        self.shape_flags = ShapeFlags()  # the run table's ``clocked`` and ``ties`` as arrays (``stretch``)
        self.table_rows = TableRows()  # its timestamp layouts (``plan_block``)
        self.probe = MIN_BLOCK_LINES * 2  # lines read one by one before looking for runs again (doubles)
        # lines in the next window; it doubles, for a file's early windows meet new shapes, unless the book
        # already has run shapes from the files before this one
        self.window = WINDOW_LINES if book.run_table else MIN_BLOCK_LINES * 4

    def use_book(self) -> None:
        """Take the book's current tables (again, after it restarted)."""
        book = self.book
        self.plans, self.run_index, self.run_table, self.run_pending = (book.plans, book.run_index,
                                                                        book.run_table, book.run_pending)
        self.fold_index, self.fold_seen, self.absorb_index = book.fold_index, book.fold_seen, book.absorb_index
        self.absorb_refused = book.absorb_refused
        self.heads, self.head_lengths, self.head_seen = book.heads, book.head_lengths, book.head_seen

    def _runs_or_lines(self, first: int, lines: list[str]) -> Iterator[Segment]:
        """A block of lines as segments: runs where it can be (``_block``), and stretches ``(first line number,
        lines, their keys or None)`` for the reader's per-line loop, which reads each before this goes on. The
        shapes a run needs are learnt by that loop: a file starts line by line, and its first windows are small,
        for a line of a shape learnt after its window was worked out costs more (``_patch``)."""
        n = len(lines)
        a = 0
        tried = (-1, -1)  # run shapes (and plans) known when a window last had no line of them
        while a < n:
            if self.run_pending:
                self._take_pending()
            # lines of a plan may make runs of their own where the path names the node (``_absorb``)
            absorbing = bool(self.plans) and self.path_node is not None
            known = (len(self.run_table), len(self.plans) if absorbing else -1)
            if (self.run_table or absorbing) and known != tried and not self.hold and \
                    n - a >= MIN_BLOCK_LINES:
                size = self.window
                part = lines[a:a + size] if (a or n > size) else lines
                block = plan_block(part, self.run_index, self.run_table, self.future, self.past, self.fold_index,
                                   self.table_rows, absorbing)
                if block is not None and block.minute_lines == [] and not (block.shape_array >= 0).any() and \
                        not self._absorbable(block):
                    block = None  # no line of a run shape, nor of a plan a run may read: line by line
                if block is not None:
                    yield from self._block(first + a, part, block)
                    a += len(part)
                    self.window = min(size * 2, WINDOW_LINES)
                    continue
                tried = known
            step = self.probe
            yield first + a, lines[a:a + step] if (a or n > step) else lines, None
            a += step
            self.probe = min(step * 2, WINDOW_LINES)

    def _absorbable(self, block: BlockPlan) -> bool:
        """Whether a window of no line of a run shape is worth reading as runs of lines read from their plans
        (``_absorb``): where a quarter of its lines are of plans a run may read. (Elsewhere the stretches between
        such runs would cost more than they save; the records are the same either way.)"""
        plans, refused = self.plans, self.absorb_refused
        return sum(k in plans and k not in refused for k in block.keys) * 4 >= len(block.keys)

    def _block(self, first: int, lines: list[str], block: BlockPlan) -> Iterator[Segment]:
        """Segments of a window: runs where the per-line loop would read every line with the simple plan (nothing
        open, queued or held), stretches for it in between. A line of a shape learnt after the window was worked
        out joins a run as the per-line loop would read it (``_patch``)."""
        i = 0
        n = len(lines)
        shape_list = block.shape_list
        keys = block.keys
        while i < n:
            if self.run_pending:
                self._take_pending()
            j = i
            start_time = self.last_time
            absorbed: list[tuple[int, tuple[str | None, int | None, int | None]]] = []
            if not self.out and not self.open and not self.hold:
                patch = self._patch if block.table is self.run_table else None
                absorb = patch is not None and self.path_node is not None and bool(self.head_lengths or self.plans)
                table = block.table
                last = start_time  # the per-line loop's last_time at line j
                clocked = False
                while j < n:
                    if shape_list[j] >= 0 or (patch is not None and patch(block, j)):
                        # a clocked line's time is read after the run's end is known (``_clock_times``)
                        stretch = known_stretch(block, j, bool(absorbed), self.shape_flags)
                        if stretch.end == j:  # a clocked line after absorbed ones
                            break
                        for k in stretch.ties:
                            self._tie(lines[k], table[shape_list[k]])
                        clocked = clocked or stretch.clocked
                        if stretch.last is not None:
                            last = stretch.last
                        j = stretch.end
                    elif absorb and not clocked and self._absorb(block, first, i, j, last, absorbed):
                        last = self.last_time
                        j += 1
                    else:
                        break
                if clocked:
                    if j - i < MIN_CLOCK_RUN and j < n:  # a run this short costs more than its lines one by one
                        yield first + i, lines[i:j], keys[i:j]
                        i = j
                        continue
                    j = i + self._clock_times(block, i, j)
            if j > i:
                self._learn_minutes(block, j)
                times, time_array = self._carried_times(block.time_list[i:j], block.time_array[i:j], start_time,
                                                        block.table, block.shape_array[i:j])
                run = ShapeRun(self.f.rel, first + i, lines[i:j], keys[i:j], times,
                               shape_list[i:j], block.table, *self._run_names(), raw=block.raw,
                               bounds=block.bounds[i:j + 1], time_array=time_array,
                               shape_array=block.shape_array[i:j])
                named = self._prefixed_names(run)
                if absorbed:  # the names the lines read from their header's plan gave
                    distinct, group = named if named is not None else ([(run.node, run.rank, run.gpu)],
                                                                       np.zeros(j - i, np.int64))
                    index = {names: k for k, names in enumerate(distinct)}
                    for at, names in absorbed:
                        k = index.get(names)
                        if k is None:
                            k = index[names] = len(distinct)
                            distinct.append(names)
                        group[at] = k
                    named = distinct, group
                if named is None:
                    if run.node is None and run.rank is None:
                        self.nameless += j - i
                else:
                    run.name_table, run.name_rows = named
                    if run.node is None and run.rank is None:
                        self.nameless += sum(int(np.count_nonzero(named[1] == k)) for k, (node, rank, _) in
                                             enumerate(named[0]) if node is None and rank is None)
                self.last_time = next((t for t in reversed(run.times) if t is not None), start_time)
                yield run
                i = j
            else:
                # the per-line loop up to the next line a run could start at (it may open or queue a record)
                run_index, absorb_index = self.run_index, self.absorb_index
                j = i + 1
                while j < n and shape_list[j] < 0 and keys[j] not in run_index and keys[j] not in absorb_index \
                        and j - i < STRETCH_LINES:
                    j += 1
                yield first + i, lines[i:j] if (i or j < n) else lines, keys[i:j]
                i = j

    def _clock_times(self, block: BlockPlan, i: int, j: int) -> int:
        """``clocks.clock_times`` of lines ``i:j`` of a window, with this reader's parser and limits."""
        return clock_times(block, i, j, self.ts, self.future, self.past, self.clock_cache)

    def _carried_times(self, times: list[float], time_array: np.ndarray, start: float | None,
                       table: list[RunShape], shapes: np.ndarray) -> tuple[list[Any], np.ndarray]:
        """The times of a run's lines, those without a timestamp (NaN in the window) given the time of the line
        before them, as the per-line path does (``last_time``, ``start`` before the run): None (NaN in the array)
        before the file's first timestamp, and for a relayed copy (``RunShape.relayed``)."""
        missing = np.isnan(time_array)
        if not missing.any():
            return times, time_array
        idx = np.where(missing, -1, np.arange(len(time_array)))
        np.maximum.accumulate(idx, out=idx)
        filled = np.where(idx >= 0, time_array[np.maximum(idx, 0)], np.nan if start is None else start)
        relayed = [k for k, x in enumerate(table) if x.relayed]
        if relayed:
            filled[np.isin(shapes, relayed)] = np.nan
        values = filled.tolist()
        if start is None or relayed:
            values = [None if v != v else v for v in values]
        return values, filled

    def _absorb(self, block: BlockPlan, first: int, i: int, j: int, last: float | None,
                absorbed: list[tuple[int, tuple[str | None, int | None, int | None]]]) -> bool:
        """Take line ``j`` of a window into the run that started at line ``i`` where the per-line loop would read it
        from a plan without ending anything: its own plan, where that plan reads a time the window does not (a glog
        or c10 header, a time after a level letter, a stream prefix before a header), or its header's plan
        (``_head_planned``: an NCCL init line or a kernel line with a new hex id amid known shapes). It is read as
        that loop would read it now (the lines of the run before it have given their time and minutes first) and
        joins the run under a shape of its own: one entry per shape for a line of its own plan, whose message,
        level and source are the plan's. A shape that is seldom a run's neighbour thus costs its own line, not the
        end of the run it sits in; and lines of plans alone (a glog log, whose time the window does not read) make
        runs of their own (``j == i``), which the later stages take per shape. A header's plan only extends a run."""
        key = block.keys[j]
        s = block.lines[j]
        if block.table is not self.run_table or not s or (s[0] in " \t" and s.isspace()):
            return False
        own = self.plans.get(key)
        if own is not None and len(own) != 6 and (own[2] or own[11] is not None or own[12] is not None):
            self.absorb_refused.add(key)  # a local rank's stream, or a host or GPU it names, changes the names
            return False  # of the run's lines
        plan = self.head_plan(key) if own is None and self.head_lengths and j > i else None
        if own is None and plan is None:
            return False
        self._learn_minutes(block, j)
        self.last_time = last
        table = self.run_table
        if len(table) - len(self.run_index) - len(self.fold_index) > _ONE_OFF_SHAPES:  # one-line shapes: start a new table at times
            self.book.restart()
            self.use_book()
            return False
        if own is not None and len(own) != 6:  # no record needed: the plan's level, source and message offsets
            got = self._planned_names(first + j, s, own)
            if got is None:
                return False
            t, names, level, source = got[0], got[1:], own[4], own[5]
            a, width = own[6], -1  # (the message's width, s[a:own[7]], is wanted for a new shape only)
        else:
            r = self._planned_simple(first + j, s, own) if own is not None else \
                self._head_planned(first + j, s, key, plan)  # type: ignore[arg-type]
            if r is None:
                return False
            t, names, level, source = r.time, (r.node, r.rank, r.gpu), r.level, r.source
            a, width = (own[1] if own is not None else plan[0]), len(r.message)  # type: ignore[index]
        x = self.absorb_index.get(key) if own is not None else None
        if x is not None and (table[x].level != level or table[x].source != source):
            x = None
        if x is None:
            if width < 0:
                width = len(s[a:own[7]])  # type: ignore[index]
            table.append(RunShape(key, -1, -1, 0, a, a + width, level, source,
                                  key[a:a + width] if key.isascii() else None))
            x = len(table) - 1
            if own is not None:
                self.absorb_index[key] = x
        block.shape_list[j] = block.shape_array[j] = x
        block.time_list[j] = block.time_array[j] = np.nan if t is None else t
        absorbed.append((j - i, names))
        return True

    def _tie(self, s: str, sh: RunShape) -> None:
        """The rank an NCCL init line ties to its host ("rank 3 nranks 16"), as ``_saw`` ties it."""
        m = NCCL_RANK.search(s[sh.msg_start:sh.msg_end])
        if m:
            self.rank_map.tie(int(m[1]), self._host(s[sh.host_start:sh.host_end]), int(m[2]))

    def _take_pending(self) -> None:
        """Make run shapes of the plans learnt since the last call. (Learning leaves this to here: most files are
        too short for runs, and a file's first lines are mostly of new shapes.)"""
        index, table = self.run_index, self.run_table
        for args in self.run_pending:
            if args[0] not in index:
                shape = run_shape(*args)
                if shape is not None:
                    index[args[0]] = len(table)
                    table.append(shape)
        self.run_pending.clear()

    def _patch(self, block: BlockPlan, j: int) -> bool:
        """Give line ``j`` of a window its run shape and time if it is of a shape learnt since the window was worked
        out and ``_planned_simple`` would read it now (its minute known, its time not in the future)."""
        x = self.run_index.get(block.keys[j])
        if x is None:
            return bool(self.fold_index) and self._patch_folded(block, j)
        sh = block.table[x]
        if sh.date_start < 0:  # no timestamp: the time before it (``_carried_times``)
            block.shape_list[j] = block.shape_array[j] = x
            block.time_list[j] = block.time_array[j] = np.nan
            return True
        s = block.lines[j]
        layout = (sh.date_start, sh.frac_start, sh.frac_len)
        t = self.ts.iso_time(s, layout)
        if t is None:  # the first line of a minute: the per-line path learns it, after the lines before it
            self._learn_minutes(block, j)
            a = sh.date_start
            try:
                self.ts.learn_minute(s[a:a + 16], int(s[a:a + 4]), int(s[a + 5:a + 7]), int(s[a + 8:a + 10]),
                                     int(s[a + 11:a + 13]), int(s[a + 14:a + 16]))
            except ValueError:  # not a date: the per-line path takes it
                return False
            t = self.ts.iso_time(s, layout)
        if t is None or t > self.future or t < self.past:
            return False
        block.shape_list[j] = block.shape_array[j] = x
        block.time_list[j] = block.time_array[j] = t
        return True

    def _patch_folded(self, block: BlockPlan, j: int) -> bool:
        """Give line ``j`` of a window the folded shape (``shape.fold_ids``) it has, as ``plan_block`` gives one to
        the lines it meets: one learnt since the window was worked out, or one learnt from this line at once
        where its token class is the class of a folded shape learnt before (``firstsight``)."""
        key = block.keys[j]
        folded = fold_ids(key) if block.folded is None else block.folded[j]  # (the window's fold, where it has one)
        x = self.fold_index.get(folded)
        if x is None:
            x = self._first_sight(block.lines[j], key, folded)
            if x is None:
                return False
        sh = block.table[x]
        if key[:sh.fold_from] != folded[:sh.fold_from]:  # a letter folded before the shape's fold_from
            return False
        block.shape_list[j] = block.shape_array[j] = x
        block.time_list[j] = block.time_array[j] = np.nan  # its clock is read with the run's (``_clock_times``)
        if block.clocks is not None:  # the window's clocks were worked out without it: its own are added then
            block.stale.append(j)
        return True

    def _first_sight(self, s: str, key: bytes, folded: bytes) -> int | None:
        """The run table index of line ``s``'s folded shape learnt from it at once (``firstsight.first_sight``)
        where a folded shape of its token class is known, else None. A full book is left as it is here (a
        window refers to its table); the per-line loop restarts it."""
        book = self.book
        if self.path_node is None or not self.opt.fold_shapes or len(self.fold_index) >= MAX_PLANS or \
                len(self.run_table) - len(self.run_index) - len(self.fold_index) > _ONE_OFF_SHAPES:
            return None
        cls = fold_class(folded)
        if cls not in book.fold_classes:
            return None
        plan = self.head_plan(key)
        found = None if plan is None else first_sight(s, key, plan, self.default_source)
        if found is None or found[0] != folded:
            return None
        x = self.fold_index[folded] = len(self.run_table)
        self.run_table.append(found[1])
        return x

    def _learn_minutes(self, block: BlockPlan, j: int) -> None:
        """What the per-line path does, up to line ``j`` of a window, for the first line of a minute the timestamp
        parser has not seen. (A minute whose first line is read by the per-line path is learnt there.)"""
        first = block.minute_lines
        if first and first[-1] >= block.learned:  # (else no line from ``learned`` on is a minute's first)
            known = self.ts.known_minute
            for text, parts in block.minutes_from(block.learned, j):
                if not known(text):
                    self.ts.learn_minute(text, *parts)
        block.learned = j

    def _run_names(self) -> tuple[str | None, int | None, int | None]:
        """Node, rank and GPU of the lines of a run without a stream prefix (``_planned_simple``'s, the same for
        every such line of a run)."""
        rank = self.path_rank
        node = self.path_node
        gpu = None
        if node is None and (self.streams or rank is not None):
            node, gpu = self._fill("", node, rank, gpu)
        return node, rank, gpu

    def _prefixed_names(self, run: ShapeRun) -> tuple[list[tuple[str | None, int | None, int | None]],
                                                      np.ndarray] | None:
        """Node, rank and GPU of the lines of a run where some of them carry a rank in a stream prefix: the rank
        from its digits, the node and GPU from the stream and the rank ties (``_planned``'s, the same for one
        stream and rank throughout a run), as the distinct triples and each line's index into them. None when no
        line does.

        A prefix ends at the same offset in every line of a shape and is ASCII, so the lines whose prefixes have
        one shape (whatever their messages) are told apart by their prefix bytes at once (``numpy.unique`` over
        the window's bytes, ``_prefix_keys``), and each distinct prefix is read once."""
        table, shapes = run.table, run.shapes
        # the run's shapes by the shape of their prefix: "  3: " of a progress line and of a timer line are one
        by_prefix: dict[tuple[bytes, int, int, bool, int, int, int, int], list[int]] = {}
        for x in set(shapes):
            sh = table[x]
            if sh.host_start >= 0:  # NCCL's "host:pid:tid [dev] " up to the GPU, a Ray actor's prefix, pdsh's host
                by_prefix.setdefault((sh.key[:max(sh.host_end, sh.gpu_end, sh.prefix_end)], sh.rank_start, sh.rank_end, False,
                                      sh.host_start, sh.host_end, sh.gpu_start, sh.gpu_end), []).append(x)
            elif sh.rank_start >= 0:
                by_prefix.setdefault((sh.key[:sh.prefix_end], sh.rank_start, sh.rank_end, sh.rank_local,
                                      -1, -1, -1, -1), []).append(x)
        if not by_prefix:
            return None
        assert run.raw is not None and run.bounds is not None  # a run from a window has them
        n = len(shapes)
        only = next(iter(by_prefix.values()))
        shape_array = None if len(by_prefix) == 1 and len(only) == 1 and shapes.count(only[0]) == n \
            else run.shape_codes()
        buf = np.frombuffer(run.raw, np.uint8)
        starts = run.bounds[:-1]
        group = np.zeros(n, np.int64)  # per line: its entry in ``distinct``, 0 for no prefix
        distinct: list[tuple[str | None, int | None, int | None]] = [(run.node, run.rank, run.gpu)]
        seen: dict[tuple[str, Any, int], int] = {}
        hosts_seen: list[tuple[int, str, int | None, str]] = []  # (line, host, GPU, stream) per distinct header
        local_streams = self.local_streams
        for (prefix_key, rank_start, rank_end, local, host_start, host_end, gpu_start, gpu_end), xs in \
                by_prefix.items():
            stream_end = table[xs[0]].prefix_end if host_start >= 0 else 0
            if shape_array is None:
                lines = np.arange(n)
            else:
                lines = np.flatnonzero(shape_array == xs[0] if len(xs) == 1 else np.isin(shape_array, xs))
            width = len(prefix_key)
            # a syslog host alone: its digits tell the names apart (the time's before it do not); of a stream
            # prefix, each stream
            lo = host_start if host_start >= 0 and gpu_start < 0 and not stream_end else 0
            at = sorted({i for i, b in enumerate(prefix_key) if b == 48 and i >= lo} | set(range(rank_start, rank_end)))
            _, first, inverse = np.unique(_prefix_keys(buf, starts[lines], at), return_index=True,
                                          return_inverse=True)
            entries = []
            for i in lines[first].tolist():
                s = run.texts[i]
                if host_start >= 0:
                    host = self._host(s[host_start:host_end])
                    gpu = int(s[gpu_start:gpu_end]) if gpu_start >= 0 else None
                    hosts_seen.append((i, host, gpu, s[:stream_end].rstrip(" ")))
                    rank = int(s[rank_start:rank_end]) if rank_start >= 0 else self.path_rank  # "[Rank 3]" after pdsh's
                    key: tuple[str, Any, int | None] = ("", (host, rank), gpu)
                    k = seen.get(key)
                    if k is None:
                        k = seen[key] = len(distinct)
                        distinct.append((host, rank, gpu))
                    entries.append(k)
                    continue
                key = (s[:width].rstrip(" "), None, int(s[rank_start:rank_end]))
                if local and key[0] not in local_streams:
                    local_streams.add(key[0])
                k = seen.get(key)
                if k is None:
                    node, gpu = self._fill(key[0], self.path_node, key[2], None)
                    k = seen[key] = len(distinct)
                    distinct.append((node, key[2], gpu))
                entries.append(k)
            group[lines] = np.array(entries, np.int64)[inverse.ravel()]
        # what each NCCL line tells about its stream's host and GPU, as the per-line path learns it: in the
        # order the headers first come (a later repeat of one changes nothing)
        for _, host, gpu, stream in sorted(hosts_seen, key=itemgetter(0)):
            self._saw(stream, host, gpu, None, None)
        return distinct, group
