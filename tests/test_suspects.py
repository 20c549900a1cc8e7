"""Each suspect carries the category its own findings give: a peer that only lost the failed node carries none."""

from __future__ import annotations

from test_localize import NODES, _scan, finding

from l4lite.diagnose.localize import localize
from l4lite.diagnose.suspects import OTHERS_CAP


def test_peers_with_only_consequences_carry_no_category_of_their_own() -> None:
    root = finding("n3", 1051.0, rule="xid-79", category="gpu_hardware")
    lost = [finding(n, 1651.0, role="cascade", category="network", score=0.35, rule="nccl-socket-closed",
                    text="NCCL WARN socketProgress: Connection reset by peer") for n in NODES if n != "n3"]
    v = localize(_scan(), lost + [root])
    assert v.category == "gpu_hardware"
    assert v.suspects[0].node == "n3" and v.suspects[0].category == "gpu_hardware"
    peers = v.suspects[1:]
    assert peers and all(s.category is None for s in peers)
    assert all(s.score <= v.suspects[0].score * OTHERS_CAP + 1e-9 for s in peers)


def test_a_peer_with_a_root_line_of_its_own_keeps_that_lines_category() -> None:
    root = finding("n3", 1051.0, rule="xid-79", category="gpu_hardware")
    second = finding("n1", 1300.0, rule="ib-link-down", category="network", score=0.9, line=7)
    v = localize(_scan(), [root, second])
    by_node = {s.node: s for s in v.suspects}
    assert v.suspects[0].node == "n3" and by_node["n1"].category == "network"
