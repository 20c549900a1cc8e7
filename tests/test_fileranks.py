"""A process file's rank from its own start-up lines, and its sibling files' by their shared process id."""

from __future__ import annotations

from l4lite.ingest.fileranks import own_rank, process_ids, sibling_ranks


def test_own_rank_needs_the_world_size_beside_it() -> None:
    assert own_rank(["Setting up process group for: env:// [rank=3, world_size=4]"]) == 3
    assert own_rank(["Initializing distributed: GLOBAL_RANK: 5, MEMBER: 6/8"]) == 5
    assert own_rank(["rank=3 loss=1.2", "waiting for rank: 2"]) is None  # a mention of a peer, no world size
    assert own_rank(["rank=7, world_size=4"]) is None  # does not fit in its world


def test_a_file_stating_several_ranks_is_nobodys() -> None:
    lines = ["Setting up process group for: env:// [rank=0, world_size=4]",
             "Setting up process group for: env:// [rank=1, world_size=4]"]
    assert own_rank(lines) is None


def test_siblings_share_the_rank_of_their_process_id() -> None:
    wid = "dc7360d3a06f9364dbfc43c7cc0d8b06ef74b832c0a599c308fa7a37"
    other = "3b5b7bfaefe1404fe9c66b085903e80d6fddad5d405a45e66988198b"
    stated = {f"n2/logs/train/ray-train-sys-worker-{wid}.log": 3, f"n2/logs/train/ray-train-sys-worker-{other}.log": 2}
    rels = [*stated, f"n2/logs/worker-{wid}-01000000-95.err", f"n2/logs/python-core-worker-{other}_96.log",
            "n2/logs/raylet.out", f"n2/logs/worker-{'ab' * 28}-01000000-7.err"]
    assert sibling_ranks(rels, stated) == {f"n2/logs/worker-{wid}-01000000-95.err": 3,
                                           f"n2/logs/python-core-worker-{other}_96.log": 2}
    assert process_ids("session_2026-12-04/logs/raylet.out") == set()


def test_an_id_claimed_by_two_ranks_gives_none() -> None:
    wid = "a" * 40
    stated = {f"x/{wid}-a.log": 1, f"x/{wid}-b.log": 2}
    assert sibling_ranks([*stated, f"x/{wid}.err"], stated) == {}


def test_ray_worker_files_take_their_ranks_and_the_quiet_rank_is_found() -> None:
    """A real Ray Train hang: rank 3 stopped before a step, its peers timed out in gloo. Its worker files are
    named by worker id only; with their ranks known, the hang reading names rank 3, whose only other line is its
    core worker failing to disconnect at shutdown (its own teardown, not a lost peer)."""
    from pathlib import Path

    from l4lite.detect.hang import HangDetector, rank_facts
    from l4lite.options import AnalyzeOptions
    from l4lite.scan.job import scan_job

    job = Path(__file__).resolve().parent.parent / "fixtures" / "real_jobs" / "068-ray-hang"
    scan = scan_job([str(job)], AnalyzeOptions())
    assert scan.rank_nodes == {0: "dgx-b200-03", 1: "dgx-b200-03", 2: "dgx-b200-11", 3: "dgx-b200-11"}
    facts = rank_facts(scan)
    assert 3 not in facts.peer_gone and 3 not in facts.timed_out
    stuck = [(f.node, f.rank) for f in HangDetector().detect(scan)]
    assert stuck == [("dgx-b200-11", 3)]


def test_a_workers_files_take_the_node_whose_raylet_started_it() -> None:
    """Ray's session logs of two nodes in one folder (no node folder): each raylet, placed by its own lines,
    logs the workers it starts by id and its own node id. A worker's files (named by its id) take that raylet's
    node; a file naming only one node's ids (its state dump, its log monitor) takes it too; the head's control
    store names both nodes' ids and stays unplaced, as does an id that raylets of two nodes state."""
    from l4lite.ingest.fileranks import id_hosts, own_id

    a, b, n = "927a06a7" * 7, "8371fbc9" * 7, "5581b3a6" * 7
    assert own_id(f"[2026-12-04 13:53:47,143 I 75 75] (raylet) worker_pool.cc:564: Started worker process with "
                  f"pid 329 worker_id={a}") == a
    assert own_id(f"(raylet) main.cc:711: Setting node ID node_id={n}") == n
    assert own_id(f"(raylet) node_manager.cc:3647: Received KillLocalActor RPC worker_id={a}") is None
    nodes = {"logs/018-raylet.out": "worker-0", "logs/048-raylet.out": "worker-1"}
    started = {"logs/018-raylet.out": {a}, "logs/048-raylet.out": {b, n}}
    named = {"logs/042-debug_state.txt": {n}, "logs/004-gcs_server.out": {a, b, n}}
    rels = ["logs/018-raylet.out", "logs/048-raylet.out", f"logs/035-worker-{a}-01000000-329.err",
            f"logs/051-ray-train-app-worker-{b}.log", "logs/042-debug_state.txt", "logs/004-gcs_server.out"]
    assert id_hosts(rels, nodes.get, started, named) == {
        f"logs/035-worker-{a}-01000000-329.err": "worker-0", f"logs/051-ray-train-app-worker-{b}.log": "worker-1",
        "logs/042-debug_state.txt": "worker-1"}
    started["logs/048-raylet.out"].add(a)  # an id two nodes' raylets state places nothing
    assert f"logs/035-worker-{a}-01000000-329.err" not in id_hosts(rels, nodes.get, started, named)


def test_ray_session_logs_without_node_folders_are_placed_by_their_raylets() -> None:
    """A real Ray job (066) archived as one folder of numbered files: the worker files and the train logs take the
    node whose raylet started their worker, so the driver's failure is blamed on the head again."""
    import sys
    import tempfile
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    sys.path.insert(0, str(root / "benchmarks"))
    from archive_transforms import Job, hosts_in_lines, load_job, write_variant

    from l4lite.api import analyze
    from l4lite.options import AnalyzeOptions

    path = root / "fixtures" / "real_jobs" / "066-ray-exception"
    job = Job(path.name, path, load_job(path), {}, [])
    with tempfile.TemporaryDirectory() as d:
        write_variant(hosts_in_lines(job), Path(d))
        incident = analyze([d], AnalyzeOptions())
    assert incident.suspects and incident.suspects[0].node == "llm-pretrain-7f9c4-worker-0"
