"""Every rank timed out in the store, each on another process group's key (real job 183: rank 3 started with
tensor-parallel size 1, the others 2): the rank alone waiting on the earliest group is the one set up apart, and the
launcher's first failure among ranks that all timed out together names no node."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from l4lite.api import analyze
from l4lite.detect.base import Finding
from l4lite.diagnose.storelag import laggard_root, store_laggard
from l4lite.records import Record

REPO = Path(__file__).resolve().parents[1]
TP_MISMATCH = REPO / "fixtures" / "real_jobs" / "183-megatron-tp_mismatch"
NODES = {0: "node-a", 1: "node-a", 2: "node-b", 3: "node-b"}


def _wait(rank: int, group: int) -> Record:
    text = (f"[rank{rank}]: Traceback (most recent call last):\n[rank{rank}]: torch.distributed.DistStoreError: "
            f"wait timeout after 60000ms, keys: /default_pg/0//{group}//cpu//0/1")
    return Record(file=f"{NODES[rank]}/console.log", line=10 + rank, end_line=11 + rank, node=NODES[rank],
                  rank=rank, gpu=None, source="stderr", time=None, level=None, message=text, text=text)


def _findings(groups: dict[int, int]) -> list[Finding]:
    return [Finding("rules", "network", "cascade", 0.5, "store timeout", node=NODES[r], rank=r,
                    records=[_wait(r, g)]) for r, g in groups.items()]


def _scan() -> SimpleNamespace:
    return SimpleNamespace(rank_nodes=dict(NODES), node_last={"node-a": (2.0,), "node-b": (2.0,)})


def test_the_rank_alone_on_the_earliest_group_is_behind() -> None:
    lag = store_laggard(_scan(), _findings({0: 13, 1: 3, 2: 14, 3: 1}))  # type: ignore[arg-type]
    assert lag is not None and (lag.node, lag.rank) == ("node-b", 3)
    primary = Finding("rules", "unknown", "root", 0.9, "first failure", node="node-a", rank=0)
    root = laggard_root(_scan(), _findings({0: 13, 1: 3, 2: 14, 3: 1}), primary)  # type: ignore[arg-type]
    assert root is not None and root.node == "node-b" and [r.rank for r in root.records] == [3]


@pytest.mark.parametrize("groups", [
    {0: 5, 1: 5, 2: 5, 3: 5},  # one group: the layouts agree, no rank is behind
    {0: 1, 1: 1, 2: 14, 3: 13},  # the earliest shared by two ranks
    {0: 13, 1: 3, 2: 14},  # a rank that did not wait: not every rank timed out together
])
def test_waits_that_leave_no_lone_rank_behind_name_none(groups: dict[int, int]) -> None:
    assert store_laggard(_scan(), _findings(groups)) is None  # type: ignore[arg-type]


def test_a_report_quoting_several_ranks_waits_is_no_rank_s_own() -> None:
    findings = _findings({0: 13, 1: 3, 2: 14, 3: 1})
    quoted = _wait(2, 14)
    quoted = replace(quoted, text=quoted.text + "\n" + _wait(3, 1).text)
    findings.append(Finding("rules", "unknown", "cascade", 0.5, "launcher report", node="node-b", rank=2,
                            records=[quoted]))
    lag = store_laggard(_scan(), findings)  # type: ignore[arg-type]
    assert lag is not None and lag.rank == 3


@pytest.mark.skipif(not TP_MISMATCH.is_dir(), reason="real job 183 not present")
def test_a_rank_with_another_tensor_parallel_size_is_read_on_its_node() -> None:
    inc = analyze([str(TP_MISMATCH)])
    assert inc.suspects[0].node == "llm-pretrain-7f9c4-worker-1"
    assert inc.category == "user_config" and inc.phase == "init"
