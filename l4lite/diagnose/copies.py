"""Copies of one root line: a process that retries or repeats an error prints the same words again and again.

A rendezvous client that cannot resolve its endpoint warns on every retry, a DataLoader that keeps failing to
allocate shared memory raises the same traceback for each batch. Each copy says nothing the first did not, and
ten of them push the other root lines (the exit line, the other rank) off the page. The first copy stays the
root entry and its ``count`` says how many lines of that file and stream repeat it; kernel lines stay apart (a
kernel repeats a report for each device or event, and each one is a report of its own).

A rank's torchelastic error file (``error.json``) is the launcher's record of the exception the rank's stderr
already shows: one JSON line with the traceback escaped into it. When the rank's own copy of that exception is
a root entry, the error file is counted as one more copy of it; alone (the exception reached no log), it stays.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

from l4lite.diagnose.incident import Evidence
from l4lite.ingest.attribution import strip_stream_prefix
from l4lite.ingest.errorfile import exception_line

_NUMBERS = re.compile(r"0x[0-9a-fA-F]+|\d+")
_SPACES = re.compile(r"\s+")
SHAPE_CHARS = 300  # characters of a line's first and last lines that make its shape


def shape(text: str) -> tuple[str, str, str]:
    """What copies of one line share: its stream labels as written (a rank's prefix keeps ranks apart), and its
    first and last lines with numbers, addresses and spacing masked (times, pids, retry counters, file names
    made of pids). The last line is a traceback's exception line: two tracebacks are copies only when they
    raised the same error."""
    lines = text.splitlines() or [""]
    head = lines[0]
    prefix = head[:len(head) - len(strip_stream_prefix(head))]

    def masked(line: str) -> str:
        return _SPACES.sub(" ", _NUMBERS.sub("#", strip_stream_prefix(line)[:SHAPE_CHARS])).strip()

    return prefix, masked(head), masked(lines[-1])


_RECORD = re.compile(r'^\s*\{\s*"message"\s*:\s*\{\s*"message"\s*:\s*"((?:[^"\\]|\\.){20,}?)(?:\\n|")')
MIN_MESSAGE = 20  # an exception shorter than this says too little to tie an error file to a log line


def recorded_exception(text: str) -> str | None:
    """The first line of the exception a torchelastic error record holds (``{"message": {"message":
    "RuntimeError: ...``), or None when the text is not one."""
    m = _RECORD.match(text)
    if m is None:
        return None
    return m.group(1).replace('\\"', '"').strip()


def owner_of_record(e: Evidence, roots: Sequence[Evidence]) -> Evidence | None:
    """The root entry of a log file that shows the exception an error record ``e`` holds: the same node, the
    same rank when both are known, its exception line the record's; one in the record's own folder (the rank's
    stderr.log beside its error.json) first."""
    said = recorded_exception(e.text)
    if said is None or len(said) < MIN_MESSAGE:
        return None
    folder = os.path.dirname(e.file)
    found = [x for x in roots if x is not e and x.node == e.node and recorded_exception(x.text) is None
             and (x.rank is None or e.rank is None or x.rank == e.rank) and said in exception_line(x.text)]
    return min(found, key=lambda x: (os.path.dirname(x.file) != folder, x.rank != e.rank, x.file, x.line),
               default=None)


def collapse_copies(entries: Sequence[Evidence]) -> list[Evidence]:
    """Root entries that repeat an earlier root entry of the same file, rank and stream (``shape``) fold into
    it: the first copy stays, its ``count`` becomes the number of copies; an error record whose exception a
    root entry shows (``owner_of_record``) counts as a copy of that entry. Other roles and kernel lines are kept
    as they are."""
    first: dict[tuple[object, ...], Evidence] = {}
    copies: dict[int, int] = {}
    out: list[Evidence] = []
    for e in sorted(entries, key=lambda e: (e.role != "root", e.file, e.line)):
        if e.role != "root" or e.source == "kernel":
            continue
        owner = owner_of_record(e, [x for x in entries if x.role == "root"])
        if owner is not None:
            copies[id(owner)] = copies.get(id(owner), 1) + 1
            copies[id(e)] = 0
            continue
        key = (e.file, e.rank, e.node, shape(e.text))
        had = first.get(key)
        if had is None:
            first[key] = e
            copies.setdefault(id(e), 1)
        else:
            copies[id(had)] += 1
            copies[id(e)] = 0
    for e in entries:
        n = copies.get(id(e))
        if n == 0:
            continue
        if n is not None and n > 1:
            e.count = max(e.count, n)
        out.append(e)
    return out
