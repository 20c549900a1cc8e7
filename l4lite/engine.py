"""Execution engines for the scan: one process, a local process pool (``--jobs N``) or a Dask cluster.

The job's files are split into shards: contiguous runs of files in discovery order, balanced by size (a file is
never split, so a multi-line record is never cut). Each shard is scanned on its own (ingest, template mining,
rules, metrics and markers: ``scan_shard``) and the shard scans merge in shard order (``merge_results``):

- templates merge by their text, through the stable template id (a hash of the text);
- counts per (node, time bucket, template) add up (on Dask in a tree of merges run on the workers);
- rank -> node ties merge with their weights, in shard order, *before* rank-only node keys (``rank:N``) are
  resolved, so that a rank printed alone in one file gets the node that a NCCL line of another file ties it to;
- exemplars keep the first records in file order, as one pass over the files would.

Shards mine templates independently, so a template that one pass would generalise (``<*>``) may keep a literal
word in a shard that saw only one value of it; ``tests/test_engine.py`` and ``tests/test_dask.py`` check that
the verdict (status, category, phase, suspects, evidence) equals the one-process verdict on the fixture jobs.

Dask is optional (``pip install 'l4lite[dask]'``) and imported only when a scheduler is given. Workers of an
existing cluster (``tcp://HOST:PORT``) need l4lite installed and the job's files at the same paths.
"""

from __future__ import annotations

import functools
import multiprocessing
import os
import time
import warnings
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from l4lite.attribution import RankMap
from l4lite.errors import L4Error
from l4lite.records import Accounting
from l4lite.scan import EXEMPLAR_CAP, MAX_CELLS, JobScan, Progress, TemplateStat, _rebucket
from l4lite.sources import InputFile

SHARDS_PER_WORKER = 2  # more shards than workers evens out uneven file sizes
ProgressFn = Callable[[int, int, int], None]  # (bytes done, bytes total, records so far)


# ---------------------------------------------------------------------------------------------- shard plan
@dataclass(frozen=True)
class ShardTask:
    """What a worker needs to scan one shard: plain, picklable data."""

    index: int
    files: tuple[InputFile, ...]
    root: str
    node_from: str | None
    year: int | None
    rules_files: tuple[str, ...]
    bucket_seconds: float
    total_steps: int | None = None

    @property
    def size(self) -> int:
        return sum(f.size for f in self.files)


@dataclass
class ShardResult:
    """A shard's scan with what merging needs beyond it: the weighted rank ties and the scan's own
    first-seen rank -> node map (``JobScan.merge`` keeps only the last)."""

    index: int
    scan: JobScan
    ties: RankMap = field(default_factory=RankMap)
    first_rank_nodes: dict[int, str] = field(default_factory=dict)
    exemplars: dict[tuple[str, str], list[Any]] = field(default_factory=dict)
    records: int = 0
    bytes: int = 0
    seconds: float = 0.0


def plan_shards(files: Sequence[InputFile], parts: int) -> list[list[InputFile]]:
    """Split files (kept in order) into at most ``parts`` contiguous runs of roughly equal size."""
    files = list(files)
    if not files:
        return []
    parts = max(1, min(parts, len(files)))
    total = sum(max(f.size, 1) for f in files)
    target = total / parts
    shards: list[list[InputFile]] = [[]]
    acc = 0.0
    for i, f in enumerate(files):
        remaining_files = len(files) - i
        remaining_shards = parts - len(shards)
        if shards[-1] and (acc >= target * len(shards) or remaining_files <= remaining_shards) \
                and len(shards) < parts:
            shards.append([])
        shards[-1].append(f)
        acc += max(f.size, 1)
    return shards


@functools.lru_cache(maxsize=4)
def _loaded_rules(rules_files: tuple[str, ...]) -> Any:
    """The rule pack as loaded, once per worker process (compiling the patterns is the costly part)."""
    from l4lite.rulepack import RulePack

    return RulePack.load(list(rules_files))


def _rules(rules_files: tuple[str, ...]) -> Any:
    """A fresh rule pack for one shard: the cached rules, with its own timeout counters and warnings."""
    from l4lite.rulepack import RulePack

    loaded = _loaded_rules(rules_files)
    return RulePack(loaded.rules, loaded.tables, timeout=loaded.timeout, max_timeouts=loaded.max_timeouts,
                    max_chars=loaded.max_chars, max_cache=loaded.max_cache, trusted_chars=loaded.trusted_chars)


def scan_shard(task: ShardTask) -> ShardResult:
    """Scan one shard: the same pass as ``pipeline.scan_files``, keeping the weighted rank ties."""
    from l4lite.ingest import IngestOptions, read_file
    from l4lite.mining import TemplateMiner
    from l4lite.scan import Scanner

    started = time.perf_counter()
    accounting = Accounting()
    ingest = IngestOptions(node_from=task.node_from, year=task.year)
    rules = _rules(task.rules_files)
    scanner = Scanner(TemplateMiner(), rules, bucket_seconds=task.bucket_seconds, root=task.root)
    if task.total_steps is not None:
        # Hugging Face prints "Total optimization steps" once (rank 0): every shard needs it to turn epochs into
        # iterations, as the one pass has it from the job's first file on
        scanner._total_steps = task.total_steps  # noqa: SLF001
    n = 0
    add = scanner.add
    for input_file in task.files:
        for record in read_file(input_file, ingest, accounting):
            add(record)
            n += 1
    for w in rules.warnings:
        accounting.warn(w)
    first_rank_nodes = dict(scanner._rank_nodes)  # noqa: SLF001 - before finish() folds the ties in
    scan = scanner.finish(accounting, ingest.rank_map.as_dict())
    exemplars = {key: list(recs) for key, recs in scan.exemplars.items()}
    return ShardResult(task.index, scan, ingest.rank_map, first_rank_nodes, exemplars, n, task.size,
                       time.perf_counter() - started)


def total_steps_hint(files: Sequence[InputFile], head_lines: int = 400) -> int | None:
    """"Total optimization steps = N" from the first lines of the job's files (Hugging Face prints it once,
    near the start of rank 0's log), read before the shards are scanned."""
    import gzip
    import zlib

    from l4lite.metrics import parse_job_facts

    for f in files:
        try:
            opener = gzip.open if f.compressed else open
            with opener(f.path, "rt", encoding="utf-8", errors="replace") as fh:  # type: ignore[operator]
                for n, line in enumerate(fh):
                    if n >= head_lines:
                        break
                    if "steps =" in line:
                        steps = parse_job_facts(line).get("total_steps")
                        if steps:
                            return int(steps)
        except (OSError, EOFError, zlib.error):  # unreadable, truncated or corrupt: ingest warns about it
            continue
    return None


# ---------------------------------------------------------------------------------------------- merging
def merge_results(left: ShardResult, right: ShardResult) -> ShardResult:
    """Merge two adjacent shard results (``left`` before ``right`` in file order); associative, so results
    can merge in any tree as long as neighbours stay neighbours."""
    node_last = dict(left.scan.node_last)
    for node, (t, n) in right.scan.node_last.items():  # one pass keeps the last time seen, in file order
        t0, n0 = node_last.get(node, (None, 0))
        node_last[node] = (t if t is not None else t0, n0 + n)
    node_first = dict(right.scan.node_first)
    for node, t in left.scan.node_first.items():  # ... and the first time seen
        if t is not None or node not in node_first:
            node_first[node] = t
    progress = {node: _progress_in_order(left.scan.progress.get(node), right.scan.progress.get(node))
                for node in {**left.scan.progress, **right.scan.progress}}
    scan = left.scan.merge(right.scan)
    scan.node_last, scan.node_first, scan.progress = node_last, node_first, progress
    ties = RankMap().merge(left.ties).merge(right.ties)
    first = dict(left.first_rank_nodes)
    for rank, node in right.first_rank_nodes.items():
        first.setdefault(rank, node)
    exemplars = {key: list(recs) for key, recs in left.exemplars.items()}
    for key, recs in right.exemplars.items():
        mine = exemplars.setdefault(key, [])
        mine.extend(recs[: max(0, EXEMPLAR_CAP - len(mine))])
    return ShardResult(left.index, scan, ties, first, exemplars, left.records + right.records,
                       left.bytes + right.bytes, left.seconds + right.seconds)


def _progress_in_order(left: Progress | None, right: Progress | None) -> Progress:
    """Two nodes' progress summaries, ``left`` read first: what one pass over both would keep (the first point
    of the earlier, the last of the later unless it went backwards less than a restart does)."""
    if left is None or left.points == 0:
        return replace(right) if right is not None else Progress()
    out = replace(left)
    if right is None or right.points == 0:
        return out
    it, last = right.last_iteration, left.last_iteration
    if it is None or last is None or it >= last or it < last // 2:
        out.last_iteration = it if it is not None else last
        out.last_time, out.last_file, out.last_line = right.last_time, right.last_file, right.last_line
        out.after_time = right.after_time
    out.points += right.points
    return out


def finish_merge(result: ShardResult, root: str, accounting: Accounting, max_cells: int = MAX_CELLS) -> JobScan:
    """The job's scan from the merged shards: resolve rank-only node keys with the merged ties, keep the
    first exemplars in file order, bound the count table as one pass would."""
    scan = result.scan
    merged = JobScan(root=root, accounting=accounting, bucket_seconds=scan.bucket_seconds)
    merged.merge(scan)
    merged.exemplars = result.exemplars
    merged.rank_nodes = dict(result.first_rank_nodes)
    merged.remap_nodes(result.ties.as_dict())
    unify_templates(merged)
    while len(merged.counts) > max_cells:
        merged.counts = _rebucket(merged.counts, merged.bucket_seconds, merged.bucket_seconds * 2)
        merged.bucket_seconds *= 2
    merged.info["nodes"] = len(merged.node_last)
    return merged


def remine(texts: Sequence[str], sim_th: float = 0.5, depth: int = 4, max_children: int = 100) -> dict[str, str]:
    """Template texts (in the order they were first seen) -> the template Drain makes of them together."""
    from drain3.drain import Drain

    drain = Drain(sim_th=sim_th, depth=depth, max_children=max_children)
    cluster_of: dict[str, int] = {}
    for text in texts:
        if text and text not in cluster_of:
            cluster_of[text] = drain.add_log_message(text)[0].cluster_id
    return {text: drain.id_to_cluster[cid].get_template() for text, cid in cluster_of.items()}


def unify_templates(scan: JobScan, sim_th: float = 0.5, depth: int = 4, max_children: int = 100) -> int:
    """Re-mine the shards' template texts with one Drain, in the order the merged scan first saw them, and
    re-key everything to the resulting templates (in place). Returns the number of templates folded away.

    A shard that saw only ``busId 0000:07:00.0`` keeps ``busId <NUM>`` where the whole job's pass generalised to
    ``busId <*>``; a shard that saw only ``[receive]`` keeps the word where the pass has ``<*>``. Drain over the
    shard templates (each a generalised message) joins them as Drain over all messages would have.
    """
    from l4lite.mining import template_id

    if len(scan.templates) < 2:
        return 0
    final = remine([stat.template for stat in scan.templates.values()], sim_th, depth, max_children)
    new_id: dict[str, str] = {}
    text_of: dict[str, str] = {}
    for tid, stat in scan.templates.items():
        text = final.get(stat.template, stat.template) if stat.template else stat.template
        nid = template_id(text) if text != stat.template else tid
        new_id[tid] = nid
        text_of[nid] = text
    if all(tid == nid for tid, nid in new_id.items()):
        return 0
    templates: dict[str, TemplateStat] = {}
    for tid, stat in scan.templates.items():
        nid = new_id[tid]
        mine = templates.get(nid)
        if mine is None:
            templates[nid] = TemplateStat(nid, text_of[nid], stat.count, dict(stat.nodes), dict(stat.levels),
                                          dict(stat.sources), stat.first_time, stat.last_time)
        else:
            mine.merge(stat)
    folded = len(scan.templates) - len(templates)
    scan.templates = templates
    counts: dict[tuple[str, int, str], int] = {}
    for (node, bucket, tid), n in scan.counts.items():
        key = (node, bucket, new_id.get(tid, tid))
        counts[key] = counts.get(key, 0) + n
    scan.counts = counts

    def fix(rec: Any) -> None:
        nid = new_id.get(rec.template_id)
        if nid is not None:
            rec.template_id, rec.template = nid, text_of[nid]

    exemplars: dict[tuple[str, str], list[Any]] = {}
    joined: set[tuple[str, str]] = set()
    for (tid, node), recs in scan.exemplars.items():
        key = (new_id.get(tid, tid), node)
        if key in exemplars:
            joined.add(key)
        exemplars.setdefault(key, []).extend(recs)
    for key in joined:
        exemplars[key].sort(key=lambda r: (r.file, r.line))
        del exemplars[key][EXEMPLAR_CAP:]
    for recs in exemplars.values():
        for rec in recs:
            fix(rec)
    scan.exemplars = exemplars
    for hit in scan.hits:
        fix(hit.record)
    return folded


# ---------------------------------------------------------------------------------------------- engines
class Engine(ABC):
    """Runs shard scans somewhere and merges them."""

    workers: int = 1

    @abstractmethod
    def run(self, tasks: Sequence[ShardTask], progress: ProgressFn | None = None) -> ShardResult:
        """Scan every shard and return the merged result (shards merged in task order)."""

    def close(self) -> None:  # noqa: B027 - engines without resources need nothing here
        """Release processes or cluster connections."""

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _fold(results: Iterator[ShardResult] | Sequence[ShardResult]) -> ShardResult:
    ordered = sorted(results, key=lambda r: r.index)
    out = ordered[0]
    for r in ordered[1:]:
        out = merge_results(out, r)
    return out


class _Tracker:
    def __init__(self, tasks: Sequence[ShardTask], progress: ProgressFn | None) -> None:
        self.total = sum(t.size for t in tasks)
        self.done = 0
        self.records = 0
        self.progress = progress

    def shard_done(self, result: ShardResult) -> None:
        self.done += result.bytes
        self.records += result.records
        if self.progress is not None:
            self.progress(self.done, self.total, self.records)


class LocalEngine(Engine):
    """Shards one after the other in this process (the reference the others must agree with)."""

    def run(self, tasks: Sequence[ShardTask], progress: ProgressFn | None = None) -> ShardResult:
        tracker = _Tracker(tasks, progress)
        results = []
        for task in tasks:
            results.append(scan_shard(task))
            tracker.shard_done(results[-1])
        return _fold(results)


class PoolEngine(Engine):
    """A local process pool: ``--jobs N``."""

    def __init__(self, jobs: int) -> None:
        from concurrent.futures import ProcessPoolExecutor

        self.workers = max(1, int(jobs))
        self._pool = ProcessPoolExecutor(max_workers=self.workers, mp_context=_mp_context())

    def map(self, fn: Callable[[Any], Any], items: Sequence[Any]) -> Iterator[Any]:
        """``fn`` over items in the pool, results as they complete."""
        from concurrent.futures import as_completed

        futures = [self._pool.submit(fn, item) for item in items]
        try:
            for fut in as_completed(futures):
                yield fut.result()
        finally:
            for fut in futures:
                fut.cancel()

    def run(self, tasks: Sequence[ShardTask], progress: ProgressFn | None = None) -> ShardResult:
        tracker = _Tracker(tasks, progress)
        results = []
        for result in self.map(scan_shard, tasks):
            results.append(result)
            tracker.shard_done(result)
        return _fold(results)

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


def _mp_context() -> Any:
    """fork where it is safe (a POSIX process running no other thread): workers start at once with the modules
    already imported, and scripts need no ``__main__`` guard; else forkserver or spawn (a process with threads,
    say a Dask client's, must not fork)."""
    import threading

    methods = multiprocessing.get_all_start_methods()
    if "fork" in methods and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")


class DaskEngine(Engine):
    """A Dask cluster: ``tcp://HOST:PORT`` (an existing scheduler) or ``local:N`` (a LocalCluster of N
    single-threaded worker processes started for this run). Shards scan on the workers and merge there in a
    tree of adjacent pairs; only the job's merged scan comes back."""

    def __init__(self, scheduler: str, *, timeout: float = 10.0) -> None:
        try:
            import dask  # noqa: F401
            from distributed import Client, LocalCluster
        except ImportError as exc:
            raise L4Error("--scheduler needs Dask: pip install 'l4lite[dask]'") from exc
        self._cluster = None
        if scheduler.startswith("local:") or scheduler == "local":
            n = scheduler.partition(":")[2] or str(os.cpu_count() or 1)
            try:
                workers = int(n)
            except ValueError:
                raise L4Error(f"--scheduler {scheduler}: expected local:N with N a number of workers") from None
            if workers < 1:
                raise L4Error(f"--scheduler {scheduler}: need at least one worker")
            with warnings.catch_warnings():  # "port 8787 in use" when another cluster runs on this host
                warnings.simplefilter("ignore", UserWarning)
                self._cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                             dashboard_address=None, silence_logs=40)
            self._client = Client(self._cluster)
        elif scheduler.startswith(("tcp://", "tls://", "ucx://", "inproc://")):
            try:
                self._client = Client(scheduler, timeout=timeout)
            except (OSError, TimeoutError) as exc:
                raise L4Error(f"--scheduler {scheduler}: cannot connect ({exc})") from None
        else:
            raise L4Error(f"--scheduler {scheduler}: expected tcp://HOST:PORT or local:N")
        self.workers = max(1, len(self._client.scheduler_info().get("workers", {})))

    def run(self, tasks: Sequence[ShardTask], progress: ProgressFn | None = None) -> ShardResult:
        from distributed import as_completed

        tracker = _Tracker(tasks, progress)
        futures = self._client.map(scan_shard, list(tasks), pure=False)
        if progress is not None:
            for fut in as_completed(futures):
                meta = self._client.submit(_meta, fut, pure=False).result()
                tracker.records += meta[0]
                tracker.done += meta[1]
                progress(tracker.done, tracker.total, tracker.records)
        level = list(futures)
        while len(level) > 1:  # a tree of merges of neighbours, run on the workers
            nxt = [self._client.submit(merge_results, level[i], level[i + 1], pure=False)
                   for i in range(0, len(level) - 1, 2)]
            if len(level) % 2:
                nxt.append(level[-1])
            level = nxt
        result: ShardResult = level[0].result()
        return result

    def close(self) -> None:
        self._client.close()
        if self._cluster is not None:
            self._cluster.close()


def _meta(result: ShardResult) -> tuple[int, int]:
    return result.records, result.bytes


def make_engine(jobs: int = 1, scheduler: str | None = None) -> Engine:
    """The engine for ``--jobs`` / ``--scheduler`` (a scheduler wins over jobs)."""
    if scheduler:
        return DaskEngine(scheduler)
    if jobs > 1:
        return PoolEngine(jobs)
    return LocalEngine()


# ---------------------------------------------------------------------------------------------- entry point
def scan_job_parallel(paths: Sequence[str], options: Any, engine: Engine | None = None) -> JobScan:
    """``pipeline.scan_job`` on shards: discover, plan, scan the shards on the engine, merge.

    ``options`` is a ``pipeline.AnalyzeOptions`` (``jobs``, ``scheduler``, ``node_from``, ``rules_files``,
    ``bucket_seconds``, ``progress`` are read).
    """
    from l4lite.pipeline import job_year, scan_job
    from l4lite.sources import discover

    started = time.perf_counter()
    accounting = Accounting()
    job = discover(list(paths), accounting)
    if any(f.is_stdin for f in job.files) or (len(job.files) < 2 and engine is None):
        return scan_job(paths, options)  # one stream or one file: nothing to split (files are never cut)
    own = engine is None
    engine = engine if engine is not None else make_engine(options.jobs, options.scheduler)
    try:
        parts = max(1, engine.workers * SHARDS_PER_WORKER)
        year = job_year(job.files)
        steps = total_steps_hint(job.files)
        tasks = [ShardTask(i, tuple(files), job.root, options.node_from, year, tuple(options.rules_files),
                           float(options.bucket_seconds), steps)
                 for i, files in enumerate(plan_shards(job.files, parts))]
        result = engine.run(tasks, options.progress)
    finally:
        if own:
            engine.close()
    scan = finish_merge(result, job.root, accounting)
    scan.info["scan_seconds"] = round(time.perf_counter() - started, 3)
    scan.info["shards"] = len(tasks)
    return scan


__all__ = ["DaskEngine", "Engine", "LocalEngine", "PoolEngine", "ShardResult", "ShardTask", "finish_merge",
           "make_engine", "merge_results", "plan_shards", "remine", "scan_job_parallel", "scan_shard",
           "unify_templates"]
