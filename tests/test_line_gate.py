"""The scan's rule gate per line shape (``Record.shape``, ``RulePack.could_match_line``): a shape it closes has
no matching rule on any record, and a scan with the gate finds exactly the hits of a scan without it."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from l4lite.ingest.files import discover
from l4lite.ingest.reader import IngestOptions, read_file
from l4lite.options import AnalyzeOptions
from l4lite.records import Accounting, Record
from l4lite.scan.job import load_rules, scan_job

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_engine import SUITE, signature  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
JOBS = [SUITE / "002-xid79_fallen_off_bus", SUITE / "005-ib_link_down", SUITE / "010-checkpoint_save_failure",
        SUITE / "001-healthy_hard_negatives", ROOT / "fixtures" / "jobs" / "ib-link-down"]


class Ungated:
    """The same rule pack without ``could_match_line``: the scan asks it about every record."""

    def __init__(self, pack: Any) -> None:
        self.pack = pack
        self.warnings = pack.warnings

    def match(self, record: Record) -> list[Any]:
        return self.pack.match(record)


@pytest.fixture(scope="module")
def pack() -> Any:
    return load_rules(AnalyzeOptions())


@pytest.mark.parametrize("job", JOBS, ids=lambda p: p.name)
def test_a_closed_shape_has_no_matching_rule(job: Path, pack: Any) -> None:
    found = discover([str(job)], Accounting())
    shaped = closed = 0
    for f in found.files:
        for record in read_file(f, IngestOptions(), Accounting()):
            if record.shape is None:
                continue
            shaped += 1
            assert record.shape == record.text.encode("utf-8", "surrogatepass").translate(
                bytes.maketrans(b"123456789", b"000000000"))
            if not pack.could_match_line(record.shape):
                closed += 1
                assert pack.match(record) == [], record.text
    assert shaped > 300 and closed > 0.15 * shaped  # records carry a shape; many shapes are closed


def test_shapes_with_a_keyword_stay_open(pack: Any) -> None:
    text = "[Mon May  6 10:00:01 2024] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus."
    shape = text.encode().translate(bytes.maketrans(b"123456789", b"000000000"))
    assert pack.could_match_line(shape)
    assert pack.could_match_line(shape.upper())  # keywords are found whatever the case, as the gate's own lookup
    assert pack.could_match_line(b"x" * (pack.max_chars + 1))  # too long to decide from the shape: open
    assert not pack.could_match_line(b"[0000-00-00 00:00:00,000] [INFO] step=0, loss=0.0000")


@pytest.mark.parametrize("job", JOBS, ids=lambda p: p.name)
def test_gated_scan_equals_the_ungated_scan(job: Path, pack: Any) -> None:
    options = AnalyzeOptions()
    gated = scan_job([str(job)], options, rules=pack)
    ungated = scan_job([str(job)], options, rules=Ungated(pack))
    assert signature(gated) == signature(ungated)
    assert [(h.rule_id, h.record.file, h.record.line) for h in gated.hits] == \
        [(h.rule_id, h.record.file, h.record.line) for h in ungated.hits]
