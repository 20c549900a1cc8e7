"""A window of log lines worked out at once: the line shapes a run may take (``RunShape``), and for a window of
lines (``plan_block``) each line's shape from one byte translation and the times of the lines of run shapes from
one numpy gather of their timestamp digits. ``l4lite.ingest.runs`` makes runs of the windows.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any

import numpy as np

from l4lite.ingest.shape import FOLD_DIGITS, hex_key, wide_fold, wide_signature, wide_spans

_POW10 = np.array([10.0 ** k for k in range(10)])
# powers of ten up to 10**17 (exact in int64): a run of digits read as one number by a dot product
POW10_INT = np.array([10**k for k in range(18)], dtype=np.int64)
# the kind of each byte of a shape, for ``fold_window``, as one bit each: a hex letter, the 0 (the only digit),
# another ASCII letter (``x`` and upper case too); none for the bytes between words. ``_LEAD_X`` marks the ``x``
# of a word's leading ``0x``, a word character that counts as no other letter.
_HEX_BIT, _ZERO_BIT, _OTHER_BIT, _LEAD_X = 1, 2, 4, 8
_BITS = bytearray(256)
for _c in b"abcdef":
    _BITS[_c] = _HEX_BIT
_BITS[48] = _ZERO_BIT
for _c in b"ghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ":
    _BITS[_c] = _OTHER_BIT
_KIND_BITS = bytes(_BITS)


def fold_window(keys: bytes) -> tuple[bytes, np.ndarray]:
    """``shape.fold_ids`` of every line of a window's shapes (joined by newlines) at once, and where it folded a
    letter. A word of ``[0a-f]`` holding a ``0`` and a hex letter, or ``0x`` and such characters, has its letters
    folded. Each byte's kind comes from one ``bytes.translate`` as a bit, and one ``bitwise_or.reduceat`` over
    the word starts gives each word the kinds it holds, in bytes rather than in counts (an ``x`` after a word's
    leading ``0`` is marked apart first, so ``0x`` words need no count of their letters); only the bytes of the
    words to fold are looked at again."""
    a = np.frombuffer(keys, np.uint8)
    bits = np.frombuffer(keys.translate(_KIND_BITS), np.uint8)
    xs = np.flatnonzero(a == 120)
    if len(xs):
        xs = xs[xs > 0]
        two = xs - 2
        xs = xs[(a[xs - 1] == 48) & ((two < 0) | (bits[np.maximum(two, 0)] == 0))]  # "0x" starting a word
        if len(xs):
            bits = bits.copy()
            bits[xs] = _LEAD_X
    word = bits != 0
    edges = np.flatnonzero(word[1:] != word[:-1]) + 1  # where a word starts or ends, but at the window's ends
    if len(a) and word[0]:
        edges = np.concatenate(([0], edges))
    if len(a) and word[-1]:
        edges = np.concatenate((edges, [len(a)]))
    if not len(edges):
        return keys, edges
    ws, we = edges[0::2], edges[1::2]
    # a word's bits: the reduction runs from its start to the next word's, over a gap of no bits
    held = np.bitwise_or.reduceat(bits, ws) & (_HEX_BIT | _ZERO_BIT | _OTHER_BIT)
    fold = held == _HEX_BIT | _ZERO_BIT
    if not fold.any():
        return keys, np.zeros(0, np.intp)
    fs, fe = ws[fold], we[fold]
    lengths = fe - fs
    offsets = np.zeros(len(lengths), np.intp)
    np.cumsum(lengths[:-1], out=offsets[1:])
    pos = np.repeat(fs - offsets, lengths) + np.arange(int(lengths.sum()))  # every byte of a word to fold
    at = pos[bits[pos] == _HEX_BIT]
    out = a.copy()
    out[at] = 48
    return out.tobytes(), at


@dataclass(slots=True)
class RunShape:
    """A line shape a run can take: where its timestamp and message sit, and what the first line gave."""

    key: bytes
    date_start: int  # offset of the ISO date-time
    frac_start: int  # offset of its fraction of a second, -1 without one
    frac_len: int
    msg_start: int
    msg_end: int
    level: str | None
    source: str
    msg_key: bytes | None  # the message's shape (``key[msg_start:msg_end]`` when the line is all ASCII)
    prefix_end: int = 0  # end of a stream prefix that names the rank ("  3: " of srun --label), 0 without one
    rank_start: int = -1  # where the rank's digits sit: in that prefix, or in the message ("[Rank 3]")
    rank_end: int = -1
    rank_local: bool = False  # the prefix names a local rank ("[default3]:")
    # where a header names the line's host and GPU (NCCL's "host:pid:tid [dev] "), -1 without one
    host_start: int = -1
    host_end: int = -1
    gpu_start: int = -1
    gpu_end: int = -1
    ties: bool = False  # its message ties a rank to the host ("rank 3 nranks 16": ``RunReading._prefixed_names``)
    relayed: bool = False  # a Ray driver's copy of an actor's line (``relay.relayed``): no time of its own
    # A shape of a syslog or dmesg clock (``RunReading._clock_times``): the syslog time's text (its start, length,
    # month and where its day and hour sit; start -1 without one) and a dmesg uptime's digits (-1 without one),
    # which are the line's time when it has no syslog time and anchor the boot clock when it has one
    clock_at: int = -1
    clock_len: int = 0
    month: int = 0
    day_at: int = -1
    day_len: int = 0
    hour_at: int = -1
    up_start: int = -1
    up_end: int = -1
    opens: bool = False  # its line opens a record that the next line of a run closes (``NVRM:``, an error)
    # a shape keyed by ``fold_ids``: a line takes it only where its first folded letter sits at or after this
    # (its header and what the header reader may read of the message are exactly the first line's); -1 for a
    # shape keyed by its digits alone
    fold_from: int = -1
    # of a folded shape: where in its message the miner's key may fold words, and a memo of the keys of the
    # messages of its lines (``wide_key``)
    wide: Any = field(default=None, compare=False, repr=False)
    # the miner's key of its message (``shape.hex_key``; ``mining.runmine.mine_run``), found once per shape rather
    # than once per run it is in: lines with numbers of changing width (metric lines) are many shapes in each run
    miner_key: bytes | None = field(default=None, compare=False, repr=False)

    @property
    def clocked(self) -> bool:
        return self.clock_at >= 0 or self.up_start >= 0


def run_shape(key: bytes, layout: tuple[int, int, int] | None, msg_start: int, msg_end: int, level: str | None,
              source: str, prefix_end: int = 0, rank_span: tuple[int, int] | None = None,
              rank_local: bool = False, host_span: tuple[int, int] | None = None,
              gpu_span: tuple[int, int] | None = None, ties: bool = False, relayed: bool = False
              ) -> RunShape | None:
    """The run shape of a plan, or None when the line is not all ASCII up to the end of its timestamp, its rank,
    host and GPU (character offsets are byte offsets only there). A plan without a layout is of a line without a
    timestamp: its lines take the time of the line before them, as the per-line path gives them."""
    ds, fs, fl = layout if layout is not None else (-1, -1, 0)
    host_start, host_end = host_span if host_span is not None else (-1, -1)
    gpu_start, gpu_end = gpu_span if gpu_span is not None else (-1, -1)
    end = max(ds + 19 if ds >= 0 else 0, fs + fl, prefix_end, rank_span[1] if rank_span is not None else 0,
              host_end, gpu_end)
    if not key[:end].isascii() or len(key) < end:
        return None
    msg_key = key[msg_start:msg_end] if key.isascii() else None
    rank_start, rank_end = rank_span if rank_span is not None else (-1, -1)
    return RunShape(key, ds, fs, fl, msg_start, msg_end, level, source, msg_key, prefix_end, rank_start, rank_end,
                    rank_local, host_start, host_end, gpu_start, gpu_end, ties, relayed)


class BlockPlan:
    """One window of lines: their keys, which lines a run may take and their times, and the first line of each
    minute of their timestamps (``minutes_from``)."""

    __slots__ = ("lines", "keys", "raw", "bounds", "table", "shape_list", "time_list", "shape_array", "time_array",
                 "minute_lines", "minute_parts", "learned", "clocks", "stale", "folded")

    def __init__(self, lines: list[str], keys: list[bytes], raw: bytes, bounds: np.ndarray, table: list[RunShape],
                 shape_array: np.ndarray, time_array: np.ndarray, minute_lines: list[int],
                 minute_parts: list[tuple[int, int, int, int, int, int]], folded: list[bytes] | None = None) -> None:
        self.lines = lines
        self.keys = keys
        self.raw = raw  # the lines' UTF-8, joined by newlines
        self.bounds = bounds  # where each line starts in ``raw``, and len(raw) + 1
        self.table = table  # the run shapes the indices refer to
        # per line: its run shape, -1 where no run may take it, and its time; as lists for the per-line loops and
        # as arrays for the columnar ones (``_patch`` keeps the two alike)
        self.shape_array = shape_array
        self.time_array = time_array
        self.shape_list: list[int] = shape_array.tolist()
        self.time_list: list[float] = time_array.tolist()
        self.learned = 0  # lines before this one have had their minutes seen (``RunReading._learn_minutes``)
        self.clocks: Any = None  # the syslog and dmesg clocks of its lines (``clocks.window_clocks``)
        self.stale: list[int] = []  # lines given a shape since ``clocks`` was worked out
        self.minute_lines = minute_lines  # the first line a run may take of each minute, in order
        self.minute_parts = minute_parts  # of each of those: (offset of the date, y, mo, d, h, mi)
        self.folded = folded  # each line's folded shape (``fold_ids``), where the window was folded, else None

    def minutes_from(self, i: int, j: int) -> list[tuple[str, tuple[int, int, int, int, int]]]:
        """(text, (y, mo, d, h, mi)) of the minutes that lines ``i:j`` are the first of (among the lines a run may
        take), in order."""
        first = self.minute_lines
        a = bisect_left(first, i)
        b = bisect_left(first, j, a)
        out = []
        for line, (ds, *parts) in zip(first[a:b], self.minute_parts[a:b], strict=True):
            out.append((self.lines[line][ds:ds + 16], tuple(parts)))
        return out


_DAYS_IN_MONTH = np.array([31, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31])  # [0] unused


def epoch_days(y: np.ndarray, mo: np.ndarray, d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Days since 1970-01-01 of proleptic Gregorian dates (``date.toordinal() - 719163``), and which dates exist
    (``date()`` raises for the others)."""
    leap = (y % 4 == 0) & ((y % 100 != 0) | (y % 400 == 0))
    month_ok = (mo >= 1) & (mo <= 12)
    mo1 = np.where(month_ok, mo, 1)
    valid = month_ok & (y >= 1) & (d >= 1) & (d <= _DAYS_IN_MONTH[mo1] + (leap & (mo1 == 2)))
    yy = y - (mo1 <= 2)
    era = yy // 400
    yoe = yy - era * 400
    doy = (153 * ((mo1 + 9) % 12) + 2) // 5 + d - 1
    return era * 146097 + yoe * 365 + yoe // 4 - yoe // 100 + doy - 719468, valid


class TableRows:
    """Each run shape's timestamp layout as a row of an array (date offset, fraction offset and length, the form of
    its minute's text: the parser keys minutes by their text without digits), for ``plan_block``. A run table is
    only appended to (or replaced by a new one), so the rows of the shapes added since the last window are added
    to the rows before, not worked out again for every shape of a table of thousands in every window."""

    def __init__(self) -> None:
        self.table: list[RunShape] | None = None
        self.forms: dict[bytes, int] = {}
        self.rows = np.zeros((0, 4), np.int64)

    def of(self, table: list[RunShape]) -> np.ndarray:
        if table is not self.table or len(table) < len(self.rows):
            self.table, self.forms, self.rows = table, {}, np.zeros((0, 4), np.int64)
        if len(table) > len(self.rows):
            forms = self.forms
            new = [(sh.date_start, sh.frac_start, sh.frac_len,
                    forms.setdefault(sh.key[sh.date_start:sh.date_start + 16], len(forms)))
                   for sh in table[len(self.rows):]]
            self.rows = np.concatenate([self.rows, np.array(new, np.int64).reshape(-1, 4)])
        return self.rows


def plan_block(lines: list[str], shape_index: dict[bytes, int], table: list[RunShape],
               future: float, past: float = -math.inf,
               fold_index: dict[bytes, int] | None = None, rows: TableRows | None = None,
               empty_ok: bool = False) -> BlockPlan | None:
    """Work out a window of lines: each line's key, which lines are of a run shape, and their times. None when no
    line is, unless ``empty_ok`` (the reader may take lines into runs from their plans, ``RunReading._absorb``).
    A line of no shape in ``shape_index`` is looked up by its folded shape in ``fold_index`` (``fold_window``); the times of those shapes' clocks are read later, run by run, for they depend on the
    reading state (``RunReading._clock_times``). ``rows`` keeps the table's timestamp layouts from the windows
    before."""
    n = len(lines)
    raw = "\n".join(lines).encode("utf-8", "surrogatepass")
    joined = raw.translate(FOLD_DIGITS)
    keys = joined.split(b"\n")
    if len(keys) != n:  # a line with a newline in it (not from a file): leave the window to the per-line path
        return None
    shape_idx = np.fromiter(map(shape_index.get, keys, [-1] * n), dtype=np.int64, count=n)
    lengths = np.fromiter(map(len, keys), dtype=np.int64, count=n)
    bounds = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths + 1, out=bounds[1:])
    folded = None
    if fold_index:
        missed = np.flatnonzero(shape_idx < 0)
        if len(missed):
            folded = _fold_lookup(joined, bounds, missed, shape_idx, fold_index, table)
    cand = np.flatnonzero(shape_idx >= 0)
    if len(cand) == 0:
        if not empty_ok:
            return None
        return BlockPlan(lines, keys, raw, bounds, table, np.full(n, -1, np.int64), np.full(n, np.nan), [], [],
                         folded)
    starts = bounds[:-1]
    buf = np.frombuffer(raw, dtype=np.uint8)
    shapes = shape_idx[cand]
    per_shape = (rows if rows is not None else TableRows()).of(table)[shapes]
    timed = per_shape[:, 0] >= 0  # lines without a timestamp take the time before them (see ShapeRun's times)
    untimed = cand[~timed]
    if len(untimed):
        cand, per_shape = cand[timed], per_shape[timed]
    ds, fs, fl, form = per_shape[:, 0], per_shape[:, 1], per_shape[:, 2], per_shape[:, 3]
    digit = buf[(starts[cand] + ds)[:, None] + np.arange(19)].astype(np.int64) - 48  # "YYYY-MM-DD HH:MM:SS"
    y = digit[:, 0] * 1000 + digit[:, 1] * 100 + digit[:, 2] * 10 + digit[:, 3]
    mo = digit[:, 5] * 10 + digit[:, 6]
    d = digit[:, 8] * 10 + digit[:, 9]
    h = digit[:, 11] * 10 + digit[:, 12]
    mi = digit[:, 14] * 10 + digit[:, 15]
    sec = digit[:, 17] * 10 + digit[:, 18]
    frac = np.zeros(len(cand), dtype=np.int64)
    fstart = starts[cand] + fs
    for k in range(int(fl.max(initial=0))):
        has = fl > k
        frac = np.where(has, frac * 10 + buf[np.where(has, fstart + k, 0)].astype(np.int64) - 48, frac)
    days, valid = epoch_days(y, mo, d)
    # TimestampParser._minute's and iso_time's arithmetic in their order, so the same floats
    t = (days * 86400).astype(np.float64) + h * 3600 + mi * 60 + sec
    t = np.where(fl > 0, t + frac / _POW10[fl], t)
    good = valid & (t <= future) & (t >= past)
    ok = np.zeros(n, dtype=bool)
    ok[cand[good]] = True
    times = np.zeros(n)
    times[cand] = t
    if len(untimed):
        ok[untimed] = True
        times[untimed] = np.nan
    # the first line a run may take of each minute (of each text form)
    g = np.flatnonzero(good)
    code = ((((y[g] * 100 + mo[g]) * 100 + d[g]) * 100 + h[g]) * 100 + mi[g]) * 4096 + form[g]
    _, firsts = np.unique(code, return_index=True)
    firsts = g[np.sort(firsts)]
    minute_parts = np.stack([ds[firsts], y[firsts], mo[firsts], d[firsts], h[firsts], mi[firsts]], axis=1)
    return BlockPlan(lines, keys, raw, bounds, table, np.where(ok, shape_idx, -1), times,
                     cand[firsts].tolist(), [tuple(p) for p in minute_parts.tolist()], folded)


def _fold_lookup(joined: bytes, bounds: np.ndarray, missed: np.ndarray, shape_idx: np.ndarray,
                 fold_index: dict[bytes, int], table: list[RunShape]) -> list[bytes]:
    """Give the ``missed`` lines of a window the shapes their folded keys have in ``fold_index``, where their first
    folded letter is not before the shape's ``fold_from``; returns every line's folded key (``fold_ids``), which
    a line of a shape learnt later is looked up by (``RunReading._patch_folded``)."""
    folded, at = fold_window(joined)
    keys = folded.split(b"\n")
    # each missed line's folded shape, -1 for none, from maps over C functions (no Python frame per line)
    xs = np.fromiter(map(fold_index.get, map(keys.__getitem__, missed.tolist()), repeat(-1)), np.int64,
                     count=len(missed))
    hit = xs >= 0
    if not hit.any():
        return keys
    rows, xs = missed[hit], xs[hit]
    first = np.full(len(bounds) - 1, np.iinfo(np.int64).max)
    if len(at):
        line = np.searchsorted(bounds, at, side="right") - 1
        lines, where = np.unique(line, return_index=True)
        first[lines] = at[where] - bounds[lines]
    limit = np.array([sh.fold_from for sh in table], np.int64)[xs]
    ok = first[rows] >= limit
    shape_idx[rows[ok]] = xs[ok]
    return keys


_WIDE_MEMO = 4096  # signatures remembered per folded shape (a cleared memo costs one regex pass per new one)


def _word_edge(key: bytes, at: int) -> bool:
    """Whether offset ``at`` of ``key`` is no place inside a word (ASCII letters and digits)."""
    return at <= 0 or at >= len(key) or not (key[at - 1:at].isalnum() and key[at:at + 1].isalnum())


def wide_key(sh: RunShape, key: bytes) -> bytes:
    """The miner's key (``shape.hex_key``) of the message of a line of a folded shape: spliced at the shape's
    spans (``wide_fold``) where its message starts and ends at a word's edge, else from the shape's memo by the
    line's ``wide_signature`` (``mining.runmine.mine_run``)."""
    plan = sh.wide
    if plan is None:
        exact = _word_edge(sh.key, sh.msg_start) and _word_edge(sh.key, sh.msg_end)
        plan = sh.wide = (wide_spans(sh.key[sh.msg_start:sh.msg_end]), None if exact else {})
    spans, memo = plan
    msg = key[sh.msg_start:sh.msg_end]
    if not spans:  # no word the miner's key folds
        return msg
    if memo is None:
        return wide_fold(msg, spans)
    sig = wide_signature(msg, spans)
    wide = memo.get(sig)
    if wide is None:
        if len(memo) >= _WIDE_MEMO:
            memo.clear()
        wide = memo[sig] = hex_key(msg)
    return wide
