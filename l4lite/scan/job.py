"""The scan stage driven over a job's files in one process: ingest -> mining -> rules -> ``Scanner``.

``scan_job`` discovers the files; ``scan_files`` scans some of them (one shard, or all). The sharded engines in
``l4lite.scale`` run ``scan_files``' twin (``shards.scan_shard``) on parts of the job and merge the results.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Sequence
from typing import Any, NamedTuple

from l4lite.ingest.attempts import Attempt, attempt_file, first_cri_time, job_attempts
from l4lite.ingest.context import JobContext, build_context
from l4lite.ingest.files import discover
from l4lite.ingest.flight_recorder import read_dumps
from l4lite.ingest.reader import IngestOptions, read_file
from l4lite.ingest.shaperun import ShapeRun
from l4lite.mining.miner import TemplateMiner
from l4lite.options import AnalyzeOptions, ProgressFn
from l4lite.records import Accounting, RotatedStreams
from l4lite.rules.pack import RulePack
from l4lite.scan.gctune import fewer_collections
from l4lite.scan.jobscan import job_nodes
from l4lite.scan.scanner import JobScan, Scanner


def load_rules(options: AnalyzeOptions) -> RulePack:
    """The rule pack: the shipped rules plus the options' ``rules_files`` (loaded once per process, a fresh pack
    of them for each call)."""
    return RulePack.shared(list(options.rules_files))


def new_miner() -> TemplateMiner:
    return TemplateMiner()


def scan_job(paths: Sequence[str], options: AnalyzeOptions, *, rules: Any = None, miner: Any = None,
             progress: ProgressFn | None = None) -> JobScan:
    """One streaming pass over a job's files."""
    accounting = Accounting()
    job = discover(list(paths), accounting)
    scan = scan_files(job.files, job.root, options, accounting=accounting, rules=rules, miner=miner,
                      progress=progress)
    scan.flight_records = read_dumps(job.dumps, scan.accounting)
    return scan


class AttemptScan(NamedTuple):
    """One attempt of a restarted job and the scan of its files."""

    number: int
    files: list[str]
    pods: list[str]
    scan: JobScan


def attempt_scans(paths: Sequence[str], options: AnalyzeOptions, *, rules: Any = None) -> list[AttemptScan]:
    """A job whose pods restarted (``ingest.attempts``): one scan per attempt, in order, each read with the whole
    job's context (its nodes) but its own time span; [] for a job of one attempt (scan it as usual)."""
    if not _restart_names(paths):
        return []
    accounting = Accounting()
    job = discover(list(paths), accounting)
    by_rel = {f.rel: f for f in job.files}
    attempts: list[Attempt] = job_attempts(sorted(by_rel), lambda rel: first_cri_time(by_rel[rel].path),
                                           lambda a, b: _head(by_rel[a].path) == _head(by_rel[b].path))
    if len(attempts) < 2:
        return []
    rules = rules if rules is not None else load_rules(options)
    whole = job_context(job.files, options, accounting)
    out = []
    for attempt in attempts:
        files = [by_rel[r] for r in attempt.files]
        own = build_context(files, options.node_from)
        context = dataclasses.replace(whole, start=own.start, end=own.end)
        acc = accounting if attempt is attempts[-1] else Accounting()
        scan = scan_files(files, job.root, options, accounting=acc, rules=rules, context=context)
        if attempt is attempts[-1]:
            scan.flight_records = read_dumps(job.dumps, scan.accounting)
        scan.info["attempt"] = attempt.number
        out.append(AttemptScan(attempt.number, attempt.files, attempt.pods, scan))
    return out


def _restart_names(paths: Sequence[str]) -> bool:
    """Whether any file under ``paths`` is named as a restart layout names its files: a look at the names
    only, so that a job without restarts is not discovered twice."""
    for given in paths:
        if os.path.isfile(given):
            if attempt_file(os.path.basename(given)) is not None or \
                    attempt_file(os.path.abspath(given).replace(os.sep, "/")) is not None:
                return True
            continue
        for folder, _, names in os.walk(given):
            base = folder.replace(os.sep, "/")
            for name in names:
                if attempt_file(f"{base}/{name}") is not None:
                    return True
    return False


def _head(path: str) -> bytes | None:
    """A file's first bytes: a copy of a growing file starts with them too."""
    try:
        with open(path, "rb") as fh:
            return fh.read(4096)
    except OSError:
        return None


def job_context(files: Sequence[Any], options: AnalyzeOptions, accounting: Accounting | None = None) -> JobContext:
    """The job's context (``ingest.context``), built once for every entry point from the analysis options."""
    return build_context(files, options.node_from, accounting=accounting)


def scan_files(files: Sequence[Any], root: str, options: AnalyzeOptions, *, accounting: Accounting | None = None,
               rules: Any = None, miner: Any = None, progress: ProgressFn | None = None,
               context: JobContext | None = None) -> JobScan:
    """Scan some of a job's files (``sources.InputFile`` from ``sources.discover``): one shard, or all of them.
    ``context``: the whole job's (built from ``files`` when not given).

    Shards of one job scanned separately merge with ``JobScan.merge`` followed by ``JobScan.remap_nodes``.
    """
    started = time.perf_counter()
    accounting = accounting if accounting is not None else Accounting()
    rules = rules if rules is not None else load_rules(options)
    context = context if context is not None else job_context(files, options, accounting)
    streams = RotatedStreams()  # the rotated logs' pieces, noted as they are read
    ingest = IngestOptions(node_from=options.node_from, fold_shapes=True, streams=streams).use(context)
    scanner = Scanner(miner if miner is not None else new_miner(), rules, bucket_seconds=options.bucket_seconds,
                      root=root)
    feed_files(scanner, files, ingest, accounting, progress)
    if rules is not None:
        for w in getattr(rules, "warnings", []):
            accounting.warn(w)
    scan = scanner.finish(accounting, ingest.rank_map.as_dict())
    scan.streams = streams
    scan.info.setdefault("nodes", job_nodes(scan.node_last))
    note_context(scan, context)
    scan.info["scan_seconds"] = round(time.perf_counter() - started, 3)
    return scan


def feed_files(scanner: Scanner, files: Sequence[Any], ingest: IngestOptions, accounting: Accounting,
               progress: ProgressFn | None = None) -> None:
    """Read ``files`` in order into ``scanner``: the one loop of the one-process scan and of every shard's."""
    total = sum(f.size for f in files)
    done = 0
    n = 0
    with fewer_collections():
        for input_file in files:
            records = read_file(input_file, ingest, accounting, runs=True)
            if progress is None:
                scanner.add_many(records)
            else:
                due = n + 20000 - n % 20000
                for record in records:
                    scanner.add(record)
                    n += len(record) if type(record) is ShapeRun else 1
                    if n >= due:
                        progress(done, total, n)
                        due = n + 20000 - n % 20000
            done += input_file.size
            if progress is not None:
                progress(done, total, n)


def note_context(scan: JobScan, context: JobContext) -> None:
    """What the job context decided, kept in the scan's info for the incident's stats and the report."""
    scan.info["node_layout"] = context.layout
    if context.agents > 1:  # nodes a merged file's agents tell apart, whether or not a line names their host
        scan.info["agents_at_once"] = context.agents
    if context.start is not None and context.end is not None:
        scan.info["job_span"] = [context.start, context.end]
    if context.clock_skew:
        scan.info["clock_skew"] = context.clock_skew
    if context.node_shifts:  # a time a line states in its words (a launcher's ``time :``) is on its node's clock
        scan.info["node_shifts"] = dict(context.node_shifts)
