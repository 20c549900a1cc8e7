"""torchelastic's error file read by its own shape, wherever its line sits.

A failed rank's ``error.json`` is one JSON line, ``{"message": {"message": "<exception>", "extraInfo":
{"py_callstack": "<traceback>", "timestamp": "<epoch>"}}}``. In its own file it names its rank and node by its
path; merged into one stream (``cat``, stdin, ``srun --label``) or renamed, only its shape tells it. In a merged
stream it never borrows the time of the line before it, which is another file's (the launcher's summary seconds
later): it takes the one it states. Alone in its file it has none to borrow and keeps none (the nested field is
not read as a time there).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

_RECORD_START = '{"message": {"message": "'
SCAN_CHARS = 64 * 1024  # an error record longer than this is not read for its shape
# torchelastic's record, after any stream label (``srun --label``'s ``3: ``, a ``[rankN]:`` prefix)
_SHAPE = re.compile(r'^[^{\n]{0,60}?(\{"message": ?\{"message": ?")')
_STAMP = re.compile(r'"timestamp": "(\d{9,11})"\}\}\}\s*$')


def error_record_start(s: str, pos: int) -> bool:
    """Whether a line read up to ``pos`` (its prefixes) opens a torchelastic error record: such a line takes no
    time from the line before it."""
    return s.startswith(_RECORD_START, pos)


def stated_time(s: str) -> float | None:
    """When an error record says it was written (its last field), or None. torchelastic writes whole seconds,
    cut down from a time within the next second: the record is read as of that second's end, so that the
    rank's last steps of that second do not read as lines written after it."""
    m = _STAMP.search(s, max(0, len(s) - 64))
    return float(m[1]) + 0.999 if m else None


def error_lines(text: str) -> tuple[frozenset[str], float | None] | None:
    """The stripped lines of the exception and traceback a torchelastic error record holds, with the time it
    states, or None when the text is not one (its shape, then its JSON: the record's keys, whatever file or
    stream it sits in)."""
    m = _SHAPE.match(text[:SCAN_CHARS])
    if m is None:
        return None
    try:
        data = json.loads(text[m.start(1):SCAN_CHARS].strip())
    except (ValueError, RecursionError):  # not JSON, or nested deeper than the parser's stack
        return None
    inner = data.get("message") if isinstance(data, dict) else None
    if not isinstance(inner, dict) or not isinstance(inner.get("message"), str):
        return None
    extra = inner.get("extraInfo")
    stack = extra.get("py_callstack") if isinstance(extra, dict) else None
    if not isinstance(stack, str):
        return None
    stamp = str(extra.get("timestamp") or "")
    lines = frozenset(s.strip() for s in (inner["message"] + "\n" + stack).splitlines() if s.strip())
    return lines, float(stamp) if stamp.isdigit() else None


# ``srun --label``'s "0: " and torchrun's "[default0]:[rank0]:" stream prefixes
_PREFIXES = re.compile(r"^(?: *\d{1,6}: )?(?:\[[^\]\n]{0,40}\]:\s*)*")
MIN_EXCEPTION = 20  # an exception line shorter than this says too little to tie an error record by
# an exception as a traceback ends (``json.decoder.JSONDecodeError: Expecting ...``): a record cut inside its
# traceback ends in a frame, a caret line or a call every rank makes, which tie nothing
_RAISED = re.compile(r"[A-Za-z_][\w.]*: \S")


def exception_line(text: str) -> str:
    """The last line of a record, without its stream prefixes: a traceback's exception line."""
    lines = text.rstrip("\n").splitlines()
    return _PREFIXES.sub("", lines[-1]).strip() if lines else ""


@dataclass(frozen=True)
class Placement:
    """Where a hostless error record belongs: the node and rank of the process that raised its exception."""

    node: str
    rank: int | None


def error_record_places(records: Iterable[Any]) -> dict[tuple[str, int], Placement]:
    """``(file, line)`` of each error record no path or line placed (one merged stream, files renamed to numbers)
    -> the node (and rank, when one) of the processes whose own records end in a line the error record holds: its
    rank raised that exception. Records of several nodes stating it (ranks failing alike) place one record
    each when one process of each node raised it and as many records say exactly the same thing: the copies are
    alike, so which copy goes to which node changes nothing; otherwise they place nothing (several ranks of a
    node failing alike is a job-wide fault, whose copies the evidence takes by rank: a copy given to a rank by
    its order alone would pick the wrong ones, ``archive_variants`` merged-plain 014, 033, 035, 122)."""
    placed: dict[str, set[tuple[str, int | None]]] = {}  # exception line -> (node, rank) of the records ending in it
    hostless: list[tuple[Any, frozenset[str]]] = []
    seen: set[tuple[str, int]] = set()  # a rule's hit and its template's exemplar are one record
    for r in records:
        if r.node is None:
            read = error_lines(r.text)
            if read is not None and (r.file, r.line) not in seen:
                seen.add((r.file, r.line))
                hostless.append((r, read[0]))
        elif (len(last := exception_line(r.text)) >= MIN_EXCEPTION and _RAISED.match(last)
              and error_lines(r.text) is None):
            placed.setdefault(last, set()).add((r.node, r.rank))
    out: dict[tuple[str, int], Placement] = {}
    alike: dict[str, list[Any]] = {}  # several nodes: the records by their text, matched to the processes at once
    for err, lines in hostless:
        said = set().union(*(placed.get(x, set()) for x in lines)) if lines else set()
        nodes = {node for node, _ in said}
        if len(nodes) == 1:
            ranks = {rank for _, rank in said if rank is not None}
            out[(err.file, err.line)] = Placement(nodes.pop(), ranks.pop() if len(ranks) == 1 else None)
        elif len(nodes) > 1:
            alike.setdefault(err.text.strip(), []).append((err, _processes(said)))
    for group in alike.values():
        procs = group[0][1]
        if len(group) == len(procs) == len({node for node, _ in procs}) and all(p == procs for _, p in group):
            for (err, _), (node, rank) in zip(sorted(group, key=lambda g: (g[0].file, g[0].line)), procs, strict=True):
                out[(err.file, err.line)] = Placement(node, rank)
    return out


def _processes(said: set[tuple[str, int | None]]) -> list[tuple[str, int | None]]:
    """The processes that raised an exception, in order: a node's rankless copy (its console's tee of a rank's
    lines) is the same process as its ranked one."""
    ranked = {node for node, rank in said if rank is not None}
    return sorted((p for p in said if p[1] is not None or p[0] not in ranked), key=lambda p: (p[0], p[1] or -1))
