"""Fewer cyclic garbage collections while a long pass allocates millions of short-lived records.

CPython starts a young-generation collection every 700 container allocations by default; a scan that keeps
hundreds of thousands of live objects (exemplars, metric points, count cells) then spends about a tenth of its
time walking them. Reference counting frees the records themselves; the collector is only needed for cycles,
which the passes do not create. ``fewer_collections`` raises the threshold for the duration of a pass and puts
the previous one back.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

PASS_THRESHOLD = 200_000  # container allocations between young-generation collections during a pass

# The collector's thresholds are process-wide: passes running at once in threads (a Dask worker) share one
# setting, raised by the first to start and restored by the last to finish.
_lock = threading.Lock()
_running: list = [0, None]  # passes running, thresholds before the first one started


@contextlib.contextmanager
def fewer_collections(threshold: int = PASS_THRESHOLD) -> Iterator[None]:
    with _lock:
        if _running[0] == 0:
            before = gc.get_threshold()
            _running[1] = before
            gc.set_threshold(max(threshold, before[0]), *before[1:])
        _running[0] += 1
    try:
        yield
    finally:
        with _lock:
            _running[0] -= 1
            if _running[0] == 0:
                gc.set_threshold(*_running[1])
