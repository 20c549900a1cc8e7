"""A job's time span from its files' sampled first and last times, robust to the extreme: one wrong line, a
node's kernel log reaching back to its boot, a stale file of another job (``context.build_context`` samples the
files; this module only weighs their spans)."""

from __future__ import annotations

import math
import statistics
import time as _time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple

from l4lite.ingest.boots import is_kernel_log
from l4lite.ingest.jumps import APART_LIMIT, ZONE_LIMIT, quarters
from l4lite.ingest.timespots import spot_time, strip_stream_prefixes
from l4lite.ingest.timestamps import TimestampParser

# A clock this far before the job began, or before its file was written, was reset (1970 and 2000 are the
# defaults of an unset clock): a kernel log reaches back to its node's boot, months at most, and an archive copied
# years after its job keeps dates a few years older than its files.
PAST_YEARS = 15
PAST_SLACK = PAST_YEARS * 365 * 86400.0
FUTURE_SLACK = 86400.0  # a time this far after its file was written (and now) is a wrong clock
STATED = 300.0  # seconds: how far a node's last line may lie from the time its error file states
# a line this far before both its own file's first sampled time and the job's start (and more than the job's span)
# is a wrong clock: a line formatted long before and flushed late, a clock stepped back for a moment
BEFORE_OWN = 1800.0
SPIKE_SECONDS = 3600.0  # a sampled time this far off both its neighbours' (the same way) is one wrong line
SPIKE_FLOOR = 60.0  # ... or this far, when it is farther off them than the file's other times span


class FileSpan(NamedTuple):
    """A file's first and last sampled times, and whether it is a node's own log (syslog, kernel)."""

    system: bool
    first: float
    last: float
    headed: bool = True  # whether the file's first lines gave a time: else ``first`` is no start of the file
    times: tuple[float, ...] = ()  # its sampled times in file order, as read (a clock's step is seen in them)
    heads: int = 0  # how many of ``times`` its first lines gave
    lines: int = 0  # how many lines were sampled (timed or not)
    first_at: int = 0  # where among them the first timed one is


def no_spikes(times: list[float]) -> list[float]:
    """A file's sampled times (in file order) without those of one wrong line: a time off both the time before it
    and the time after it, the same way, by more than an hour or by more than the file's other times span (at
    least ``SPIKE_FLOOR``); and a first time after all the file's others, or a last time before them all, by as
    much. Logs go forward: a real time is not followed by times older than the rest of the file, and a line of a
    wrong clock (a clock stepped for a moment, a buffered line flushed late) amid lines of the right one must not
    make the file's span. A first time before the rest, or a last after it, keeps its place: a job's last line may
    come hours after the one before it (a hang cut by a time limit). Of two times, a last one more than an hour
    before the first is such a wrong line (the reader refuses it too: ``JobContext.past_limit``)."""
    if len(times) == 2 and times[0] - times[1] > SPIKE_SECONDS:
        return times[:1]
    if len(times) < 3:
        return times
    rough = sorted(_spikes_cut(times, lambda _: SPIKE_SECONDS))  # a wild date first: it makes no span
    if len(rough) < 3:
        return [t for t in times if t in rough] if rough else times

    def limit(t: float) -> float:
        """How far a time may lie off its neighbours: an hour, or the span of the file's other times."""
        span = rough[-1] - rough[1] if t == rough[0] else rough[-2] - rough[0] if t == rough[-1] else rough[-1] - rough[0]
        return min(SPIKE_SECONDS, max(SPIKE_FLOOR, span))
    return _spikes_cut(times, limit)


def _spikes_cut(times: list[float], limit: Callable[[float], float]) -> list[float]:
    """``times`` without a time off both its neighbours the same way by more than ``limit(time)``, nor a first time
    after all the others, nor a last time before them all, by as much."""
    out = []
    last = len(times) - 1
    for i, t in enumerate(times):
        gap = limit(t)
        if i == 0:
            spike = t - max(times[1:]) > gap
        elif i == last:
            spike = min(times[:-1]) - t > gap
        else:
            a, b = times[i - 1], times[i + 1]
            spike = (t - a > gap and t - b > gap) or (a - t > gap and b - t > gap)
        if not spike:
            out.append(t)
    return out


def job_span(spans: Sequence[FileSpan]) -> tuple[float | None, float | None]:
    """The job's first and last time: each file's first and last sampled times, without those far from what
    most files say (a wild date); a start only from files whose first lines gave one (else from all). The node's
    own logs (syslog, kernel) go back to its boot, weeks before the job: they set the start only when the job's
    processes left no time at all, but their ends count."""
    own = [s for s in spans if not s.system] or list(spans)
    if not own:
        return None, None
    # a file whose first lines gave no time (NCCL's untimed start-up lines) says where it ends, not where it starts
    starts, ends = [s.first for s in own if s.headed] or [s.first for s in own], [s.last for s in own]
    s_med, e_med = statistics.median(starts), statistics.median(ends)
    gap = max(6 * 3600.0, 2 * (e_med - s_med))
    start = min(s for s in starts if s >= s_med - gap)
    end = max((s.last for s in spans if e_med - gap <= s.last <= e_med + gap), default=max(ends))
    return start, max(start, end)


_Y2K = 946684800.0  # write times before 2000: a file unpacked without its times


def dated_middle(spans: dict[str, FileSpan], years: dict[str, Counter[int]], near: int | None) -> float | None:
    """The median middle of the spans of the files whose lines carry a year (``years``: rel -> the years its
    sampled lines carry) within a year of ``near`` (the job's year: a file dated only by a reset clock's 1970 line
    is not one), or None when no file does. One job-level time for every date printed without a year (glog,
    syslog): each file's own guess (its write time, its first month) can put a file copied later, or a kernel log
    whose lines all fall after New Year, a year off its peers."""
    if near is None:
        return None
    mids = [(v.first + v.last) / 2 for rel, v in spans.items()
            if (got := years.get(rel)) and abs(got.most_common(1)[0][0] - near) <= 1]
    return statistics.median(mids) if mids else None


def first_written(files: Sequence[Any]) -> float | None:
    """The earliest write time of a job's files (none before ``_Y2K``): where no line carries a year, dates
    without one take theirs from it, one guess for the job. A file's own write time can be a year after its lines
    (copied without its times); the first one is the least moved."""
    times = [m for f in files if (m := getattr(f, "mtime", None)) and m > _Y2K]
    return min(times) if times else None


APART_GAP = 6 * 3600.0  # a file whose whole span is this far (or the core's length) from the job's core is not its


def apart_files(spans: dict[str, FileSpan], written: dict[str, float | None] | None = None,
                stated: Sequence[float] = ()) -> dict[str, str]:
    """Files whose whole span lies far outside the job's (rel -> why). The job's processes' files are grouped by
    their spans (a file joins a group it comes within the gap of); the core is the group of most files. A file of a smaller group, all
    of it more than the gap (six hours, or the core's length) before or after the core, is a stale file of another
    job or an earlier run. A node's own logs (syslog, kernel) reach back to its boot: they are never set apart.
    A tie sets nothing apart, unless the files' write times (``written``: rel -> mtime) tell the groups apart: a
    group whose every file was last written more than the gap before every file of the other is a leftover of an
    earlier run (one merged job file beside one stray file of another job is such a tie). A group that ends where
    an error file of the job says the job failed (``stated``: their epoch seconds, zone-free, within ``STATED``)
    is the job's, however far the others' clocks lie from it (a node in a zone of its own that jumped an hour)."""
    own = sorted(((v.first, v.last, rel) for rel, v in spans.items()
                  if not v.system and not is_kernel_log(rel) and not clockless(v)))
    if len(own) < 2:
        return {}
    groups: list[list[tuple[float, float, str]]] = []
    end = -math.inf
    for a, b, rel in own:
        if groups and a <= end + APART_GAP:
            groups[-1].append((a, b, rel))
            end = max(end, b)
        else:
            groups.append([(a, b, rel)])
            end = b
    if len(groups) < 2:
        return {}
    marks = written or {}
    ranges = {id(g): _write_range(g, marks) for g in groups}
    core = max(groups, key=lambda g: (len(g), (ranges[id(g)] or (0.0, -math.inf))[1], max(b for _, b, _ in g)))
    lo, hi = min(a for a, _, _ in core), max(b for _, b, _ in core)
    gap = max(APART_GAP, hi - lo)
    out = {}
    for g in groups:
        if g is core:
            continue
        # a tie says nothing about which files are the job's, unless this group was written long before the core
        mine, theirs = ranges[id(g)], ranges[id(core)]
        earlier = bool(mine and theirs and mine[1] < theirs[0] - gap)  # written long before the core
        if len(g) >= len(core) and not earlier:
            continue
        moved = quarters(min(a for a, _, _ in g) - lo, limit=APART_LIMIT)
        if moved and quarters(max(b for _, b, _ in g) - hi, limit=APART_LIMIT) == moved and \
                (abs(moved) <= ZONE_LIMIT or (mine and theirs and not earlier)):
            # the core's span moved by whole quarter hours at both ends: a node in another zone (``zones``); two
            # zones may lie more than a zone's 14 hours apart, but so does yesterday's file: its write times tell
            continue
        if any(abs(max(b for _, b, _ in g) - t) <= STATED for t in stated):
            continue  # it ends at the job's failure, in zone-free time
        for a, b, rel in g:
            if b < lo - PAST_SLACK:  # a reset clock (1970), not another job: the reader refuses its times
                continue
            if b < lo - gap or a > hi + gap:
                where = "before" if b < lo else "after"
                out[rel] = (f"its lines ({stamp(a)} to {stamp(b)}) lie wholly {where} the job's "
                            f"({stamp(lo)} to {stamp(hi)}): a file of another job or an earlier run")
    return out


def clockless(span: FileSpan) -> bool:
    """Whether a file's span rests on one timed line amid untimed ones, not its first: a date the file's lines
    quote (a `date` of the run it resumes, a record's own time field), not a clock the file writes by. Such a file
    neither joins nor is set apart from the job's groups, and has no start or end of its own that would widen
    the times its reader accepts (``context``). A file whose first line is its one timed line (a start-up line,
    then a library's untimed lines) and a file of one line keep their span."""
    return len(span.times) == 1 and span.lines > 1 and span.first_at > 0


def _write_range(group: list[tuple[float, float, str]], written: dict[str, float | None]) -> tuple[float, float] | None:
    """The first and last write time of a group's files; None when any file's is unknown (a stream)."""
    times = [written.get(rel) for _, _, rel in group]
    known = [t for t in times if t is not None]
    return (min(known), max(known)) if known and len(known) == len(times) else None


def stamp(t: float) -> str:
    return _time.strftime("%Y-%m-%d %H:%M:%S", _time.gmtime(t))


class DatedLine(NamedTuple):
    """A line that carries a year (``context``'s sample): where it is among the lines read, the year, the date."""

    at: int
    year: int
    date: str  # the date as written: ``2024-03-01``, ``Fri Mar  1 12:00:00 UTC 2024``


DAY = 86400.0


def lone_years(lines: Sequence[str], dated: Sequence[DatedLine], written: float | None, spot: str = "") -> Counter[int]:
    """The years of a file's dated lines (``lines``: the file's lines read, in order) that must not vote for the
    job's year (``vote_year``): a date of another year than the file was written in (``written``) that is not the
    line's own time (a time quoted in a message: ``checkpoint saved at 2024-03-01``), or that is its time but lies
    more than a day from the times of the nearest timed lines before and after it (a job script's ``date`` of the
    run it resumes, printed amid lines of this run), or the only timed line of a file of several lines (a rank's
    stderr whose one date is a quoted one). A file of one line, and a file copied years after its job whose lines
    agree with each other, keep their votes."""
    out: Counter[int] = Counter()
    year = _time.gmtime(written).tm_year if written else None
    others = [d for d in dated if year is not None and d.year != year]
    if not others:  # most files' dates are of the year they were written in: nothing to parse
        return out
    parser = TimestampParser(None, written)
    for d in others:
        own = _line_time(parser, lines[d.at], spot)
        if own is None or _time.gmtime(own).tm_year != d.year:
            out[d.year] += 1  # a date in a message, not the line's time
            continue
        near = [t for t in (_nearest(parser, lines, d.at, -1, spot), _nearest(parser, lines, d.at, 1, spot))
                if t is not None]
        if (near and not any(_days_apart(own, t) <= 1.0 for t in near)) or (not near and 0 < d.at < len(lines)):
            out[d.year] += 1  # off the lines near it, or the one time among lines of none (``clockless``)
    return out


def _line_time(parser: TimestampParser, line: str, spot: str) -> float | None:
    """A line's own time: its header's, or where the file's lines carry theirs (``timespots``)."""
    t, end, _, _ = parser.parse(line)
    if not end and spot:
        t = spot_time(parser, line, 0, spot)[1][0]
    return t


def _nearest(parser: TimestampParser, lines: Sequence[str], at: int, way: int, spot: str) -> float | None:
    """The time of the nearest line before (``way`` -1) or after (1) ``at`` that has one."""
    i = at + way
    while 0 <= i < len(lines):
        if (t := _line_time(parser, lines[i], spot)) is not None:
            return t
        i += way
    return None


def _days_apart(a: float, b: float) -> float:
    """Days between two times' dates of the year, whatever their years (a yearless time is read in a guessed
    year): ``Dec 31`` and ``Jan 1`` are a day apart."""
    gap = abs(_time.gmtime(a).tm_yday - _time.gmtime(b).tm_yday) + abs((a % DAY) - (b % DAY)) / DAY
    return min(gap, 366 - gap)


def vote_year(samples: Iterable[tuple[str, Counter[int]]], files: Sequence[Any]) -> tuple[int | None, int | None]:
    """The job's year and the year it is near (``samples``: each sampled file's count of the years its dated lines
    carry). Each file with dated lines votes once, for the year most of them carry, unless that year is after the
    file was written (a line cannot be dated after its file was last written: a wrong clock, a line dated 2099) or
    years before it (a reset clock, 1970); more dated lines break ties. Without such votes there is no job year
    (each file then takes its own write time's year, rolling back a year for dates later in the year than that,
    as ``timestamps`` does), only the year most files were written in, that dates must be near."""
    votes: Counter[int] = Counter()
    lines: Counter[int] = Counter()
    written: Counter[int] = Counter()
    mtimes = {f.rel: f.mtime for f in files if getattr(f, "mtime", None)}
    for rel, years in samples:
        wy = _time.gmtime(mtimes[rel]).tm_year if rel in mtimes else None
        if wy is not None:
            written[wy] += 1
        if years:
            y = years.most_common(1)[0][0]
            if wy is None or wy - PAST_YEARS <= y <= wy:
                votes[y] += 1
                lines.update(years)
    if votes:
        best = max(votes, key=lambda y: (votes[y], lines[y]))
        return best, best
    return None, (written.most_common(1)[0][0] if written else None)


def sampled_spans(files: Sequence[Any], samples: dict[str, Any], year: int | None, near: int | None = None,
                  around: float | None = None, written: float | None = None,
                  day_first: bool = False) -> dict[str, FileSpan]:
    """Each sampled file's first and last times, without a wrong clock's (after the file was written and now) or
    a reset clock's (years before the file's other lines); ``samples``: ``context``'s sampled lines of each file."""
    mtimes = {f.rel: getattr(f, "mtime", None) for f in files}
    now = _time.time()
    out: dict[str, FileSpan] = {}
    for rel, s in samples.items():
        mtime = mtimes.get(rel)
        limit = (now if mtime is None else max(now, mtime)) + FUTURE_SLACK
        parser = TimestampParser(year, mtime if written is None else written, near, around, day_first)
        times = []
        first_at = -1
        head = getattr(s, "head", len(s.lines))
        head_times: list[float] = []  # the times its first lines gave
        for i, line in enumerate(s.lines):
            text = strip_stream_prefixes(line)
            t, end, _, _ = parser.parse(text)
            if not end and s.spot:  # a time after a logger's tag, or in a JSON record's field
                t = spot_time(parser, text, 0, s.spot)[1][0]
            if t is not None and t <= limit:
                first_at = i if first_at < 0 else first_at
                times.append(t)
                if i < head:
                    head_times.append(t)
        if times:
            out[rel] = span_of(2 * s.system >= len(s.lines), times, len(head_times), len(s.lines), first_at)
    return out


def span_of(system: bool, times: Sequence[float], heads: int, lines: int = 0, first_at: int = 0) -> FileSpan:
    """A file's span from its sampled times in file order (``heads``: how many its first lines gave), without a
    reset clock's (years before the file's other lines: no start) and one wrong line's (``no_spikes``)."""
    mid = statistics.median(times)
    kept = no_spikes([t for t in times if t >= mid - PAST_SLACK])
    if not kept:  # every time a spike of another: the file has no span of its own
        kept = list(times)
    got = set(kept)
    return FileSpan(system, min(kept), max(kept), any(t in got for t in times[:heads]), tuple(times), heads, lines,
                    first_at)
