"""A node folder named by its role (``worker-1``, a deployment's pod) loses to the host its lines state as their
writer, wherever in the file they state it; a host the lines only mention (the endpoint a node cannot reach) is
not taken, and with no host stated the folder stays the node."""

from __future__ import annotations

from pathlib import Path

from l4lite.ingest.context import build_context
from l4lite.ingest.files import discover
from l4lite.ingest.rolenames import role_name
from l4lite.records import Accounting

FILLER = "".join(f"W1205 23:45:{i % 60:02d}.100000 4443 train.py:12] step {i} of the warm-up, nothing to see\n"
                 for i in range(900))  # far more than the sampled ends of a file


def _console(host: str | None, pid: int) -> str:
    """A torchrun console whose agent names itself once, mid-file (its rendezvous name holds its own pid)."""
    own = (f"W1205 23:46:34.682000 {pid} torch/distributed/elastic/rendezvous/dynamic_rendezvous.py:1298] The node "
           f"'{host}_{pid}_0' has failed to shutdown the rendezvous 'run-1' due to an error.\n") if host else ""
    return (f"[W1205 23:45:01.310090679 socket.cpp:764] [c10d] The IPv6 network addresses of (gpu-head-07, 29684) "
            f"cannot be retrieved (gai error: -2 - Name or service not known).\n{FILLER}{own}{FILLER}")


def _nodes(root: Path) -> dict[str, str | None]:
    acc = Accounting()
    files = discover([str(root)], acc).files
    ctx = build_context(files, accounting=acc)
    return {f.rel: ctx.node_of(f.rel) for f in files}


def test_a_worker_folder_is_the_host_its_lines_state_mid_file(tmp_path: Path) -> None:
    for i, host in enumerate(("gpu-head-07", "gpu-peer-12")):
        (tmp_path / f"worker-{i}").mkdir()
        (tmp_path / f"worker-{i}" / "console.log").write_text(_console(host, 4400 + i))
    assert _nodes(tmp_path) == {"worker-0/console.log": "gpu-head-07", "worker-1/console.log": "gpu-peer-12"}


def test_a_host_only_mentioned_or_none_leaves_the_folder_as_the_node(tmp_path: Path) -> None:
    # worker-1 names gpu-head-07 only as the endpoint it cannot reach, and itself nowhere
    for i in range(2):
        (tmp_path / f"worker-{i}").mkdir()
        (tmp_path / f"worker-{i}" / "console.log").write_text(_console(None, 4400 + i))
    assert set(_nodes(tmp_path).values()) == {"worker-0", "worker-1"}


def test_a_pod_folder_is_the_host_its_lines_state(tmp_path: Path) -> None:
    pods = ("trainer-7xztvpdbbb-jcs9j", "trainer-7xztvpdbbb-q4wzt")
    for pod, host in zip(pods, ("gpu-head-07", "gpu-peer-12"), strict=True):
        (tmp_path / pod).mkdir()
        (tmp_path / pod / "console.log").write_text(_console(host, 4400 + len(host)))
    assert set(_nodes(tmp_path).values()) == {"gpu-head-07", "gpu-peer-12"}


def test_role_names_are_places_in_the_job_not_machines() -> None:
    assert all(map(role_name, ("worker-1", "rank_0", "pod-3", "node-1", "trainer-7c9d8b4f6d-x2k9p")))
    assert not any(map(role_name, ("node0422", "a100-rack2-15", "gpu-node-1", "llm-pretrain-7f9c4-worker-0",
                                   "dgx-b200-03", "worker")))


def test_files_named_by_their_host_between_a_shared_start_and_end(tmp_path: Path) -> None:
    # ``sbatch --output=%x-%j-%N.out``: no line names either host; the names differ by the host alone
    for i, host in enumerate(("a100-rack2-14", "a100-rack2-15")):
        (tmp_path / f"train-4242-{host}.out").write_text(_console(None, 4400 + i))
    assert _nodes(tmp_path) == {"train-4242-a100-rack2-14.out": "a100-rack2-14",
                                "train-4242-a100-rack2-15.out": "a100-rack2-15"}


def test_sibling_files_named_by_hosts_without_a_digit(tmp_path: Path) -> None:
    # ``%x-%j-%N.out`` of hosts ``cpu-node-a`` and ``cpu-node-b``: no one name reads as a host, the siblings do
    for i, host in enumerate(("cpu-node-a", "cpu-node-b")):
        (tmp_path / f"train-4242-{host}.out").write_text(_console(None, 4400 + i))
    assert _nodes(tmp_path) == {"train-4242-cpu-node-a.out": "cpu-node-a", "train-4242-cpu-node-b.out": "cpu-node-b"}


def test_sibling_names_without_a_digit_yield_to_the_hosts_lines_state(tmp_path: Path) -> None:
    # the lines of one sibling name its writer, another host than its name's part: the names say nothing
    for i, host in enumerate(("cpu-node-a", "cpu-node-b")):
        (tmp_path / f"train-4242-{host}.out").write_text(_console("gpu-peer-12" if i else None, 4400 + i))
    assert _nodes(tmp_path) == {"train-4242-cpu-node-a.out": None, "train-4242-cpu-node-b.out": "gpu-peer-12"}


def test_files_named_by_a_task_id_or_a_rank_name_no_host(tmp_path: Path) -> None:
    from l4lite.ingest.layout import varying_hosts

    assert varying_hosts(["train-4242-0.out", "train-4242-1.out"]) == {}
    assert varying_hosts(["rank0.log", "rank1.log", "gpu0.log", "gpu1.log"]) == {}
    assert varying_hosts(["a/console.log", "b/console.log"]) == {}
    assert varying_hosts(["train-4242-a.out", "train-4242-b.out"]) == {}  # one word: a task's letter
    assert varying_hosts(["stdout-node.log", "stderr-node.log"]) == {}  # kinds
    assert varying_hosts(["train-4242-cpu-node-a.out", "train-4242-gpu-west.out"]) == {}  # no one family
