"""A one-line progress bar on stderr for long runs of ``analyze`` and ``parse``.

Only the CLI creates one (``progress_bar``), and only for a terminal: redirected output and ``--quiet`` stay
clean. Below the CLI, stages report through a plain callable ``(bytes done, bytes total, records so far)``.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TextIO

from l4lite.ingest.shaperun import ShapeRun

ProgressFn = Callable[[int, int, int], None]


class ProgressBar:
    """A one-line progress bar on a terminal stream; silent until the run has taken a second."""

    def __init__(self, stream: TextIO, width: int = 30, delay: float = 1.0, interval: float = 0.2) -> None:
        self.stream = stream
        self.width = width
        self.delay = delay
        self.interval = interval
        self.started = time.monotonic()
        self.shown = False
        self.last = 0.0

    def __call__(self, done: int, total: int, records: int) -> None:
        now = time.monotonic()
        if now - self.started < self.delay or now - self.last < self.interval:
            return
        self.last = now
        frac = min(1.0, done / total) if total else 0.0
        filled = int(frac * self.width)
        rate = records / max(now - self.started, 1e-9)
        self.stream.write(f"\r[{'#' * filled}{'.' * (self.width - filled)}] {frac * 100:5.1f}% "
                          f"{records:,} records {rate:,.0f}/s")
        self.stream.flush()
        self.shown = True

    def close(self) -> None:
        """Erase the bar (if it was ever drawn) so that what follows starts on a clean line."""
        if self.shown:
            self.stream.write("\r" + " " * (self.width + 50) + "\r")
            self.stream.flush()
            self.shown = False


def progress_bar(quiet: bool = False, stream: TextIO | None = None) -> ProgressBar | None:
    """A bar on ``stream`` (stderr) when it is a terminal and the run is not quiet; else None."""
    stream = stream if stream is not None else sys.stderr
    if quiet:
        return None
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        tty = False
    return ProgressBar(stream) if tty else None


def track_records(records: Iterable[Any], files: Sequence[Any], report: ProgressFn | None,
                  every: int = 20_000) -> Iterator[Any]:
    """Pass records through, reporting progress by file (records carry ``file``, files ``rel`` and ``size``; a
    ``ShapeRun`` counts as its records)."""
    if report is None:
        yield from records
        return
    sizes = {f.rel: f.size for f in files}
    total = sum(sizes.values())
    done = 0
    current: str | None = None
    n = 0
    due = every
    for record in records:
        if record.file != current:
            if current is not None:
                done += sizes.get(current, 0)
            current = record.file
        n += len(record) if type(record) is ShapeRun else 1
        if n >= due:
            report(done, total, n)
            due = n - n % every + every
        yield record
    report(total, total, n)
