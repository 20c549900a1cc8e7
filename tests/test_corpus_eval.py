"""The real-corpus evaluation: planting excerpts in 8-node jobs, and the pinned scores on both parts.

``fixtures/real/corpus.jsonl`` is split by source thread into a dev part (rules and classifiers are written from
it) and a held-out part (never looked at while writing them). The pins below are the scores reached on each
part, in all three layouts, minus a small margin: a change that loses ground on logs the rules were not written
from fails here, by metric and part. Reproduce the tables with

    l4lite eval --corpus fixtures/real/corpus.jsonl
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from l4lite.errors import L4Error
from l4lite.evaluate.corpus import (
    confusion,
    evaluate_corpus,
    format_confusion,
    format_corpus,
    format_corpus_confusion,
    load_corpus,
)
from l4lite.evaluate.planting import LAYOUTS, NODES, Excerpt, JobPlanter, is_kernel_line

CORPUS = Path(__file__).resolve().parent.parent / "fixtures" / "real" / "corpus.jsonl"
CI_LAYOUT = "rank-files"  # the layout whose hosts are only inside the lines
MARGIN = 0.03  # percentage points (as a fraction) a pin may lose to noise from corpus growth
# Scores reached (the lowest of the three layouts; category and top-1 raised 2026-12-05 when job-wide faults were
# printed by every node whatever host their thread names; held-out category raised 2026-12-06 when a DataLoader
# worker's error was read as the error it carries; on 2026-12-06 the planted syslog header was written as rsyslog
# writes it, its hour two digits, so kernel lines on the 10th to the 31st carry a time: held-out category
# 64.0 -> 64.5 and phase 93.0 -> 92.5 in the lowest layouts; held-out category lowered 64.5 -> 63.5 on 2026-12-06
# when the learned model was retrained without held-out and score-only text, two held-out excerpts read
# otherwise; dev 85.3 -> 86.4 and held-out 63.5 -> 64.0 on 2026-12-07 when a generic rule's framing alone, the
# words its own examples print around its mechanism, was no longer read by the learned model, and again with 120
# more labelled lines and the retrained model); see docs/evaluation.md for the tables.
PINS: dict[str, dict[str, float]] = {  # 477 excerpts: dev 221 from 216 sources, holdout 256 from 244 sources
    "dev": {"status": 0.991, "category": 0.864, "top1": 0.978, "phase": 0.956, "evidence_f1": 0.994},
    "holdout": {"status": 0.984, "category": 0.640, "top1": 0.922, "phase": 0.925, "evidence_f1": 0.943},
}
# False incidents on the healthy excerpts, the highest of the three layouts (dev 44 healthy, holdout 56: one job
# is 2.3 and 1.8 points); held-out lowered from 7.1 % on 2026-12-05 by the finished-rank check of undated host lines.
CEILINGS: dict[str, dict[str, float]] = {"dev": {"false_incident_rate": 0.023},
                                         "holdout": {"false_incident_rate": 0.054}}

XID = Excerpt(
    id="t-xid", source_group="t#1", split="dev", status="incident", category="gpu_hardware", phase="train",
    faulty="gpu3", lines=("[Tue May 14 09:12:01 2024] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.",
                          "RuntimeError: CUDA error: unspecified launch failure"),
)
NAMED = Excerpt(
    id="t-named", source_group="t#2", split="dev", status="incident", category="network", phase="train",
    faulty="worker-23", lines=("worker-23:83:2526 [0] misc/socket.cc:503 NCCL WARN Net : Call to recv from "
                               "10.0.0.9<41468> failed : Connection timed out",),
)


def _read(job: Path) -> dict[str, list[str]]:
    return {p.relative_to(job).as_posix(): p.read_text(encoding="utf-8").splitlines()
            for p in sorted(job.rglob("*")) if p.is_file() and p.name != "ground_truth.json"}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_planted_lines_are_where_the_truth_says_and_kernel_lines_go_to_the_kernel_log(tmp_path, layout) -> None:
    job = JobPlanter(XID, seed=3).write(layout, tmp_path / layout)
    files = _read(job.path)
    truth = json.loads((job.path / "ground_truth.json").read_text())
    assert len(truth["node_names"]) == NODES and truth["faulty_nodes"] == [truth["node_names"][JobPlanter(XID, 3).faulty_node]]
    planted = [files[e["file"]][e["line"] - 1] for e in truth["evidence"]]
    assert len(planted) == len(XID.lines)
    assert all(any(x in p for x in XID.lines) for p in planted)
    xid_at = next(e["file"] for e in truth["evidence"] if "Xid" in files[e["file"]][e["line"] - 1])
    assert is_kernel_line(XID.lines[0]) and ("kern" in xid_at or xid_at.startswith("syslog/"))
    cascades = sum("Watchdog" in ln or "Broken pipe" in ln or "closed by" in ln or "SIGTERM" in ln
                   or "Killing subprocess" in ln or "signal: 15" in ln for lines in files.values() for ln in lines)
    assert cascades >= NODES - 1  # every healthy node reacts
    assert 150 < sum(len(v) for v in files.values()) < 1500  # small jobs


def test_rank_files_name_their_host_only_inside_the_lines(tmp_path) -> None:
    job = JobPlanter(XID, seed=1).write("rank-files", tmp_path / "j")
    hosts = json.loads((job.path / "ground_truth.json").read_text())["node_names"]
    for name in _read(job.path):
        assert name.startswith("syslog/") or not any(h in name for h in hosts)


def test_planting_is_deterministic_and_takes_the_names_the_excerpt_uses(tmp_path) -> None:
    a = JobPlanter(NAMED, seed=7).write("srun-merged", tmp_path / "a")
    b = JobPlanter(NAMED, seed=7).write("srun-merged", tmp_path / "b")
    assert _read(a.path) == _read(b.path)
    assert a.truth["faulty_nodes"] == ["worker-23"]


def test_a_bad_corpus_line_is_named(tmp_path) -> None:
    bad = tmp_path / "c.jsonl"
    bad.write_text('{"id": "x", "source_group": "g", "split": "dev", "status": "incident", "lines": []}\nnot json\n')
    with pytest.raises(L4Error, match=r"c\.jsonl:2"):
        load_corpus(bad)


def test_the_confusion_matrix_counts_truth_against_the_verdict_in_every_layout(tmp_path) -> None:
    # an analyser that calls every fault a network one: the gpu excerpt lands off the diagonal in each layout
    def network(job: Path) -> dict:
        return {"status": "incident", "category": "network", "phase": "train", "suspects": [], "evidence": []}

    healthy = Excerpt(id="t-ok", source_group="t#3", split="dev", status="healthy", category=None, phase=None,
                      faulty=None, lines=("all good",))
    score = evaluate_corpus([XID, NAMED, healthy], splits=("dev",), analyzer=network, workdir=tmp_path)
    matrix = confusion(score.boards["dev"].results)
    assert matrix == {"gpu_hardware": {"network": len(LAYOUTS)}, "network": {"network": len(LAYOUTS)}}
    assert score.to_dict()["dev"]["confusion"] == matrix
    table = format_confusion(matrix).splitlines()
    assert table[2].split() == ["gpu_hardware", ".", str(len(LAYOUTS)), str(len(LAYOUTS)), "0"]
    assert table[-1].split() == ["total", "0", str(2 * len(LAYOUTS)), str(2 * len(LAYOUTS)), str(len(LAYOUTS))]
    assert format_corpus_confusion(score).startswith("dev: category confusion")


@pytest.fixture(scope="module")
def corpus_score():
    if not CORPUS.exists():
        pytest.skip("fixtures/real/corpus.jsonl is not in this checkout")
    # One layout keeps CI within its time (the three layouts plant 1,431 jobs); every layout is pinned at the
    # lowest, so each must hold them. `l4lite eval --corpus` scores all three.
    return evaluate_corpus(load_corpus(CORPUS), layouts=(CI_LAYOUT,))


@pytest.mark.parametrize("split", ["dev", "holdout"])
def test_real_corpus_scores_hold(corpus_score, split, capsys) -> None:
    with capsys.disabled():
        if split == "dev":
            print("\n" + format_corpus(corpus_score))
    for layout in [*corpus_score.layouts(split), None]:
        got = corpus_score.summary(split, layout)
        low = {k: got[k] for k, pin in PINS[split].items() if got[k] is not None and got[k] < pin - MARGIN}
        assert not low, f"{split} {layout or 'overall'}: below the pins {PINS[split]}: {low}"
        high = {k: got[k] for k, top in CEILINGS[split].items() if got[k] is not None and got[k] > top + MARGIN}
        assert not high, f"{split} {layout or 'overall'}: above the ceilings {CEILINGS[split]}: {high}"


def test_eval_corpus_prints_the_confusion_matrix_when_asked(tmp_path, capsys) -> None:
    from l4lite.cli.main import main

    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"id": "t-named", "source_group": "t#2", "split": "dev", "status": "incident",
                                  "category": "network", "phase": "train", "faulty": "worker-23",
                                  "lines": list(NAMED.lines)}) + "\n")
    args = ["eval", "--corpus", str(corpus), "--split", "dev", "--layouts", CI_LAYOUT, "-q"]
    assert main(args) == 0
    assert "category confusion" not in capsys.readouterr().out
    assert main([*args, "--confusion"]) == 0
    out = capsys.readouterr().out
    assert "dev: category confusion (truth x predicted, jobs of every layout)" in out
    assert "truth \\ pred" in out
