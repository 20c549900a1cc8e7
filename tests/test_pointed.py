"""Nodes the other ranks point at (``diagnose.pointed``): the odd rank of a check that compared every rank with the
others. The lines are written for these tests, in the words of DistributedDataParallel's parameter check."""

from __future__ import annotations

from scan_helpers import DigitMiner, rec

from l4lite.detect.base import Finding
from l4lite.diagnose.localize import localize
from l4lite.diagnose.pointed import odd_rank, odd_rank_node
from l4lite.scan.scanner import JobScan, scan_records

NODES = ["n1", "n2", "n3"]
CHECK = "RuntimeError: DDP expects same model across all ranks, but Rank {me} has {n} params, while rank {other} " \
        "has inconsistent {m} params."


def _scan() -> JobScan:
    records = [rec(f"initialized process group: rank {2 * k + j}", node=node, rank=2 * k + j, time=1000.0,
                   line=1, file=f"{node}/rank{2 * k + j}.log") for k, node in enumerate(NODES) for j in range(2)]
    return scan_records(records, DigitMiner())


def _findings(odd: int, speakers: range = range(6)) -> list[Finding]:
    """Every speaking rank's line: the odd rank names rank 0 (or 1 when it is rank 0), the others name it."""
    out = []
    for k, node in enumerate(NODES):
        recs = []
        for r in (2 * k, 2 * k + 1):
            if r not in speakers:
                continue
            other = (1 if odd == 0 else 0) if r == odd else odd
            text = CHECK.format(me=r, n=40 if r == odd else 28, other=other, m=28 if r == odd else 40)
            recs.append(rec(text, node=node, rank=r, time=1001.0, line=2, file=f"{node}/rank{r}.log"))
        if recs:
            out.append(Finding("rules", "user_config", "root", 0.8, "models differ", node=node, rank=recs[0].rank,
                               time=1001.0, rule="ddp-model-mismatch", records=recs, data={"scope": "global"}))
    return out


def test_the_rank_the_others_name_is_the_odd_one() -> None:
    findings = _findings(odd=3)
    assert odd_rank(findings, findings[0]) == 3
    assert odd_rank_node(_scan(), findings, findings[0]) == "n2"
    v = localize(_scan(), findings)
    assert v.scope == "node" and v.suspects[0][0] == "n2" and v.category == "user_config"


def test_without_a_majority_no_rank_is_named() -> None:
    # two ranks speak and name each other: nothing tells which one differs
    findings = _findings(odd=3, speakers=range(2, 4))
    assert odd_rank(findings, findings[0]) is None
    assert localize(_scan(), findings).scope == "global"
