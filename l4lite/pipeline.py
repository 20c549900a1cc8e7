"""The one composition of the stages: ``analyze(paths, options) -> Incident``.

The CLI, ``tail``, the evaluator and the Dask engine all reuse these parts, so there is one pipeline:

- ``scan_job(paths, options) -> JobScan``: discover files, read records (ingest), mine templates, match rules,
  parse metrics and markers, in one streaming pass with bounded memory.
- ``diagnose(scan, options, baseline_scans) -> Incident``: run the detectors, localise, assemble the incident
  (tail calls it on its sliding state; the Dask engine after merging shard scans).
- ``analyze(paths, options) -> Incident``: both, plus baselines, context lines around the evidence, and the
  history store (cross-job baseline, fault library, recording the analysis) when one is configured.
"""

from __future__ import annotations

import gzip
import os
import re
import time
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from l4lite.assemble import build_incident
from l4lite.chartdata import build_extra
from l4lite.detect.base import Detector, Finding
from l4lite.detect.filters import FilterDetector
from l4lite.detect.health import HealthDetector
from l4lite.detect.iforest import IsolationForestDetector
from l4lite.errors import L4Error
from l4lite.incident import Incident
from l4lite.localize import Localizer
from l4lite.records import Accounting
from l4lite.runs import ShapeRun
from l4lite.scan import JobScan, Scanner

ProgressFn = Callable[[int, int, int], None]  # (bytes done, bytes total, records so far)


@dataclass
class AnalyzeOptions:
    """Everything ``analyze`` needs to know; the CLI flags map onto these fields one to one."""

    window_seconds: float | None = None  # None: windows.DEFAULT_WINDOW, bounded by the job's length
    baselines: list[str] = field(default_factory=list)  # healthy job paths for cross-job filtering
    rules_files: list[str] = field(default_factory=list)
    node_from: str | None = None  # regex with a group naming the node in a file's relative path
    store: str | None = None  # history store path; None means no store
    tag: str | None = None  # history key override
    jobs: int = 1
    scheduler: str | None = None
    quiet: bool = False
    progress: ProgressFn | None = None
    bucket_seconds: float = 5.0
    context_lines: int = 3
    max_context_entries: int = 40


# ---------------------------------------------------------------------- building blocks
def load_rules(options: AnalyzeOptions) -> Any:
    """The rule pack (shipped rules plus ``--rules`` files), or None when the rule pack is not installed."""
    try:
        from l4lite.rulepack import RulePack
    except ImportError:  # pragma: no cover - a partial install
        return None
    return RulePack.load(list(options.rules_files))


def new_miner() -> Any:
    from l4lite.mining import TemplateMiner

    return TemplateMiner()


def detectors(options: AnalyzeOptions, rules: Any, baseline_scans: Sequence[JobScan] = (),
              baseline_rates: dict[str, float] | None = None) -> list[Detector]:
    """The detectors of a diagnosis, fitted on the baselines where they learn from them."""
    out: list[Detector] = []
    try:
        from l4lite.detect.rules import RuleDetector
    except ImportError:  # pragma: no cover - a partial install
        RuleDetector = None  # type: ignore[assignment,misc]  # noqa: N806
    if RuleDetector is not None and rules is not None:
        out.append(RuleDetector(rules))
    out.append(HealthDetector())
    filters = FilterDetector(baseline_rates=baseline_rates)
    for b in baseline_scans:
        filters.fit(b)
    out.append(filters)
    out.append(IsolationForestDetector(window_seconds=options.window_seconds))
    return out


def scan_job(paths: Sequence[str], options: AnalyzeOptions, *, rules: Any = None, miner: Any = None) -> JobScan:
    """One streaming pass over a job's files."""
    from l4lite.sources import discover

    accounting = Accounting()
    job = discover(list(paths), accounting)
    return scan_files(job.files, job.root, options, accounting=accounting, rules=rules, miner=miner)


def scan_files(files: Sequence[Any], root: str, options: AnalyzeOptions, *, accounting: Accounting | None = None,
               rules: Any = None, miner: Any = None) -> JobScan:
    """Scan some of a job's files (``sources.InputFile`` from ``sources.discover``): one shard, or all of them.

    Shards of one job scanned separately merge with ``JobScan.merge`` followed by ``JobScan.remap_nodes``.
    """
    from l4lite.gctune import fewer_collections
    from l4lite.ingest import IngestOptions, read_file

    started = time.perf_counter()
    accounting = accounting if accounting is not None else Accounting()
    rules = rules if rules is not None else load_rules(options)
    ingest = IngestOptions(node_from=options.node_from, year=job_year(files))
    scanner = Scanner(miner if miner is not None else new_miner(), rules, bucket_seconds=options.bucket_seconds,
                      root=root)
    total = sum(f.size for f in files)
    done = 0
    n = 0
    report = options.progress
    with fewer_collections():
        for input_file in files:
            records = read_file(input_file, ingest, accounting, runs=True)
            if report is None:
                scanner.add_many(records)
            else:
                due = n + 20000 - n % 20000
                for record in records:
                    scanner.add(record)
                    n += len(record) if type(record) is ShapeRun else 1
                    if n >= due:
                        report(done, total, n)
                        due = n + 20000 - n % 20000
            done += input_file.size
            if report is not None:
                report(done, total, n)
    if rules is not None:
        for w in getattr(rules, "warnings", []):
            accounting.warn(w)
    scan = scanner.finish(accounting, ingest.rank_map.as_dict())
    scan.info.setdefault("nodes", len(scan.node_last))
    scan.info["scan_seconds"] = round(time.perf_counter() - started, 3)
    return scan


_YEAR_DATE = re.compile(r"(?<!\d)(20\d\d)[-/.](?:0[1-9]|1[0-2])[-/.](?:0[1-9]|[12]\d|3[01])(?!\d)")
_YEAR_CTIME = re.compile(r"\b(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) \w{3} +\d{1,2} \d\d:\d\d:\d\d (20\d\d)\b")


def job_year(files: Sequence[Any], head_lines: int = 50, max_files: int = 256) -> int | None:
    """The year most of a job's dated lines carry, read from the first lines of its largest files.

    Formats without a year (glog ``W0625 20:51:06``, syslog ``May  7 ...``) otherwise take the year of the
    file's modification time, and a job copied or simulated long after it ran would have one of its files in
    another year than the rest; the job's own dated lines are the better guess. The largest files are the main
    logs; a job of 100,000 small files is not opened twice for this.
    """
    years: Counter[int] = Counter()
    if len(files) > max_files:
        files = sorted(files, key=lambda f: -(getattr(f, "size", 0) or 0))[:max_files]
    for f in files:
        path = getattr(f, "path", None)
        if not path or path == "-":
            continue
        try:
            opener = gzip.open if getattr(f, "compressed", False) else open
            with opener(path, "rt", encoding="utf-8", errors="replace") as fh:  # type: ignore[operator]
                for n, line in enumerate(fh):
                    if n >= head_lines:
                        break
                    m = _YEAR_DATE.search(line) or _YEAR_CTIME.search(line)
                    if m:
                        years[int(m.group(1))] += 1
        except (OSError, EOFError, zlib.error):  # unreadable, truncated or corrupt: ingest warns about it
            continue
    return years.most_common(1)[0][0] if years else None


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
        from l4lite.history import job_key

        rates = store.baseline_templates(job_key(scan, options.tag)) or None
    findings = run_detectors(scan, detectors(options, rules, baseline_scans, rates))
    verdict = Localizer(baseline_rates=baseline_rates(baseline_scans, rates)).localize(scan, findings)
    elapsed = (seconds if seconds is not None else 0.0) + time.perf_counter() - started
    incident = build_incident(scan, verdict, seconds=elapsed)
    if store is not None and incident.is_incident:
        matched = store.match_fault(incident)
        if matched:
            from l4lite.history import describe_match

            incident.matched_fault = matched
            incident.summary = incident.summary.rstrip(".") + f"; {describe_match(matched)}."
            incident.recommendations.insert(0, describe_match(matched)[0].upper() + describe_match(matched)[1:] + ".")
    incident.extra = build_extra(scan, verdict, incident, options.window_seconds)
    return incident


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
    from l4lite.history import Store

    return Store(options.store)


def analyze(paths: Sequence[str], options: AnalyzeOptions) -> Incident:
    """Scan the job (and any baselines), diagnose, add context lines, record the analysis in the store."""
    started = time.perf_counter()
    rules = load_rules(options)
    scan = _scan(paths, options, rules)
    quiet = replace(options, progress=None)
    baseline_scans = [_scan([b], quiet, rules) for b in options.baselines]
    store = open_store(options)
    try:
        incident = diagnose(scan, options, baseline_scans, rules=rules, store=store)
        incident.stats["seconds"] = round(time.perf_counter() - started, 3)
        add_context(incident, scan.root, options.context_lines, options.max_context_entries)
        if store is not None:
            from l4lite.history import job_key

            job_id = store.record_analysis(incident, scan, job_key(scan, options.tag), job_path=scan.root)
            incident.job["history_id"] = job_id
    finally:
        if store is not None:
            store.close()
    return incident


def _scan(paths: Sequence[str], options: AnalyzeOptions, rules: Any) -> JobScan:
    if options.jobs > 1 or options.scheduler:
        try:
            from l4lite import engine
        except ImportError as exc:
            raise L4Error("parallel analysis (--jobs/--scheduler) is not available in this build") from exc
        return engine.scan_job_parallel(paths, options)  # type: ignore[attr-defined,no-any-return]
    return scan_job(paths, options, rules=rules)


# ---------------------------------------------------------------------- context lines
def add_context(incident: Incident, root: str, radius: int = 3, max_entries: int = 40) -> None:
    """Fill ``Evidence.context`` with the lines around each of the first evidence entries (one read per file)."""
    if radius <= 0 or not root or root == "-":
        return
    wanted: dict[str, list[Any]] = {}
    for ev in incident.evidence[:max_entries]:
        wanted.setdefault(ev.file, []).append(ev)
    for rel, entries in wanted.items():
        path = rel if os.path.isabs(rel) else os.path.join(root, rel)
        lines_needed: set[int] = set()
        for ev in entries:
            end = ev.end_line or ev.line
            lines_needed.update(range(max(1, ev.line - radius), min(end, ev.line + 20) + radius + 1))
        got = _read_lines(path, lines_needed)
        if not got:
            continue
        for ev in entries:
            end = min(ev.end_line or ev.line, ev.line + 20)
            ev.context = [{"line": n, "text": got[n]} for n in range(max(1, ev.line - radius), end + radius + 1)
                          if n in got]


def _read_lines(path: str, numbers: set[int], max_chars: int = 500) -> dict[int, str]:
    """Lines of a log file numbered as ingest numbers them: read through ``sources`` (gzip whatever the name,
    UTF-16, NUL bytes, only newlines end lines: a progress bar's carriage returns do not)."""
    from l4lite.sources import discover, open_lines

    if not numbers:
        return {}
    last = max(numbers)
    out: dict[int, str] = {}
    accounting = Accounting()
    try:
        job = discover([path], accounting)
    except L4Error:
        return {}
    if not job.files:
        return {}
    lines = open_lines(job.files[0], accounting, max_line_chars=max_chars)
    try:
        for n, text in lines:
            if n > last:
                break
            if n in numbers:
                out[n] = text
    finally:
        lines.close()
    return out
