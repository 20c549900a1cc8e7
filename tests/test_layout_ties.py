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


def test_output_folders_beside_numbered_node_folders_are_no_nodes() -> None:
    """With no host in any line, ``worker-0/``, ``worker-1/`` and ``10.0.0.12/`` are the machines of the level;
    ``checkpoints/`` and ``tensorboard/`` beside them hold the run's output and name no node."""
    rels = [f"job/{d}/train.log" for d in ("worker-0", "worker-1", "10.0.0.12", "checkpoints", "tensorboard")]
    level = infer_level(rels, {}, ())
    assert level.depth == 1 and level.names == ["10.0.0.12", "worker-0", "worker-1"]


def test_addresses_name_machines() -> None:
    assert not names_no_node("10.0.0.12") and not names_no_node("ip-10-0-0-12")
    assert names_no_node("2026-12-05") and names_no_node("12345")


def test_hosts_named_with_no_digits_stay_nodes() -> None:
    rels = [f"job/{d}/train.log" for d in ("titan", "saturn", "mercury")]
    assert infer_level(rels, {}, ()).names == ["mercury", "saturn", "titan"]
