"""The node level when two levels agree alike with the hosts the lines name, and a launcher's local-rank file
names (``local0-stderr.log``), which are never nodes."""

from __future__ import annotations

from l4lite.ingest.attribution import names_no_node
from l4lite.ingest.layout import infer_level

RUN = [f"run/{h}/{f}" for h in ("a100-rack2-14", "a100-rack2-15")
       for f in ("console.log", "rank0/stderr.log", "rank1/stderr.log")]


def test_a_folder_spelling_out_the_host_beats_one_that_holds_every_file() -> None:
    """``run/<host>/rank0/``: only one node's lines name their host; ``run`` agrees with it as well as the host
    folder does, but the host folder spells it out and sorts the other node's files apart."""
    own = {"run/a100-rack2-14/console.log": "a100-rack2-14", "run/a100-rack2-14/rank0/stderr.log": "a100-rack2-14"}
    level = infer_level(RUN, own, {"a100-rack2-14"})
    assert level.depth == 1 and not level.aliases


def test_local_rank_file_names_are_no_nodes() -> None:
    """torchelastic's local rank spelled in a file name (``local0-stderr.log``) repeats on every node: it
    neither names a node nor makes the host folders above it look like kinds of files."""
    assert names_no_node("local0") and names_no_node("local-1")
    assert not names_no_node("localhost1")
    rels = [f"run/{h}/{f}" for h in ("cpu-node-a", "cpu-node-b")
            for f in ("console.log", "local0-stderr.log", "local1-stderr.log")]
    own = {"run/cpu-node-a/console.log": "cpu-node-a", "run/cpu-node-b/console.log": "cpu-node-b"}
    level = infer_level(rels, own, {"cpu-node-a", "cpu-node-b"})
    assert level.depth == 1 and level.names == ["cpu-node-a", "cpu-node-b"]
