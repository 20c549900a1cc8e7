"""The launcher's report of the exit the kernel caused: one kill, told by the kernel and by the agent.

The kernel's ``Killed process 4711`` says which process died, not that it was a worker of the job nor which
rank; torchelastic's ``failed (exitcode: -9) local_rank: 0 (pid: 4711)`` and its summary's ``traceback : Signal 9
(SIGKILL) received by PID 4711`` say that rank's worker ended by that signal. The same pid on the same node ties
the lines into one event, so they are shown together as its proof. Only a kill signal's exit (-9, or 137 from a
shell), only the pid the kernel names: a worker that raised, or a peer the agent stopped, keeps its own lines.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

from l4lite.detect.base import Finding
from l4lite.records import Record

_KILLED = re.compile(r"Killed process (\d+)")
_KILL_EXIT = re.compile(r"failed \(exitcode: (?:-9|137)\) local_rank: \d+ \(pid: (\d+)\)")
_KILL_SIGNAL = re.compile(r"Signal 9 \(SIGKILL\) received by PID (\d+)")
HEAD_CHARS = 400  # a line's pid is near its start; the rest of a long line is not read
TAIL_LINES = 1  # how far above a record's last line a line is placed from that end


def _report_lines(r: Record, pids: set[str]) -> list[Record]:
    """The lines of one launcher record that report a pid of ``pids`` ended by SIGKILL, each as a one-line
    record (a summary block's ``traceback :`` line is one line of a long record)."""
    lines = r.text.splitlines() if r.text else []
    if len(lines) == 1:
        m = _KILL_EXIT.search(lines[0][:HEAD_CHARS]) or _KILL_SIGNAL.search(lines[0][:HEAD_CHARS])
        return [r] if m is not None and m.group(1) in pids else []
    # ingest leaves blank lines out of a record's text, so a line's number is counted from the record's first line
    # only when none was left out, else from its last line for the last lines (a summary's signal line sits just
    # above its closing rule); a line that cannot be placed is not given a number
    whole = r.end_line - r.line + 1 == len(lines)
    out = []
    for k, text in enumerate(lines):
        m = _KILL_EXIT.search(text[:HEAD_CHARS]) or _KILL_SIGNAL.search(text[:HEAD_CHARS])
        if m is None or m.group(1) not in pids:
            continue
        below = len(lines) - 1 - k
        n = r.line + k if whole else r.end_line - below if below <= TAIL_LINES else None
        if n is not None:
            out.append(dataclasses.replace(r, line=n, end_line=n, text=text, message=text.strip()))
    return out


def kill_report(findings: Sequence[Finding], primary: Finding) -> Finding | None:
    """The launcher's lines on the primary's node reporting that the process the primary's kernel line killed
    exited by SIGKILL, as one root finding; None without a kernel kill or a report of its pid."""
    if primary.node is None:
        return None
    pids = {m.group(1) for r in primary.records if r.source == "kernel" for m in _KILLED.finditer(r.text[:4000])}
    if not pids:
        return None
    found: dict[tuple[str, int], Record] = {}
    source = None
    for f in findings:
        if f is primary or f.node != primary.node or f.data.get("restarted"):
            continue
        for r in f.records:
            if r.source != "launcher":
                continue
            for part in _report_lines(r, pids):
                found.setdefault((part.file, part.line), part)
                source = source or f
    if source is None:
        return None
    recs = sorted(found.values(), key=lambda r: (r.file, r.line))
    return Finding(source.detector, primary.category, "root", source.score, primary.explain, node=primary.node,
                   rank=recs[0].rank, time=recs[0].time, rule=source.rule, severity=source.severity, records=recs,
                   data={"killed": sorted(pids), "source": "launcher"})
