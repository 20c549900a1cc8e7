"""A rank that leaves with status 0 and no word of its own is the peer the others lost (real jobs 134, 137)."""

from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from l4lite.api import AnalyzeOptions, analyze
from l4lite.detect.hang import HangDetector, RankFacts
from l4lite.evaluate.scoreboard import job_paths
from l4lite.records import Record
from l4lite.scan.job import load_rules, scan_job

JOBS = Path(__file__).resolve().parent.parent / "fixtures" / "real_jobs"


def _hang_findings(job: Path) -> list:
    options = AnalyzeOptions()
    return HangDetector().detect(scan_job(job_paths(job), options, rules=load_rules(options)))


@pytest.mark.parametrize(("job", "node", "rank"), [("134-ddp-exit0", "trn-sjc2-r08-n4", 3),
                                                   ("137-hf-exit0", "cpu-node-b", 2)])
def test_the_rank_no_line_reports_failing_is_the_one_that_left(job: str, node: str, rank: int) -> None:
    """Every other rank lost its connection to a peer and none timed out: the quiet rank left first. 137's rank
    printed nothing with its rank on it: it is the rank number missing on the node that shows fewer ranks."""
    found = [f for f in _hang_findings(JOBS / job) if f.data.get("signal") == "vanished_rank"]
    assert [(f.node, f.rank) for f in found] == [(node, rank)]
    inc = analyze(job_paths(JOBS / job), AnalyzeOptions()).to_dict()
    assert inc["suspects"][0]["node"] == node
    # its agent recorded no failure for it: it ended with status 0, its own code's doing, and its node's other
    # lines (its node-mate's lost peer, its agent's lost store) are not what it said
    assert inc["category"] == "software" and f"rank {rank} printed no error" in inc["summary"]


def test_a_rank_with_an_error_of_its_own_is_no_vanished_one(tmp_path: Path) -> None:
    """The same job with the quiet rank's own traceback: a crash, which the rules read, not a silent exit."""
    job = tmp_path / "job"
    shutil.copytree(JOBS / "134-ddp-exit0", job)
    stderr = next((job / "trn-sjc2-r08-n4" / "torchelastic").glob("*/attempt_0/1/stderr.log"))
    with stderr.open("a") as f:
        f.write("[rank3]: Traceback (most recent call last):\n"
                '[rank3]:   File "/app/train.py", line 88, in main\n'
                "[rank3]:     batch = next(it)\n"
                "[rank3]: ValueError: shard index 9 is out of range\n")
    assert not [f for f in _hang_findings(job) if f.data.get("signal") == "vanished_rank"]


def _facts(gone: set[int]) -> RankFacts:
    known = {0: "a", 1: "a", 2: "b", 3: "b", 4: "c", 5: "c"}
    def lost(r: int) -> Record:
        text = f"[rank{r}]: RuntimeError: Connection closed by peer [10.0.0.9]:4242"
        return Record(file=f"{known[r]}/console.log", line=r + 1, end_line=r + 1, node=known[r], rank=r, gpu=None,
                      source="trainer", time=None, level="error", message=text, text=text)
    # the agents' failure reports list the ranks that lost their peer (pid by rank), not one that ended with 0
    return RankFacts(known=known, peer_gone={r: [lost(r)] for r in gone}, pids={r: 1000 + r for r in gone})


def test_a_whole_node_gone_quiet_is_no_rank_that_left() -> None:
    """Both ranks of node c said nothing while the others lost a peer: the node failed as a whole (its own lines,
    if any, are read by the rules), not one rank that left while its node-mate lived on to report it."""
    scan = SimpleNamespace(rank_nodes={})
    assert HangDetector()._vanished(_facts({0, 1, 2, 3}), scan) == []
    found = HangDetector()._vanished(_facts({0, 1, 2, 3, 4}), scan)
    assert [(f.node, f.rank) for f in found] == [("c", 5)]


def test_a_quiet_rank_no_failure_report_accounts_for_is_no_rank_that_left() -> None:
    """Every other rank lost a peer but no launcher report lists the quiet rank's node-mate (planted cascades, a
    launcher that reports nothing), or the report lists the quiet rank itself: nothing says it ended with 0."""
    scan = SimpleNamespace(rank_nodes={})
    unreported = _facts({0, 1, 2, 3, 4})
    unreported.pids = {r: 1000 + r for r in (0, 1, 2, 3)}
    assert HangDetector()._vanished(unreported, scan) == []
    listed = _facts({0, 1, 2, 3, 4})
    listed.pids[5] = 1005
    assert HangDetector()._vanished(listed, scan) == []


def test_a_jax_process_that_died_without_a_word_is_the_one_its_peers_lost() -> None:
    """JAX's processes run without a launcher that reports: every other process's coordination client says the
    service found another task dead. 232: process 0, the service's own host, was SIGKILLed, so no process names
    it; its node-mate's report shows its node lived on. No report says how it ended: no category."""
    found = [f for f in _hang_findings(JOBS / "232-jax-sigkill") if f.data.get("signal") == "vanished_rank"]
    assert [(f.node, f.rank, f.category) for f in found] == [("node0421", 0, "unknown")]
    inc = analyze(job_paths(JOBS / "232-jax-sigkill"), AnalyzeOptions()).to_dict()
    assert inc["suspects"][0]["node"] == "node0421"


@pytest.mark.parametrize("job", ["074-jax-sigkill", "233-jax-eval_exception"])
def test_a_jax_process_the_service_names_or_that_raised_first_is_no_silent_one(job: str) -> None:
    """074: the service names the task whose heartbeats stopped (that line places it). 233: process 3 raised in its
    validation pass; the harness's kill of the hung job minutes later makes every process's client report a dead
    task, process 3's own after its traceback: a crash came first, so no rank left without a word."""
    assert not [f for f in _hang_findings(JOBS / job) if f.data.get("signal") == "vanished_rank"]


def test_without_a_launcher_a_rank_alone_on_its_silent_node_is_no_vanished_one() -> None:
    """No launcher's report and no node-mate that lost it: a node that failed as a whole, not a rank that left."""
    known = {0: "a", 1: "b", 2: "b"}

    def lost(r: int) -> Record:
        text = "F1207 client.h:80] Terminating process: this most likely indicates that another task died"
        return Record(file=f"{known[r]}/process_{r}.log", line=1, end_line=1, node=known[r], rank=r, gpu=None,
                      source="trainer", time=None, level="critical", message=text, text=text)
    facts = RankFacts(known=known, peer_gone={r: [lost(r)] for r in (1, 2)})
    scan = SimpleNamespace(rank_nodes=known, node_ranks={}, metrics=[])
    assert HangDetector()._vanished(facts, scan) == []  # type: ignore[arg-type]
