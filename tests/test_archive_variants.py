"""The same job archived another way gives the same verdict (``benchmarks/archive_variants.py``), and the ingest
mechanisms that make it so."""

from __future__ import annotations

from pathlib import Path

from l4lite.ingest.reader import IngestOptions, iter_records
from l4lite.records import Accounting


def test_srun_label_over_torchrun_takes_the_global_rank_of_torch_prefix(tmp_path: Path) -> None:
    # ``srun --label torchrun``, one task per node: "1: " is the node's task id, "[default1]:" the local rank,
    # "[rank3]:" the global rank
    (tmp_path / "slurm-77.out").write_text(
        "0: [default1]:2026-12-03 14:38:23,219 INFO [rank1] initialized process group: host=node-a\n"
        "1: [default1]:2026-12-03 14:38:23,219 INFO [rank3] initialized process group: host=node-b\n"
        "1: [default1]:[rank3]: RuntimeError: shape mismatch in attention block\n"
        "1: [default0]:[rank2]: RuntimeError: shape mismatch in attention block\n")
    recs = list(iter_records([str(tmp_path)], IngestOptions(), Accounting()))
    errors = [(r.rank, r.node) for r in recs if "RuntimeError" in r.text]
    assert errors == [(3, "node-b"), (2, "node-b")]  # rank 2 is tied to no host: the label says node-b


def test_srun_label_names_the_node_of_lines_without_a_host(tmp_path: Path) -> None:
    # one file of two nodes (``srun --label torchrun``): a launcher line without a rank prefix of node 1 is
    # node-b's, whatever global rank 1's host is
    (tmp_path / "slurm-77.out").write_text(
        "0: [default1]:2026-12-03 14:38:23,219 INFO [rank1] initialized process group: host=node-a\n"
        "1: [default1]:2026-12-03 14:38:23,219 INFO [rank3] initialized process group: host=node-b\n"
        "1: E1203 14:38:30.696000 16444 torch/distributed/elastic/multiprocessing/api.py:1002] failed "
        "(exitcode: 1) local_rank: 1 (pid: 16468) of binary: /usr/bin/python3\n")
    recs = list(iter_records([str(tmp_path)], IngestOptions(), Accounting()))
    assert [r.node for r in recs] == ["node-a", "node-b", "node-b"]


def test_a_nul_run_is_reported_with_its_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "n1").mkdir()
    (tmp_path / "n1" / "train.log").write_bytes(b"one\ntwo\n" + b"\x00" * 5000 + b"three\nfour\n")
    acc = Accounting()
    texts = [r.text for r in iter_records([str(tmp_path)], IngestOptions(), acc)]
    assert texts == ["one", "two", "three", "four"]
    assert "n1/train.log:3: 5000 NUL byte(s) removed" in acc.warnings
