"""A rank's torchelastic error file (``error.json``) as evidence beside the rank's own root lines.

torchelastic writes a failed rank's exception into ``attempt_N/<local_rank>/error.json`` as one JSON line:
``{"message": {"message": "<exception>", "extraInfo": {"py_callstack": "<traceback>", "timestamp": "<epoch>"}}}``.
It is where the agent's failure report points its reader, so when a rank's root line is shown its error file is
shown too. The file is found by its path when the archive kept the log folder (``attempt_0/1/stderr.log`` ->
``attempt_0/1/error.json``, flattened or gzip'd alike), and otherwise by its own shape wherever the line sits (one
merged stream, stdin, files renamed to numbers): an error record that states the root line's exception as one of
its own lines, of the root's node and rank or of none, the nearest in time when several do.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from l4lite.detect.base import Finding
from l4lite.ingest.attribution import KUBECTL_PREFIX
from l4lite.ingest.errorfile import error_lines
from l4lite.records import Record
from l4lite.scan.scanner import JobScan

ERROR_FILE = "error.json"
MESSAGE_CHARS = 60  # how much of an exception line its error file must repeat
MIN_LINE = 20  # a root's exception line shorter than this says too little to find its error file by
STREAM_FILES = ("stderr.log", "stdout.log")  # a rank's streams as torchelastic writes them
# ``kubectl logs --prefix``'s pod, ``srun --label``'s "0: " and torchrun's "[default0]:[rank0]:" stream prefixes
_PREFIXES = re.compile(rf"^(?:{KUBECTL_PREFIX.pattern})?(?: *\d{{1,6}}: )?(?:\[[^\]\n]{{0,40}}\]:\s*)*")


class ErrorRecord(NamedTuple):
    """An error file's record read by its shape: the exception and the traceback it holds, line by line."""

    record: Record
    lines: frozenset[str]
    time: float | None  # the record's time, else the epoch seconds torchelastic wrote into it


def uncompressed(rel: str) -> str:
    """A file's path without the ``.gz`` that gzip added to its name."""
    return rel[:-3] if rel.endswith(".gz") else rel


def beside(rel: str) -> list[str]:
    """Where files written beside a rank's log start: its folder (``attempt_0/1/``), and for a flattened archive
    the log's name without its stream (``..._attempt_0_1_stderr.log`` -> ``..._attempt_0_1_``)."""
    folder = posixpath.dirname(rel)
    out = [f"{folder}/" if folder else ""]
    out += [rel[: -len(name)] for name in STREAM_FILES if rel.endswith(name) and rel[-len(name) - 1: -len(name)] != "/"]
    return out


def error_records(records: Iterable[Record]) -> list[ErrorRecord]:
    """The records among ``records`` that are torchelastic error files by their own shape."""
    out = []
    for r in records:
        read = error_lines(r.text)
        if read is not None:
            out.append(ErrorRecord(r, read[0], r.time if r.time is not None else read[1]))
    return out


def _last_line(r: Record) -> str:
    lines = r.text.splitlines()
    return _PREFIXES.sub("", lines[-1]).strip() if lines else ""


def stated_by(root: Record, candidates: Sequence[ErrorRecord]) -> Record | None:
    """The error record that states ``root``'s exception line as one of its own lines: of the root's node and
    rank, or of none (a merged stream names neither), preferring one that names them, then the one repeating
    most of the root's traceback (ranks failing alike differ in their frames), then the nearest in time. None when
    none does, or two are equally near."""
    last = _last_line(root)
    if len(last) < MIN_LINE:
        return None
    own = {_PREFIXES.sub("", x).strip() for x in root.text.splitlines()}  # the root's traceback, frame by frame
    scored = []
    for c in candidates:
        r = c.record
        if last not in c.lines or r.node not in (root.node, None, "unknown") or r.rank not in (root.rank, None):
            continue
        gap = abs(c.time - root.time) if c.time is not None and root.time is not None else float("inf")
        scored.append((r.rank != root.rank, r.node != root.node, -len(c.lines & own), gap, r))
    scored.sort(key=lambda s: s[:4])
    if not scored or len(scored) > 1 and scored[0][:4] == scored[1][:4]:
        return None
    return scored[0][4]


def restates(f: Finding, roots: Sequence[Record]) -> bool:
    """Whether every record of ``f`` is an error record stating the exception line of one of ``roots``, of its
    node or of none. The error file repeats the rank's traceback: one error told twice is one finding, and the
    earlier copy (the rank's own stream) says what it is. Without this, whether the copy reads as a second fault
    depends on the layout: alone in its file it has no time and sits apart, merged into one stream it takes the
    time it states and lands beside the root."""
    lasts = {(r.node, last) for r in roots if len(last := _last_line(r)) >= MIN_LINE}
    if not f.records or not lasts:
        return False
    for r in f.records:
        read = error_lines(r.text)
        if read is None or not any(last in read[0] and r.node in (node, None, "unknown") for node, last in lasts):
            return False
    return True


def error_files(scan: JobScan, roots: Sequence[Record]) -> list[Record]:
    """The error file torchelastic wrote for a rank whose root line is shown, when it repeats the line's
    exception: by path in the rank's own log folder (``attempt_0/1/stderr.log`` -> ``attempt_0/1/error.json``),
    else by its shape (``stated_by``). Only records not shown already, one per error file and per root."""
    shown = {(r.file, r.line) for r in roots}
    wanted: dict[str, str] = {}
    sought: list[tuple[Record, list[str]]] = []
    for r in roots:
        last = _last_line(r)
        if uncompressed(r.file).endswith(ERROR_FILE) or error_lines(r.text) is not None or len(last) < MIN_LINE:
            continue
        paths = [where + ERROR_FILE for where in beside(uncompressed(r.file))]
        sought.append((r, paths))
        for path in paths:
            wanted.setdefault(path, last[:MESSAGE_CHARS])
    out: dict[str, Record] = {}
    pool = [r for recs in scan.exemplars.values() for r in recs]
    for r in pool:
        path = uncompressed(r.file)  # a log folder archived with gzip: ``error.json.gz``
        message = wanted.get(path)
        if message is not None and path not in out and (r.file, r.line) not in shown and message in r.text[:4000]:
            out[path] = r
    unserved = [r for r, paths in sought if not any(p in out for p in paths)]
    candidates = [c for c in error_records(pool) if (c.record.file, c.record.line) not in shown] if unserved else []
    for root in unserved:
        found = stated_by(root, candidates)
        if found is not None:
            out.setdefault(f"{found.file}:{found.line}", found)
    unique = {(r.file, r.line): r for r in out.values()}
    return sorted(unique.values(), key=lambda r: (r.file, r.line))


def stated_times(scan: JobScan, roots: Sequence[Record]) -> dict[tuple[str, int], float]:
    """(file, line) -> the epoch second the rank's error file states for a root record that carries no time of its
    own: torchelastic stamps ``error.json`` when the rank raises, while the traceback in the rank's stream only
    borrows the time of the last stamped line before it, which may be seconds early. Two ranks failing a moment
    apart are ordered by what their error files say, not by where their files sort."""
    pool = [r for recs in scan.exemplars.values() for r in recs]
    by_path = {uncompressed(r.file): r for r in pool if uncompressed(r.file).endswith(ERROR_FILE)}
    candidates = error_records(pool)
    times = {(c.record.file, c.record.line): c.time for c in candidates}
    out: dict[tuple[str, int], float] = {}
    for root in roots:
        if error_lines(root.text) is not None or len(last := _last_line(root)) < MIN_LINE:
            continue
        found = next((by_path[p] for w in beside(uncompressed(root.file)) if (p := w + ERROR_FILE) in by_path
                      and last[:MESSAGE_CHARS] in by_path[p].text[:4000]), None) or stated_by(root, candidates)
        if found is not None and (t := times.get((found.file, found.line))) is not None:
            out[(root.file, root.line)] = t
    return out
