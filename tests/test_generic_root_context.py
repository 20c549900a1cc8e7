"""A generic root line (a CUDA error any fault ends in) keeps the category its own node's earlier error line names,
whatever the learned model makes of the lines that follow it. The lines are written for these tests."""

from __future__ import annotations

from pathlib import Path

from scan_helpers import T0, node_job, progress

from l4lite.api import analyze
from l4lite.options import AnalyzeOptions


def _failed(tail: list[str]) -> list[str]:
    return [*progress(30), *tail]


def test_a_generic_root_keeps_the_fabric_error_its_node_printed_before_it(tmp_path: Path) -> None:
    node01 = _failed([
        f"{T0}30,000 node01:4211:4290 [0] transport/net_ib.cc:1695 NCCL WARN NET/IB : Got completion with error 12, "
        "opcode 0, len 0, vendor err 129 on mlx5_0",
        f"{T0}31,000 node01:4211:4211 [0] enqueue.cc:1150 NCCL WARN Cuda failure 'an illegal memory access was "
        "encountered'",
        f"{T0}32,000 node01: Test NCCL failure common.cu:377 'unhandled cuda error (run with NCCL_DEBUG=INFO for "
        "details)'",
    ])
    job = node_job(tmp_path, {"node01": node01, "node02": progress(30)})
    inc = analyze([str(job)], AnalyzeOptions()).to_dict()
    assert inc["category"] == "network"
    roots = {(e["rule"], e["category"]) for e in inc["evidence"] if e["role"] == "root"}
    # the failing line stays a root; the line that names the component stands beside it
    assert ("cuda-illegal-address", "software") in roots and (None, "network") in roots
