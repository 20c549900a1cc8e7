"""The archive of ``benchmarks/scale.py`` (issue 29's 100M-line run, here at 64,000 lines): its files, its
shares of trainer, NCCL and system lines, and the verdict on its planted fault, which the benchmark checks."""

from __future__ import annotations

import gzip
import sys
from pathlib import Path

from l4lite.api import analyze
from l4lite.options import AnalyzeOptions

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import format_zoo  # noqa: E402
import scale  # noqa: E402


def _lines(path: Path) -> list[str]:
    data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    return data.decode().splitlines()


def test_scale_archive_mixes_formats_and_its_fault_is_found(tmp_path: Path) -> None:
    job = tmp_path / "job"
    tasks = scale.plan_files(job, 64_000)
    written = sum(scale.write_file(t) for t in tasks)
    assert format_zoo.Clock is scale.ORIGINAL_CLOCK  # the stretched clock does not leak into other users
    files = sorted(p for p in job.rglob("*") if p.is_file())
    assert len(files) == scale.NODES * (scale.GPUS + 2)
    assert sum(p.suffix == ".gz" for p in files) == 2 * scale.GPUS + scale.NODES  # two nodes' ranks, every dmesg
    lines = {p: _lines(p) for p in files}
    assert sum(len(v) for v in lines.values()) == written
    trainer = sum(len(v) for p, v in lines.items() if p.name.startswith("rank"))
    assert 0.9 < trainer / written < 0.96  # trainer lines dominate
    nccl = sum(" NCCL INFO " in line for v in lines.values() for line in v)
    assert 0.02 < nccl / written < 0.1  # 3 % in a long log; here the start-up blocks weigh more
    faulty = scale.host(scale.FAULTY_NODE)
    xid = [p.parent.name for p, v in lines.items() for line in v if "Xid" in line]
    assert xid and set(xid) == {faulty}
    first = {v[20][:12] for p, v in lines.items() if p.name.startswith("rank") and p.parent.name in ("node001",
                                                                                                       "node002")}
    assert len(first) == 2  # two formats side by side (Megatron-LM's ` [2025-`, DeepSpeed's `[2025-11-`)

    incident = analyze(str(job), AnalyzeOptions())
    assert incident.status == "incident"
    assert incident.category == "gpu_hardware"
    assert incident.suspects[0].node == faulty
