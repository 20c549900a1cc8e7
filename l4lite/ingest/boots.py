"""Boot wall times of nodes whose dmesg captures carry only uptimes (seconds since boot), from the syslog kernel
lines of the same node that show both (``context.build_context`` finds them once per job)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from l4lite.ingest.decode import open_lines
from l4lite.ingest.files import InputFile
from l4lite.ingest.timestamps import TimestampParser
from l4lite.records import Accounting

_KERNEL_LOG_NAMES = ("dmesg", "kern", "syslog", "messages", "journal")
_UPTIME_LINE = re.compile(r"\[ *\d+\.\d+\] ")
_KERNEL_UPTIME = re.compile(r"[A-Za-z0-9][\w.-]* kernel: \[ *(\d+\.\d+)\] ")


def is_kernel_log(rel: str) -> bool:
    """A node's kernel or system log by its name (``dmesg.log``, ``kern.log``, ``syslog``, ``messages``)."""
    low = rel.lower()
    return any(k in low for k in _KERNEL_LOG_NAMES)


def boot_anchors(files: Iterable[InputFile], node_of: Callable[[str], str | None], year: int | None,
                 accounting: Accounting, head_lines: int = 50) -> dict[str, float]:
    """Boot wall time per node, for dmesg files that only carry uptimes.

    A node whose folder holds both a plain ``dmesg`` capture (``[12345.678] ...``) and a syslog kernel log
    (``Nov 29 10:11:12 host kernel: [12345.678] ...``) reveals its boot time in the latter; the last such line
    (the latest boot, the one a dmesg capture shows) anchors the former. Only kernel-log files are looked at.
    """
    uptime_nodes: set[str] = set()
    anchor_files: dict[str, list[InputFile]] = {}
    for f in files:
        if f.is_stdin or not is_kernel_log(f.rel):
            continue
        node = node_of(f.rel)
        if node is None:
            continue
        scratch = Accounting()  # problems are reported when the file is read for real
        kind = None
        for i, (_, line) in enumerate(open_lines(f, scratch)):
            if _UPTIME_LINE.match(line):
                kind = "uptime"
            elif "kernel: [" in line:
                kind = "anchor"
            if kind or i >= head_lines:
                break
        if kind == "uptime":
            uptime_nodes.add(node)
        elif kind == "anchor":
            anchor_files.setdefault(node, []).append(f)
    out: dict[str, float] = {}
    for node in sorted(uptime_nodes & anchor_files.keys()):
        for f in anchor_files[node]:
            parser = TimestampParser(year, f.mtime)
            for _, line in open_lines(f, Accounting()):
                if "kernel: [" not in line:
                    continue
                t, end, _, _ = parser.parse(line)
                m = _KERNEL_UPTIME.match(line, end) if t is not None else None
                if m:
                    out[node] = t - float(m[1])
    return out
