"""``journalctl -o short-monotonic`` lines (``[ 8123.456789] host python[4242]: ...``): the program's lines, read
with their host, not kernel lines because an uptime opens them; dmesg's own lines stay the kernel's."""

from __future__ import annotations

from pathlib import Path

from test_runs import same_three_ways

from l4lite.ingest.reader import IngestOptions, iter_records
from l4lite.records import Accounting


def _records(tmp_path: Path, lines: list[str]) -> list:
    f = tmp_path / "job" / "logs" / "journal.log"
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    paths = [str(tmp_path / "job")]
    assert same_three_ways(paths) == len(lines)
    return list(iter_records(paths, IngestOptions(), Accounting()))


def test_a_journal_line_after_an_uptime_is_its_programs(tmp_path: Path) -> None:
    lines = [f"[{8000 + i:12.6f}] gpu-node-07 python[4242]: [WARNING] step {i} slow data loader" for i in range(300)]
    lines += [f"[{8400 + i:12.6f}] gpu-node-07 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid={i}" for i in range(3)]
    recs = _records(tmp_path, lines)
    assert [r.source for r in recs[:300]] == ["other"] * 300
    assert all(r.node == "gpu-node-07" for r in recs)
    assert all(r.source == "kernel" for r in recs[300:])
    assert recs[0].message.startswith("[WARNING] step 0") or "step 0 slow" in recs[0].message


def test_dmesg_lines_stay_the_kernels(tmp_path: Path) -> None:
    lines = ["[    3.210000] EDAC MC0: Giving out device to module skx_edac", "[    4.100000] ACPI Error: AE_NOT_FOUND",
             "[  950.818166] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234"]
    assert all(r.source in ("kernel", "storage") for r in _records(tmp_path, lines))
