"""A collective that gathers every rank's failure and raises one report on each rank (torch.distributed.checkpoint's
``CheckpointException``, real job 175: the first node's checkpoint mount read-only under an FSDP2 save) quotes each
failure under a header naming its rank. On the other node's ranks those quotes are copies, not failures of their
own: the job is not one whose every node failed alike, and the quoted ranks' node is the one to blame."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from l4lite.api import analyze
from l4lite.detect.base import Finding
from l4lite.diagnose.traits import quoted_elsewhere
from l4lite.ingest.relay import quoted_ranks
from l4lite.records import Record

REPO = Path(__file__).resolve().parents[1]
EROFS = REPO / "fixtures" / "real_jobs" / "175-fsdp-erofs"


def _finding(node: str, rank: int, text: str) -> Finding:
    rec = Record(file=f"{node}/console.log", line=40, end_line=60, node=node, rank=rank, gpu=None, source="stderr",
                 time=None, level=None, message=text.splitlines()[-1], text=text)
    return Finding("rules", "storage", "root", 0.6, "read-only", node=node, rank=rank, records=[rec])


QUOTE = ("[rank{r}]: Traceback (most recent call last): (RANK {q})\n"
         "[rank{r}]:   File \"torch/distributed/checkpoint/filesystem.py\", line 422, in _write_files_from_queue\n"
         "[rank{r}]: OSError: [Errno 30] Read-only file system: '/ckpt/step-20/__{q}_0.distcp'")


def test_the_ranks_a_record_quotes() -> None:
    assert quoted_ranks(QUOTE.format(r=2, q=0)) == {0}
    assert quoted_ranks("[rank2]: Traceback (most recent call last):\nRuntimeError: boom") == set()


def test_a_quote_of_another_node_s_rank_is_not_the_node_s_own_failure() -> None:
    scan = SimpleNamespace(rank_nodes={0: "node-a", 1: "node-a", 2: "node-b", 3: "node-b"})
    assert quoted_elsewhere(scan, _finding("node-b", 2, QUOTE.format(r=2, q=0)))  # type: ignore[arg-type]
    assert not quoted_elsewhere(scan, _finding("node-a", 1, QUOTE.format(r=1, q=0)))  # type: ignore[arg-type]
    # a rank no line places on a node, or a traceback of the rank's own, leaves the finding its own
    assert not quoted_elsewhere(scan, _finding("node-b", 2, QUOTE.format(r=2, q=7)))  # type: ignore[arg-type]
    own = "[rank2]: Traceback (most recent call last):\nOSError: [Errno 30] Read-only file system"
    assert not quoted_elsewhere(scan, _finding("node-b", 2, own))  # type: ignore[arg-type]


@pytest.mark.skipif(not EROFS.is_dir(), reason="real job 175 not present")
def test_a_checkpoint_failure_every_rank_reports_is_read_on_the_ranks_it_names() -> None:
    inc = analyze([str(EROFS)])
    assert inc.scope == "node"
    assert inc.suspects[0].node == "h100-sxm-031"
    assert (inc.category, inc.phase) == ("storage", "checkpoint")
