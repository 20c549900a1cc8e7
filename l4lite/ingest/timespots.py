"""Where a file's lines carry their time when it is not the first thing in their header, learnt from its first lines.

Most loggers print their time first (after a stream prefix such as ``[rank0]:``), where the timestamp parser looks.
Some print something before it: torchtitan names its logger first (``[titan] 2025-01-28 18:14:43,512 - root -
INFO - step: 1 ...``), and JSON-lines loggers put the time in a field of the object (``{"time":
"2026-11-29T04:01:02.345Z", "level": "INFO", ...}``, or ``"timestamp"``, ``"ts"`` in epoch seconds or
milliseconds, ``"asctime"``...); logfmt loggers (logrus, go-kit, slog) write ``key=value`` pairs, the time one of
them (``time=2025-11-29T04:06:23.123+03:00 level=info msg="..."``, ``level=info ts=...``). A file's *time spot*
says where: a tag (``"[titan] "``), after which the line's header is read as if the tag were not there, or a JSON
key (``'"time":'``) or a logfmt key (``"time="``), whose value is the line's time (a logfmt line's ``level=`` its
level) while the whole line stays its message. It is learnt once per file from its first lines (``learn_spot``), so that every
line of the file, whichever reader reads it (line by line, by shape plans, in runs, a piece of it), is read the
same way; a file whose first lines show no such spot has none (the empty string), and its lines are read as before.

A file whose first line opens with epoch seconds (``1733558400.123 ...`` as moreutils ``ts '%.s'`` prefixes every
line, ``[1733558400] ...``) has the spot ``EPOCH_SPOT``: every line's leading epoch number is its time and the
rest its header and message. Only the first line decides it, as a wrapper that stamps lines stamps the first one
too: a number that opens some later line (a count, an id) is never read as a time, and the live reader, which
learns a spot line by line, decides it alike.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from l4lite.ingest.attribution import ACTOR_PREFIX, KUBECTL_PREFIX, MPI_TAG, SRUN_LABEL, TORCHRUN_PREFIX
from l4lite.ingest.stamp_patterns import EPOCH_HEAD, fraction, iso_layout
from l4lite.ingest.stamp_patterns import zoned_layout as header_zoned_layout
from l4lite.ingest.timestamps import NO_STAMP, TimestampParser

LEARN_LINES = 200  # non-blank lines of a file's start its spot is learnt from
ENOUGH = 8  # lines that show one spot, after which the rest are not looked at
JSON_REACH = 512  # characters of a JSON object searched for its time key
_REACH = 96  # a line's first characters, where its stream prefixes and a tag or a brace sit
# a logger's own name in brackets, then an ISO time: "[titan] 2025-01-28 18:14:43,512"
_TAG = re.compile(r"\[[a-z_][\w.-]{0,23}\] +(?=\d{4}[-/]\d\d[-/]\d\d[T ]\d\d:\d\d:\d\d)")
# the usual names of a JSON record's time field (structlog, python-json-logger, loguru, zap, logrus, bunyan, pino)
_JSON_KEY = re.compile(r'"(@timestamp|timestamp|time|ts|asctime|datetime|created|date|t)" ?:')
# a logfmt record's time key, at the line's start or after a space, its value (quoted or not) a number
_KV_KEY = re.compile(r'(?:^| )(@timestamp|timestamp|time|ts)="?(?=\d)')
# what makes a line a logfmt record rather than a message that mentions ``time=`` (a runtime's error quoted in a
# kubelet event): it starts with a key, and has a level or message key
_KV_START = re.compile(r"[A-Za-z_@][\w.@-]{0,31}=")
_KV_RECORD = re.compile(r"(?:^| )(?:level|lvl|severity|msg)=")
_KV_LEVEL = re.compile(r'(?:^| )(?:level|lvl|severity)="?([A-Za-z]+)')
_KV_LEVELS = {"trace": "debug", "debug": "debug", "info": "info", "notice": "info", "warn": "warning",
              "warning": "warning", "error": "error", "err": "error", "fatal": "error", "panic": "error",
              "crit": "error", "critical": "error", "alert": "error", "emerg": "error"}
_DIGITS = frozenset("0123456789")
EPOCH_SPOT = "#"  # the spot of a file whose lines open with epoch seconds (not a tag, key or logfmt key)


def strip_stream_prefixes(line: str, label_streams: dict[str, set[str]] | None = None) -> str:
    """A line without the stream prefixes the reader takes off before its header (``srun --label``, an MPI tag or
    a Ray actor, torchrun's ``[rankN]:``). ``label_streams`` collects, per ``srun --label`` label, the torchrun
    prefixes seen under it: a label over several ranks' streams names a node, not a rank. ``kubectl logs
    --prefix``'s pod comes first."""
    if line.startswith("[pod/") and (k := KUBECTL_PREFIX.match(line)):
        line = line[k.end():]
    m = SRUN_LABEL.match(line)
    if m:
        line = line[m.end():]
        if label_streams is not None and (t := TORCHRUN_PREFIX.match(line)):
            label_streams.setdefault(m[1], set()).add(t[1] + t[2])
    m = MPI_TAG.match(line) or ACTOR_PREFIX.match(line)
    if m:
        line = line[m.end():]
    m = TORCHRUN_PREFIX.match(line)
    if m:
        line = line[m.end():].lstrip(" ")
    return line


def value_at(s: str, p: int, spot: str) -> int:
    """Where the time of a line whose header starts at ``p`` sits by the file's ``spot``: after the tag, or at
    the JSON key's value (an ISO string's first digit, or an epoch number's), else -1."""
    if not spot:
        return -1
    if spot[0] == "[":
        return p + len(spot) if s.startswith(spot, p) else -1
    if spot[-1] == "=":
        return kv_value_at(s, p, spot)
    if not s.startswith("{", p):
        return -1
    k = s.find(spot, p, p + JSON_REACH)
    if k < 0:
        return -1
    v = k + len(spot)
    while s.startswith(" ", v):
        v += 1
    if s.startswith('"', v):
        v += 1
    return v if s[v:v + 1] in _DIGITS else -1


def kv_value_at(s: str, p: int, spot: str) -> int:
    """Where a logfmt line's time value starts (its first digit, inside quotes or not), the key ``spot`` found
    at ``p`` or after a space (``runtime=`` is no ``time=``), within ``JSON_REACH``; else -1."""
    k = s.find(spot, p, p + JSON_REACH)
    while k > p and s[k - 1] != " ":
        k = s.find(spot, k + 1, p + JSON_REACH)
    if k < 0:
        return -1
    v = k + len(spot)
    if s.startswith('"', v):
        v += 1
    return v if s[v:v + 1] in _DIGITS else -1


def kv_level(s: str, p: int) -> str | None:
    """A logfmt line's level, from its ``level=`` (``lvl=``, ``severity=``) field."""
    m = _KV_LEVEL.search(s, p, p + JSON_REACH)
    return _KV_LEVELS.get(m[1].lower()) if m else None


def spot_time(parser: TimestampParser, s: str, p: int,
              spot: str) -> tuple[int, tuple[float | None, int, str | None, str]]:
    """Where the spot puts a line's time and ``parser``'s reading of it there (``TimestampParser.parse``'s answer;
    ``epoch`` for a number in a JSON field), or (-1, NO_STAMP)."""
    if spot == EPOCH_SPOT:
        return epoch_head(s, p)
    at = value_at(s, p, spot)
    if at < 0:
        return -1, NO_STAMP
    if spot[-1] == "=":  # a logfmt time: ISO, else epoch seconds (or ms...), with the line's level field
        t, end, _, kind = parser.parse(s, at)
        if not end:
            t, end, _, kind = parser.epoch(s, at)
        return at, (t, end, kv_level(s, p), kind) if end else NO_STAMP
    if spot[0] == '"' and s[at - 1:at] != '"':
        return at, parser.epoch(s, at)
    return at, parser.parse(s, at)


def epoch_head(s: str, p: int) -> tuple[int, tuple[float | None, int, str | None, str]]:
    """A line's leading epoch time at ``p`` (``EPOCH_SPOT``): where its digits start and its reading (the header
    ends after the spaces that follow it), or (-1, NO_STAMP)."""
    m = EPOCH_HEAD.match(s, p)
    if m is None:
        return -1, NO_STAMP
    whole, part, at = (m[1], m[2], m.start(1)) if m[1] else (m[3], m[4], m.start(3))
    t = int(whole) + fraction(part)
    return at, (t if len(whole) == 10 else t / 1000.0, m.end(), None, "epoch")


def learn_spot(lines: Iterable[str], year: int | None = None, opening: bool = True) -> str:
    """The time spot of a file from its first lines: the tag, JSON key or logfmt key they show (the first shown by ``ENOUGH``
    lines, else the one most lines show), where a line has no time first and one can be read there; "" when
    none does. ``EPOCH_SPOT`` when the first of them opens with epoch seconds and no other header (``opening``:
    whether the first of ``lines`` is the file's first non-blank line)."""
    parser = TimestampParser(year)
    found: Counter[str] = Counter()
    n = 0
    for raw in lines:
        if not raw or raw.isspace():
            continue
        n += 1
        if n > LEARN_LINES:
            break
        if n == 1 and opening:
            s = strip_stream_prefixes(raw)
            if epoch_head(s, 0)[0] >= 0 and not parser.parse(s)[1]:
                return EPOCH_SPOT
        head = raw[:_REACH]
        if "[" not in head and "{" not in head and "=" not in head:
            continue
        s = strip_stream_prefixes(raw)
        c = s[:1]
        if c == "[":
            m = _TAG.match(s)
            if m is not None and not parser.parse(s)[1] and parser.parse(s, m.end())[1]:
                found[m.group()] += 1
        elif c == "{" and s.startswith('{"'):
            for m in _JSON_KEY.finditer(s, 0, JSON_REACH):
                spot = m.group()
                if spot_time(parser, s, 0, spot)[1][0] is not None:
                    found[spot] += 1
                    break
        elif _KV_START.match(s) is not None and (m := _KV_KEY.search(s, 0, _REACH)) is not None \
                and _KV_RECORD.search(s, 0, JSON_REACH) is not None and not parser.parse(s)[1]:
            spot = m[1] + "="
            if spot_time(parser, s, 0, spot)[1][0] is not None:
                found[spot] += 1
        if found and found.most_common(1)[0][1] >= ENOUGH:
            break
    return found.most_common(1)[0][0] if found else ""


def time_layout(s: str, spans: tuple) -> tuple[int, int, int] | None:
    """Where the parts of a line's ISO time sit (``stamp_patterns.iso_layout``), for plans and runs to read it
    from: a time first or after a tag, or a JSON record's time field, in UTC (``Z``) or naive. ``spans`` is a
    header reader's line spans (its fields 3 to 7: the time's first and second position, end, kind, level)."""
    ts_first, ts_second, ts_end, ts_kind, ts_level = spans[3:8]
    if ts_level is not None or not (ts_kind == "iso" or (ts_kind == "rfc3339" and ts_second >= 0
                                                         and s.startswith("{", ts_first))):
        return None
    return iso_layout(s, ts_second if ts_second >= 0 else ts_first, ts_end)


def zoned_layout(s: str, spans: tuple) -> tuple[int, int, int, int, int] | None:
    """Where the parts of a line's ISO time with a UTC offset sit (``stamp_patterns.zoned_layout``), for a
    line's own header plan to read it from (journald's and rsyslog's ``2025-11-29T04:01:02.123456+00:00 host
    ...``): a time first, no level in it and no kernel uptime after it (whose anchor the plan's parse sets). Runs
    do not read offsets: only the plan of a whole line takes this layout. A logfmt time (``time=...+03:00``, the
    file's time spot) is read at its value's offsets alike; the plan keeps the level its shape's letters give."""
    ts_first, ts_second, ts_end, ts_kind, ts_level = spans[3:8]
    if spans[8] is not None or ts_kind not in ("iso", "rfc3339"):
        return None
    if ts_second >= 0:
        if s[ts_second - 1:ts_second] not in ("=", '"') or s[ts_first:ts_first + 1] in ("[", "{"):
            return None
        return header_zoned_layout(s, ts_second, ts_end)
    if ts_level is not None:
        return None
    return header_zoned_layout(s, ts_first, ts_end)
