"""Timestamps of the log formats seen on GPU clusters, parsed fast.

``TimestampParser.parse(line, pos)`` looks at the text at ``pos`` and returns ``(time, end, level, kind)``:
``time`` in epoch seconds (UTC; naive times are taken as UTC) or ``None``, ``end`` the index just after the
header (and the spaces after it) so that the caller can strip it, a ``level`` when the header carries one (glog
letters, kernel priorities, vLLM) and the ``kind`` of header ("" when there is none). One parser per file:
formats without a year (syslog, glog, mmengine) take it from the file's other timestamps, else from the file's
modification time, with year roll-over at New Year; dmesg uptimes are anchored to wall time once a line of the
same boot shows both.

The dispatch on the first character keeps the common case (a line without a known header) to a few
comparisons; each format then has one anchored regex (``stamp_patterns``).
"""

from __future__ import annotations

import re
import time as _time
from datetime import date

from l4lite.ingest.dayclock import TIME_OF_DAY, DayClock
from l4lite.ingest.stamp_patterns import (
    DATE,
    DIGITS,
    DMESG_H,
    ENDS_TIME,
    EPOCH,
    FM,
    GLOG,
    GLOG_LEVEL,
    HF,
    ISO,
    ISO_BR,
    JSON_HEAD,
    KERN,
    KERN_LEVEL,
    KERN_PREFIXES,
    MDY,
    MMDD,
    MONTHS,
    POW10,
    RAY_BR,
    RAY_LEVEL,
    SHAPES,
    SYSLOG,
    UPPER,
    UPTIME,
    US,
    VLLM,
    WEEKDAYS,
    WORD_LEVEL,
    fraction,
    hour_24,
    offset_seconds,
)
from l4lite.ingest.syslog_memo import MINUTE_MEMO, TIME_MEMO, SyslogBatch, remember_at_once

NO_STAMP: tuple[float | None, int, str | None, str] = (None, 0, None, "")


def year_near(around: float, month: int) -> int:
    """The year whose ``month`` (its middle) lies nearest the time ``around``: one year for the whole month, as
    the window clocks read a month's syslog times in one year (``clocks``)."""
    ref = _time.gmtime(around)
    y = ref.tm_year
    ref_days = date(y, ref.tm_mon, ref.tm_mday).toordinal()
    return min((y - 1, y, y + 1), key=lambda c: abs(date(c, month, 15).toordinal() - ref_days))


class TimestampParser:
    """Per-file timestamp state: year inference and the dmesg boot anchor."""

    __slots__ = ("_year", "_default_year", "_near", "_mtime", "_around", "_last_month", "_days", "boot", "boot_index",
                 "_last_uptime", "_prescan_boot", "_cache", "_same", "_minutes", "_syslog_minutes", "_text_minutes",
                 "undated", "undated_text", "_undated_line", "_day_first", "_dayclock", "_offsets")

    def __init__(self, year: int | None = None, mtime: float | None = None, near: int | None = None,
                 around: float | None = None, day_first: bool = False) -> None:
        self._default_year = year
        self._day_first = day_first  # ``03/12/2026`` is the 3rd of December (the job's reading, ``dateorder``)
        self._dayclock = DayClock()  # the day of times printed without one
        # the job's time (``JobContext.around``): a date without a year is in the year that puts its month nearest
        # it, so one file's dates of January beside the job's December are of the next year, whatever the file's
        # write time or the year most of the job's dated lines carry
        self._around = around
        self._near = near if near is not None else year  # dates more than a year off it are a wrong clock
        self._mtime = mtime
        self._year: int | None = year
        self._last_month: int | None = None
        self._days: dict[tuple[int, int, int], float] = {}
        self._cache: dict[str, float] = {}  # date-time text (to the second) -> epoch seconds
        self._minutes: dict[str, float] = {}  # ISO date-time text to the minute -> epoch seconds
        self._offsets: dict[str, int] = {}  # UTC offset text -> seconds (``zoned_time``)
        # syslog date-time text to the minute ("Nov 29 04:01:") -> (the year it was read in, epoch seconds)
        self._syslog_minutes: dict[str, tuple[int, float]] = {}
        # glog's and MDY's text to the minute ("1129 04:01:") -> (year, month, epoch seconds): ``_new_second``
        self._text_minutes: dict[str, tuple[int, int, float]] = {}
        # the previous ISO header, to re-read the next line of the same second without a regex:
        # (text up to the seconds, its epoch, fraction start, fraction length, text after the fraction, kind)
        self._same: tuple[str, float, int, int, str, str] | None = None
        self.boot: float | None = None  # wall time of boot for the current boot, once revealed
        self.boot_index = 0  # incremented when the uptime restarts (a reboot inside the file)
        self._last_uptime = -1.0
        self._prescan_boot: tuple[int, float] | None = None
        self.undated = 0  # headers whose date is no date (``_undated``), and the first of them as written
        self.undated_text: str | None = None
        self._undated_line: str | None = None  # the line counted last: a reader may ask twice about one line

    # ------------------------------------------------------------------------------------------ helpers
    def _day(self, y: int, m: int, d: int) -> float:
        key = (y, m, d)
        v = self._days.get(key)
        if v is None:
            v = float((date(y, m, d).toordinal() - 719163) * 86400)
            if len(self._days) > 4096:
                self._days.clear()
            self._days[key] = v
        return v

    def _seen_year(self, y: int, m: int) -> None:
        dy = self._near
        if dy is not None and abs(y - dy) > 1:
            return  # one line with a wild date does not move the job's year (``context.build_context``)
        if y != self._year:
            self._cache.clear()  # cached dates without a year were computed for another year
        self._year = y
        self._last_month = m

    def _remember(self, key: str, value: float) -> None:
        cache = self._cache
        if len(cache) > TIME_MEMO:
            cache.clear()
        cache[key] = value

    def _infer_year(self, m: int, d: int) -> int:
        """The year of a date printed without one."""
        if self._around is not None:
            y = year_near(self._around, m)
            if y != self._year:
                self._cache.clear()
            self._year = y
            self._last_month = m
            return y
        y = self._year
        if y is None:
            ref = self._mtime if self._mtime is not None else _time.time()
            t = _time.gmtime(ref)
            y = t.tm_year
            if (m, d) > (t.tm_mon, t.tm_mday + 1):  # later in the year than the file was written: last year
                y -= 1
            self._year = y
        lm = self._last_month
        if lm is not None:
            if m < lm - 6:  # December -> January
                y += 1
                self._year = y
                self._cache.clear()
            elif m > lm + 6:  # a clock jumping back over New Year
                y -= 1
                self._year = y
                self._cache.clear()
        self._last_month = m
        return y

    def anchor(self, wall: float, uptime: float) -> None:
        """A line showed both wall time and uptime: later uptimes of this boot become wall times."""
        self.boot = wall - uptime

    def set_prescan_anchor(self, boot_index: int, boot: float) -> None:
        """An anchor found by reading ahead in the file, valid for the boot it was found in."""
        self._prescan_boot = (boot_index, boot)
        if boot_index == self.boot_index and self.boot is None:
            self.boot = boot

    def uptime(self, value: float) -> float | None:
        """Wall time of a dmesg uptime, or None while no anchor is known."""
        if value + 1.0 < self._last_uptime:  # uptime went back: a new boot
            self.boot_index += 1
            self.boot = None
            pb = self._prescan_boot
            if pb is not None and pb[0] == self.boot_index:
                self.boot = pb[1]
        self._last_uptime = value
        b = self.boot
        return None if b is None else b + value

    # ------------------------------------------------------------------------------------------ parsing
    def parse(self, s: str, pos: int = 0) -> tuple[float | None, int, str | None, str]:
        """Parse the timestamp header at ``pos``; ``NO_STAMP`` (end 0) when there is none."""
        try:
            c = s[pos]
        except IndexError:
            return NO_STAMP
        try:
            if self._same is not None and (c in DIGITS or c == "["):
                hit = self._same_second(s, pos)
                if hit is not None:
                    return hit
            if c in DIGITS:
                c4 = s[pos + 4:pos + 5]
                if c4 == "-" or c4 == "/":
                    m = ISO.match(s, pos)
                    if m is None:
                        return NO_STAMP
                    return self._iso(m)
                if s[pos + 2:pos + 3] == "/":
                    if s[pos + 5:pos + 6] == "/":
                        m = US.match(s, pos)
                        if m is None:
                            return NO_STAMP
                        key = m[1] + m[9] if m[9] else m[1]
                        t = self._cache.get(key)
                        if t is None:
                            mo, d, y = (int(m[3]), int(m[2]), int(m[4])) if self._day_first else \
                                (int(m[2]), int(m[3]), int(m[4]))
                            self._seen_year(y, mo)
                            t = self._day(y, mo, d) + hour_24(int(m[5]), m[9]) * 3600 + int(m[6]) * 60 \
                                + int(m[7])
                            self._remember(key, t)
                        return t + fraction(m[8]), m.end(), None, "iso"
                    m = MMDD.match(s, pos)
                    if m:
                        t = self._cache.get(m[1])
                        if t is None:
                            mo, d = int(m[2]), int(m[3])
                            t = self._day(self._infer_year(mo, d), mo, d) + int(m[4]) * 3600 + int(m[5]) * 60 \
                                + int(m[6])
                            self._remember(m[1], t)
                        return t, m.end(), None, "mmengine"
                elif s[pos + 2:pos + 3] == ":" and (m := TIME_OF_DAY.match(s, pos)) is not None:
                    t = self._dayclock.time(int(m[1]) * 3600 + int(m[2]) * 60 + int(m[3]), self._around or self._mtime)
                    return t + fraction(m[4]), m.end(), None, "daytime"
                return NO_STAMP
            if c == "[":
                return self._bracket(s, pos)
            if c == "{":
                m = JSON_HEAD.match(s, pos)
                if m is None:
                    return NO_STAMP
                base = self._minutes.get(m[1][:16])
                if base is None:
                    base = self._minute(m[1], int(m[2]), int(m[3]), int(m[4]), int(m[5]), int(m[6]))
                return base + int(m[7]) + fraction(m[8]), m.end(), WORD_LEVEL.get(m[9] or ""), "json"
            if c in UPPER:
                return self._upper(s, pos, c)
            if (c == "k" or c in "umdalnsfc") and s.startswith(KERN_PREFIXES, pos):
                m = KERN.match(s, pos)
                if m:
                    level = KERN_LEVEL[m[2]]
                    t, end, _, kind = self.parse(s, m.end())
                    return t, (end or m.end()), level, "kern" if not kind else "kern+" + kind
            return NO_STAMP
        except ValueError:  # impossible dates such as Feb 30, 0000-00-00, 2026-13-45
            return self._undated(s, pos)

    def _undated(self, s: str, pos: int) -> tuple[float | None, int, str | None, str]:
        """A header whose date is no date (an unset clock's ``0000-00-00``, a corrupt ``2026-13-45``): still the
        header it is shaped as, so its line starts a record as its neighbours do (the reader gives it the time
        of the line before), without a time of its own; counted in ``undated``."""
        for pattern, kind in SHAPES:
            m = pattern.match(s, pos)
            if m is not None:
                if s is not self._undated_line:
                    self.undated += 1
                    self._undated_line = s
                if self.undated_text is None:
                    self.undated_text = s[pos:m.end()].strip()
                return None, m.end(), None, kind
        return NO_STAMP

    def _same_second(self, s: str, pos: int) -> tuple[float | None, int, str | None, str] | None:
        """The header of a line that starts with the same date-time text as the previous ISO header and has the
        same layout (fraction width, offset, bracket and spacing): no regex needed. None when it does not."""
        head, base, fs, fl, tail, kind = self._same  # type: ignore[misc]
        if not s.startswith(head, pos):
            return None
        a = pos + fs
        frac = s[a:a + fl]
        end = a + fl + len(tail)
        if not frac.isdigit() or not s.startswith(tail, a + fl) or s[end:end + 1] == " ":
            return None
        if not tail and s[end:end + 1] not in ENDS_TIME:  # "...05.500" then "+02:00": an offset the regex reads
            return None
        return base + int(frac) / POW10[fl], end, None, kind

    def _iso(self, m: re.Match[str]) -> tuple[float | None, int, str | None, str]:
        key = m[1]
        base = self._minutes.get(key[:16])
        if base is None:
            base = self._minute(key, int(m[2]), int(m[3]), int(m[4]), int(m[5]), int(m[6]))
        t = base + int(m[7])
        off = m[9]
        if off:
            t -= offset_seconds(off)
        # RFC 3339 with T and an offset is what syslog/journald write: a host field may follow
        kind = "rfc3339" if off and key[10] == "T" else "iso"
        f = m[8]
        end = m.end()
        if f:
            fs = m.start(8)
            self._same = (m.string[m.start():m.end(1)], t, fs - m.start(), len(f), m.string[m.end(8):end], kind)
            t += int(f) / POW10[len(f)]
        return t, end, None, kind

    def _minute(self, key: str, y: int, mo: int, d: int, h: int, mi: int) -> float:
        """Epoch seconds of an ISO date-time's minute (``key`` up to the minute), remembered."""
        self._seen_year(y, mo)
        base = self._day(y, mo, d) + h * 3600 + mi * 60
        minutes = self._minutes
        if len(minutes) > 65536:
            minutes.clear()
        minutes[key[:16]] = base
        return base

    def known_minute(self, text: str) -> bool:
        """Whether the ISO minute ``text`` (``YYYY-MM-DD HH:MM``, as written) has been seen (see ``iso_time``)."""
        return text in self._minutes

    def learn_minute(self, text: str, y: int, mo: int, d: int, h: int, mi: int) -> float:
        """See the ISO minute ``text`` as a header parsed in full would (``l4lite.ingest.runs``): its epoch seconds."""
        return self._minute(text, y, mo, d, h, mi)

    def iso_time(self, s: str, layout: tuple[int, int, int]) -> float | None:
        """The time of an ISO header laid out as ``layout`` says (``stamp_patterns.iso_layout``); None when its
        minute is not known yet (the caller then parses the line in full)."""
        ds, fs, fl = layout
        base = self._minutes.get(s[ds:ds + 16])
        if base is None:
            return None
        t = base + int(s[ds + 17:ds + 19])
        if fl:
            t += int(s[fs:fs + fl]) / POW10[fl]
        return t

    def zoned_time(self, s: str, layout: tuple[int, int, int, int, int]) -> float | None:
        """``iso_time`` of a header laid out as ``stamp_patterns.zoned_layout`` says: ``parse``'s time of it without
        the pattern, the offset's seconds remembered per text. None when its minute is not known yet."""
        ds, fs, fl, os_, oe = layout
        base = self._minutes.get(s[ds:ds + 16])
        if base is None:
            return None
        text = s[os_:oe]
        off = self._offsets.get(text)
        if off is None:
            off = offset_seconds(text)
            if len(self._offsets) < 64:
                self._offsets[text] = off
        t = base + int(s[ds + 17:ds + 19]) - off
        if fl:
            t += int(s[fs:fs + fl]) / POW10[fl]
        return t

    def planned_time(self, s: str, pos: int, end: int, kind: str) -> tuple[bool, float | None]:
        """``parse(s, pos)``'s time, without its regex, for a line whose header has the shape of one that
        ``parse`` read as ``kind`` ending at ``end``: the same pattern matches it at the same offsets (patterns
        tell digits apart only as ``\\d``). A syslog time (no fraction) whose text was parsed before is the
        remembered value (``parse`` changes no state then); a dmesg uptime is read from between its brackets
        and moves the boot clock as ``parse`` does; a glog time is read as ``_glog`` reads it, its year inferred
        and its second remembered alike. (False, None) where ``parse`` must read it."""
        if kind == "syslog":
            text = s[pos:end].rstrip(" ")
            if "." in text:
                return False, None
            t = self._cache.get(text)
            if t is not None:
                return True, t
            # a new second of a minute read before: ``parse`` would infer the year (no change where the month is
            # the last one seen), compute the time and remember it, as here
            y = self._year
            if y is None or self._last_month != MONTHS.get(text[:3]):
                return False, None
            minute = self._syslog_minutes.get(text[:-2])
            if minute is None or minute[0] != y:
                return False, None
            t = minute[1] + int(text[-2:])
            self._remember(text, t)
            return True, t
        if kind == "mdy":  # a second read before (``_upper``'s memo): no state to change
            text = s[pos:end].rstrip(" ")
            t = self._cache.get(text)
            if t is not None:
                return True, t
            return self._new_second(text) if text[-3:-2] == ":" else (False, None)  # no fraction nor AM/PM
        if kind == "uptime":
            whole, _, frac = s[pos + 1:end].rstrip(" ")[:-1].lstrip(" ").partition(".")
            return True, self.uptime(int(whole) + fraction(frac))
        if kind == "glog":  # ``_glog`` without its regex: the texts at the offsets its groups had
            b = pos + 1 if s.startswith("[", pos) else pos
            dot = s.find(".", b)
            text = s[b + 1:dot]  # "MMDD HH:MM:SS" (a month of one digit too)
            f = s[dot + 1:s.find(" ", dot)]
            t = self._cache.get(text)
            if t is None and (t := self._new_second(text)[1]) is None:
                mo, d = int(text[:-11]), int(text[-11:-9])
                try:
                    y = self._infer_year(mo, d)
                    base = self._day(y, mo, d) + int(text[-8:-6]) * 3600 + int(text[-5:-3]) * 60
                except ValueError:  # no date: ``parse`` reads it (``_infer_year`` gives the same again)
                    return False, None
                t = base + int(text[-2:])
                self._remember(text, t)
                self._minute_base(text, y, mo, base)
            return True, t + int(f) / POW10[len(f)]
        return False, None

    def _new_second(self, text: str) -> tuple[bool, float | None]:
        """``text``'s time (to the second) from its minute's start read before, where reading its date again would
        leave the year inference as it is (its year and month the last seen), remembered as ``parse`` does."""
        minute = self._text_minutes.get(text[:-2])
        if minute is None or minute[0] != self._year or minute[1] != self._last_month:
            return False, None
        t = minute[2] + int(text[-2:])
        self._remember(text, t)
        return True, t

    def _minute_base(self, text: str, y: int, mo: int, base: float) -> None:
        if len(self._text_minutes) > MINUTE_MEMO:  # (``_new_second``'s memo)
            self._text_minutes.clear()
        self._text_minutes[text[:-2]] = (y, mo, base)

    def syslog_year(self, month: int) -> int | None:
        """The year ``parse`` gives a syslog time of ``month`` without changing its state (the month is the last
        one seen), or None."""
        return self._year if self._last_month == month else None

    def read_syslog(self, texts: list[str], times: list[float], bases: list[float], year: int) -> None:
        """What ``parse`` remembers of syslog times of ``syslog_year``'s month read elsewhere, in order: each
        text's time and its minute's start (``l4lite.ingest.runs``); at once where no memo fills up on the way."""
        cache, minutes = self._cache, self._syslog_minutes
        if remember_at_once(cache, minutes, SyslogBatch(texts, times, bases, year)):
            return
        for text, t, base in zip(texts, times, bases, strict=True):
            if text not in cache:
                self._remember(text, t)
                if len(minutes) > MINUTE_MEMO:
                    minutes.clear()
                minutes[text[:-2]] = (year, base)

    @property
    def last_uptime(self) -> float:
        """The last dmesg uptime read (-1 before any)."""
        return self._last_uptime

    def read_uptimes(self, last: float) -> None:
        """Dmesg uptimes of one boot were read elsewhere, the last of them ``last`` (see ``uptime``)."""
        self._last_uptime = last

    def _bracket(self, s: str, pos: int) -> tuple[float | None, int, str | None, str]:
        c1 = s[pos + 1:pos + 2]
        if c1 in DIGITS or c1 == " " or c1 == "+":
            if c1 in DIGITS and s[pos + 5:pos + 6] in ("-", "/"):
                m = ISO_BR.match(s, pos)
                if m:
                    return self._iso(m)
                m = RAY_BR.match(s, pos)
                if m:
                    base = self._minutes.get(m[1][:16])
                    if base is None:
                        base = self._minute(m[1], int(m[2]), int(m[3]), int(m[4]), int(m[5]), int(m[6]))
                    return base + int(m[7]) + int(m[8]) / 1000, m.end(), RAY_LEVEL[m[9]], "ray"
            m = UPTIME.match(s, pos)
            if m is None:
                return NO_STAMP
            if m[1]:  # [  +0.000316]: a delta, no absolute time
                return None, m.end(), None, "delta"
            if len(m[2]) in (10, 13):  # [1733558400.123]: epoch seconds (ms), no uptime (a file's time spot reads them)
                return NO_STAMP
            return self.uptime(int(m[2]) + fraction(m[3])), m.end(), None, "uptime"
        if c1 in UPPER:
            if c1 in "IWEF" and s[pos + 2:pos + 3] in DIGITS:
                return self._glog(s, pos)
            if "|" in s[pos:pos + 12]:
                m = HF.match(s, pos)
                if m:
                    t, end, _, kind = self.parse(s, m.end())
                    return t, (end or m.end()), WORD_LEVEL[m[1]], "hf"
            m = DATE.match(s, pos)
            if m:
                return self._date(m), m.end(), None, "dmesg_t"
            m = FM.match(s, pos)
            if m:
                t = self._cache.get(m[1])
                if t is None:
                    mo, d, y = MONTHS[m[2]], int(m[3]), int(m[4])
                    self._seen_year(y, mo)
                    t = self._day(y, mo, d) + int(m[5]) * 3600 + int(m[6]) * 60 + int(m[7])
                    self._remember(m[1], t)
                return t, m.end(), None, "fm"
            m = DMESG_H.match(s, pos)
            if m:
                t = self._cache.get(m[1])
                if t is None:
                    mo, d = MONTHS[m[2]], int(m[3])
                    t = self._day(self._infer_year(mo, d), mo, d) + int(m[4]) * 3600 + int(m[5]) * 60
                    self._remember(m[1], t)
                return t, m.end(), None, "dmesg_h"
        return NO_STAMP

    def epoch(self, s: str, pos: int) -> tuple[float | None, int, str | None, str]:
        """An epoch time at ``pos`` (a JSON record's ``"ts": 1732852924.849``): seconds of 9 to 11 digits, else
        milli-, micro- or nanoseconds by their width; ``NO_STAMP`` for other numbers."""
        m = EPOCH.match(s, pos)
        if m is None:
            return NO_STAMP
        whole = m[1]
        scale = (len(whole) - 9) // 3  # 9-11 digits: seconds; 12-14: ms; 15-17: us; 18-19: ns
        t = int(whole) + fraction(m[2]) if not scale else (int(whole) + fraction(m[2])) / POW10[3 * scale]
        return t, m.end(), None, "epoch"

    def _date(self, m: re.Match[str]) -> float:
        t = self._cache.get(m[1])
        if t is None:
            mo, y = MONTHS[m[2]], int(m[7])
            self._seen_year(y, mo)
            t = self._day(y, mo, int(m[3])) + int(m[4]) * 3600 + int(m[5]) * 60 + int(m[6])
            self._remember(m[1], t)
        return t

    def _glog(self, s: str, pos: int) -> tuple[float | None, int, str | None, str]:
        m = GLOG.match(s, pos)
        if m is None:
            return NO_STAMP
        t = self._cache.get(m[2])
        if t is None:
            mo, d = int(m[3]), int(m[4])
            t = self._day(self._infer_year(mo, d), mo, d) + int(m[5]) * 3600 + int(m[6]) * 60 + int(m[7])
            self._remember(m[2], t)
        f = m[8]
        return t + int(f) / POW10[len(f)], m.end(), GLOG_LEVEL[m[1]], "glog"

    def _upper(self, s: str, pos: int, c: str) -> tuple[float | None, int, str | None, str]:
        c1 = s[pos + 1:pos + 2]
        if c1 in DIGITS:
            if c in "IWEF":
                return self._glog(s, pos)
            return NO_STAMP
        mon = MONTHS.get(s[pos:pos + 3])
        if mon is not None:
            m = SYSLOG.match(s, pos) if "," not in s[pos + 5:pos + 7] else None
            if m:
                t = self._cache.get(m[1])
                if t is None:
                    d = int(m[3])
                    y = self._infer_year(mon, d)
                    base = self._day(y, mon, d) + int(m[4]) * 3600 + int(m[5]) * 60
                    t = base + int(m[6])
                    self._remember(m[1], t)
                    minutes = self._syslog_minutes
                    if len(minutes) > MINUTE_MEMO:
                        minutes.clear()
                    minutes[m[1][:-2]] = (y, base)
                if m[7]:
                    t += fraction(m[7])
                return t, m.end(), None, "syslog"
            m = MDY.match(s, pos)
            if m:
                t = self._cache.get(m[1] + (m[9] or ""))
                if t is None:
                    y = int(m[4])
                    self._seen_year(y, mon)
                    base = self._day(y, mon, int(m[3])) + hour_24(int(m[5]), m[9]) * 3600 + int(m[6]) * 60
                    t = base + int(m[7])
                    self._remember(m[1] + (m[9] or ""), t)
                    if not m[9]:  # a 12-hour clock's minute is told by its AM/PM too: not kept
                        self._minute_base(m[1], y, mon, base)
                return t + fraction(m[8]), m.end(), None, "mdy"
            return NO_STAMP
        if s.startswith(WEEKDAYS, pos):
            m = DATE.match(s, pos)
            if m:
                return self._date(m), m.end(), None, "date"
            return NO_STAMP
        if c in "DIWEC":
            m = VLLM.match(s, pos)
            if m:
                t = self._cache.get(m[2])
                if t is None:
                    mo, d = int(m[3]), int(m[4])
                    t = self._day(self._infer_year(mo, d), mo, d) + int(m[5]) * 3600 + int(m[6]) * 60 \
                        + int(m[7])
                    self._remember(m[2], t)
                return t, m.end(), WORD_LEVEL[m[1]], "vllm"
        return NO_STAMP
