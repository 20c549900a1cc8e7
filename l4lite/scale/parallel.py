"""How many processes ``analyze`` and ``parse`` use when the user does not say (``--jobs auto``, the default).

A job of a few files and megabytes is done before a process pool has started; a job of gigabytes is what the
on-call engineer is waiting for. So: one process below ``AUTO_PARALLEL_BYTES`` of input (or for stdin), else one
per core the process may run on, at most one per input file or piece of a large plain file (``l4lite.ingest.pieces``)
and at most ``AUTO_MAX_JOBS``.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence

AUTO_PARALLEL_BYTES = 64 << 20
AUTO_MAX_JOBS = 16


def usable_cores() -> int:
    """Cores this process may run on (its CPU affinity, which containers and Slurm steps restrict)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _readers(name: str, size: int) -> int:
    """Processes one file can keep busy: one, or one per minimum piece of a large uncompressed file."""
    from l4lite.ingest.pieces import MIN_PIECE_BYTES

    if size < 2 * MIN_PIECE_BYTES or name.endswith((".gz", ".gzip")):
        return 1
    return size // MIN_PIECE_BYTES


def input_size(paths: Sequence[str], enough: int) -> tuple[int, int]:
    """(bytes, readers) under ``paths``: readers are files, a large plain file counting once per piece it may be
    cut into. Counting stops once ``enough`` bytes are seen; unreadable entries count 0."""
    size = files = 0
    for path in paths:
        if path == "-":
            continue
        try:
            if not os.path.isdir(path):
                n = os.path.getsize(path)
                size += n
                files += _readers(path, n)
                continue
        except OSError:
            continue
        for root, _dirs, names in os.walk(path):
            for name in names:
                try:
                    n = os.path.getsize(os.path.join(root, name))
                except OSError:
                    continue
                size += n
                files += _readers(name, n)
            if size >= enough and files >= AUTO_MAX_JOBS:
                return size, files
    return size, files


def auto_jobs(paths: Sequence[str], threshold: int = AUTO_PARALLEL_BYTES, cores: int | None = None) -> int:
    """The number of processes for ``--jobs auto``."""
    cores = usable_cores() if cores is None else cores
    if cores < 2 or "-" in paths:
        return 1
    size, files = input_size(paths, threshold)
    if size < threshold:
        return 1
    return max(1, min(cores, files, AUTO_MAX_JOBS))


def jobs_argument(text: str) -> int:
    """``--jobs`` as argparse reads it: a positive number, or ``auto`` (0, resolved by ``auto_jobs``)."""
    if text.strip().lower() == "auto":
        return 0
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of processes or 'auto', got {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError("--jobs must be at least 1 (or 'auto')")
    return n


def resolve_jobs(jobs: int, paths: Sequence[str]) -> int:
    return auto_jobs(paths) if jobs == 0 else jobs
