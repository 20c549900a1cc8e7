"""A local rank is not a global one: a line under torchrun's ``[default0]:`` prefix alone carries its worker's
rank within its node, so the scan must not tie that rank to a node across the job (job 162 with its folders
renamed: gpu-node-12's local rank 0 took gpu-node-07's stop line, which no line names a node for)."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

from scan_helpers import DigitMiner
from test_runs import hand_made

from l4lite.ingest.files import discover
from l4lite.ingest.reader import IngestOptions, iter_job, iter_records
from l4lite.ingest.shaperun import ShapeRun
from l4lite.records import Accounting
from l4lite.scan.scanner import Scanner, scan_records

JOBS = Path(__file__).resolve().parent.parent / "fixtures" / "real_jobs"


def _renamed(root: Path) -> Path:
    """162's two consoles in folders that name no host (as ``hosts-in-lines`` leaves them)."""
    logs = root / "logs"
    logs.mkdir(parents=True)
    for i, node in enumerate(("gpu-node-07", "gpu-node-12")):
        shutil.copy(JOBS / "162-hf-preempt" / node / "console.log", logs / f"{i:03d}-console.log")
    return root


def test_a_default_prefix_alone_reads_a_local_rank() -> None:
    recs = list(iter_records([str(JOBS / "162-hf-preempt" / "gpu-node-12" / "console.log")], IngestOptions(),
                             Accounting()))
    local = [r for r in recs if r.text.startswith("[default0]:") and not r.text.startswith("[default0]:[rank")]
    assert local and all(r.rank == 0 and r.rank_local for r in local)
    paired = [r for r in recs if r.text.startswith("[default0]:[rank2]:")]  # a global rank beside its local one
    assert paired and all(r.rank == 2 and not r.rank_local for r in paired)


def test_a_local_rank_ties_no_node(tmp_path: Path) -> None:
    recs = list(iter_records([str(_renamed(tmp_path / "job"))], IngestOptions(), Accounting()))
    stop = [r for r in recs if "Received 15 death signal" in r.text and r.text.startswith("[default0]:")]
    assert stop and stop[0].node is None and stop[0].rank_local
    assert any(r.node == "gpu-node-12" and r.rank == 0 for r in recs)  # the survivor's local rank 0
    scan = scan_records(recs, DigitMiner())
    assert 0 not in scan.rank_nodes
    assert scan.node_ranks.get("gpu-node-12") == {2, 3}  # its global ranks, not its workers' local 0 and 1
    assert stop[0].node is None  # remap_nodes left it on no node
    assert all(r.node != "gpu-node-12" for (_, node), ex in scan.exemplars.items() for r in ex
               if r.file.endswith("000-console.log"))


def test_a_run_of_local_rank_lines_ties_no_node(tmp_path: Path) -> None:
    """The same in a file long enough to be read in runs (``ingest.runs``): the run's lines say their rank is a
    local one, and ``Scanner._add_run`` keeps it out of the rank map as ``add_many`` does."""
    log = tmp_path / "job" / "node-b" / "console.log"
    log.parent.mkdir(parents=True)
    lines = [f"[default{i % 2}]:{line}" for i, line in enumerate(hand_made(random.Random(4)))]
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    acc = Accounting()
    items = list(iter_job(discover([str(tmp_path / "job")], acc), IngestOptions(), acc, runs=True))
    runs = [x for x in items if type(x) is ShapeRun]
    assert sum(len(r) for r in runs) > 1000
    recs = [r for x in runs for r in x.records()]
    assert all(r.node is not None and r.rank in (0, 1) and r.rank_local for r in recs)
    scanner = Scanner(DigitMiner())
    scanner.add_many(items)
    scan = scanner.finish()
    assert not {0, 1} & set(scan.rank_nodes)
    assert not any({0, 1} & ranks for ranks in scan.node_ranks.values())  # nor a node's ranks (``rank_facts``)
