"""Records and line accounting: the plain data every stage after ingest works on.

A record is one log event. Most records are one line; a Python traceback, a C++ frame dump or a torchelastic
failure block is one record spanning ``line``..``end_line``. Node, rank and GPU stay separate unless a line ties
them. Every input line ends in a record or in a skip counter with a reason, so that
``lines_read + lines_unwrapped == lines_in_records + sum(lines_skipped.values())`` always holds.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple


@dataclass(slots=True)
class Record:
    """One log event.

    ``text`` is the event as written (continuation lines joined with newlines); ``message`` is the part that
    carries meaning for template mining and rules: the first line with its headers (timestamp, host:pid:tid,
    rank prefix) stripped, or for a traceback the final exception line. ``time`` is seconds since the epoch
    (UTC) or ``None`` when neither the line nor an earlier line of its file gave one. ``rank`` is a global rank
    unless ``rank_local`` says the reader only had the node's local one.
    """

    file: str
    line: int
    end_line: int
    node: str | None
    rank: int | None
    gpu: int | None
    source: str
    time: float | None
    level: str | None
    message: str
    text: str
    template_id: str = ""
    template: str = ""
    # ``rank`` is the line's local rank (torchrun's ``[default1]:`` prefix alone), not its global one: it names a
    # worker within its node, so it cannot tie the rank to a node across the job (``Scanner``'s rank map). Not an
    # output column: the prefix it comes from stays in ``text``.
    rank_local: bool = False
    # A one-line record's text with ASCII digits folded to 0 (``shape.shape_of``), when ingest had it at hand:
    # what the scan's per-shape memos key on. Not data: equality and repr ignore it.
    shape: bytes | None = field(default=None, compare=False, repr=False)

    def as_row(self) -> dict[str, Any]:
        """The record as a flat row for CSV, Parquet and JSON lines."""
        return {
            "file": self.file,
            "line": self.line,
            "end_line": self.end_line,
            "node": self.node,
            "rank": self.rank,
            "gpu": self.gpu,
            "source": self.source,
            "time": self.time,
            "level": self.level,
            "template_id": self.template_id,
            "template": self.template,
            "text": self.text,
        }


@dataclass
class Accounting:
    """Where every input line and file went. Shards merge with ``merge``."""

    files: int = 0
    lines_read: int = 0
    lines_in_records: int = 0
    records: int = 0
    # lines a structured record carried beyond its first (a JSON log's exception field, ``ingest.jsonlog``): read
    # as lines, but not lines of the file, so ``lines_read`` stays the files' own count
    lines_unwrapped: int = 0
    lines_skipped: Counter[str] = field(default_factory=Counter)
    files_skipped: Counter[str] = field(default_factory=Counter)
    warnings: list[str] = field(default_factory=list)

    MAX_WARNINGS = 200

    def skip_lines(self, reason: str, n: int = 1) -> None:
        self.lines_skipped[reason] += n

    def skip_file(self, reason: str, path: str, detail: str = "") -> None:
        self.files_skipped[reason] += 1
        self.warn(f"{path}: skipped ({reason}){': ' + detail if detail else ''}")

    def warn(self, message: str) -> None:
        """Keep a bounded list of one-line warnings (file and line named by the caller)."""
        if len(self.warnings) < self.MAX_WARNINGS:
            self.warnings.append(message)
        elif len(self.warnings) == self.MAX_WARNINGS:
            self.warnings.append("... further warnings suppressed")

    @property
    def balanced(self) -> bool:
        return self.lines_read + self.lines_unwrapped == self.lines_in_records + sum(self.lines_skipped.values())

    def merge(self, other: Accounting) -> Accounting:
        self.files += other.files
        self.lines_read += other.lines_read
        self.lines_in_records += other.lines_in_records
        self.records += other.records
        self.lines_unwrapped += other.lines_unwrapped
        self.lines_skipped.update(other.lines_skipped)
        self.files_skipped.update(other.files_skipped)
        for w in other.warnings:
            self.warn(w)
        return self

    def to_dict(self) -> dict[str, Any]:
        return {
            "files": self.files,
            "lines_read": self.lines_read,
            "lines_in_records": self.lines_in_records,
            "records": self.records,
            "lines_unwrapped": self.lines_unwrapped,
            "lines_skipped": dict(sorted(self.lines_skipped.items())),
            "files_skipped": dict(sorted(self.files_skipped.items())),
            "warnings": list(self.warnings),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Accounting:
        return cls(
            files=int(data.get("files", 0)),
            lines_read=int(data.get("lines_read", 0)),
            lines_in_records=int(data.get("lines_in_records", 0)),
            records=int(data.get("records", 0)),
            lines_unwrapped=int(data.get("lines_unwrapped", 0)),
            lines_skipped=Counter(data.get("lines_skipped", {})),
            files_skipped=Counter(data.get("files_skipped", {})),
            warnings=list(data.get("warnings", [])),
        )

    def summary_line(self) -> str:
        skipped = sum(self.lines_skipped.values())
        reasons = ", ".join(f"{k}={v}" for k, v in sorted(self.lines_skipped.items())) or "none"
        return (
            f"{self.files} files, {self.lines_read} lines read"
            + (f" + {self.lines_unwrapped} carried by structured records" if self.lines_unwrapped else "")
            + f" = {self.lines_in_records} in {self.records} records"
            f" + {skipped} skipped ({reasons})"
            + (f"; {sum(self.files_skipped.values())} files skipped" if self.files_skipped else "")
        )


class PiecePlace(NamedTuple):
    """Where a line of a rotated log's stream is in the piece the user opens."""

    file: str
    line: int
    end_line: int


@dataclass
class RotatedStreams:
    """The rotated logs of a job, each read as one stream (``x.log.2.gz``, ``x.log.1``, ``x.log``): the scan and
    the diagnosis name their records by the stream (the newest piece's path) and number lines on through the
    pieces, so that every comparison of positions (``(file, line)``: a shutdown after a failure, the lines after
    an exception, one record told twice) reads the rotated log as the one stream it was written as. What the
    user opens are the pieces: ``piece_of`` names an evidence line by its piece and the piece's line numbers.
    Filled while the job is read (``starts``: stream -> [(its first stream line, piece)], oldest first);
    shards merge by union."""

    starts: dict[str, Sequence[tuple[int, str]]] = field(default_factory=dict)

    def merge(self, other: RotatedStreams) -> RotatedStreams:
        self.starts.update(other.starts)
        return self

    def piece_of(self, file: str, line: int, end_line: int | None = None) -> PiecePlace:
        """``(file, line)`` of a stream as the piece the line is in (a record running on into the next piece
        ends past its piece's last line, as the reader names it); any other file's unchanged."""
        end = line if end_line is None else end_line
        starts = self.starts.get(file)
        if not starts or line < 1:
            return PiecePlace(file, line, end)
        k = max(0, bisect_right([a for a, _ in starts], line) - 1)
        shift = starts[k][0] - 1
        return PiecePlace(starts[k][1], line - shift, end - shift)


# A time written on the line itself (a clock time, a dmesg uptime), as against one ingest lent it from the line above
_OWN_STAMP = re.compile(r"\d{1,2}:\d\d:\d\d|^\s*\[\s*\d+\.\d+\]")


def stamped(text: str) -> bool:
    """Whether a line carries its own timestamp (an untimed line's time is the last stamped line's above it)."""
    return _OWN_STAMP.search(text[:120]) is not None
