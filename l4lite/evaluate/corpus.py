"""The real-corpus evaluation: every excerpt of ``fixtures/real/corpus.jsonl`` planted in an 8-node job, in each
layout of ``planting.LAYOUTS``, analysed end to end and scored with the scoreboard's own scoring.

The corpus is split by source (``split`` = dev or holdout, from a hash of the source thread): rules and
classifiers are written from the dev part only, so the holdout part measures how the analyser does on logs it
was not written from. Both parts are always reported, per layout and overall.

Scoring, on top of ``scoreboard.score_job``:

- status over all jobs; category and phase over incident jobs whose label is known;
- the faulty node: the planted node when the excerpt names a faulty node; nothing to blame for a job-wide
  category (numerical, user_config); not scored when the thread names no node for a node fault;
- evidence: the planted lines are one event, so precision is the share of root evidence entries that are
  planted lines and recall is whether any planted line is root evidence.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from l4lite.errors import L4Error
from l4lite.evaluate.calibration import format_calibration
from l4lite.evaluate.planting import LAYOUTS, Excerpt, JobPlanter
from l4lite.evaluate.scoreboard import (
    OURS,
    Analyzer,
    JobResult,
    Scoreboard,
    evaluate,
    format_cell,
    format_table,
    pipeline_analyzer,
    summarize,
)

SPLITS: tuple[str, ...] = ("dev", "holdout")
_REQUIRED = ("id", "source_group", "split", "status", "lines")


@dataclass
class CorpusScore:
    """The scoreboards of one corpus run, per split, with the corpus's size."""

    boards: dict[str, Scoreboard] = field(default_factory=dict)
    excerpts: dict[str, int] = field(default_factory=dict)
    sources: dict[str, int] = field(default_factory=dict)

    def summary(self, split: str, layout: str | None = None) -> dict[str, Any]:
        board = self.boards.get(split, Scoreboard())
        rows = [r for r in board.results if layout is None or r.scenario == layout]
        return summarize(rows)

    def to_dict(self) -> dict[str, Any]:
        return {split: {"excerpts": self.excerpts.get(split, 0), "sources": self.sources.get(split, 0),
                        "overall": self.summary(split),
                        "layouts": {lay: self.summary(split, lay) for lay in self.layouts(split)},
                        "misses": misses(self.boards.get(split, Scoreboard()).results),
                        "confusion": confusion(self.boards.get(split, Scoreboard()).results)}
                for split in self.boards}

    def layouts(self, split: str) -> list[str]:
        return list(dict.fromkeys(r.scenario for r in self.boards.get(split, Scoreboard()).results))


def load_corpus(path: str | Path) -> list[Excerpt]:
    """The corpus's excerpts; ``L4Error`` naming the file and line of the first bad entry."""
    out: list[Excerpt] = []
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise L4Error(f"{path}: cannot read the corpus ({exc.strerror or exc})") from exc
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise L4Error(f"{path}:{n}: not a JSON object ({exc.msg})") from exc
        if not isinstance(row, dict) or any(k not in row for k in _REQUIRED):
            raise L4Error(f"{path}:{n}: a corpus entry needs the fields {', '.join(_REQUIRED)}")
        if row["split"] not in SPLITS or not isinstance(row["lines"], list):
            raise L4Error(f"{path}:{n}: split must be dev or holdout and lines a list")
        out.append(Excerpt(id=str(row["id"]), source_group=str(row["source_group"]), split=row["split"],
                           status=str(row["status"]), category=row.get("category"), phase=row.get("phase"),
                           faulty=row.get("faulty"), lines=tuple(str(x) for x in row["lines"]),
                           source_url=str(row.get("source_url") or ""), kind=str(row.get("kind") or "")))
    return out


def evaluate_corpus(excerpts: Sequence[Excerpt], layouts: Sequence[str] = LAYOUTS, splits: Sequence[str] = SPLITS,
                    seed: int = 0, analyzer: Analyzer | None = None, workdir: str | Path | None = None,
                    progress: Callable[[JobResult], None] | None = None) -> CorpusScore:
    """Plant each excerpt of ``splits`` in every layout, analyse the jobs and score them."""
    run = analyzer or pipeline_analyzer()
    score = CorpusScore()
    with tempfile.TemporaryDirectory(prefix="l4lite-corpus-", dir=workdir) as tmp:
        for split in splits:
            part = [x for x in excerpts if x.split == split]
            score.excerpts[split] = len(part)
            score.sources[split] = len({x.source_group for x in part})
            board = Scoreboard()
            for x in part:
                planter = JobPlanter(x, seed)
                jobs = [planter.write(layout, Path(tmp) / split / layout / x.id).path for layout in layouts]
                board.results.extend(evaluate(jobs, {OURS: run}, progress).results)
            score.boards[split] = board
    return score


def misses(results: Sequence[JobResult]) -> dict[str, list[str]]:
    """Jobs missed per metric (excerpt ids with their layout), so a change shows which ones it moved."""
    out: dict[str, list[str]] = {"status": [], "category": [], "phase": [], "top1": [], "evidence": []}
    for r in results:
        name = f"{r.job}@{r.scenario}"
        if r.pred_status != r.truth_status:
            out["status"].append(name)
        if r.category_ok is False:
            out["category"].append(name)
        if r.phase_ok is False:
            out["phase"].append(name)
        if r.top(1) is False:
            out["top1"].append(name)
        prf = r.evidence_prf()
        if prf is not None and prf[2] < 1.0:
            out["evidence"].append(name)
    return out


def confusion(results: Sequence[JobResult]) -> dict[str, dict[str, int]]:
    """Truth x predicted category counts over the jobs whose category is scored, all layouts summed: which
    category takes which is what a category score alone hides, and counts name no excerpt."""
    out: dict[str, dict[str, int]] = {}
    for r in results:
        if r.category_ok is None or r.truth_category is None:
            continue
        row = out.setdefault(r.truth_category, {})
        pred = r.pred_category or "none"
        row[pred] = row.get(pred, 0) + 1
    return out


def format_confusion(matrix: dict[str, dict[str, int]]) -> str:
    """The matrix as a table: one row per true category, one column per predicted one, totals and the diagonal."""
    truths = sorted(matrix)
    preds = sorted({p for row in matrix.values() for p in row} | set(truths))
    header = ["truth \\ pred"] + [p[:8] for p in preds] + ["total", "right"]
    rows = []
    for t in truths:
        row = matrix[t]
        rows.append([t] + [str(row.get(p, 0) or ".") for p in preds]
                    + [str(sum(row.values())), str(row.get(t, 0))])
    total = sum(sum(r.values()) for r in matrix.values())
    right = sum(matrix[t].get(t, 0) for t in truths)
    rows.append(["total"] + [str(sum(matrix[t].get(p, 0) for t in truths)) for p in preds]
                + [str(total), str(right)])
    return format_table(header, rows)


def format_corpus_confusion(score: CorpusScore) -> str:
    """The category confusion of each split, printed under the tables by ``l4lite eval --corpus --confusion``."""
    parts: list[str] = []
    for split in score.boards:
        parts += [f"{split}: category confusion (truth x predicted, jobs of every layout)",
                  format_confusion(confusion(score.boards[split].results)), ""]
    return "\n".join(parts).rstrip()


_COLUMNS = [("jobs", "jobs", "d"), ("status", "status", "%"), ("detected", "detect", "%"),
            ("false_incident_rate", "false_inc", "%"), ("category", "categ", "%"), ("phase", "phase", "%"),
            ("top1", "top1", "%"), ("top3", "top3", "%"), ("evidence_precision", "ev_P", "f"),
            ("evidence_recall", "ev_R", "f"), ("evidence_f1", "ev_F1", "f"), ("seconds_per_job", "s/job", "s")]


def format_corpus(score: CorpusScore) -> str:
    """Two aligned tables (dev, holdout), one row per layout and one overall."""
    parts: list[str] = []
    header = ["layout"] + [c[1] for c in _COLUMNS]
    for split in score.boards:
        rows = [[lay] + [format_cell(score.summary(split, lay).get(k), f) for k, _, f in _COLUMNS]
                for lay in score.layouts(split)]
        rows.append(["overall"] + [format_cell(score.summary(split).get(k), f) for k, _, f in _COLUMNS])
        lines = format_table(header, rows).splitlines()
        parts += [f"{split}: {score.excerpts.get(split, 0)} excerpts from {score.sources.get(split, 0)} sources, "
                  f"{len(score.layouts(split))} layouts", *lines,
                  format_calibration(score.summary(split)["calibration"]), ""]
    return "\n".join(parts).rstrip()
