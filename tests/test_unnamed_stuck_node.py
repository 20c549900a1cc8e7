"""A hang whose stuck node no line names: its ranks' files, copied with the whole job into one folder, end on no
node (the scan keys them ``rank:N``). Its silent ranks are still the job's, and the verdict is the unnamed node
that every other rank waited for, not the named node whose ranks only timed out."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from l4lite.api import analyze
from l4lite.detect.hang import rank_facts
from l4lite.options import AnalyzeOptions
from l4lite.scan.jobscan import is_host

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import archive_variants as av  # noqa: E402

JOB = ROOT / "fixtures" / "real_jobs" / "164-deepspeed-cpu_throttle"  # cpu-node-a throttled; cpu-node-b timed out


@pytest.mark.parametrize("transform", ["submit-host-folder", "job-id-folder"])
def test_the_stuck_node_no_line_names_is_the_suspect(transform: str, tmp_path: Path) -> None:
    job = av.Job(JOB.name, JOB, av.load_job(JOB), {}, [])
    variant = av.TRANSFORMS[transform](job)
    av.write_variant(variant, tmp_path / "v")
    incident = analyze([str(tmp_path / "v" / variant.target)], AnalyzeOptions(store=None))
    top = incident.suspects[0]
    assert not is_host(top.node) and top.node == "rank:0", incident.summary  # rank 0's node, named by no line
    assert all(s.node != "cpu-node-b" for s in incident.suspects[:1])
    assert incident.phase == "train" and incident.iteration == 13
    got = av.verdict_of(incident.to_dict(), variant, job)
    # its own last lines are the evidence: the throttled node's last steps, from its console
    assert {("cpu-node-a/console.log", 148), ("cpu-node-a/console.log", 155)} <= got.evidence, got.evidence


def test_ranks_of_no_placed_file_are_known_and_silent(tmp_path: Path) -> None:
    from l4lite.api import job_paths
    from l4lite.scan.job import scan_job

    job = av.Job(JOB.name, JOB, av.load_job(JOB), {}, [])
    variant = av.TRANSFORMS["submit-host-folder"](job)
    av.write_variant(variant, tmp_path / "v")
    scan = scan_job(job_paths([str(tmp_path / "v" / variant.target)]), AnalyzeOptions(store=None))
    facts = rank_facts(scan)
    assert facts.unplaced == {0: "rank:0"} and facts.known[0] is None
    assert set(facts.timed_out) == {2, 3}
