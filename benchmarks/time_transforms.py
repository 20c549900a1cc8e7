"""Time shapes of real logs as transforms of a job (``benchmarks/archive_variants.py``): a wrong clock on one line,
a file in local time, a node whose clock runs behind, a stale file of the day before, and the stamps real tools
print that carry less than an ISO date: glog's and BSD syslog's yearless ones (beside ISO files, in a job that
crosses New Year, in a file copied a year after it was written), 12-hour AM/PM stamps, JSON loggers' epoch
seconds and milliseconds, a daylight-saving jump, a line whose date is no date, and a dmesg capture of a boot
long before the job. Each keeps the job's verdict.
"""

from __future__ import annotations

import json
import pickle
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone

from archive_transforms import Job, Out, Src, Variant, edit_file, identity, largest, texts


def _clock_target(job: Job) -> Src:
    found = {s.rel: s for s in texts(job)}
    return next((found[f] for f in job.root_files if f in found), largest(job))


def _first_line(job: Job, line: bytes) -> Variant:
    def edit(o: Out) -> None:
        o.lines.insert(0, line)
        o.origin.insert(0, None)
    return edit_file(job, _clock_target(job), edit)


def clock_1970(job: Job) -> Variant:
    return _first_line(job, b"1970-01-01 00:00:00,000 clock reset")


def clock_2099(job: Job) -> Variant:
    return _first_line(job, b"2099-06-01 00:00:00,000 clock jumped")


def _mid_line(job: Job, line: bytes) -> Variant:
    """A line stamped by a wrong clock in the middle of the root evidence's file (inside a traceback, often)."""
    def edit(o: Out) -> None:
        mid = len(o.lines) // 2
        o.lines.insert(mid, line)
        o.origin.insert(mid, None)
    return edit_file(job, _clock_target(job), edit)


def clock_2099_mid(job: Job) -> Variant:
    """One line in the middle of the file from a clock that jumped to 2099."""
    return _mid_line(job, b"2099-06-01 00:00:00,000 clock jumped")


def clock_2099_end(job: Job) -> Variant:
    """One line after the last of the file from a clock that jumped to 2099."""
    def edit(o: Out) -> None:
        o.lines.append(b"2099-06-01 00:00:00,000 clock jumped")
        o.origin.append(None)
    return edit_file(job, _clock_target(job), edit)


_ISO = re.compile(rb"(?<![\dT])(\d{4}-\d\d-\d\d)[ T](\d\d:\d\d:\d\d)[,.](\d{3,6})(?![\d+])(Z)?")


_RAY_HEADER = re.compile(rb" [IWEFCD] \d+ \d+\]")


def local_offset(job: Job) -> Variant:
    """The file of the root evidence written in local time (+05:30) with the offset spelled out."""
    tz = timezone(timedelta(hours=5, minutes=30))

    def local(m: re.Match[bytes]) -> bytes:
        t = datetime.fromisoformat(f"{m[1].decode()}T{m[2].decode()}").replace(tzinfo=UTC)
        return t.astimezone(tz).strftime("%Y-%m-%dT%H:%M:%S").encode() + b"." + m[3] + b"+05:30"

    def zoned(m: re.Match[bytes]) -> bytes:
        # Ray's C++ header (``[2026-12-04 13:54:48,946 E 238 265]``) is a fixed format with no zone to spell out:
        # no Ray process writes it as ``2026-12-04T19:24:48.946+05:30``, so it is left as written
        return m[0] if _RAY_HEADER.match(m.string, m.end()) else local(m)

    def edit(o: Out) -> None:
        o.lines = [_ISO.sub(zoned, ln) for ln in o.lines]
    return edit_file(job, _clock_target(job), edit)


_GLOG = re.compile(rb"(?<![\w.])([IWEF])(\d\d)(\d\d) (\d\d:\d\d:\d\d)(?=\.\d{6} )")
SKEW = timedelta(seconds=-5)


def _skewed(m: re.Match[bytes]) -> bytes:
    t = datetime.fromisoformat(f"{m[1].decode()}T{m[2].decode()}") + SKEW
    return t.strftime("%Y-%m-%d").encode() + m[0][10:11] + t.strftime("%H:%M:%S").encode() + m[0][19:]


def _skewed_glog(m: re.Match[bytes]) -> bytes:
    t = datetime.fromisoformat(f"2024-{m[2].decode()}-{m[3].decode()}T{m[4].decode()}") + SKEW
    return m[1] + t.strftime("%m%d %H:%M:%S").encode()


def skewed_peer(job: Job) -> Variant:
    """The clock of one node without root evidence runs 45 s behind: its peers' timeouts and teardown, which
    follow the fault, carry times before it."""
    roots = {r.split("/", 1)[0] for r in job.root_files if "/" in r}
    peers = sorted({s.node for s in job.srcs if s.node and s.node not in roots})
    v = identity(job)
    if not peers:
        return v
    for o in v.outs:
        if o.rel.split("/", 1)[0] == peers[0] and o.raw is None:
            o.lines = [_GLOG.sub(_skewed_glog, _ISO.sub(_skewed, ln)) for ln in o.lines]
    return v


# ISO dates, glog's MMDD, and the US MM/DD/YYYY of accelerate's and Python's ``%x``-style headers: every date form
# the real jobs' lines carry, so that the whole stray file is a day older (a file half of whose lines kept the
# job's day is no stale file)
_DAY = re.compile(rb"(?<!\d)(\d{4})-(\d\d)-(\d\d)(?=[ T]\d\d:)|(?<![\w.])([IWEF])(\d\d)(\d\d)(?= \d\d:\d\d:\d\d)"
                  rb"|(?<![\d/])(\d\d)/(\d\d)/(\d{4})(?= \d\d:\d\d:\d\d)")


def _day_before(m: re.Match[bytes]) -> bytes:
    if m[1]:
        d = datetime(int(m[1]), int(m[2]), int(m[3])) - timedelta(days=1)
        return d.strftime("%Y-%m-%d").encode()
    if m[7]:
        d = datetime(int(m[9]), int(m[7]), int(m[8])) - timedelta(days=1)
        return d.strftime("%m/%d/%Y").encode()
    d = datetime(2024, int(m[5]), int(m[6])) - timedelta(days=1)
    return m[4] + d.strftime("%m%d").encode()


def stale_file(job: Job) -> Variant:
    """A stray file of another job from the day before, left in a node folder."""
    v = identity(job)
    other = job.neighbour
    if other is None or other.lines is None:
        return v
    node = sorted({s.node for s in job.srcs if s.node} or {""})[0]
    out = Out((f"{node}/" if node else "") + "previous-" + other.rel.rsplit("/", 1)[-1],
              lines=[_DAY.sub(_day_before, ln) for ln in other.lines], mtime=other.mtime - 86400)
    out.origin = [None] * len(out.lines)
    v.outs.append(out)
    return v



# ------------------------------------------------------------------------------------------------ stamp shapes
# an ISO header where a logger puts it: at the start of the line, after torchrun's ``[defaultN]:`` prefixes, bare
# or in brackets (DeepSpeed's ``[2026-12-03 14:38:23,200]``); Ray's C++ header (``[... I 7 7]``) is not one
_HEAD = re.compile(rb"^((?:\[[a-z]*\d{1,6}\]: ?)*)(\[?)(\d{4})-(\d\d)-(\d\d)[ T](\d\d):(\d\d):(\d\d)[,.](\d{3,6})"
                   rb"(?![\d+])(\]?) ?")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def _head_time(m: re.Match[bytes]) -> datetime:
    return datetime(int(m[3]), int(m[4]), int(m[5]), int(m[6]), int(m[7]), int(m[8]),
                    int(m[9].ljust(6, b"0")[:6]), UTC)


def _heads(line: bytes) -> re.Match[bytes] | None:
    m = _HEAD.match(line)
    if m is None or bool(m[2]) != bool(m[10]):  # ``[2026-... I 7 7]`` (Ray) or an unbalanced bracket
        return None
    return m


def _restamp(line: bytes, stamp: Callable[[datetime], bytes]) -> bytes:
    """The line with its ISO header written by ``stamp`` (the rest of the line as it was)."""
    m = _heads(line)
    if m is None:
        return line
    return m[1] + stamp(_head_time(m)) + line[m.end():]


def glog_stamp(t: datetime) -> bytes:
    """glog / absl: ``I1203 14:38:23.200000 4242 train.py:57] `` (no year)."""
    return t.strftime("I%m%d %H:%M:%S.%f").encode() + b" 4242 train.py:57] "


def syslog_stamp(host: str) -> Callable[[datetime], bytes]:
    """rsyslog's traditional file format: ``Dec  3 14:38:23 host python[4242]: `` (no year)."""
    def stamp(t: datetime) -> bytes:
        return f"{_MONTHS[t.month - 1]} {t.day:2d} {t:%H:%M:%S} {host} python[4242]: ".encode()
    return stamp


def ampm_stamp(t: datetime) -> bytes:
    """The Python logging docs' ``datefmt='%m/%d/%Y %I:%M:%S %p'``: ``12/03/2026 02:38:23 PM ``."""
    return t.strftime("%m/%d/%Y %I:%M:%S %p ").encode()


def _peer(job: Job) -> str | None:
    """The first node folder without root evidence."""
    roots = {r.split("/", 1)[0] for r in job.root_files if "/" in r}
    return next(iter(sorted({s.node for s in job.srcs if s.node and s.node not in roots})), None)


def _on_node(v: Variant, node: str | None, edit: Callable[[Out], None]) -> Variant:
    for o in v.outs:
        if node and o.raw is None and o.rel.split("/", 1)[0] == node:
            edit(o)
    return v


def glog_peer(job: Job) -> Variant:
    """A healthy node's files stamped by glog (``I1203 14:38:23.200000 ...``, no year) beside the ISO files."""
    def edit(o: Out) -> None:
        o.lines = [_restamp(ln, glog_stamp) for ln in o.lines]
    return _on_node(identity(job), _peer(job), edit)


def syslog_peer_copied(job: Job) -> Variant:
    """A healthy node's files in rsyslog's format (``Dec  3 14:38:23 host prog[pid]: ``, no year), copied a year
    and a week after they were written (``cp`` without ``-p``): the year the file's write time suggests is wrong."""
    node = _peer(job)

    def edit(o: Out) -> None:
        o.lines = [_restamp(ln, syslog_stamp(node or "node")) for ln in o.lines]
        o.mtime = (o.mtime or 0.0) + 372 * 86400
    return _on_node(identity(job), node, edit)


# every date form of the real jobs, for moving a whole job in time: ISO (and torchelastic's ``_``), the US
# ``MM/DD/YYYY``, glog's ``MMDD``, syslog's ``Mon DD`` and epoch seconds or milliseconds of the job's years
_ANY = re.compile(rb"(?<![\d/])(\d{4})-(\d\d)-(\d\d)([ T_])(\d\d):(\d\d):(\d\d)"
                  rb"|(?<![\d/])(\d\d)/(\d\d)/(\d{4}) (\d\d):(\d\d):(\d\d)"
                  rb"|(?<![\w.])([IWEF])(\d\d)(\d\d) (\d\d):(\d\d):(\d\d)(?=\.\d)"
                  rb"|\b(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) ([ \d]\d) (\d\d):(\d\d):(\d\d)\b"
                  rb"|(?<![\d.])(1[6-9]\d{8}(?:\d{3})?)(?![\d])")


def _shifter(delta: timedelta, year: int) -> Callable[[re.Match[bytes]], bytes]:
    """Moves each date form ``_ANY`` finds by ``delta`` (yearless forms are taken in ``year``)."""
    def move(m: re.Match[bytes]) -> bytes:
        g = [x.decode() if x is not None else None for x in m.groups()]
        if g[0]:
            t = datetime(int(g[0]), int(g[1]), int(g[2]), int(g[4]), int(g[5]), int(g[6])) + delta
            return t.strftime(f"%Y-%m-%d{g[3]}%H:%M:%S").encode()
        if g[7]:
            t = datetime(int(g[9]), int(g[7]), int(g[8]), int(g[10]), int(g[11]), int(g[12])) + delta
            return t.strftime("%m/%d/%Y %H:%M:%S").encode()
        if g[13]:
            t = datetime(year, int(g[14]), int(g[15]), int(g[16]), int(g[17]), int(g[18])) + delta
            return (g[13] + t.strftime("%m%d %H:%M:%S")).encode()
        if g[19]:
            t = datetime(year, _MONTHS.index(g[19]) + 1, int(g[20]), int(g[21]), int(g[22]), int(g[23])) + delta
            return f"{_MONTHS[t.month - 1]} {t.day:2d} {t:%H:%M:%S}".encode()
        n = int(g[24])
        scale = 1000 if len(g[24]) == 13 else 1
        ref = datetime(year, 7, 1, tzinfo=UTC).timestamp()
        if abs(n / scale - ref) > 400 * 86400:  # not a time of the job's year
            return m[0]
        return str(n + int(delta.total_seconds()) * scale).encode()
    return move


def _job_times(job: Job) -> list[datetime]:
    return sorted(_head_time(m) for s in texts(job) for ln in s.lines or () if (m := _heads(ln)) is not None)


def _moved_dump(raw: bytes, delta: timedelta) -> bytes:
    """A Flight Recorder dump (a pickled dict, the fixtures' own) with its entries' times moved by ``delta``."""
    dump = pickle.loads(raw)  # noqa: S301 - the job's own fixture, written by torch
    ns = int(delta.total_seconds()) * 10**9
    for entry in dump.get("entries") or []:
        for key, value in entry.items():
            if key.startswith("time_") and key.endswith("_ns") and isinstance(value, int):
                entry[key] = value + ns
    return pickle.dumps(dump, protocol=2)


def new_year(job: Job) -> Variant:
    """The whole job moved so that the middle of its span is New Year's midnight, a healthy node's files in
    syslog's yearless format: lines of December 31 and January 1 of the next year beside each other."""
    times = _job_times(job)
    if not times:
        return identity(job)
    mid = times[0] + (times[-1] - times[0]) / 2
    delta = datetime(mid.year + 1, 1, 1, tzinfo=UTC) - mid
    delta = timedelta(seconds=int(delta.total_seconds()))
    v = _moved(job, delta, mid.year)
    node = _peer(job)

    def edit(o: Out) -> None:
        o.lines = [_restamp(ln, syslog_stamp(node or "node")) for ln in o.lines]
    return _on_node(v, node, edit)


def ampm(job: Job) -> Variant:
    """The root evidence's file stamped ``12/03/2026 02:38:23 PM`` (12-hour clock, no fraction)."""
    def edit(o: Out) -> None:
        o.lines = [_restamp(ln, ampm_stamp) for ln in o.lines]
    return edit_file(job, _clock_target(job), edit)


_LEVEL = re.compile(rb"^(DEBUG|INFO|WARNING|ERROR|CRITICAL)\b")


def _as_json(o: Out, record: Callable[[float, str, bytes], dict[str, object]]) -> None:
    """Each line of ``o`` with an ISO header as one JSON record (its time, level and the rest of the line as the
    message), as a JSON logger's handler writes them; every other line (a traceback of an uncaught exception,
    another library's glog lines, ``print``) as it was, as the process writes it to the same stream."""
    out = []
    for ln in o.lines:
        m = _heads(ln)
        if m is None:
            out.append(ln)
            continue
        lv = _LEVEL.match(ln[m.end():])
        out.append(json.dumps(record(_head_time(m).timestamp(), (lv[1] if lv else b"INFO").decode(),
                                     m[1] + ln[m.end():]), ensure_ascii=False).encode())
    o.lines = out


def epoch_ms_json(job: Job) -> Variant:
    """The root evidence's file as pino's JSON lines: ``{"level":30,"time":1796341034200,"msg":...}``."""
    pino = {"DEBUG": 20, "INFO": 30, "WARNING": 40, "ERROR": 50, "CRITICAL": 60}

    def record(t: float, level: str, msg: bytes) -> dict[str, object]:
        return {"level": pino[level], "time": round(t * 1000), "pid": 4242,
                "msg": msg.decode("utf-8", "replace")}
    return edit_file(job, _clock_target(job), lambda o: _as_json(o, record))


def epoch_s_json(job: Job) -> Variant:
    """The root evidence's file as python-json-logger's records with ``created`` (epoch seconds, a float)."""
    def record(t: float, level: str, msg: bytes) -> dict[str, object]:
        return {"created": round(t, 6), "levelname": level, "name": "train",
                "message": msg.decode("utf-8", "replace")}
    return edit_file(job, _clock_target(job), lambda o: _as_json(o, record))


def _middle_time(job: Job, node: str | None) -> float | None:
    """The median of a node's header times (None when its lines carry none)."""
    times = [_head_time(m) for s in texts(job) if s.node == node for ln in s.lines or ()
             if (m := _heads(ln)) is not None]
    return sorted(times)[len(times) // 2] if times else None


def dst_jump(job: Job) -> Variant:
    """A healthy node logs in local time and springs forward an hour in the middle of the job: its later lines
    read an hour late."""
    node = _peer(job)
    cut = _middle_time(job, node)
    if cut is None:
        return identity(job)

    def forward(m: re.Match[bytes]) -> bytes:
        t = datetime.fromisoformat(f"{m[1].decode()}T{m[2].decode()}").replace(tzinfo=UTC)
        if t < cut.replace(microsecond=0):
            return m[0]
        t += timedelta(hours=1)
        return t.strftime("%Y-%m-%d").encode() + m[0][10:11] + t.strftime("%H:%M:%S").encode() + m[0][19:]

    def edit(o: Out) -> None:
        o.lines = [_ISO.sub(forward, ln) if _heads(ln) else ln for ln in o.lines]
    return _on_node(identity(job), node, edit)


def bad_dates(job: Job) -> Variant:
    """Two lines whose dates are no dates (an unset RTC's ``0000-00-00``, a corrupt ``2026-13-45 25:61``) in
    the middle of the root evidence's file."""
    def edit(o: Out) -> None:
        mid = len(o.lines) // 2
        o.lines[mid:mid] = [b"0000-00-00 00:00:00,000 INFO heartbeat", b"2026-13-45 25:61:07,000 INFO heartbeat"]
        o.origin[mid:mid] = [None, None]
    return edit_file(job, _clock_target(job), edit)


_DMESG = (b"EXT4-fs (nvme0n1p1): mounted filesystem with ordered data mode. Quota mode: none.",
          b"IPv6: ADDRCONF(NETDEV_CHANGE): ib0: link becomes ready",
          b"nvidia-nvswitch0: open (major=510)",
          b"systemd-journald[812]: Data hash table of /var/log/journal/system.journal has a fill level at 75.0")


def dmesg_old_boot(job: Job) -> Variant:
    """A ``dmesg`` capture (seconds since boot only) of the root node, which booted 40 days before the job."""
    v = identity(job)
    roots = [r.split("/", 1)[0] for r in job.root_files if "/" in r]
    node = roots[0] if roots else (_peer(job) or "")
    out = Out((f"{node}/" if node else "") + "dmesg-boot.log", mtime=max((s.mtime for s in job.srcs), default=None))
    up = 40 * 86400.0
    for i in range(40):
        out.lines.append(f"[{up + 61.5 * i:12.6f}] ".encode() + _DMESG[i % len(_DMESG)])
    out.origin = [None] * len(out.lines)
    v.outs.append(out)
    return v


# ------------------------------------------------------------------------------------------------ more stamp shapes
def us_date(job: Job) -> Variant:
    """The root evidence's file stamped as accelerate's and transformers' example scripts log
    (``datefmt="%m/%d/%Y %H:%M:%S"``): ``12/03/2026 14:38:23 `` (month first, no fraction)."""
    def edit(o: Out) -> None:
        o.lines = [_restamp(ln, lambda t: t.strftime("%m/%d/%Y %H:%M:%S ").encode()) for ln in o.lines]
    return edit_file(job, _clock_target(job), edit)


def eu_date(job: Job) -> Variant:
    """The root evidence's file stamped day first (``datefmt="%d/%m/%Y %H:%M:%S"`` with ``%(msecs)03d``):
    ``03/12/2026 14:38:23.200 ``; whether ``03/12`` is March or December is a matter of the whole job."""
    def edit(o: Out) -> None:
        o.lines = [_restamp(ln, lambda t: t.strftime("%d/%m/%Y %H:%M:%S.").encode()
                            + f"{t.microsecond // 1000:03d} ".encode()) for ln in o.lines]
    return edit_file(job, _clock_target(job), edit)


def _moved(job: Job, delta: timedelta, year: int) -> Variant:
    """The whole job moved by ``delta`` (every date form, dumps and write times), ``shift`` set."""
    move = _shifter(delta, year)
    v = identity(job)
    for o in v.outs:
        if o.raw is None:
            o.lines = [_ANY.sub(move, ln) for ln in o.lines]
        elif o.raw.startswith(b"\x80"):
            o.raw = _moved_dump(o.raw, delta)
        o.mtime = (o.mtime or 0.0) + delta.total_seconds()
    v.shift = delta.total_seconds()
    return v


def time_only(job: Job) -> Variant:
    """The whole job moved so that the middle of its span is midnight, the root evidence's file stamped with the
    time of day only (``datefmt="%H:%M:%S"`` with ``%(msecs)03d``: ``23:59:58.200 ``): its lines cross midnight
    with no date to say so."""
    times = _job_times(job)
    if not times:
        return identity(job)
    mid = times[0] + (times[-1] - times[0]) / 2
    delta = datetime(mid.year, mid.month, mid.day, tzinfo=UTC) + timedelta(days=1) - mid
    delta = timedelta(seconds=int(delta.total_seconds()))
    v = _moved(job, delta, mid.year)
    target = _clock_target(job).rel

    def stamp(t: datetime) -> bytes:
        return t.strftime("%H:%M:%S.").encode() + f"{t.microsecond // 1000:03d} ".encode()
    for o in v.outs:
        if o.rel == target and o.raw is None:
            o.lines = [_restamp(ln, stamp) for ln in o.lines]
    return v


def _iso_moved(delta: timedelta) -> Callable[[re.Match[bytes]], bytes]:
    def move(m: re.Match[bytes]) -> bytes:
        t = datetime.fromisoformat(f"{m[1].decode()}T{m[2].decode()}") + delta
        return t.strftime("%Y-%m-%d").encode() + m[0][10:11] + t.strftime("%H:%M:%S").encode() + m[0][19:]
    return move


def tz_peer(job: Job) -> Variant:
    """A node without root evidence logs naive local time eight hours ahead of UTC (no offset written), its
    glog lines too."""
    delta = timedelta(hours=8)
    move = _iso_moved(delta)

    def glog(m: re.Match[bytes]) -> bytes:
        t = datetime.fromisoformat(f"2024-{m[2].decode()}-{m[3].decode()}T{m[4].decode()}") + delta
        return m[1] + t.strftime("%m%d %H:%M:%S").encode()

    def edit(o: Out) -> None:
        o.lines = [_GLOG.sub(glog, _ISO.sub(move, ln)) for ln in o.lines]
    return _on_node(identity(job), _peer(job), edit)


# ------------------------------------------------------------------------------------------------ valid but wrong
# Times that parse as good dates and are still not the line's own moment: what real archives hold, one line at a
# time, beside thousands of lines of the right clock.
def _log_target(job: Job) -> Src:
    """The root evidence's first log file that is no JSON document (an error file is one document: a line put
    into it makes it no document at all, which no clock does), else the largest file."""
    found = {s.rel: s for s in texts(job)}
    return next((found[f] for f in job.root_files if f in found and not f.endswith(".json")), largest(job))


def _timed(o: Out) -> list[int]:
    """Indexes of the lines of ``o`` with an ISO header (``_heads``)."""
    return [i for i, ln in enumerate(o.lines) if _heads(ln) is not None]


def _restamp_at(o: Out, i: int, when: Callable[[datetime], datetime]) -> None:
    """Line ``i`` of ``o`` with its ISO header's time replaced by ``when(time)``, written in the header's own form
    (its separator and fraction digits)."""
    m = _heads(o.lines[i])
    if m is None:
        return
    t = when(_head_time(m))
    frac = f"{t.microsecond:06d}"[:len(m[9])].encode()
    sep = o.lines[i][m.start(3) + 10:m.start(3) + 11]
    o.lines[i] = (o.lines[i][:m.start(3)] + t.strftime("%Y-%m-%d").encode() + sep
                  + t.strftime("%H:%M:%S").encode() + o.lines[i][m.start(9) - 1:m.start(9)] + frac
                  + o.lines[i][m.end(9):])


def _mid_timed(o: Out, when: Callable[[datetime], datetime]) -> None:
    timed = _timed(o)
    if timed:
        _restamp_at(o, timed[len(timed) // 2], when)


def future_line(job: Job) -> Variant:
    """One line in the middle of the root evidence's file stamped 2036-02-07 06:28:16, the moment NTP's 32-bit
    era rolls over: a host whose clock was stepped by a broken time server (or whose RTC was reset) for one
    line, its other lines of the right time. The line itself is one of the job's own, as written."""
    def edit(o: Out) -> None:
        _mid_timed(o, lambda t: datetime(2036, 2, 7, 6, 28, 16, t.microsecond, UTC))
    return edit_file(job, _log_target(job), edit)


def _peer_file(job: Job) -> Src | None:
    """The largest file with ISO headers of the first node without root evidence."""
    node = _peer(job)
    found = [s for s in texts(job) if s.node == node and node and any(_heads(ln) for ln in s.lines or ())]
    return max(found, key=lambda s: len(s.lines or ()), default=None)


def _on_peer_file(job: Job, edit: Callable[[Out], None]) -> Variant:
    target = _peer_file(job)
    return identity(job) if target is None else edit_file(job, target, edit)


def peer_year_back(job: Job) -> Variant:
    """One line in the middle of a healthy node's file stamped a year earlier: NTP stepped a clock that had been
    set from a wrong RTC for a moment, and one line was written in between (its date a good date, a year off)."""
    return _on_peer_file(job, lambda o: _mid_timed(o, lambda t: t.replace(year=t.year - 1)))


def peer_flushed_late(job: Job) -> Variant:
    """A healthy node's last timed line carries a time an hour before the lines above it: a line formatted an hour
    earlier sat in a process's buffer (a forked worker's ``stdout`` block buffer) and was flushed when the
    process exited."""
    def edit(o: Out) -> None:
        timed = _timed(o)
        if timed:
            _restamp_at(o, timed[-1], lambda t: t - timedelta(hours=1))
    return _on_peer_file(job, edit)


def quoted_time(job: Job) -> Variant:
    """Lines in the middle of the root evidence's file that quote another time than their own: the time a resumed
    checkpoint was saved, logged under the line's own header, and a job script's ``date`` of the run it resumes
    printed bare (``echo "resuming run of $(cat started)"``)."""
    def edit(o: Out) -> None:
        timed = _timed(o)
        mid = timed[len(timed) // 2] if timed else len(o.lines) // 2
        m = _heads(o.lines[mid]) if timed else None
        head = o.lines[mid][:m.end()] if m is not None else b""
        add = [head + b"INFO resuming: checkpoint saved at 2024-03-01 12:00:00 (step 1200)",
               b"Fri Mar  1 12:00:00 UTC 2024"]
        o.lines[mid + 1:mid + 1] = add
        o.origin[mid + 1:mid + 1] = [None] * len(add)
    return edit_file(job, _log_target(job), edit)


def clock_step_back(job: Job) -> Variant:
    """A healthy node whose clock ran an hour fast is stepped back by NTP in the middle of the job (``chronyd``'s
    ``makestep``) and keeps logging: its later lines read an hour earlier than its earlier ones."""
    node = _peer(job)
    cut = _middle_time(job, node)
    if cut is None:
        return identity(job)

    def edit(o: Out) -> None:
        for i in _timed(o):
            m = _heads(o.lines[i])
            if m is not None and _head_time(m) < cut:
                _restamp_at(o, i, lambda t: t + timedelta(hours=1))
    return _on_node(identity(job), node, edit)


def epoch_field(job: Job) -> Variant:
    """A JSON line in the middle of the root evidence's file whose only time is an epoch number that is not the
    line's own: a data loader's record of a sample (``{"event": "sample", "created": 1709294400, ...}``) printed
    to the log, the time of the data, not of the log."""
    def edit(o: Out) -> None:
        mid = len(o.lines) // 2
        line = b'{"event": "sample", "shard": 17, "created": 1709294400, "tokens": 2048}'
        o.lines.insert(mid, line)
        o.origin.insert(mid, None)
    return edit_file(job, _log_target(job), edit)


TIME_TRANSFORMS: dict[str, Callable[[Job], Variant]] = {
    "clock-1970": clock_1970,
    "clock-2099": clock_2099,
    "clock-2099-mid": clock_2099_mid,
    "clock-2099-end": clock_2099_end,
    "local-offset": local_offset,
    "stale-file": stale_file,
    "skewed-peer": skewed_peer,
    "glog-peer": glog_peer,
    "syslog-peer-copied": syslog_peer_copied,
    "new-year": new_year,
    "ampm": ampm,
    "epoch-ms-json": epoch_ms_json,
    "epoch-s-json": epoch_s_json,
    "dst-jump": dst_jump,
    "bad-dates": bad_dates,
    "dmesg-old-boot": dmesg_old_boot,
    "us-date": us_date,
    "eu-date": eu_date,
    "time-only": time_only,
    "tz-peer": tz_peer,
    "future-line": future_line,
    "peer-year-back": peer_year_back,
    "peer-flushed-late": peer_flushed_late,
    "quoted-time": quoted_time,
    "clock-step-back": clock_step_back,
    "epoch-field": epoch_field,
}
