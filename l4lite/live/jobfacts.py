"""The job context of a followed job, worked out again as its files appear and grow, and the scan read again
with it when what it says of the lines changes.

``analyze`` builds the job's context (``ingest.context``: the node of each file, rank ties, the year, day order,
time zones) once from all of a finished job's files. ``tail`` usually starts before the job has written much:
a context built from no files, or from the first lines, places files by their path alone (or not at all), and
the live alert would blame no node where the postmortem names one. So the context is built again when files
appear, and when the bytes followed have doubled since the last build (a few builds over a job's life); when
the new one reads lines differently, the lines already processed are read again with it through the batch
stages themselves (``ingest.reader.read_file`` and ``scan.job.feed_files``: the clock-jump and time-zone
corrections included), so that the live verdict is the one ``analyze`` gives on the same lines.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from l4lite.ingest.context import JobContext, build_context
from l4lite.ingest.files import InputFile, json_document
from l4lite.ingest.reader import IngestOptions
from l4lite.ingest.writers import WholeReads
from l4lite.records import Accounting, RotatedStreams

# what a context says that only grows while the job runs (its span, its files' last times): no reason to read again
GROWING = ("start", "end", "file_ends", "file_starts", "node_ends", "clock_skew", "around", "written", "open_end")
REBUILD_GROWTH = 2.0  # the context is built again once the bytes followed have grown this much since the last build
QUIET_BUILDS = 3  # ... until this many such builds in a row changed nothing: the job's facts have settled
GROWTH_SECONDS = 30.0  # ... and no sooner than this after the last build (a new file is not kept waiting)
REREAD_MAX_BYTES = 256 << 20  # above this, a changed context serves the lines to come only (a re-read costs too much)
HEAD_BYTES = 4096  # enough of a file's head to tell a JSON document (``files.json_document``)


# what a context says file by file (and the node level it reads the paths with): compared per file followed
PER_FILE = ("nodes", "task_hosts", "set_apart", "ranks", "mixed", "label_tasks", "depth", "aliases", "names", "legacy",
            "layout")


def reading(context: JobContext, rels: Iterable[str]) -> dict[str, Any]:
    """What a context says about how the lines of the files ``rels`` read (each one's node, rank, labels; the job's
    rank ties, year, day order, zones), without what only grows with the job: a file that appears changes nothing
    for the others unless the job's facts change with it."""
    facts = context.to_dict()
    for key in (*GROWING, *PER_FILE):
        facts.pop(key, None)
    facts["files"] = {rel: (context.node_of(rel), context.rank_of(rel), context.task_hosts.get(rel),
                            rel in context.mixed, rel in context.label_tasks, context.set_apart.get(rel))
                      for rel in sorted(rels)}
    return facts


def input_file(path: str, rel: str, stop: int | None = None) -> InputFile | None:
    """A followed file as ``ingest`` takes it (a JSON document marked, as ``files.discover`` marks it); ``stop``:
    read only its first bytes (the lines processed so far). None for a file gone or empty."""
    try:
        st = os.stat(path)
        with open(path, "rb") as fh:
            head = fh.read(HEAD_BYTES)
    except OSError:
        return None
    if not st.st_size:
        return None
    compressed = head.startswith(b"\x1f\x8b")
    return InputFile(path=path, rel=rel, size=st.st_size if stop is None else stop, mtime=st.st_mtime,
                     compressed=compressed, stop=None if compressed else stop,
                     not_log=json_document(path, head, st.st_size, compressed))


@dataclass
class Growth:
    """What the followed files looked like at the last build."""

    names: frozenset[str] = frozenset()
    size: int = 0


class LiveContext:
    """The job context of a followed job, built again as evidence grows (see the module docstring)."""

    def __init__(self, root: str, node_from: str | None = None, *, finished: bool = False) -> None:
        self.root = root
        self.node_from = node_from
        self.open_end = not finished  # ``tail --once`` reads a job as it stands, as ``analyze`` does
        self.accounting = Accounting()
        self.context = JobContext(node_from=node_from, open_end=self.open_end)
        self.last = Growth()
        self.builds = 0
        self.quiet = 0  # builds in a row that changed nothing
        self.built_at = -math.inf  # time.monotonic() of the last build
        self.growth_seconds = GROWTH_SECONDS
        self.reads = WholeReads()  # the files a build reads whole, read on by the next from where it stopped

    def files(self, paths: Iterable[str]) -> list[InputFile]:
        out = []
        for path in paths:
            f = input_file(path, os.path.relpath(path, self.root))
            if f is not None:
                out.append(f)
        return out

    def build(self, paths: Sequence[str]) -> bool:
        """Build the context from the files at ``paths``; True when it reads lines differently than before."""
        files = self.files(paths)
        context = build_context(files, self.node_from, accounting=self.accounting, open_end=self.open_end,
                                whole_reads=self.reads)
        rels = [f.rel for f in files]
        changed = reading(context, rels) != reading(self.context, rels)
        self.quiet = 0 if changed else self.quiet + 1
        self.context = context
        self.last = Growth(frozenset(f.rel for f in files), sum(f.size for f in files))
        self.builds += 1
        self.built_at = time.monotonic()
        return changed

    def due(self, sizes: dict[str, int]) -> bool:
        """Whether the files followed (name -> bytes read) have changed enough since the last build: a new file,
        or twice the bytes while the job's facts still change (a build reads every file's ends, and of the files no
        path places the bytes written since the last build, ``ingest.writers.WholeReads``)."""
        names = {n for n, size in sizes.items() if size > 0}
        if not names <= self.last.names:
            return True
        total = sum(sizes.values())
        return self.quiet < QUIET_BUILDS and total >= max(1, self.last.size) * REBUILD_GROWTH and total > HEAD_BYTES \
            and time.monotonic() - self.built_at >= self.growth_seconds


def reread_files(streams: Iterable[Any]) -> list[InputFile]:
    """The lines processed so far of each followed stream (``live.followio.Stream``: its path, name and committed
    offset), as ``ingest`` inputs in the job's order; copies and continued streams are left out."""
    out = []
    for s in streams:
        if s.committed_offset <= 0 or s.base_line or s.shadow_of is not None:
            continue
        f = input_file(s.path, s.name, s.committed_offset)
        if f is not None:
            out.append(f)
    return sorted(out, key=lambda f: f.rel)


def reread(scanner: Any, files: Sequence[InputFile], context: JobContext, node_from: str | None = None) -> Any:
    """Read ``files`` into ``scanner`` as ``analyze`` reads a job (``scan.job.feed_files`` with ``context``)."""
    from l4lite.scan.job import feed_files

    accounting = Accounting()
    ingest = IngestOptions(node_from=node_from, fold_shapes=True, streams=RotatedStreams()).use(context)
    feed_files(scanner, files, ingest, accounting)
    return ingest
