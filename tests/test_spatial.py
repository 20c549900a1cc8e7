"""One node's setup or the whole job's, told by who printed the error (``diagnose.spatial``)."""

from __future__ import annotations

from pathlib import Path

from scan_helpers import DigitMiner, rec

from l4lite.api import analyze
from l4lite.detect.base import Finding
from l4lite.diagnose.localize import localize
from l4lite.diagnose.spatial import node_setup, rank_own
from l4lite.scan.scanner import JobScan, scan_records

JOBS = Path(__file__).resolve().parent.parent / "fixtures" / "real_jobs"
NODES = ["n1", "n2", "n3"]
BAD_TOKEN = "IndexError: index out of range in self"
NO_IFACE = "RuntimeError: [enforce fail at device.cc:84] ifa != nullptr. Unable to find address for: ib0"
LOST = "RuntimeError: [pair.cc:553] Connection closed by peer [10.0.0.2]:5279"


def _scan() -> JobScan:
    records = [rec(f"initialized process group: rank {2 * k + j}", node=node, rank=2 * k + j, time=1000.0,
                   line=1, file=f"{node}/rank{2 * k + j}.log") for k, node in enumerate(NODES) for j in range(2)]
    return scan_records(records, DigitMiner())


def _said(node: str, ranks: list[int], files: list[str]) -> Finding:
    recs = [rec(NO_IFACE, node=node, rank=r, time=1001.0, line=2, file=f) for r, f in zip(ranks, files, strict=True)]
    return Finding("rules", "user_config", "root", 0.8, "no such interface", node=node, rank=ranks[0], time=1001.0,
                   rule="gloo-no-interface", records=recs, data={"scope": "global", "ranks": ranks})


def _lost(but: str) -> list[Finding]:
    out = []
    for k, node in enumerate(NODES):
        if node != but:
            r = rec(LOST, node=node, rank=2 * k, time=1030.0, line=3, file=f"{node}/rank{2 * k}.log")
            out.append(Finding("rules", "unknown", "cascade", 0.35, "peer gone", node=node, rank=2 * k,
                               time=1030.0, rule="gloo-connection-closed", records=[r]))
    return out


def test_every_rank_of_one_node_printing_it_names_that_node() -> None:
    said = _said("n2", [2, 3], ["n2/rank2.log", "n2/rank3.log"])
    findings = [said, *_lost("n2")]
    assert node_setup(_scan(), findings, said) == "n2"
    v = localize(_scan(), findings)
    assert v.scope == "node" and v.suspects[0][0] == "n2" and v.category == "user_config"


def test_a_second_node_printing_it_keeps_it_job_wide() -> None:
    said = _said("n2", [2, 3], ["n2/rank2.log", "n2/rank3.log"])
    other = _said("n3", [4, 5], ["n3/rank4.log", "n3/rank5.log"])
    findings = [said, other, *_lost("n2")]
    assert node_setup(_scan(), findings, said) is None
    assert localize(_scan(), findings).scope == "global"


def test_one_process_or_one_file_is_not_enough() -> None:
    alone = _said("n2", [2], ["n2/rank2.log"])
    assert node_setup(_scan(), [alone, *_lost("n2")], alone) is None
    pasted = _said("n2", [2, 3], ["n2/rank2.log", "n2/rank2.log"])  # several processes' lines in one log
    assert node_setup(_scan(), [pasted, *_lost("n2")], pasted) is None
    beside_kernel = _said("n2", [2, 3], ["n2/rank2.log", "n2/kern.log"])  # a node's kernel log is no rank's
    beside_kernel.records[1].source = "kernel"
    assert node_setup(_scan(), [beside_kernel, *_lost("n2")], beside_kernel) is None
    spread = _said("n2", [2, 3], ["n2/rank2.log", "n2/rank3.log"])  # two files, but not the same error line
    spread.records[1].text = "RuntimeError: NCCL error: invalid usage, NCCL_SOCKET_IFNAME=ib0"
    assert node_setup(_scan(), [spread, *_lost("n2")], spread) is None


def test_without_peers_that_lost_them_nothing_says_the_others_were_spared() -> None:
    said = _said("n2", [2, 3], ["n2/rank2.log", "n2/rank3.log"])
    assert node_setup(_scan(), [said], said) is None


def test_real_jobs_one_node_s_setup_against_every_node_s() -> None:
    # a wrong GLOO_SOCKET_IFNAME on one node, then on every node; a data disk never staged on one node, then on all
    for job, node in [("083-ddp-bad_env", "cpu-node-b"), ("091-ddp-missing_file", "a100-rack2-15"),
                      ("089-ddp-bad_env_all", None), ("092-lightning-missing_file_all", None)]:
        incident = analyze(JOBS / job)
        assert incident.category == "user_config", job
        assert [s.node for s in incident.suspects[:1]] == ([node] if node else []), job


def _sibling_lost(node: str, rank: int) -> Finding:
    r = rec(LOST, node=node, rank=rank, time=1030.0, line=3, file=f"{node}/rank{rank}.log")
    return Finding("rules", "network", "cascade", 0.35, "peer gone", node=node, rank=rank, time=1030.0,
                   rule="gloo-connection-closed", records=[r])


def _token(category: str, rule: str) -> Finding:
    r = rec(BAD_TOKEN, node="n2", rank=2, time=1001.0, line=2, file="n2/rank2.log")
    return Finding("rules", category, "root", 0.8, "index out of range", node="n2", rank=2, time=1001.0,
                   rule=rule, records=[r], data={"scope": "global", "ranks": [2]})


def test_one_rank_s_error_that_its_node_s_other_rank_only_lost_is_that_rank_s_own() -> None:
    config, data = _token("user_config", "index-config"), _token("data", "index-batch")
    findings = [config, data, _sibling_lost("n2", 3), *_lost("n2")]
    own = rank_own(_scan(), findings, config)
    assert own is not None and (own.node, own.rank, own.reading) == ("n2", 2, data)
    v = localize(_scan(), findings)
    assert v.scope == "node" and v.suspects[0][0] == "n2" and v.category == "data"


def test_one_rank_s_error_stays_job_wide_when_its_node_s_other_ranks_left_no_line() -> None:
    # one process's log kept, as a thread shows it: nothing says its node's other ranks were spared
    config = _token("user_config", "index-config")
    findings = [config, *_lost("n2")]
    assert rank_own(_scan(), findings, config) is None
    v = localize(_scan(), findings)
    assert v.scope == "global" and v.category == "user_config"
    # a rank of its node that printed the error too: not one rank's own
    both = _said("n2", [2, 3], ["n2/rank2.log", "n2/rank2.log"])
    assert rank_own(_scan(), [both, _sibling_lost("n2", 3), *_lost("n2")], both) is None


def test_real_jobs_one_rank_s_bad_token_names_its_node_as_data() -> None:
    for job, node in [("086-ddp-bad_token", "dgx-b200-03"), ("088-fabric-bad_token", "node0422")]:
        incident = analyze(JOBS / job)
        assert incident.category == "data", job
        assert [s.node for s in incident.suspects[:1]] == [node], job


def _merged(node_file: str) -> tuple[Finding, list[Finding]]:
    """Two tracebacks of n2's launcher task, both read as one rank (the task's label), in ``node_file``; the other
    nodes' ranks lose them in a job's merged log."""
    tb = "Traceback (most recent call last):\n  File \"train.py\", line 69, in main\n" + NO_IFACE
    recs = [rec(tb, node="n2", rank=1, time=1001.0, line=line, file=node_file) for line in (9, 32)]
    said = Finding("rules", "user_config", "root", 0.8, "no such interface", node="n2", rank=1, time=1001.0,
                   rule="gloo-no-interface", records=recs, data={"scope": "global", "ranks": [1]})
    lost = []
    for k, node in [(0, "n1"), (2, "n3")]:
        r = rec(LOST, node=node, rank=k, time=1030.0, line=60 + k, file="slurm-1.out")
        lost.append(Finding("rules", "unknown", "cascade", 0.35, "peer gone", node=node, rank=k, time=1030.0,
                            rule="gloo-connection-closed", records=[r]))
    return said, lost


def test_two_tracebacks_of_one_node_s_task_in_a_job_s_merged_log_are_two_processes() -> None:
    said, lost = _merged("slurm-1.out")
    assert node_setup(_scan(), [said, *lost], said) == "n2"
    # the same two tracebacks in a log of that node's alone: one machine's account, as before
    alone, lost = _merged("n2/run.log")
    assert node_setup(_scan(), [alone, *lost], alone) is None


def test_real_job_srun_merged_one_node_s_setup_names_it() -> None:
    incident = analyze(JOBS / "096-ddp-bad_env_srun")
    assert incident.category == "user_config" and [s.node for s in incident.suspects[:1]] == ["compute-beta"]
