"""The scoreboard: run analysers on a suite of simulated jobs and score them against the ground truth.

An analyser is any callable ``job_dir -> incident-like dict`` (keys ``status``, ``category``, ``phase``,
``scope``, ``suspects`` [{node, ...}], ``evidence`` [{file, line, end_line, role}]), so the pipeline, the two L4
baselines and test doubles plug in the same way. Metrics follow L4 (Jiang et al., FSE 2025):

- faulty node top-k: the true node among the first k suspects; for a global fault (no faulty node) correct iff
  the analyser blames no node (empty suspects or scope "global");
- phase and category accuracy over incident jobs;
- evidence precision / recall / F1 over failure-indicating lines: predicted = evidence with role "root", an
  entry covers ``line..end_line``; precision = share of predicted entries covering at least one true line,
  recall = share of true lines covered; macro-averaged over incident jobs;
- detection (incident jobs reported as incidents) and false incidents (healthy jobs reported as incidents);
- seconds per job and lines per second.
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from l4lite.errors import L4Error
from l4lite.evaluate.calibration import Scored, calibration, format_calibration, verdict_right

GROUND_TRUTH = "ground_truth.json"
Analyzer = Callable[[Path], Mapping[str, Any]]
OURS = "l4lite"
BASELINES = ("Error_time", "Error_count")
_IP = re.compile(r"^\d+\.\d+\.\d+\.\d+$")


@dataclass
class JobResult:
    """How one method did on one job: the raw counts, so that summaries can be recomputed per scenario."""

    job: str
    scenario: str
    method: str
    truth_status: str
    pred_status: str | None
    faulty: list[str]
    suspects: list[str]
    node_rank: int | None  # 1-based position of a true faulty node among the suspects (0 = correct global)
    node_ok: bool | None  # for global faults: blamed no node
    phase_ok: bool | None
    category_ok: bool | None
    ev_pred: int
    ev_pred_hit: int
    ev_truth: int
    ev_truth_hit: int
    has_evidence: bool
    seconds: float
    lines: int
    error: str | None = None
    node_scored: bool = True  # False: the truth names no node and the fault is not job-wide (nothing to score)
    confidence: float | None = None  # the incident's confidence, to check it against being right
    truth_category: str | None = None  # where the category is scored: the label and the verdict's category,
    pred_category: str | None = None  # so that a confusion matrix shows which category takes which

    def scored(self) -> Scored | None:
        """The confidence with whether node and category were right; None where no verdict can be judged."""
        if self.truth_status != "incident" or self.pred_status != "incident" or self.confidence is None:
            return None
        right = verdict_right(self.top(1), self.category_ok)
        return None if right is None else Scored(float(self.confidence), right)

    def top(self, k: int) -> bool | None:
        """Top-k localisation hit; None for healthy jobs, so they do not dilute localisation accuracy."""
        if self.truth_status != "incident" or not self.node_scored:
            return None
        if not self.faulty:
            return bool(self.node_ok)
        return self.node_rank is not None and self.node_rank <= k

    def evidence_prf(self) -> tuple[float, float, float] | None:
        """Precision, recall and F1 of the root evidence lines; None where there is nothing to score."""
        if self.truth_status != "incident" or not self.ev_truth or not self.has_evidence:
            return None
        p = self.ev_pred_hit / self.ev_pred if self.ev_pred else 0.0
        r = self.ev_truth_hit / self.ev_truth
        return p, r, (2 * p * r / (p + r) if p + r else 0.0)


@dataclass
class Scoreboard:
    """All results of one evaluation run; summaries are derived on demand so they never go stale."""

    results: list[JobResult] = field(default_factory=list)

    def methods(self) -> list[str]:
        return list(dict.fromkeys(r.method for r in self.results))

    def scenarios(self) -> list[str]:
        return list(dict.fromkeys(r.scenario for r in self.results))

    def summary(self, method: str, scenario: str | None = None) -> dict[str, Any]:
        rows = [r for r in self.results if r.method == method and (scenario is None or r.scenario == scenario)]
        return summarize(rows)

    def to_dict(self) -> dict[str, Any]:
        return {
            "methods": {m: {"overall": self.summary(m), "scenarios": {s: self.summary(m, s) for s in self.scenarios()}}
                        for m in self.methods()},
            "jobs": [asdict(r) for r in self.results],
        }


def _mean(values: Iterable[float | bool | None]) -> float | None:
    """Mean of the values that apply (None is skipped, not counted as a miss)."""
    vals = [float(v) for v in values if v is not None]
    return sum(vals) / len(vals) if vals else None


def summarize(rows: Sequence[JobResult]) -> dict[str, Any]:
    """Rates over ``rows``: accuracy metrics over incident jobs only, the false-incident rate over healthy ones."""
    incident = [r for r in rows if r.truth_status == "incident"]
    healthy = [r for r in rows if r.truth_status != "incident"]
    prf = [r.evidence_prf() for r in incident]
    prf_ok = [x for x in prf if x is not None]
    seconds = sum(r.seconds for r in rows)
    lines = sum(r.lines for r in rows)
    return {
        "jobs": len(rows),
        "incident_jobs": len(incident),
        "healthy_jobs": len(healthy),
        "errors": sum(1 for r in rows if r.error),
        "status": _mean(r.pred_status == r.truth_status for r in rows),
        "detected": _mean(r.pred_status == "incident" for r in incident),
        "top1": _mean(r.top(1) for r in incident),
        "top3": _mean(r.top(3) for r in incident),
        "top5": _mean(r.top(5) for r in incident),
        "phase": _mean(r.phase_ok for r in incident),
        "category": _mean(r.category_ok for r in incident),
        "evidence_precision": _mean(p for p, _, _ in prf_ok),
        "evidence_recall": _mean(rc for _, rc, _ in prf_ok),
        "evidence_f1": _mean(f for _, _, f in prf_ok),
        "false_incident_rate": _mean(r.pred_status == "incident" for r in healthy),
        "calibration": calibration([p for p in (r.scored() for r in incident) if p is not None]),
        "seconds_per_job": seconds / len(rows) if rows else None,
        "lines_per_second": lines / seconds if seconds > 0 else None,
    }


# ---------------------------------------------------------------------------------------------- scoring
def norm_node(name: str | None) -> str:
    """Compare node names the way people do: case-blind, without the domain (dgx017 == dgx017.cluster.local)."""
    if not name:
        return ""
    name = name.strip().lower()
    return name.replace(".", "-") if _IP.match(name) else name.split(".")[0]


def _norm_file(path: str, job: Path) -> str:
    p = Path(path)
    if p.is_absolute():
        try:
            p = p.resolve().relative_to(job.resolve())
        except ValueError:
            return p.as_posix()
    s = p.as_posix()
    return s[2:] if s.startswith("./") else s


def _same_file(pred: str, truth: str) -> bool:
    return pred == truth or pred.endswith("/" + truth) or truth.endswith("/" + pred)


def score_job(job: Path, truth: Mapping[str, Any], incident: Mapping[str, Any] | None, method: str,
              seconds: float, error: str | None = None) -> JobResult:
    inc = dict(incident or {})
    faulty = [norm_node(n) for n in truth.get("faulty_nodes") or []]
    suspects = [norm_node(s.get("node")) for s in inc.get("suspects") or [] if isinstance(s, Mapping)]
    status = truth.get("status", "healthy")
    node_rank = next((k + 1 for k, s in enumerate(suspects) if s in faulty), None) if faulty else None
    node_ok = (not suspects or inc.get("scope") == "global") if status == "incident" and not faulty else None
    has_ev = "evidence" in inc and inc.get("evidence") is not None and not inc.get("_no_evidence")
    true_lines = {(e["file"], int(e["line"])) for e in truth.get("evidence") or []}
    roots = [e for e in inc.get("evidence") or [] if isinstance(e, Mapping) and e.get("role") == "root"]
    covered: set[tuple[str, int]] = set()
    hits = 0
    for e in roots:
        try:
            lo = int(e.get("line") or 0)
            hi = int(e.get("end_line") or lo)
        except (TypeError, ValueError):
            continue
        f = _norm_file(str(e.get("file") or ""), job)
        got = {(tf, tl) for tf, tl in true_lines if lo <= tl <= hi and _same_file(f, tf)}
        hits += bool(got)
        covered |= got

    if truth.get("evidence_any") and true_lines:
        # The truth is one event told by several planted lines: recall is whether any of them was found.
        covered = set(list(covered)[:1])
        true_lines = set(list(true_lines)[:1])

    def ok(key: str) -> bool | None:
        if status != "incident" or truth.get(key, "") is None:  # a label the truth leaves open is not scored
            return None
        if key not in inc or inc.get("_no_" + key):
            return None
        return inc.get(key) == truth.get(key)

    category_ok = ok("category")
    return JobResult(
        job=job.name, scenario=str(truth.get("scenario")), method=method, truth_status=status,
        pred_status=inc.get("status") if incident is not None else None, faulty=faulty, suspects=suspects[:5],
        node_rank=node_rank, node_ok=node_ok, phase_ok=ok("phase"), category_ok=category_ok,
        ev_pred=len(roots), ev_pred_hit=hits, ev_truth=len(true_lines), ev_truth_hit=len(covered),
        has_evidence=has_ev, seconds=seconds, lines=int(truth.get("lines") or 0), error=error,
        node_scored=bool(truth.get("node_scored", True)), confidence=_confidence(inc.get("confidence")),
        truth_category=_label(truth.get("category")) if category_ok is not None else None,
        pred_category=_label(inc.get("category")) if category_ok is not None else None,
    )


def _label(value: Any) -> str:
    return str(value) if value is not None else "none"


def _confidence(value: Any) -> float | None:
    try:
        return None if value is None else float(value)
    except (TypeError, ValueError):
        return None


# -------------------------------------------------------------------------------------------- analysers
def job_paths(job: Path) -> list[str]:
    """What to hand an analyser: the job's entries without the ground truth and the generator's notes
    (``_meta/``: how the fault was injected), so that neither can be read as a log."""
    return [str(p) for p in sorted(job.iterdir()) if p.name not in (GROUND_TRUTH, "_meta")]


def pipeline_analyzer() -> Analyzer:
    """``l4lite.api.analyze`` with default options but the report's heatmap (a score needs only the verdict).
    Imported here, not per job: a pipeline that cannot be imported stops the evaluation instead of leaving our
    row out of the table."""
    from l4lite.api import AnalyzeOptions, analyze

    def run(job: Path) -> Mapping[str, Any]:
        return analyze(job_paths(job), AnalyzeOptions(heatmap=False)).to_dict()

    return run


class BaselineRunner:
    """L4's two baselines from one ingest pass per job: the node of the first error-level line (Error_time)
    and the node with the most error-level lines (Error_count). They predict nodes only."""

    def __init__(self) -> None:
        self._job: Path | None = None
        self._result: dict[str, dict[str, Any]] = {}
        self.seconds = 0.0

    def _run(self, job: Path) -> None:
        from l4lite.ingest.reader import IngestOptions, iter_records
        from l4lite.records import Accounting

        started = time.perf_counter()
        first: dict[str, tuple[float, int]] = {}
        counts: Counter[str] = Counter()
        for seq, rec in enumerate(iter_records(job_paths(job), IngestOptions(), Accounting())):
            if rec.level != "error" or not rec.node:
                continue
            counts[rec.node] += 1
            key = (rec.time if rec.time is not None else float("inf"), seq)
            if rec.node not in first or key < first[rec.node]:
                first[rec.node] = key
        by_time = sorted(first, key=lambda n: first[n])
        by_count = sorted(counts, key=lambda n: (-counts[n], first[n]))
        status = "incident" if counts else "healthy"
        base = {"status": status, "scope": "node", "evidence": None, "_no_phase": True, "_no_category": True}
        self._result = {
            "Error_time": {**base, "suspects": [{"node": n, "score": 1.0 / (k + 1)} for k, n in enumerate(by_time)]},
            "Error_count": {**base, "suspects": [{"node": n, "score": counts[n]} for n in by_count]},
        }
        self._job = job
        self.seconds = time.perf_counter() - started

    def analyzer(self, name: str) -> Analyzer:
        def run(job: Path) -> Mapping[str, Any]:
            if self._job != job:
                self._run(job)
            return {**self._result[name], "_seconds": self.seconds}

        return run


def load_truth(job: Path) -> dict[str, Any]:
    path = job / GROUND_TRUTH
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, json.JSONDecodeError) as exc:
        raise L4Error(f"{path}: cannot read the ground truth ({exc})") from exc
    if not isinstance(data, dict) or "status" not in data:
        raise L4Error(f"{path}: not a ground truth file (no 'status')")
    return data


def evaluate(jobs: Sequence[Path], analyzers: Mapping[str, Analyzer],
             progress: Callable[[JobResult], None] | None = None) -> Scoreboard:
    """Run every analyser on every job; an analyser that raises scores as 'no answer' for that job."""
    board = Scoreboard()
    for job in jobs:
        truth = load_truth(job)
        for name, fn in analyzers.items():
            started = time.perf_counter()
            incident, error = None, None
            try:
                incident = fn(job)
            except Exception as exc:  # noqa: BLE001 - one broken job must not stop the scoreboard
                error = f"{type(exc).__name__}: {exc}"
            seconds = time.perf_counter() - started
            if incident is not None and "_seconds" in incident:  # a shared pass (the baselines)
                seconds = float(incident["_seconds"])
            result = score_job(job, truth, incident, name, seconds, error)
            board.results.append(result)
            if progress:
                progress(result)
    return board


def default_analyzers(baselines_only: bool = False) -> dict[str, Analyzer]:
    """Ours (unless ``baselines_only``) and the two baselines."""
    out: dict[str, Analyzer] = {}
    if not baselines_only:
        out[OURS] = pipeline_analyzer()
    runner = BaselineRunner()
    for name in BASELINES:
        out[name] = runner.analyzer(name)
    return out


# -------------------------------------------------------------------------------------------- rendering
_COLUMNS = [("jobs", "jobs", "d"), ("detected", "detect", "%"), ("top1", "top1", "%"), ("top3", "top3", "%"),
            ("top5", "top5", "%"), ("phase", "phase", "%"), ("category", "categ", "%"),
            ("evidence_precision", "ev_P", "f"), ("evidence_recall", "ev_R", "f"), ("evidence_f1", "ev_F1", "f"),
            ("false_incident_rate", "false_inc", "%"), ("seconds_per_job", "s/job", "s"),
            ("lines_per_second", "lines/s", "n")]


def format_cell(value: Any, kind: str) -> str:
    if value is None:
        return "-"
    if kind == "d":
        return str(value)
    if kind == "%":
        return f"{100 * value:.1f}%"
    if kind == "f":
        return f"{value:.3f}"
    if kind == "s":
        return f"{value:.2f}"
    return f"{value:,.0f}"


def format_table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(r[k])) for r in [header, *rows]) for k in range(len(header))]

    def fmt(r: list[str]) -> str:
        return "  ".join(c.ljust(w) if k == 0 else c.rjust(w) for k, (c, w) in enumerate(zip(r, widths, strict=True)))

    return "\n".join([fmt(header), "  ".join("-" * w for w in widths)] + [fmt(r) for r in rows])


def format_scoreboard(board: Scoreboard) -> str:
    """Aligned text: one overall table (methods as rows), then one table per method with its scenarios."""
    header = ["method"] + [c[1] for c in _COLUMNS]
    parts = ["Overall", format_table(header, [[m] + [format_cell(board.summary(m)[k], f) for k, _, f in _COLUMNS]
                                         for m in board.methods()])]
    for m in board.methods():
        rows = [[s] + [format_cell(board.summary(m, s)[k], f) for k, _, f in _COLUMNS] for s in board.scenarios()]
        rows.append(["overall"] + [format_cell(board.summary(m)[k], f) for k, _, f in _COLUMNS])
        parts += ["", f"{m} by scenario", format_table(["scenario"] + [c[1] for c in _COLUMNS], rows)]
    if OURS in board.methods():
        parts += ["", f"{OURS} " + format_calibration(board.summary(OURS)["calibration"])]
    errors = [r for r in board.results if r.error]
    if errors:
        parts += ["", f"{len(errors)} analyser error(s):"] + [f"  {r.method} on {r.job}: {r.error}" for r in errors[:20]]
    return "\n".join(parts)
