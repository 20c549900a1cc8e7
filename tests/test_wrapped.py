"""A re-raised error is read by the error it carries (``diagnose.wrapped``), and torch's shared-memory files."""

from __future__ import annotations

import json
from pathlib import Path

from scan_helpers import rec

from l4lite.api import analyze
from l4lite.detect.base import Finding
from l4lite.diagnose.wrapped import carried_readings
from l4lite.rules.pack import RulePack

JOBS = Path(__file__).resolve().parent.parent / "fixtures" / "real_jobs"
WRAPPER = "RuntimeError: Caught RuntimeError in DataLoader worker process 0."
SHM = "RuntimeError: unable to allocate shared memory(shm) for file </torch_25820_4277150045_0>: No space left on device (28)"


def _wrapper(line: int = 7, file: str = "n2/console.log", text: str | None = None) -> Finding:
    r = rec(WRAPPER, node="n2", rank=3, line=line, file=file, text=text)
    return Finding("rules", "data", "root", 0.5, "a worker raised", node="n2", rank=3, rule="dataloader-worker-exception",
                   records=[r], data={"wraps": True})


def _reading(line: int = 50, rank: int = 3, **data: object) -> Finding:
    r = rec(SHM, node="n2", rank=rank, line=line, file="n2/console.log")
    return Finding("rules", "user_config", "root", 0.7, "shm", node="n2", rank=rank, rule="torch-shm-file",
                   records=[r], data=dict(data))


def test_a_wrapper_takes_the_category_of_the_error_below_it() -> None:
    wrapper, reading = _wrapper(), _reading()
    carried_readings([wrapper, reading])
    assert wrapper.category == "user_config" and wrapper.data["carried"] == "torch-shm-file"


def test_a_wrapper_takes_it_from_its_own_record_restating_the_error() -> None:
    """torchelastic's error file holds the wrapper and the original traceback in one record."""
    restated = json.dumps({"message": f"{WRAPPER}\nOriginal Traceback (most recent call last):\n{SHM}"})
    wrapper = _wrapper(line=1, file="n2/error.json", text=restated)
    carried_readings([wrapper, _reading()])
    assert wrapper.category == "user_config"


def test_a_wrapper_keeps_its_own_reading_otherwise() -> None:
    """Another process's error, a line above it, or an error only a fallback reads say nothing of what it carries."""
    for reading in (_reading(rank=2), _reading(line=3), _reading(fallback=True), _reading(line=50 + 1000)):
        wrapper = _wrapper()
        carried_readings([wrapper, reading])
        assert wrapper.category == "data" and "carried" not in wrapper.data


def test_torch_shared_memory_files_are_the_shm_not_the_disk() -> None:
    pack = RulePack.load()
    for line in (SHM, "RuntimeError: unable to write to file </torch_18692_1954506624>: No space left on device (28)",
                 "RuntimeError: unable to open shared memory object </torch_3562_2871096640> in read-write mode: "
                 "Too many open files (24)"):
        ids = [m.rule.id for m in pack.match(rec(line))]
        assert "torch-shm-file" in ids and "enospc" not in ids, (line, ids)
    assert [m.rule.id for m in pack.match(rec("OSError: [Errno 28] No space left on device"))] == ["enospc"]


def test_a_node_whose_shm_is_too_small_is_read_on_that_node() -> None:
    """139: one rank's DataLoader worker fails to allocate a batch's shared memory, re-raised in the rank; its
    node-mate only lost a peer. The worker's error is /dev/shm, a setting of that node, not the data."""
    incident = analyze([JOBS / "139-ddp-shm_small"])
    assert incident.category == "user_config"
    assert incident.suspects[0].node == "h100-sxm-044"
