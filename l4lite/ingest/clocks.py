"""Syslog and dmesg clocks read a window at a time, for runs of kernel and storage lines (``l4lite.ingest.runs``).

A syslog time (``Nov 29 04:01:02``, no year) and a dmesg uptime (``[ 1843.308145]``, seconds since boot) are
read by the per-line path one by one with the file's timestamp parser, whose state they move: the year and
month, the seconds remembered, the boot a syslog kernel line's uptime anchors and the last uptime (a smaller one
is a reboot). Here the digits of a window's lines are gathered with numpy once (``window_clocks``), and a run's
times worked out from them and the parser's state as it is when the run starts (``clock_times``), leaving the
parser as the per-line path leaves it. The shapes of such lines are folded ones (``shape.fold_ids``: hex ids
of one width are one shape), learnt from a line read from its header's plan (``folded_shape``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from l4lite.ingest.blocks import POW10_INT, BlockPlan, RunShape, epoch_days
from l4lite.ingest.shape import fold_ids
from l4lite.ingest.stamp_patterns import MONTHS
from l4lite.ingest.timestamps import TimestampParser

_TWO_WORDS = re.compile(r"\S*\s?\S*")
_POW10_FLOAT = np.array([10.0**k for k in range(18)])
_UP_WIDTH = 16  # digits of an uptime read in a window (more: the per-line path), exact as one float64 integer
CLOCK_COLUMNS = ("clocked", "clock_at", "day_at", "day_len", "hour_at", "month", "up_start", "up_end", "dot", "opens")


def clock_params(table: list[RunShape], params: np.ndarray | None) -> np.ndarray:
    """Per run shape of ``table`` (``CLOCK_COLUMNS``): whether it is clocked, where its syslog time's parts and
    uptime digits sit, its month, and whether it opens a record; ``params`` of a shorter prefix of the table is
    extended."""
    if params is None:
        params = np.zeros((0, len(CLOCK_COLUMNS)), np.int64)
    if len(params) < len(table):
        rows = [(sh.clocked, sh.clock_at, sh.day_at, sh.day_len, sh.hour_at, sh.month, sh.up_start, sh.up_end,
                 sh.key.find(b".", sh.up_start, sh.up_end) - sh.up_start if sh.up_start >= 0 else 0, sh.opens)
                for sh in table[len(params):]]
        params = np.concatenate([params, np.array(rows, np.int64).reshape(-1, len(CLOCK_COLUMNS))])
    return params


@dataclass(slots=True)
class WindowClocks:
    """What a window's syslog and dmesg clocks say without the reading state, per line: which lines have one,
    their uptime (as ``int(whole) + _frac(digits)`` for a dmesg line, as ``float(text)`` for a syslog kernel
    line's anchor), and the syslog wall time and minute start for the year each month was read in."""

    syslog: np.ndarray
    dmesg: np.ndarray
    has_up: np.ndarray
    ok: np.ndarray  # read in a window at all (digits that fit, a real date in the year used)
    value: np.ndarray
    up_text: np.ndarray
    month: np.ndarray
    year: np.ndarray  # the year each syslog line's wall time was worked out for (0: none)
    wall: np.ndarray
    base: np.ndarray
    opens: np.ndarray
    clock_at: np.ndarray
    years: dict[int, int | None]  # the year of each month the wall times were worked out for


def window_clocks(block: BlockPlan, params: np.ndarray, year_of: dict[int, int | None],
                  rows: np.ndarray | None = None) -> WindowClocks:
    """The clocks of the lines of a window (``WindowClocks``), or of its lines ``rows``; a syslog time's year is
    ``year_of[month]``."""
    shapes = block.shape_array if rows is None else block.shape_array[rows]
    known = shapes >= 0
    p = params[np.where(known, shapes, 0)]
    clocked, clock_at, day_at, day_len, hour_at, month, up_start, up_end, dot, opens = p.T
    clocked = (clocked > 0) & known
    buf = np.frombuffer(block.raw, np.uint8)
    last = len(buf) - 1
    at = block.bounds[:-1] if rows is None else block.bounds[:-1][rows]

    def digit(offset: np.ndarray) -> np.ndarray:
        return buf[np.minimum(at + offset, last)].astype(np.int64) - 48

    syslog = clocked & (clock_at >= 0)
    dmesg = clocked & (clock_at < 0)
    has_up = clocked & (up_start >= 0)
    width = np.where(has_up, up_end - up_start, 0)
    frac_len = np.where(has_up, width - dot - 1, 0)
    ok = ~has_up | ((width <= _UP_WIDTH) & (frac_len <= 9) & (frac_len >= 0))
    frac_len = np.clip(frac_len, 0, 17)
    whole, frac = uptime_parts(buf, at + np.where(has_up, up_start, 0), np.where(has_up, dot, 0), width)
    scale = _POW10_FLOAT[frac_len]
    value = whole.astype(np.float64) + frac / scale  # int(whole) + _frac(digits)
    up_text = (whole * POW10_INT[frac_len] + frac) / scale  # float(text): an exact integer over a power of ten
    year = np.zeros(len(shapes), np.int64)
    for mo in np.unique(month[syslog]).tolist():
        y = year_of.get(mo)
        if y is not None:
            year[syslog & (month == mo)] = y
    day = np.where(day_len == 2, digit(day_at) * 10 + digit(day_at + 1), digit(day_at))
    days, valid = epoch_days(np.where(syslog, year, 1970), np.where(syslog, month, 1), day)
    ok &= ~syslog | (valid & (year > 0))
    h = hour_at
    base = (days * 86400).astype(np.float64) + (digit(h) * 10 + digit(h + 1)) * 3600 \
        + (digit(h + 3) * 10 + digit(h + 4)) * 60
    wall = base + (digit(h + 6) * 10 + digit(h + 7))
    return WindowClocks(syslog, dmesg, has_up, ok, value, up_text, month, year, wall, base, opens > 0, clock_at,
                        dict(year_of))


def uptime_parts(buf: np.ndarray, start: np.ndarray, dot: np.ndarray, width: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The whole and fraction digits of each line's uptime as integers: the digits from ``start`` (up to
    ``_UP_WIDTH`` of them, ``width`` in all, the dot at ``dot``) times the powers of ten of their places. The
    places depend on (dot, width) alone, of which a window has few: each pair's weights are worked out once and
    each line takes its pair's, so two products are summed over the digits instead of a dozen passes over them."""
    n = len(start)
    k = np.arange(max(1, min(_UP_WIDTH, int(width.max(initial=0)))))
    if not n:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    up = buf[np.minimum(start[:, None] + k, len(buf) - 1)].astype(np.int64) - 48
    pairs, pair = np.unique(dot * 64 + np.minimum(width, 63), return_inverse=True)
    pd, pw = pairs[:, None] // 64, pairs[:, None] % 64
    whole_exp = pd - 1 - k
    frac_exp = pw - 1 - k
    whole_w = np.where(whole_exp >= 0, POW10_INT[np.clip(whole_exp, 0, 17)], 0)
    frac_w = np.where((k > pd) & (frac_exp >= 0), POW10_INT[np.clip(frac_exp, 0, 17)], 0)
    pair = pair.reshape(-1)
    return np.einsum("ij,ij->i", up, whole_w[pair]), np.einsum("ij,ij->i", up, frac_w[pair])


def _patch_clocks(c: WindowClocks, part: WindowClocks, rows: list[int]) -> None:
    """Put the clocks of a window's lines ``rows`` (given a shape since ``c`` was worked out) into ``c``."""
    for name in ("syslog", "dmesg", "has_up", "ok", "value", "up_text", "month", "year", "wall", "base", "opens",
                 "clock_at"):
        getattr(c, name)[rows] = getattr(part, name)


@dataclass
class ClockCache:
    """``clock_params`` of a run table, kept as the table grows (a reader's)."""

    params: np.ndarray | None = None
    table: list[RunShape] | None = None


def clock_times(block: BlockPlan, i: int, j: int, ts: TimestampParser, future: float, past: float,
            cache: ClockCache) -> int:
    """Read the syslog and dmesg times of lines ``i:j`` of a window (``RunShape.clocked``) as the per-line
    path reads them one by one (``_plan_time``), from the window's clocks (``window_clocks``, worked out
    once); returns how many lines from ``i`` it reads so, up to the first the per-line path must read (a
    month or year ``parse`` would infer anew, an impossible date, a reboot, no boot anchor yet for an
    uptime, a time out of the job's span) and not ending on a line that opens a record (the next line
    closes it). The parser's state moves as the per-line path moves it: the syslog times remembered, the
    boot anchored by each syslog kernel line's uptime, the last uptime."""
    table = block.table
    c = block.clocks
    if c is None or block.stale or any(c.years.get(mo) != ts.syslog_year(mo) for mo in c.years):  # (a year read since)
        if cache.table is not table:
            cache.params = None
        params = cache.params = clock_params(table, cache.params)
        cache.table = table
        months = np.unique(params[:, 5]).tolist()
        if c is not None and block.stale and all(mo in c.years for mo in months) and \
                all(c.years[mo] == ts.syslog_year(mo) for mo in c.years):
            _patch_clocks(c, window_clocks(block, params, c.years, np.array(block.stale, np.int64)), block.stale)
        else:
            c = block.clocks = window_clocks(block, params, {mo: ts.syslog_year(mo) for mo in months})
        block.stale = []
    m = j - i
    syslog, dmesg = c.syslog[i:j], c.dmesg[i:j]
    ok = c.ok[i:j].copy()  # a syslog time's year: the one ``parse`` gives now (``years``), else not here
    year = c.year[i:j]
    times = np.where(syslog, c.wall[i:j], block.time_array[i:j])
    # a syslog kernel line's uptime anchors the boot
    anchor = np.where(syslog & c.has_up[i:j], c.wall[i:j] - c.up_text[i:j], np.nan)
    value = c.value[i:j]
    if dmesg.any():
        idx = np.where(np.isnan(anchor), -1, np.arange(m))
        np.maximum.accumulate(idx, out=idx)
        start = np.nan if ts.boot is None else ts.boot
        boots = np.where(idx >= 0, anchor[np.maximum(idx, 0)], start)
        rows = np.flatnonzero(dmesg)
        vals = value[rows]
        prev = np.empty(len(rows))
        prev[0] = ts.last_uptime
        prev[1:] = vals[:-1]
        t = boots[rows] + vals
        ok[rows[(vals + 1.0 < prev) | np.isnan(t)]] = False  # a new boot or no anchor: the per-line path
        times[rows] = t
    ok &= ~(syslog | dmesg) | ((times <= future) & (times >= past))
    bad = np.flatnonzero(~ok)
    n = int(bad[0]) if len(bad) else m
    opens = c.opens[i:j]
    while n and opens[n - 1]:
        n -= 1
    if not n:
        return 0
    rows = np.flatnonzero(syslog[:n])
    if len(rows):
        lines = block.lines
        texts = [lines[i + q][a:a + table[x].clock_len] for q, a, x in
                 zip(rows.tolist(), c.clock_at[i:j][rows].tolist(), block.shape_array[i:j][rows].tolist(),
                     strict=True)]
        ts.read_syslog(texts, times[rows].tolist(), c.base[i:j][rows].tolist(), int(year[rows[0]]))
        anchored = np.flatnonzero(~np.isnan(anchor[:n]))
        if len(anchored):
            ts.boot = float(anchor[anchored[-1]])
    rows = np.flatnonzero(dmesg[:n])
    if len(rows):
        ts.read_uptimes(float(value[rows[-1]]))
    block.time_array[i:i + n] = times[:n]
    block.time_list[i:i + n] = times[:n].tolist()
    return n


def fold_key(s: str, key: bytes, plan: tuple) -> tuple[bytes, int] | None:
    """The folded shape of a syslog or dmesg line read from its header's plan (``HeaderReading._head_planned``),
    and from where a line of that folded shape may hold folded letters (``RunShape.fold_from``): after what
    the header reader reads of it (the header, the message's first character, and a bracketed level marker's
    two words, which a glog marker's pattern reads). Every other test the reader makes on a message is for
    literals that a folded word cannot hold (``shape.fold_safe``; ``tests/test_fold.py``). None for other
    lines (NCCL, a GPU, a second timestamp, a level in the time) and where this line folds before that."""
    (a, nccl, has_nccl, _, ts_second, _, ts_kind, ts_level, _, _, gpu_span, _, marker_at, _, _, _, _) = plan
    if nccl or has_nccl or gpu_span is not None or ts_second >= 0 or ts_level is not None \
            or ts_kind not in ("syslog", "uptime"):
        return None
    folded = fold_ids(key)
    if not folded.isascii():
        return None
    fold_from = a + 1
    if marker_at >= 0 and s.startswith("[", marker_at):
        fold_from = max(fold_from, _TWO_WORDS.match(s, marker_at).end() + 1)  # type: ignore[union-attr]
    if folded[:fold_from] != key[:fold_from]:
        return None
    return folded, fold_from


def folded_shape(s: str, folded: bytes, fold_from: int, plan: tuple, level: str | None, source: str,
                 opens: bool) -> RunShape | None:
    """The run shape of a line of ``fold_key``'s folded shape, read as ``s`` was: where its syslog time (a month
    name, a day of one or two digits, no fraction) and host or its dmesg uptime sit, and a syslog kernel line's
    uptime. None where a window would not read the clock as ``parse`` does."""
    (a, _, _, ts_first, _, ts_end, ts_kind, _, _, host_span, _, uptime_span, _, _, head_source, _, _) = plan
    if ts_kind == "syslog":
        text = s[ts_first:ts_end].rstrip(" ")
        month = MONTHS.get(text[:3], 0)
        day = text[3:].lstrip(" ")
        day_at = ts_first + len(text) - len(day)
        day_len = day.find(" ")
        if host_span is None or "." in text or not month or day_len not in (1, 2) or \
                (head_source == "kernel" and uptime_span is None):
            return None
        clock = (ts_first, len(text), month, day_at, day_len, day_at + day_len + 1)
        up = uptime_span
    else:
        if host_span is not None or uptime_span is not None:
            return None
        close = s.find("]", ts_first)
        inner = s[ts_first + 1:close]
        up = (close - len(inner.lstrip(" ")), close)
        clock = (-1, 0, 0, -1, 0, -1)
    if up is not None and s[up[0]:up[1]].count(".") != 1:
        return None
    host_start, host_end = host_span if host_span is not None else (-1, -1)
    return RunShape(folded, -1, -1, 0, a, len(s.rstrip()), level, source, None, host_start=host_start,
                    host_end=host_end, clock_at=clock[0], clock_len=clock[1], month=clock[2], day_at=clock[3],
                    day_len=clock[4], hour_at=clock[5], up_start=up[0] if up is not None else -1,
                    up_end=up[1] if up is not None else -1, opens=opens, fold_from=fold_from)
