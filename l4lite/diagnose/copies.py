"""Copies of one root line: a process that retries or repeats an error prints the same words again and again.

A rendezvous client that cannot resolve its endpoint warns on every retry, a DataLoader that keeps failing to
allocate shared memory raises the same traceback for each batch. Each copy says nothing the first did not, and
ten of them push the other root lines (the exit line, the other rank) off the page. The first copy stays the
root entry and its ``count`` says how many lines of that file and stream repeat it; kernel lines stay apart (a
kernel repeats a report for each device or event, and each one is a report of its own).

A rank's torchelastic error file (``error.json``) is not folded into the rank's stderr copy: it is another
file, and a reader of that file meets the error there (``diagnose.evidence.low_rank_records``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from l4lite.diagnose.incident import Evidence
from l4lite.ingest.attribution import strip_stream_prefix

# what differs between copies of one line: dates and times, addresses, and numbers inside names (a pid in a
# shared-memory file's name, a glog level letter's date). A number standing alone (a sample id, a step, a loss)
# is what the line says, and two lines that say different numbers are two events.
_NUMBERS = re.compile(r"\d{4}-\d\d-\d\d|\d{1,2}:\d\d:\d\d(?:[.,]\d+)?|0x[0-9a-fA-F]+|(?<=[A-Za-z_])\d+|\d+(?=[A-Za-z_])")
_SPACES = re.compile(r"\s+")
SHAPE_CHARS = 300  # characters of a line's first and last lines that make its shape


def shape(text: str) -> tuple[str, str, str]:
    """What copies of one line share: its stream labels as written (a rank's prefix keeps ranks apart), and its
    first and last lines with times, addresses, numbers inside names and spacing masked (``_NUMBERS``). The
    last line is a traceback's exception line: two tracebacks are copies only when they raised the same error."""
    lines = text.splitlines() or [""]
    head = lines[0]
    prefix = head[:len(head) - len(strip_stream_prefix(head))]

    def masked(line: str) -> str:
        return _SPACES.sub(" ", _NUMBERS.sub("#", strip_stream_prefix(line)[:SHAPE_CHARS])).strip()

    return prefix, masked(head), masked(lines[-1])


def collapse_copies(entries: Sequence[Evidence]) -> list[Evidence]:
    """Root entries that repeat an earlier root entry of the same file, rank and stream (``shape``) fold into
    it: the first copy stays, its ``count`` becomes the number of copies. Other roles and kernel lines are kept
    as they are."""
    first: dict[tuple[object, ...], Evidence] = {}
    copies: dict[int, int] = {}
    out: list[Evidence] = []
    for e in sorted(entries, key=lambda e: (e.role != "root", e.file, e.line)):
        if e.role != "root" or e.source == "kernel":
            continue
        key = (e.file, e.rank, e.node, shape(e.text))
        had = first.get(key)
        if had is None:
            first[key] = e
            copies[id(e)] = 1
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
