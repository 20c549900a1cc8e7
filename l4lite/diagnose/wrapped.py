"""A re-raised error is read by the error it carries.

torch hands an exception a DataLoader worker caught to the rank as "Caught RuntimeError in DataLoader worker process
0." followed by the worker's original traceback. The wrapper line says where the error was caught; its rule can only
guess what failed (a worker's error reads as the data's). When the original error, printed by the same process just
below it or restated inside the same record (torchelastic's error file), has a signature of its own (/dev/shm too
small, the open-file limit, a missing file), that signature says what failed: the wrapper takes its category, so
that the guess neither competes with the reading nor stands in as the process's "own" reading of the fault.
"""

from __future__ import annotations

from collections.abc import Sequence

from l4lite.detect.base import Finding

CARRIED_LINES = 400  # the original traceback ends within this many lines after its wrapper's line in one file


def _carries(wrapper: Finding, reading: Finding) -> bool:
    """Whether ``reading``'s line is the original error ``wrapper`` re-raised: the same process, the line below
    the wrapper's in the same file or restated inside the wrapper's own record."""
    if reading.node != wrapper.node or reading.rank != wrapper.rank:
        return False
    for w in wrapper.records:
        for r in reading.records:
            message = r.message.strip()
            if r.file == w.file and 0 < r.line - w.line <= CARRIED_LINES or len(message) > 20 and message in w.text:
                return True
    return False


def carried_readings(findings: Sequence[Finding]) -> None:
    """Give each wrapper finding (a rule declared ``wraps``) the category of the signature of the error it
    carries (see the module); a wrapper whose original error no specific signature knows keeps its own."""
    specific = [f for f in findings if f.detector == "rules" and f.role == "root" and not f.data.get("wraps")
                and not f.data.get("fallback") and not f.data.get("generic") and f.records]
    for wrapper in findings:
        if not wrapper.data.get("wraps") or not wrapper.records:
            continue
        reading = next((f for f in specific if _carries(wrapper, f)), None)
        if reading is not None and reading.category != wrapper.category:
            wrapper.category = reading.category
            wrapper.data["carried"] = reading.rule
