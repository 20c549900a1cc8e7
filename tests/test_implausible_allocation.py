"""An allocation no accelerator could hold is a consequence, not a memory shortage.

PyTorch prints "Tried to allocate more than 1EB memory" when the requested size is garbage (an overflowed or
negative count after an earlier failure, such as a timed-out collective); the out-of-memory words around it
name no cause of the job's own, so neither the rule pack nor the component reading may call the line OOM.
"""

from __future__ import annotations

import pytest

from l4lite.rules.components import is_cascade
from l4lite.rules.pack import RulePack

PACK = RulePack.load()

GARBAGE = [
    "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate more than 1EB memory",
    "RuntimeError: CUDA out of memory. Tried to allocate 2.00 PiB (GPU 0; 79.32 GiB total capacity)",
    "E rocm_driver.cc:606] failed to allocate 127.99TiB (140729850295296 bytes) from device: HIP_ERROR_OutOfMemory",
]
REAL = [
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.39 GiB. GPU 1 has a total capacity of "
    "79.32 GiB of which 2.40 GiB is free.",
    "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 15.78 GiB total capacity; "
    "14.21 GiB already allocated; 3.75 MiB free; 14.46 GiB reserved in total by PyTorch)",
    "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 1.25 TiB.",
]


def _ids(line: str) -> set[str]:
    return {m.rule.id for m in PACK.match_fields(line, line)}


@pytest.mark.parametrize("line", GARBAGE)
def test_impossible_size_is_a_cascade_not_oom(line: str) -> None:
    ids = _ids(line)
    assert "cuda-oom" not in ids
    assert "implausible-allocation" in ids
    assert PACK.get("implausible-allocation").role == "cascade"
    assert is_cascade(line)


@pytest.mark.parametrize("line", REAL)
def test_a_real_shortage_stays_oom(line: str) -> None:
    assert "cuda-oom" in _ids(line)
    assert "implausible-allocation" not in _ids(line)
    assert not is_cascade(line)
