"""Freed memory kept for the next window instead of handed back to the kernel.

The run path works a window of lines at a time in numpy arrays of a few MB each (``blocks.plan_block``,
``blocks.fold_window``, the clocks, the spool's columns). glibc serves an allocation above its mmap threshold
(128 KiB, raised up to 32 MiB as such blocks are freed) with a fresh ``mmap`` and gives it back with ``munmap``
when it is freed, and it trims the top of its heap once 128 KiB of it are free; either way the next window's
arrays fault their pages in again. On the zoo's 200,000-line kernel and storage jobs that was 140,000 minor page
faults and 0.4-0.8 s of system time per ``l4lite parse`` (a fifth of its CPU). With the threshold and the trim
limit raised, freed blocks go back to malloc's free lists and the next window reuses them: 18,000-28,000 faults.

The settings are process-wide and stay for the life of the process; they only change where glibc keeps the
memory a process has freed, not how much it uses at its peak. Elsewhere than on glibc nothing changes.
"""

from __future__ import annotations

import ctypes
import sys
import threading

# mallopt parameters (glibc's malloc.h)
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 64 << 20  # blocks below this come from the heap and are reused once freed
TRIM_THRESHOLD = 256 << 20  # free memory at the heap's top kept for reuse

_lock = threading.Lock()
_state: dict[str, bool] = {}


def keep_freed_memory() -> bool:
    """Raise glibc's mmap and trim thresholds, once per process. Returns whether they are raised (False where
    the C library is not glibc or refused)."""
    with _lock:
        if "done" in _state:
            return _state["done"]
        _state["done"] = _raise_thresholds()
        return _state["done"]


def _raise_thresholds() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        # the process's own symbols, where glibc is loaded already: ``ctypes.util.find_library`` would run
        # ``ldconfig -p`` in a child process (20-40 ms of every reading process's start)
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc (musl has no mallopt)
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
