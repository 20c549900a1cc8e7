"""A generic NCCL error read by the NCCL WARN line its rank printed just before it (``diagnose.ncclwarn``)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from scan_helpers import rec

from l4lite.api import AnalyzeOptions, analyze
from l4lite.detect.base import Finding
from l4lite.diagnose.ncclwarn import warn_payload
from l4lite.evaluate.planting import Excerpt, JobPlanter
from l4lite.evaluate.scoreboard import job_paths
from l4lite.rules.ncclwarn import read_warn

HEAD = "gpu-node-3:41021:41107 [2]"
INTERNAL = ("torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:"
            "1970, internal error - please report this issue to the NCCL developers, NCCL version 2.19.3")


@pytest.mark.parametrize(("line", "category"), [
    ("transport/net_ib.cc:633 NCCL WARN Call to ibv_create_qp failed", "network"),
    ("misc/socket.cc:456 NCCL WARN NET/Socket : Connect to 10.0.0.5<43127> failed : Connection refused", "network"),
    ("include/alloc.h:48 NCCL WARN Cuda failure 'out of memory'", "oom"),
    ("include/shm.h:28 NCCL WARN Call to posix_fallocate failed : No space left on device", "user_config"),
    ("graph/search.cc:1010 NCCL WARN Error : ring 0 does not contain rank 3", "user_config"),
    ("enqueue.cc:1100 NCCL WARN Cuda failure 'an illegal memory access was encountered'", "software"),
    ("include/alloc.h:108 NCCL WARN Cuda failure 'uncorrectable ECC error encountered'", "gpu_hardware"),
])
def test_a_warn_payload_is_read_by_what_its_failing_call_means(line: str, category: str) -> None:
    reading = read_warn(f"{HEAD} {line}")
    assert reading is not None and reading.category == category


@pytest.mark.parametrize("line", [
    "proxy.cc:1043 NCCL WARN [Proxy Service 2] Failed to execute operation Connect from rank 2, retcode 3",
    "NCCL INFO transport/net.cc:533 -> 2",  # no warning at all
    "ibv_create_qp failed",  # the words without NCCL's WARN
    "misc/socket.cc:538 NCCL WARN Net : Connection closed by remote peer 10.20.3.14<53756>",  # a peer's loss
    "transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion from peer 10.0.0.5<43127> with status=5 opcode=0",
])
def test_a_warn_that_names_no_call_or_no_warn_gives_nothing(line: str) -> None:
    assert read_warn(f"{HEAD} {line}") is None


def _job(tmp: Path, warns: list[str], error: str) -> dict[str, Any]:
    lines = (f"{HEAD} NCCL INFO Bootstrap : Using eth0:10.0.0.3<0>", *(f"{HEAD} {w}" for w in warns),
             f"{HEAD} NCCL INFO init.cc:1012 -> 2", "Traceback (most recent call last):",
             '  File "train.py", line 88, in <module>', "    model = DDP(model, device_ids=[local_rank])", error)
    x = Excerpt(id="nccl-warn", source_group="t", split="lines", status="incident", category=None, phase=None,
                faulty=None, lines=lines)
    return analyze(job_paths(JobPlanter(x).write("rank-files", tmp / "job").path), AnalyzeOptions()).to_dict()


def test_an_internal_error_after_a_ring_without_the_rank_is_a_configuration(tmp_path: Path) -> None:
    inc = _job(tmp_path, ["graph/search.cc:1010 NCCL WARN Error : ring 0 does not contain rank 3"], INTERNAL)
    assert inc["category"] == "user_config"
    roots = [e for e in inc["evidence"] if e["role"] == "root" and "NCCL WARN" in str(e.get("text"))]
    assert roots and "does not contain rank" in roots[0]["text"] and roots[0]["category"] == "user_config"


def test_a_generic_error_after_a_warn_that_names_nothing_keeps_the_rules_category(tmp_path: Path) -> None:
    warn = "proxy.cc:1043 NCCL WARN [Proxy Service 2] Failed to execute operation Connect from rank 2, retcode 3"
    assert _job(tmp_path, [warn], INTERNAL)["category"] == "software"


def _primary(root_line: int, rank: int | None = 2) -> Finding:
    r = rec(INTERNAL, node="n1", rank=rank, line=root_line, file="rank2.log", time=100.0)
    return Finding("rules", "software", "root", 0.5, "internal error", node="n1", rank=rank, time=100.0,
                   rule="nccl-internal-error", records=[r])


def _scan(*warns: Any) -> Any:
    return SimpleNamespace(exemplars={("t1", "n1"): list(warns)})


def test_only_a_warn_above_the_root_line_of_the_same_rank_and_node_decides() -> None:
    ring = "graph/search.cc:1010 NCCL WARN Error : ring 0 does not contain rank 3"
    above = rec(ring, node="n1", rank=2, line=8, file="rank2.log", time=99.0)
    found = warn_payload(_scan(above), _primary(10))
    assert found is not None and found.category == "user_config" and found.records == [above]
    assert warn_payload(_scan(rec(ring, node="n1", rank=2, line=12, file="rank2.log", time=101.0)), _primary(10)) is None
    assert warn_payload(_scan(rec(ring, node="n1", rank=5, line=8, file="rank2.log", time=99.0)), _primary(10)) is None
    assert warn_payload(_scan(rec(ring, node="n1", rank=2, line=8, file="rank2.log", time=10.0)), _primary(300)) is None
    other = _primary(10)
    other.rule = "cuda-illegal-address"  # a specific rule: its own line says what failed
    assert warn_payload(_scan(above), other) is None
