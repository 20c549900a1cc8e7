"""The node level when two levels agree alike with the hosts the lines name, and a launcher's local-rank file
names (``local0-stderr.log``), which are never nodes."""

from __future__ import annotations

from pathlib import Path

from l4lite.ingest.attribution import names_no_node
from l4lite.ingest.layout import infer_level
from l4lite.ingest.reader import IngestOptions, iter_records
from l4lite.records import Accounting

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
def test_a_file_of_a_folder_naming_no_machine_takes_the_host_its_middle_names(tmp_path: Path) -> None:
    """``logs/`` holds two nodes' consoles; only one's sampled ends name its host, so the folder stands for that
    host. The other's lines name their own host once, mid-file (torchelastic's rendezvous names its agent
    ``<host>_<pid>_0``): read through, that file is its host's, not the folder's."""
    logs = tmp_path / "logs"
    logs.mkdir()
    step = "I1205 18:09:{:02d}.000000 {} train.py:57] step {} loss 2.5\n"
    (logs / "000-console.log").write_text("".join(
        f"I1205 18:09:{i:02d}.000000 22659 run.py:80] host=a100-rack2-14 step {i}\n" for i in range(50)))
    (logs / "001-console.log").write_text(
        "".join(step.format(i, 22668, i) for i in range(25))
        + "W1205 18:09:25.000000 22668 torch/distributed/elastic/rendezvous/dynamic_rendezvous.py:1298] The node "
          "'a100-rack2-15_22668_0' has failed to shutdown the rendezvous 'run-127' due to an error\n"
        + "".join(step.format(i, 22668, i) for i in range(26, 50)))
    recs = list(iter_records([str(tmp_path)], IngestOptions(), Accounting()))
    assert {r.node for r in recs if r.file.endswith("001-console.log")} == {"a100-rack2-15"}
    assert {r.node for r in recs if r.file.endswith("000-console.log")} == {"a100-rack2-14"}
