"""A rank set up apart (real job 174: under FSDP2 one rank's model has one more block; nothing compares the ranks'
models, every rank times out in an all-gather): its one trace is the start-up line every rank printed, with another
number. The node that printed it is the one to look at."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from l4lite.api import analyze
from l4lite.diagnose.oddsetup import odd_setup
from l4lite.records import Record

REPO = Path(__file__).resolve().parents[1]
MISMATCH = REPO / "fixtures" / "real_jobs" / "174-fsdp-shard_mismatch"


def _rec(node: str, rank: int, message: str) -> Record:
    return Record(file=f"{node}/console.log", line=8 + rank, end_line=8 + rank, node=node, rank=rank, gpu=None,
                  source="stdout", time=1.0, level="info", message=message, text=message)


def _scan(messages: dict[tuple[str, int], str]) -> SimpleNamespace:
    exemplars: dict[tuple[str, str], list[Record]] = {}
    for (node, rank), msg in messages.items():
        exemplars.setdefault(("T1", node), []).append(_rec(node, rank, msg))
    return SimpleNamespace(node_last={"node-a": (2.0,), "node-b": (2.0,)}, exemplars=exemplars,
                           rank_nodes={0: "node-a", 1: "node-a", 2: "node-b", 3: "node-b"},
                           templates={"T1": SimpleNamespace(count=len(messages))})


def test_one_rank_s_other_number_in_a_line_every_rank_printed_names_its_node() -> None:
    size = "Model tinylm size: {} total parameters"
    scan = _scan({("node-a", 0): size.format("135,040"), ("node-a", 1): size.format("135,040"),
                  ("node-b", 2): size.format("185,024"), ("node-b", 3): size.format("135,040")})
    odd = odd_setup(scan)  # type: ignore[arg-type]
    assert odd is not None and odd.node == "node-b" and odd.category == "user_config"
    assert [r.rank for r in odd.records] == [2]


@pytest.mark.parametrize("values", [
    ("0", "1", "2", "3"),  # each rank its own number (its rank): no odd one
    ("8", "8", "9", "9"),  # each node its own value: a node's setting, two against two
    ("8", "8", "8", "8"),  # all alike
])
def test_numbers_that_do_not_leave_one_node_apart_name_none(values: tuple[str, ...]) -> None:
    scan = _scan({(node, rank): f"rank {v}: 512 batches per epoch"
                  for (node, rank), v in zip([("node-a", 0), ("node-a", 1), ("node-b", 2), ("node-b", 3)], values,
                                             strict=True)})
    assert odd_setup(scan) is None  # type: ignore[arg-type]


@pytest.mark.skipif(not MISMATCH.is_dir(), reason="real job 174 not present")
def test_a_rank_with_another_model_under_fsdp_is_read_on_its_node() -> None:
    inc = analyze([str(MISMATCH)])
    assert inc.suspects[0].node == "llm-pretrain-7f9c4-worker-1"
    assert inc.category == "user_config"


def test_an_error_that_ranks_printed_with_another_number_is_no_start_up_line() -> None:
    """Real job 188: every rank timed out in one collective, rank 0 on its send and the others on their recv; the
    tracebacks read alike but for the transport's source line (129 against 78). An error says nothing of how a
    rank was set up."""
    err = ("RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:{}] "
           "Timed out waiting 30000ms for {} operation to complete")
    scan = _scan({("node-a", 0): err.format(129, "send"), ("node-a", 1): err.format(78, "recv"),
                  ("node-b", 2): err.format(78, "recv"), ("node-b", 3): err.format(78, "recv")})
    for recs in scan.exemplars.values():
        recs[:] = [replace(r, end_line=r.line + 30, text="Traceback (most recent call last):\n" + r.message)
                   for r in recs]
    assert odd_setup(scan) is None  # type: ignore[arg-type]
    # the same words in one-line records at the ERROR level, and as an exception's text, read alike
    plain = _scan({("node-a", 0): err.format(129, "send"), ("node-a", 1): err.format(78, "recv"),
                   ("node-b", 2): err.format(78, "recv"), ("node-b", 3): err.format(78, "recv")})
    assert odd_setup(plain) is None  # type: ignore[arg-type]
