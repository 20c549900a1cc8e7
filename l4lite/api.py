"""The Python API: ``analyze(paths) -> Incident`` composes the stages, and ``diagnose`` is its second half.

    paths -> ingest (files, job context, records) -> mining (templates) -> scan (one streaming pass: counts,
    rule hits, metrics, phases) -> detect (findings) -> diagnose (suspects, phase, category, evidence) -> Incident

The CLI, ``tail``, the evaluator and the engines reuse these parts, so there is one pipeline:
``scan.job.scan_job`` (one process) or ``scale.engine.scan_job_parallel`` (shards on processes or Dask) give a
``JobScan``; ``diagnose`` runs the detectors and localisation on it (``tail`` calls it on its sliding scan);
``analyze`` does both, plus baselines, context lines and the history store.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Sequence
from typing import Any

from l4lite.detect.base import Detector, Finding
from l4lite.detect.desync import DesyncDetector
from l4lite.detect.filters import FilterDetector
from l4lite.detect.hang import HangDetector
from l4lite.detect.health import HealthDetector
from l4lite.detect.iforest import IsolationForestDetector
from l4lite.detect.rules import RuleDetector
from l4lite.diagnose.assemble import build_incident
from l4lite.diagnose.chartdata import build_extra
from l4lite.diagnose.incident import Incident
from l4lite.diagnose.localize import Localizer
from l4lite.options import AnalyzeOptions, ExecutionOptions
from l4lite.report.context import add_context
from l4lite.scan.job import AttemptScan, attempt_scans, load_rules, scan_job
from l4lite.scan.scanner import JobScan

PathLike = str | os.PathLike[str]


def job_paths(paths: PathLike | Sequence[PathLike]) -> list[str]:
    """One path or several, as strings: ``analyze("job/")`` means one job folder, never its characters."""
    if isinstance(paths, str | os.PathLike):
        return [os.fspath(paths)]
    return [os.fspath(p) for p in paths]


def analyze(paths: PathLike | Sequence[PathLike], options: AnalyzeOptions | None = None,
            execution: ExecutionOptions | None = None) -> Incident:
    """Scan the job (and any baselines), diagnose, add context lines, record the analysis in the store."""
    started = time.perf_counter()
    options = options if options is not None else AnalyzeOptions()
    execution = execution if execution is not None else ExecutionOptions()
    rules = load_rules(options)
    attempts = attempt_scans(job_paths(paths), options, rules=rules)
    scan = attempts[-1].scan if attempts else _scan(job_paths(paths), options, execution, rules)
    quiet = ExecutionOptions(jobs=execution.jobs, scheduler=execution.scheduler)
    baseline_scans = [_scan([b], options, quiet, rules) for b in options.baselines]
    store = open_store(options)
    try:
        if attempts:
            incident, scan = diagnose_attempts(attempts, options, baseline_scans, rules=rules, store=store)
        else:
            incident = diagnose(scan, options, baseline_scans, rules=rules, store=store)
        incident.stats["seconds"] = round(time.perf_counter() - started, 3)
        add_context(incident, scan.root, options.context_lines, options.max_context_entries)
        if store is not None:
            from l4lite.history.store import job_key

            job_id = store.record_analysis(incident, scan, job_key(scan, options.tag), job_path=scan.root)
            incident.job["history_id"] = job_id
    finally:
        if store is not None:
            store.close()
    return incident


def _scan(paths: Sequence[str], options: AnalyzeOptions, execution: ExecutionOptions, rules: Any) -> JobScan:
    if execution.parallel:
        from l4lite.scale.engine import scan_job_parallel

        return scan_job_parallel(paths, options, execution)
    return scan_job(paths, options, rules=rules, progress=execution.progress)


def detectors(options: AnalyzeOptions, rules: Any, baseline_scans: Sequence[JobScan] = (),
              baseline_rates: dict[str, float] | None = None) -> list[Detector]:
    """The detectors of a diagnosis, fitted on the baselines where they learn from them."""
    out: list[Detector] = []
    if rules is not None:
        out.append(RuleDetector(rules))
    out.append(HealthDetector())
    out.append(DesyncDetector())
    out.append(HangDetector())
    filters = FilterDetector(baseline_rates=baseline_rates)
    for b in baseline_scans:
        filters.fit(b)
    out.append(filters)
    out.append(IsolationForestDetector(window_seconds=options.window_seconds))
    return out


def run_detectors(scan: JobScan, dets: Iterable[Detector]) -> list[Finding]:
    findings: list[Finding] = []
    for det in dets:
        findings.extend(det.detect(scan))
    return findings


def diagnose(scan: JobScan, options: AnalyzeOptions, baseline_scans: Sequence[JobScan] = (), *,
             rules: Any = None, store: Any = None, seconds: float | None = None) -> Incident:
    """Detectors and localisation on a scan; the incident (without context lines)."""
    started = time.perf_counter()
    rules = rules if rules is not None else load_rules(options)
    rates = None
    if store is not None:
        from l4lite.history.store import job_key

        rates = store.baseline_templates(job_key(scan, options.tag)) or None
    findings = run_detectors(scan, detectors(options, rules, baseline_scans, rates))
    verdict = Localizer(baseline_rates=baseline_rates(baseline_scans, rates)).localize(scan, findings)
    elapsed = (seconds if seconds is not None else 0.0) + time.perf_counter() - started
    incident = build_incident(scan, verdict, seconds=elapsed)
    if store is not None and incident.is_incident:
        matched = store.match_fault(incident)
        if matched:
            from l4lite.history.store import describe_match

            incident.matched_fault = matched
            incident.summary = incident.summary.rstrip(".") + f"; {describe_match(matched)}."
            incident.recommendations.insert(0, describe_match(matched)[0].upper() + describe_match(matched)[1:] + ".")
    incident.extra = build_extra(scan, verdict, incident, options.window_seconds, options.heatmap)
    return incident


def diagnose_attempts(attempts: Sequence[AttemptScan], options: AnalyzeOptions, baseline_scans: Sequence[JobScan]
                      = (), *, rules: Any = None, store: Any = None) -> tuple[Incident, JobScan]:
    """A restarted job (``ingest.attempts``): each attempt diagnosed on its own files; the verdict is the last
    failed attempt's (the last attempt's when none failed), the others are listed in ``incident.attempts``."""
    incidents = [diagnose(a.scan, options, baseline_scans, rules=rules, store=store) for a in attempts]
    chosen = max((i for i, inc in enumerate(incidents) if inc.is_incident), default=len(incidents) - 1)
    incident = incidents[chosen]
    incident.attempts = attempts_summary(attempts, incidents, chosen)
    later = len(attempts) - 1 - chosen
    if len(attempts) > 1:
        note = f"attempt {attempts[chosen].number} of {len(attempts)}"
        if later:
            note += f"; {later} later attempt{'s' if later > 1 else ''} without a fault"
        incident.summary = incident.summary.rstrip(".") + f" ({note})."
    return incident, attempts[chosen].scan


def attempts_summary(attempts: Sequence[AttemptScan], incidents: Sequence[Incident], chosen: int) -> list[dict]:
    """What the incident says of each attempt: its files and pods, its verdict, its first root line."""
    out = []
    for a, inc in zip(attempts, incidents, strict=True):
        root = next((e for e in inc.evidence if e.role == "root"), inc.evidence[0] if inc.evidence else None) \
            if inc.is_incident else None
        out.append({"attempt": a.number, "verdict": a.number == attempts[chosen].number, "status": inc.status,
                    "category": inc.category, "phase": inc.phase, "iteration": inc.iteration,
                    "failure_time": inc.failure_time, "nodes": [s.node for s in inc.suspects[:3]],
                    "pods": list(a.pods), "files": list(a.files), "summary": inc.summary,
                    "root": None if root is None else {"file": root.file, "line": root.line, "text": root.text[:500]}})
    return out


def baseline_rates(baseline_scans: Sequence[JobScan], rates: dict[str, float] | None) -> dict[str, float]:
    """Template id -> rate per record in healthy jobs: the baseline scans given, and the history store's."""
    out = dict(rates or {})
    for b in baseline_scans:
        total = max(1, sum(st.count for st in b.templates.values()))
        for tid, st in b.templates.items():
            out[tid] = max(out.get(tid, 0.0), st.count / total)
    return out


def open_store(options: AnalyzeOptions) -> Any:
    if options.store is None:
        return None
    from l4lite.history.store import Store

    return Store(options.store)

