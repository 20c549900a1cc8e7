"""Context lines around each evidence line, read back from the job's log files for a postmortem report.

A saved incident names its evidence by file and line. Given the job's log path(s) again, we read a few lines
before and after each one. Reading is bounded (a fixed number of evidence entries, lines and characters, and
each file is read only up to the last line needed, in chunks, so a 10 MB single line costs no memory), goes
through the same reader as ingest (plain, gzip, UTF-16; truncated archives keep what was readable) so that line
numbers agree, and is confined to the given log folders: a path in the incident never makes us read a file
outside them.
"""

from __future__ import annotations

import contextlib
import os
from collections import defaultdict
from pathlib import Path
from typing import Any

from l4lite.diagnose.incident import Evidence, Incident
from l4lite.errors import InputError, L4Error
from l4lite.ingest import files as sources
from l4lite.ingest.decode import open_lines
from l4lite.records import Accounting

MAX_EVIDENCE = 300  # evidence entries that get context
MAX_SPAN = 12  # lines of a multi-line evidence record shown in its context
KEEP_CHARS = 2000  # characters kept of one context line
ANALYZE_KEEP_CHARS = 500  # ... in the context that analyze attaches to a fresh incident


def attach_context(incident: Incident, logs: Any, before: int = 3, after: int = 3) -> list[str]:
    """Fill ``Evidence.context`` in place; returns one-line notes on evidence files that could not be read."""
    roots = _log_roots(logs)
    recorded_root = str((incident.job or {}).get("root") or "")
    by_file: dict[Path, list[Evidence]] = defaultdict(list)
    notes: list[str] = []
    missing: set[str] = set()
    for ev in incident.evidence[:MAX_EVIDENCE]:
        if not isinstance(ev.line, int) or ev.line < 1:
            continue
        found = resolve(ev.file, roots, recorded_root)
        if found is None:
            if ev.file not in missing:
                missing.add(ev.file)
                notes.append(f"{ev.file}: not found under the given log path(s); no context")
            continue
        by_file[found].append(ev)
    for path, evs in by_file.items():
        # (first line shown, last line of the record shown, last line of the record, last line shown)
        spans = []
        for ev in evs:
            end = max(ev.end_line or ev.line, ev.line)
            spans.append((max(1, ev.line - before), min(end, ev.line + MAX_SPAN - 1), end, end + after))
        wanted = {n for span in spans for n in _shown(span)}
        try:
            lines = read_lines(path, wanted)
        except OSError as exc:
            notes.append(f"{path}: cannot read: {exc.strerror or exc}")
            continue
        except L4Error as exc:
            notes.append(f"{path}: no context: {exc}")
            continue
        for ev, span in zip(evs, spans, strict=True):
            ev.context = [{"line": n, "text": lines[n]} for n in _shown(span) if n in lines]
    return notes


def add_context(incident: Incident, root: str, radius: int = 3, max_entries: int = 40) -> None:
    """Fill ``Evidence.context`` right after an analysis: the lines around the first evidence entries, with the
    job's root known (one read per file; a file that cannot be read keeps no context)."""
    if radius <= 0 or not root or root == "-":
        return
    wanted: dict[str, list[Evidence]] = defaultdict(list)
    for ev in incident.evidence[:max_entries]:
        wanted[ev.file].append(ev)
    for rel, entries in wanted.items():
        path = Path(rel if os.path.isabs(rel) else os.path.join(root, rel))
        needed: set[int] = set()
        for ev in entries:
            end = ev.end_line or ev.line
            needed.update(range(max(1, ev.line - radius), min(end, ev.line + 20) + radius + 1))
        try:
            got = read_lines(path, needed, keep=ANALYZE_KEEP_CHARS)
        except (OSError, L4Error):
            continue
        for ev in entries:
            end = min(ev.end_line or ev.line, ev.line + 20)
            ev.context = [{"line": n, "text": got[n]} for n in range(max(1, ev.line - radius), end + radius + 1)
                          if n in got]


def _log_roots(logs: Any) -> list[Path]:
    """``--logs`` as resolved paths (one path or several); a missing one is the user's error, said at once."""
    roots = []
    for p in [logs] if isinstance(logs, str | Path) else list(logs):
        path = Path(p)
        if not path.exists():
            raise L4Error(f"{path}: no such file or directory (--logs)")
        roots.append(path.resolve())
    return roots


def _shown(span: tuple[int, int, int, int]) -> list[int]:
    """Line numbers shown for one evidence span: the lines before and the (cut) record, then the lines after."""
    lo, shown_end, end, hi = span
    return [*range(lo, shown_end + 1), *range(end + 1, hi + 1)]


def resolve(name: str, roots: list[Path], recorded_root: str = "") -> Path | None:
    """The file an evidence entry names, found under one of ``roots``; never a file outside them."""
    if not name:
        return None
    rel = Path(name)
    if recorded_root and rel.is_absolute():
        with contextlib.suppress(ValueError):
            rel = rel.relative_to(recorded_root)
    parts = [p for p in rel.parts if p not in ("/", "")]
    for root in roots:
        base = root if root.is_dir() else root.parent
        if root.is_file() and root.name == rel.name and (rel.is_absolute() or len(parts) == 1):
            return root
        candidates = [Path(name)] if rel.is_absolute() else []
        candidates += [base.joinpath(*parts[k:]) for k in range(len(parts))]
        for cand in candidates:
            try:
                real = cand.resolve()
            except OSError:
                continue
            if real.is_file() and (real == root or real.is_relative_to(base)) and \
                    (root.is_dir() or real == root):
                return real
    return None


def read_lines(path: Path, wanted: set[int], keep: int = KEEP_CHARS) -> dict[int, str]:
    """Lines ``wanted`` (1-based, numbered as ingest numbers them) of a log file, each cut to ``keep`` bytes.

    Reading goes through :mod:`l4lite.ingest.files` (encoding sniffing, gzip, NUL removal, bounded long lines), so
    line numbers agree with the evidence; the file is read only up to the last line needed. Raises InputError
    when the file is not text.
    """
    out: dict[int, str] = {}
    if not wanted:
        return out
    last = max(wanted)
    accounting = Accounting()
    job = sources.discover([str(path)], accounting)
    if not job.files:  # a Flight Recorder dump named as evidence: data, not lines
        raise InputError(f"{path}: not a text log file")
    lines = open_lines(job.files[0], accounting, max_line_chars=keep)
    try:
        for number, text in lines:
            if number > last:
                break
            if number in wanted:
                out[number] = text + (" … [rest of the line not shown]" if len(text.encode()) >= keep - 3 else "")
    finally:
        lines.close()
    return out
