"""The header patterns ``timestamps`` reads, one anchored regex per log format, with the small converters they
share (12-hour clock, UTC offset, fraction digits).

A table of data apart from the parser's state: a newcomer adding a format finds every layout and the example
line it was written for in one place, and the parser module keeps to year inference and dispatch.
"""

from __future__ import annotations

import re
from datetime import date

MONTHS = {m: i for i, m in enumerate(
    ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"), 1)}
WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MON = "(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
_OFFSET = r"(Z|[+-]\d\d(?::?\d\d)?)?"

# Group 1 of each pattern is the date-time text without fraction: the key of the per-file cache, so that
# lines of the same second cost one regex match and one dict lookup.
# 2026-11-29 10:11:12,345 / 2025-01-21T04:41:44.283302+00:00 / 2024/01/02 03:04:05 / a colon after it: TensorFlow's
# and absl's C++ "2018-12-14 01:13:48.307208: W tensorflow/...", Composer's "2022-06-29 11:36:17,871: rank0[...]"
ISO = re.compile(r"((\d{4})[-/](\d\d)[-/](\d\d)[T ](\d\d):(\d\d):(\d\d))(?:[.,](\d{1,9}))?" + _OFFSET
                 + r"(?=[\s|\],\"]|: |$)[,:]? *(?:>> )?")
# 1732852924.849 / 1732852924849  (a JSON record's epoch seconds, milli-, micro- or nanoseconds: ``timespots``)
# 1733558400.123456 / [1733558400] first on a line (moreutils ``ts '%.s'``, loggers that print ``time.time()``):
# seconds of ten digits (2001 to 2286) or milliseconds of thirteen, bare with a fraction or in brackets; read only
# where a file's lines open with it (``timespots``), never from a number inside a message
EPOCH_HEAD = re.compile(r"(?:\[(\d{10}|\d{13})(?:\.(\d{1,9}))?\]|(\d{10}|\d{13})\.(\d{1,9})) +(?=\S)")
EPOCH = re.compile(r"(\d{9,19})(?:\.(\d{1,9}))?(?=[\s,}\]]|$)")
# 09/11/2024 17:52:18  (HF example scripts) / 12/03/2026 02:38:23 PM  (the logging docs' ``%m/%d/%Y %I:%M:%S %p``)
US = re.compile(r"((\d\d)/(\d\d)/(\d{4}) (\d\d):(\d\d):(\d\d))(?:[.,](\d{1,9}))?(?: ([AP]M))?(?= |$) *")
# [INFO|trainer.py:2048] 2024-09-11 17:52:18,030 >>  (HF transformers)
HF = re.compile(r"\[(DEBUG|INFO|WARNING|ERROR|CRITICAL)\|[^\]]*\] *")
# [2023-03-05 06:40:25,173]
ISO_BR = re.compile(r"\[((\d{4})[-/](\d\d)[-/](\d\d)[T ](\d\d):(\d\d):(\d\d))(?:[.,](\d{1,9}))?" + _OFFSET
                    + r"\] *")
# [2026-12-04 13:51:31,816 I 7 7]  Ray's C++ processes (raylet, gcs_server, core worker logs): level, pid, tid
RAY_BR = re.compile(r"\[((\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)),(\d{3}) ([IWEFCD]) \d+ \d+\] *")
RAY_LEVEL = {"I": "info", "W": "warning", "E": "error", "F": "error", "C": "error", "D": "debug"}
# {"asctime": "2026-12-04 13:55:14,613", "levelname": "INFO", "message": "...  a JSON log line (python-json-logger,
# Ray Train's structured worker logs): its time and level, its message where the message value starts
JSON_HEAD = re.compile(r'\{"(?:asctime|timestamp|time)": ?"((\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d))'
                       r'(?:[.,](\d{1,9}))?"(?:, ?"levelname": ?"([A-Z]+)")?, ?"message": ?"')
# Nov 29 10:11:12 (syslog, optionally with fraction)
SYSLOG = re.compile(r"(" + _MON + r" +(\d{1,2}) (\d\d):(\d\d):(\d\d))(?:\.(\d{1,9}))? +")
# Nov 29, 2025 04:06:23  (a console logger's ``%b %d, %Y %H:%M:%S``) / Oct 10, 2019 7:22:57 PM  (java.util.logging)
MDY = re.compile(r"(" + _MON + r" +(\d{1,2}), (\d{4}) (\d{1,2}):(\d\d):(\d\d))(?:[.,](\d{1,9}))?(?: ([AP]M))?(?= |$) *")
# E1129 10:11:12.345678 12345 file.cc:123]  and torch's [E1206 18:44:12.715298746 ProcessGroupNCCL.cpp:607]
GLOG = re.compile(r"\[?([IWEF])((\d{1,2})(\d\d) (\d\d):(\d\d):(\d\d))\.(\d{1,9})(?: +\d+)? +[^\]\s]*\] *")
# [Sun Feb 23 16:24:18 2025]  (dmesg -T) and  Sun Feb 23 16:24:18 UTC 2025  (date)
DATE = re.compile(r"\[?((?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) " + _MON
                  + r" +(\d{1,2}) (\d\d):(\d\d):(\d\d)(?: [A-Z]{2,5})? (\d{4}))\]? *")
# [Feb 25 2025 13:59:45]  (NVIDIA fabric manager)
FM = re.compile(r"\[(" + _MON + r" +(\d{1,2}) (\d{4}) (\d\d):(\d\d):(\d\d))\] *")
# [Feb23 16:24]  (dmesg -H)
DMESG_H = re.compile(r"\[(" + _MON + r"(\d\d) (\d\d):(\d\d))\] *")
# [12345.678901]  /  [  +0.000316]  (dmesg uptime, dmesg -d delta)
UPTIME = re.compile(r"\[ *(\+?)(\d+)\.(\d+)\] *")
# 12/09 06:49:23  (mmengine)
MMDD = re.compile(r"((\d\d)/(\d\d) (\d\d):(\d\d):(\d\d))(?= ) *")
# INFO 12-06 18:44:12 (vLLM)
VLLM = re.compile(r"(DEBUG|INFO|WARNING|ERROR|CRITICAL) ((\d\d)-(\d\d) (\d\d):(\d\d):(\d\d))(?:\.\d+)? +")
# kern  :warn  : <rest>  (dmesg -x)
KERN = re.compile(r"(kern|user|mail|daemon|auth|syslog|lpr|news|uucp|cron|authpriv|ftp|local\d) *:"
                  r"(emerg|alert|crit|err|warn|notice|info|debug) *: *")

GLOG_LEVEL = {"I": "info", "W": "warning", "E": "error", "F": "error"}
KERN_LEVEL = {"emerg": "error", "alert": "error", "crit": "error", "err": "error", "warn": "warning",
              "notice": "info", "info": "info", "debug": "debug"}
WORD_LEVEL = {"DEBUG": "debug", "INFO": "info", "WARNING": "warning", "ERROR": "error", "CRITICAL": "error"}
KERN_PREFIXES = ("kern", "user", "mail", "daemon", "auth", "syslog", "lpr", "news", "uucp", "cron", "ftp",
                 "local")
UPPER = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
DIGITS = frozenset("0123456789")
ENDS_TIME = frozenset(("", "\t", "\n", "\r", "|", "]", '"', "\v", "\f"))  # what may follow a time that ends with nothing

# each header pattern with the kind ``parse`` gives it: what a header whose date is no date is read as
SHAPES = ((ISO, "iso"), (ISO_BR, "iso"), (US, "iso"), (MMDD, "mmengine"), (RAY_BR, "ray"),
          (SYSLOG, "syslog"), (MDY, "mdy"), (GLOG, "glog"), (DATE, "date"), (FM, "fm"), (DMESG_H, "dmesg_h"),
          (VLLM, "vllm"))


def hour_24(h: int, half: str | None) -> int:
    """The hour of a 12-hour clock's ``h`` with its ``AM``/``PM`` (12 AM is midnight, 12 PM noon)."""
    if half is None:
        return h
    return h % 12 + (12 if half == "PM" else 0)


def offset_seconds(off: str | None) -> int:
    """Seconds to subtract from a time printed with the UTC offset ``off`` (``+02:00``, ``-0500``, ``Z``)."""
    if not off or off == "Z":
        return 0
    sign = -1 if off[0] == "-" else 1
    digits = off[1:].replace(":", "")
    hours = int(digits[:2])
    minutes = int(digits[2:4]) if len(digits) >= 4 else 0
    return sign * (hours * 3600 + minutes * 60)


POW10 = tuple(10.0 ** i for i in range(20))


def fraction(digits: str | None) -> float:
    """The fraction of a second that ``digits`` print after the point (at most 18 of them are read)."""
    if not digits:
        return 0.0
    digits = digits[:18]
    return int(digits) / POW10[len(digits)]


def parse_elastic_time(value: str) -> float | None:
    """torchelastic's ``2025-05-21_15:43:03`` (local time of the agent; taken as UTC like other naive times)."""
    m = re.match(r"(\d{4})-(\d\d)-(\d\d)_(\d\d):(\d\d):(\d\d)", value.strip())
    if not m:
        return None
    try:
        return float((date(int(m[1]), int(m[2]), int(m[3])).toordinal() - 719163) * 86400
                     + int(m[4]) * 3600 + int(m[5]) * 60 + int(m[6]))
    except ValueError:
        return None


def iso_layout(s: str, pos: int, end: int) -> tuple[int, int, int] | None:
    """Where the parts of an ISO header at ``pos`` (bare or in brackets, no UTC offset) that ended at ``end``
    sit: (start of the date-time, start of the fraction, fraction digits). Lines of the same shape have them
    at the same offsets, which ``TimestampParser.iso_time`` reads without a regex. None for other headers."""
    m = (ISO_BR if s.startswith("[", pos) else ISO).match(s, pos)
    if m is None or (m[9] and m[9] != "Z") or m.end() != end:
        return None
    return m.start(1), (m.start(8) if m[8] else -1), len(m[8] or "")


def zoned_layout(s: str, pos: int, end: int) -> tuple[int, int, int, int, int] | None:
    """``iso_layout`` of an ISO header with a UTC offset (``+00:00``, ``-0500``; not ``Z``, which that
    reads), the offset's start and end after the three: a header plan's lines of one shape have it at the same
    offsets (``TimestampParser.zoned_time``). None for other headers."""
    m = (ISO_BR if s.startswith("[", pos) else ISO).match(s, pos)
    if m is None or not m[9] or m[9] == "Z" or m.end() != end:
        return None
    return m.start(1), (m.start(8) if m[8] else -1), len(m[8] or ""), m.start(9), m.end(9)
