"""Byte ranges of large plain files, so that one merged log (a Slurm job's ``slurm-JOBID.out`` of every rank, a
node's multi-GB journal export) can be read by several processes at once.

A file is cut only where the next line starts a record for sure: after an optional ``srun --label`` or
torchrun prefix, the line opens with a timestamp or an NCCL ``host:pid:tid [gpu]`` header. So a traceback or a
config dump that follows its first line stays in one piece; only a multi-line record of one rank that other
ranks' lines interleave with can straddle a cut (the piece before closes it at its end, and its remaining lines
start a record of their own in the next piece). Every byte belongs to exactly one piece, and each piece knows
the number of its first line, so records keep their file and line numbers and the line accounting adds up to
the whole file's.

Pieces are planned in the parent process (``split_large``), before shards are formed: finding a cut reads a
few kilobytes, numbering the lines of the pieces reads the file up to its last cut once (``count_lines``, in a
thread per core: every worker waits for it).
"""

from __future__ import annotations

import itertools
import os
import re
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import BinaryIO

from l4lite.ingest.files import InputFile

MIN_PIECE_BYTES = 32 << 20  # a file is cut only into pieces at least this large
HEAD_BYTES = 4 << 20  # what a later piece reads of its file's start first (see ingest's learn_lead)
TAIL_BYTES = 256 << 10  # ... and of the lines just before it
_PROBE_BYTES = 1 << 20  # how far past a nominal cut to look for a record start
_COUNT_BYTES = 1 << 20  # fits a core's L2 cache: the compare and count ran 1.3x to 3x as fast as with 8 MiB
_COUNT_SPAN = 64 << 20  # the byte ranges the counting threads take one by one

# The start of a line that begins a record whatever came before it (see the module docstring).
_PREFIX = rb"(?:[ \t]{0,4}\d{1,6}: |\[(?:default|rank)?\d{1,6}\]:[ \t]?)?"
_STARTS = (
    rb"\[?\d{4}-\d\d-\d\d[ T]\d\d:\d\d",  # ISO (Python logging, DeepSpeed, Megatron, journald short-iso)
    rb"\d{4}/\d\d/\d\d \d\d:\d\d",  # nvidia-smi, Go, glog's date forms
    rb"[IWEF]\d{4} \d\d:\d\d:\d\d",  # glog / torch's C++ logging
    rb"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [ \d]\d \d\d:\d\d:\d\d",  # syslog
    rb"\[ *\d+\.\d+\]",  # dmesg uptime
    rb"[A-Za-z0-9][\w.-]*:\d+:\d+ \[\d+\] ",  # NCCL_DEBUG header
)
RECORD_START = re.compile(_PREFIX + rb"(?:" + rb"|".join(_STARTS) + rb")")


def splittable(f: InputFile, min_bytes: int) -> bool:
    """A regular, uncompressed, UTF-8 file of at least two pieces' size (not stdin, not already a piece)."""
    return (not f.is_stdin and not f.compressed and not f.is_piece and not f.parts and f.encoding == "utf-8"
            and f.size >= 2 * min_bytes)


def find_cut(fh, offset: int, size: int) -> int | None:  # noqa: ANN001 - a binary file object
    """The first line start at or after ``offset`` (not 0) where a record starts for sure, or None."""
    fh.seek(offset - 1)
    data = fh.read(_PROBE_BYTES + 1)
    pos = data.find(b"\n")
    while 0 <= pos < len(data) - 1:
        start = pos + 1
        if RECORD_START.match(data, start):
            cut = offset - 1 + start
            return cut if cut < size else None
        pos = data.find(b"\n", start)
    return None


def count_lines(fh, start: int, stop: int) -> int:  # noqa: ANN001
    """Newlines in bytes [start, stop) of the file. numpy compares a chunk at a time, three times the speed of
    ``bytes.count``: the pieces of a merged file are numbered before any worker starts."""
    import numpy as np

    fh.seek(start)
    left = stop - start
    buf = bytearray(max(0, min(_COUNT_BYTES, left)))
    view = memoryview(buf)
    n = 0
    while left > 0:
        got = fh.readinto(view[:min(len(buf), left)])
        if not got:
            break
        n += int(np.count_nonzero(np.frombuffer(buf, np.uint8, got) == 10))
        left -= got
    return n


def split_file(f: InputFile, parts: int) -> list[InputFile]:
    """``f`` as up to ``parts`` pieces of about equal size, cut at record starts (``[f]`` if no cut is found)."""
    return split_at(f, [f.size * i // parts for i in range(1, parts)])


def split_at(f: InputFile, offsets: Sequence[int]) -> list[InputFile]:
    """``f`` cut at the first record start at or after each of the ascending ``offsets`` (``[f]`` if none is
    found)."""
    if not offsets:
        return [f]
    try:
        with open(f.path, "rb") as fh:
            return _split_open(f, fh, offsets)
    except OSError:  # unreadable now: read whole, ingest reports it
        return [f]


def _split_open(f: InputFile, fh, offsets: Sequence[int]) -> list[InputFile]:  # noqa: ANN001
    cuts: list[int] = []
    for nominal in offsets:
        if nominal <= 0 or (cuts and nominal <= cuts[-1]):
            continue
        cut = find_cut(fh, nominal, f.size)
        if cut is not None and (not cuts or cut > cuts[-1]):
            cuts.append(cut)
    if not cuts:
        return [f]
    bounds = [0, *cuts, f.size]
    lines_before = count_lines_before(f.path, cuts)  # the lines of the last piece number nothing after it
    return [replace(f, size=b - a, start=a, stop=b, first_line=1 + before)
            for a, b, before in zip(bounds, bounds[1:], [0, *lines_before], strict=False)]


def count_lines_before(path: str, offsets: Sequence[int], threads: int | None = None) -> list[int]:
    """Newlines in bytes ``[0, offset)`` of the file, for each of the ascending ``offsets``.

    The bytes go in spans of at most ``_COUNT_SPAN``, counted in a thread per core (reading and numpy's compare
    release the GIL): every worker waits for these numbers, and two cores give them in half the time (0.13 s
    against 0.25 to 0.6 s for a 1.4 GB file in the page cache)."""
    spans: list[tuple[int, int]] = []
    ends: list[int] = []  # per offset: how many spans end at or before it
    start = 0
    for offset in offsets:
        spans += [(a, min(a + _COUNT_SPAN, offset)) for a in range(start, offset, _COUNT_SPAN)]
        ends.append(len(spans))
        start = max(start, offset)
    if not spans:
        return [0] * len(offsets)
    local = threading.local()
    handles: list[BinaryIO] = []

    def count(span: tuple[int, int]) -> int:
        fh = getattr(local, "fh", None)
        if fh is None:
            fh = local.fh = open(path, "rb")  # noqa: SIM115 - one handle per thread, closed below
            handles.append(fh)
        return count_lines(fh, *span)

    try:
        with ThreadPoolExecutor(max(1, min(threads or os.cpu_count() or 1, len(spans))),
                                thread_name_prefix="l4lite-count") as pool:
            totals = [0, *itertools.accumulate(pool.map(count, spans))]
    finally:
        for fh in handles:
            fh.close()
    return [totals[k] for k in ends]


def lead_of(piece: InputFile, head: int | None = None, tail: int | None = None) -> list[InputFile]:
    """What a piece that starts later reads first, whole lines only: the file's start (up to ``HEAD_BYTES``:
    which host each stream is) and the lines just before the piece (up to ``TAIL_BYTES``: the clock)."""
    head = HEAD_BYTES if head is None else head
    tail = TAIL_BYTES if tail is None else tail
    out: list[InputFile] = []
    try:
        with open(piece.path, "rb") as fh:
            data = fh.read(min(piece.start, head))
            stop = data.rfind(b"\n") + 1
            if stop:
                out.append(replace(piece, size=stop, start=0, stop=stop, first_line=1))
            if piece.start > stop:
                begin = max(stop, piece.start - tail)
                fh.seek(begin)
                data = fh.read(piece.start - begin)
                if begin > stop:  # mid-line: from the next line on
                    begin += data.find(b"\n") + 1
                if begin < piece.start:
                    out.append(replace(piece, size=piece.start - begin, start=begin, stop=piece.start, first_line=1))
    except OSError:
        return []
    return out


def share_weights(parts: int | Sequence[float]) -> list[float]:
    """The relative sizes of ``parts`` shards: a count of equal ones, or weights (negative ones count as 0)."""
    if isinstance(parts, int):
        return [1.0] * max(1, parts)
    return [max(float(w), 0.0) for w in parts] or [1.0]


def split_large(files: Sequence[InputFile], parts: int | Sequence[float],
                min_bytes: int | None = None) -> list[InputFile]:
    """The job's files in order, each large plain file cut where the share of one of ``parts`` shards ends
    inside it (``parts``: a count of equal shards, or their relative sizes as ``shards.plan_shards`` takes
    them), each piece at least ``min_bytes`` large.

    Cutting at the shares' ends, not into pieces of one size, lets every shard end where it should: with equal
    pieces, the files before a merged one shift its pieces off the shares, and a shard took a piece too many
    (511 MB against 470 MB on a 1.4 GB Slurm file behind 40 MB of GPU telemetry)."""
    min_bytes = MIN_PIECE_BYTES if min_bytes is None else min_bytes
    weights = share_weights(parts)
    total = sum(max(f.size, 0) for f in files)
    whole = sum(weights)
    if len(weights) < 2 or total <= 0 or whole <= 0:
        return list(files)
    ends = [total * c / whole for c in itertools.accumulate(weights[:-1])]  # in the job's bytes
    out: list[InputFile] = []
    start = 0  # the file's first byte in the job's bytes
    for f in files:
        offsets: list[int] = []
        if splittable(f, min_bytes):
            for end in ends:
                at = int(end) - start
                if at - (offsets[-1] if offsets else 0) >= min_bytes and f.size - at >= min_bytes:
                    offsets.append(at)
        out.extend(split_at(f, offsets) if offsets else [f])
        start += max(f.size, 0)
    return out


def piece_count(files: Sequence[InputFile], min_bytes: int | None = None) -> int:
    """How many readers the files could keep busy: one per file, or per minimum piece of a large one."""
    min_bytes = MIN_PIECE_BYTES if min_bytes is None else min_bytes
    return sum(max(1, f.size // min_bytes) if splittable(f, min_bytes) else 1 for f in files)
