"""The scoreboard: metric arithmetic with fake analysers, the two L4 baselines, rendering and the eval command."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from l4lite.cli.main import main
from l4lite.evaluate.scoreboard import (
    BASELINES,
    BaselineRunner,
    default_analyzers,
    evaluate,
    format_scoreboard,
    job_paths,
    load_truth,
    norm_node,
    score_job,
    summarize,
)
from l4lite.simulate import JobSpec, generate

SCENARIOS = ["healthy", "xid79_fallen_off_bus", "ib_link_down", "user_code_error", "loss_divergence"]


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    root = tmp_path_factory.mktemp("suite")
    jobs = []
    for k, name in enumerate(SCENARIOS):
        job = root / f"{k:03d}-{name}"
        generate(JobSpec(name, nodes=3, gpus_per_node=2, iterations=40, seed=100 + k,
                         layout=("per-node-dir", "per-rank-file", "merged-slurm")[k % 3]), job)
        jobs.append(job)
    return jobs


def perfect(job: Path) -> Mapping[str, Any]:
    t = load_truth(job)
    if t["status"] != "incident":
        return {"status": "healthy", "suspects": [], "evidence": [], "category": None, "phase": None}
    return {"status": "incident", "category": t["category"], "phase": t["phase"],
            "scope": "node" if t["faulty_nodes"] else "global",
            "suspects": [{"node": n, "score": 1.0} for n in t["faulty_nodes"]],
            "evidence": [{"file": e["file"], "line": e["line"], "end_line": e["line"], "role": "root"}
                         for e in t["evidence"]]}


def test_perfect_answers_score_one(suite: list[Path]) -> None:
    board = evaluate(suite, {"perfect": perfect})
    s = board.summary("perfect")
    for key in ("detected", "top1", "top3", "top5", "phase", "category", "evidence_precision", "evidence_recall",
                "evidence_f1"):
        assert s[key] == 1.0, key
    assert s["false_incident_rate"] == 0.0
    assert s["jobs"] == len(SCENARIOS) and s["incident_jobs"] == len(SCENARIOS) - 1
    assert s["lines_per_second"] > 0


def test_wrong_answers_score_zero_and_healthy_false_alarm_counts(suite: list[Path]) -> None:
    def wrong(job: Path) -> Mapping[str, Any]:
        t = load_truth(job)
        others = [n for n in t["node_names"] if n not in t["faulty_nodes"]]
        return {"status": "incident", "category": "unknown", "phase": "shutdown", "scope": "node",
                "suspects": [{"node": others[0]}], "evidence": [{"file": "nope.log", "line": 1, "role": "root"}]}

    s = evaluate(suite, {"wrong": wrong}).summary("wrong")
    assert s["top1"] == s["top5"] == 0.0  # global faults blamed a node: wrong too
    assert s["phase"] == s["category"] == 0.0
    assert s["evidence_precision"] == s["evidence_recall"] == s["evidence_f1"] == 0.0
    assert s["false_incident_rate"] == 1.0 and s["detected"] == 1.0


def test_rank_of_the_true_node_sets_top_k(suite: list[Path]) -> None:
    job = suite[1]
    t = load_truth(job)
    others = [n for n in t["node_names"] if n not in t["faulty_nodes"]]
    inc = {"status": "incident", "suspects": [{"node": others[0]}, {"node": others[1]}, {"node": t["faulty_nodes"][0]}]}
    r = score_job(job, t, inc, "x", 1.0)
    assert (r.node_rank, r.top(1), r.top(3), r.top(5)) == (3, False, True, True)
    # Node names match without the domain and case-blind; IP-style names match dotted IPs.
    assert norm_node("DGX017.cluster.local") == norm_node("dgx017") == "dgx017"
    assert norm_node("10.0.3.17") == norm_node("10-0-3-17")


def test_global_fault_is_right_only_without_a_blamed_node(suite: list[Path]) -> None:
    job = suite[3]
    t = load_truth(job)
    assert t["faulty_nodes"] == []
    assert score_job(job, t, {"status": "incident", "suspects": []}, "x", 1.0).top(1) is True
    assert score_job(job, t, {"status": "incident", "scope": "global", "suspects": [{"node": "a"}]}, "x", 1.0).top(1)
    assert score_job(job, t, {"status": "incident", "suspects": [{"node": t["node_names"][0]}]}, "x", 1.0).top(5) is False


def test_evidence_ranges_precision_and_recall(suite: list[Path]) -> None:
    job = suite[4]  # loss divergence: several evidence lines in rank files
    t = load_truth(job)
    ev = t["evidence"]
    assert len(ev) >= 4
    first = ev[0]
    same_file = sorted(e["line"] for e in ev if e["file"] == first["file"])
    covering = {"file": str(job / first["file"]), "line": same_file[0], "end_line": same_file[-1], "role": "root"}
    miss = {"file": first["file"], "line": 10**6, "role": "root"}
    ignored = {"file": ev[1]["file"], "line": ev[1]["line"], "role": "cascade"}  # not root: not predicted
    r = score_job(job, t, {"status": "incident", "evidence": [covering, miss, ignored]}, "x", 1.0)
    p, rc, f1 = r.evidence_prf()
    assert p == 0.5
    assert rc == pytest.approx(len(same_file) / len(ev))
    assert f1 == pytest.approx(2 * p * rc / (p + rc))
    no_pred = score_job(job, t, {"status": "incident", "evidence": []}, "x", 1.0)
    assert no_pred.evidence_prf() == (0.0, 0.0, 0.0)


def test_a_crashing_analyser_is_scored_as_no_answer(suite: list[Path]) -> None:
    def boom(job: Path) -> Mapping[str, Any]:
        raise RuntimeError("kaboom")

    board = evaluate(suite[:2], {"boom": boom})
    assert all(r.error == "RuntimeError: kaboom" and r.pred_status is None for r in board.results)
    s = board.summary("boom")
    assert s["errors"] == 2 and s["top1"] == 0.0
    assert "analyser error" in format_scoreboard(board)


def test_baselines_blame_nodes_from_error_lines(suite: list[Path]) -> None:
    runner = BaselineRunner()
    board = evaluate(suite, {name: runner.analyzer(name) for name in BASELINES})
    assert board.methods() == list(BASELINES)
    by = {(r.method, r.scenario): r for r in board.results}
    xid = by[("Error_time", "xid79_fallen_off_bus")]
    assert xid.pred_status == "incident" and xid.faulty[0] in xid.suspects
    # A job-wide fault gets a node blamed by both baselines: they cannot tell global from local.
    for name in BASELINES:
        assert by[(name, "user_code_error")].top(1) is False
        assert by[(name, "xid79_fallen_off_bus")].phase_ok is None  # baselines do not predict phase
        assert by[(name, "xid79_fallen_off_bus")].evidence_prf() is None
    assert summarize([r for r in board.results if r.method == "Error_time"])["jobs"] == len(SCENARIOS)


def test_ground_truth_is_not_handed_to_the_analyser(suite: list[Path]) -> None:
    for job in suite:
        paths = job_paths(job)
        assert paths and not any(p.endswith("ground_truth.json") for p in paths)


def test_table_is_aligned_and_json_round_trips(suite: list[Path]) -> None:
    board = evaluate(suite, {"perfect": perfect})
    text = format_scoreboard(board)
    blocks = [b.splitlines() for b in text.split("\n\n")]
    for block in blocks:
        table = block[1:]
        assert len({len(line.rstrip()) for line in table[:2]}) == 1  # header and rule line up
    assert "loss_divergence" in text and "overall" in text
    data = json.loads(json.dumps(board.to_dict()))
    assert data["methods"]["perfect"]["overall"]["top1"] == 1.0
    assert len(data["jobs"]) == len(SCENARIOS)


def test_eval_command_on_a_suite(suite: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_json = tmp_path / "scores.json"
    assert main(["eval", str(suite[0].parent), "--baselines-only", "-q", "--json", str(out_json)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Overall") and "Error_time" in out and "Error_count" in out
    data = json.loads(out_json.read_text())
    assert set(data["methods"]) == set(BASELINES)
    assert main(["eval", str(suite[1]), "--baselines-only", "-q", "--json"]) == 0  # one job, JSON on stdout
    assert json.loads(capsys.readouterr().out)["methods"]["Error_time"]["overall"]["jobs"] == 1
    assert main(["eval", str(tmp_path / "missing"), "--baselines-only"]) == 2


def test_a_pipeline_that_cannot_be_imported_stops_the_evaluation(monkeypatch: pytest.MonkeyPatch) -> None:
    # a broken import inside the package must not drop our row from the table and leave the baselines' rows
    import sys

    monkeypatch.setitem(sys.modules, "l4lite.api", None)
    with pytest.raises(ImportError):
        default_analyzers()
    assert set(default_analyzers(baselines_only=True)) == set(BASELINES)
