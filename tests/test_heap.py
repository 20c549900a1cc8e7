"""The run path's windows reuse freed memory instead of faulting fresh pages in (``l4lite.ingest.heap``)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from l4lite.ingest.heap import keep_freed_memory

# 30 folds of one window of 4,000 kernel-like lines (330 KB; its arrays are a few MB each), counting minor page
# faults after a first fold
_FAULTS = """
import random, resource, sys
if sys.argv[1] == "keep":
    from l4lite.ingest.heap import keep_freed_memory
    assert keep_freed_memory()
from l4lite.ingest.blocks import fold_window
rnd = random.Random(1)
window = b"\\n".join(b"[ 0000.000000] mlx0_core 0000:0d:00.0: scratch-OST%04x-osc-ffff%08x: err %x" % (
    rnd.randrange(1 << 16), rnd.randrange(1 << 32), rnd.randrange(1 << 20)) for _ in range(4000))
fold_window(window)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(30):
    fold_window(window)
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _faults(mode: str) -> int:
    out = subprocess.run([sys.executable, "-c", _FAULTS, mode], capture_output=True, text=True, check=True)
    return int(out.stdout)


@pytest.mark.skipif(not keep_freed_memory(), reason="glibc's mallopt is not available")
def test_freed_windows_are_reused_without_page_faults() -> None:
    # by default each fold maps its larger arrays afresh and faults their pages in (about 2,000 per fold)
    default, kept = _faults("default"), _faults("keep")
    assert default > 30 * 500
    assert kept < default / 10


def test_keeping_freed_memory_is_asked_once() -> None:
    assert keep_freed_memory() == keep_freed_memory()
