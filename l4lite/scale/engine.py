"""Execution engines for the scan: one process, a local process pool (``--jobs N``) or a Dask cluster.

The job's files are split into shards (``l4lite.scale.shards``: contiguous runs of files balanced by size; a large
plain file is first cut into pieces at record starts, ``l4lite.ingest.pieces``), each shard is scanned on its own, and
the shard scans merge in file order into the job's scan, which ``pipeline.diagnose`` takes as it takes the scan
of one pass. ``tests/test_engine.py`` and
``tests/test_dask.py`` check that the scan and the verdict (status, category, phase, suspects, evidence) equal
the one-process ones on the fixture jobs.

Dask is optional (``pip install 'l4lite[dask]'``) and imported only when a scheduler is given: ``local:N``
starts a LocalCluster of N single-threaded worker processes for the run, ``tcp://HOST:PORT`` uses an existing
cluster, whose workers need l4lite installed and the job's files at the same paths. On Dask the scans of more
than ``GATHER_SHARDS`` shards also merge on the workers, in a tree of neighbours; only the job's merged scan
comes back.
"""

from __future__ import annotations

import contextlib
import functools
import multiprocessing
import os
import threading
import time
import warnings
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from l4lite.errors import L4Error
from l4lite.ingest.files import discover
from l4lite.ingest.flight_recorder import read_dumps
from l4lite.ingest.pieces import piece_count
from l4lite.options import AnalyzeOptions, ExecutionOptions, ProgressFn
from l4lite.records import Accounting
from l4lite.scale.shards import (
    ROUND_MIN_BYTES,
    ShardResult,
    ShardTask,
    finish_merge,
    job_shards,
    merge_results,
    plan_shards,
    remine,
    scan_shard,
    steps_per_epoch_hint,
    unify_templates,
)

if TYPE_CHECKING:  # the scan is imported by the scan's entry point: `parse --jobs N` only needs the pool
    from l4lite.scan.scanner import JobScan


# ---------------------------------------------------------------------------------------------- engines
class Engine(ABC):
    """Runs shard scans somewhere and merges them."""

    workers: int = 1

    @abstractmethod
    def run(self, tasks: Sequence[ShardTask], progress: ProgressFn | None = None,
            meanwhile: Meanwhile | None = None) -> ShardResult:
        """Scan every shard and return the merged result (shards merged in task order).

        ``meanwhile`` hears, in this process's thread, of each shard's result as it comes here and of the moment
        a worker is first left without a shard to take (``Meanwhile``), so that the caller can start its own
        next step while the shards are scanned elsewhere; engines that scan in this process never call it.
        """

    def close(self) -> None:  # noqa: B027 - engines without resources need nothing here
        """Release processes or cluster connections."""

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Meanwhile(Protocol):
    """What a caller does while its shards are scanned elsewhere (say, importing what the diagnosis needs):
    called with each shard's result as it comes here (``idle``: whether a worker is now left without a shard for
    the first time), with None and ``idle`` where a worker is idle before any result came, and with None alone
    where no result will come here (they merge on the workers). It returns at once; slow work goes to a thread
    of its own (``in_thread``)."""

    def __call__(self, result: ShardResult | None, idle: bool) -> None: ...


class _Folding:
    """Shard results merged as they come in, each with the neighbours already here (a merge is associative): the
    caller holds a few merged runs of shards instead of every shard's result (their metric points are most of
    it, thinned again at each merge), and little is left to merge when the last shard comes in."""

    def __init__(self) -> None:
        self._runs: dict[int, tuple[int, ShardResult]] = {}  # first shard index -> (last index + 1, merged)
        self._firsts: dict[int, int] = {}  # last index + 1 -> first shard index

    def add(self, result: ShardResult) -> None:
        start, stop = result.index, result.index + 1
        if start in self._firsts:  # the run just before it
            first = self._firsts.pop(start)
            _, left = self._runs.pop(first)
            result, start = merge_results(left, result), first
        if stop in self._runs:  # the run just after it
            end, right = self._runs.pop(stop)
            del self._firsts[end]
            result, stop = merge_results(result, right), end
        self._runs[start] = (stop, result)
        self._firsts[stop] = start

    def result(self) -> ShardResult:
        """The merged result (runs that a missing shard keeps apart merge in shard order)."""
        return functools.reduce(merge_results, [merged for _, (_, merged) in sorted(self._runs.items())])


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

    def run(self, tasks: Sequence[ShardTask], progress: ProgressFn | None = None,
            meanwhile: Meanwhile | None = None) -> ShardResult:
        tracker = _Tracker(tasks, progress)
        folding = _Folding()
        for task in tasks:
            result = scan_shard(task)
            tracker.shard_done(result)
            folding.add(result)
        return folding.result()


class PoolEngine(Engine):
    """A local process pool: ``--jobs N``."""

    def __init__(self, jobs: int) -> None:
        from concurrent.futures import ProcessPoolExecutor

        self.workers = max(1, int(jobs))
        self._pool = ProcessPoolExecutor(max_workers=self.workers, mp_context=_mp_context())

    def map(self, fn: Callable[[Any], Any], items: Sequence[Any]) -> Iterator[Any]:
        """``fn`` over items in the pool, results as they complete."""
        yield from _completed([self._pool.submit(fn, item) for item in items])

    def run(self, tasks: Sequence[ShardTask], progress: ProgressFn | None = None,
            meanwhile: Meanwhile | None = None) -> ShardResult:
        tracker = _Tracker(tasks, progress)
        folding = _Folding()
        told = _Told(meanwhile, len(tasks), self.workers)
        futures = [self._pool.submit(scan_shard, task) for task in tasks]
        told.started()  # after the first submit: the workers are forked, a thread is safe now
        for result in _completed(futures):
            tracker.shard_done(result)
            told.result(result)
            folding.add(result)
        return folding.result()

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


def _completed(futures: list[Any]) -> Iterator[Any]:
    """The futures' results as they complete; those not started yet are cancelled when the caller stops."""
    from concurrent.futures import as_completed

    try:
        for fut in as_completed(futures):
            yield fut.result()
    finally:
        for fut in futures:
            fut.cancel()


class _Told:
    """Tells a ``Meanwhile`` of the shards' results and of the first idle worker (``shards`` left to run on
    ``workers``)."""

    def __init__(self, meanwhile: Meanwhile | None, shards: int, workers: int) -> None:
        self.meanwhile = meanwhile
        self.left = shards
        self.workers = workers
        self.idle = False

    def started(self) -> None:
        if self.meanwhile is not None and self.left < self.workers:
            self.idle = True
            self.meanwhile(None, True)

    def result(self, result: ShardResult) -> None:
        self.left -= 1
        if self.meanwhile is not None:
            idle = not self.idle and self.left < self.workers
            self.idle = self.idle or idle
            self.meanwhile(result, idle)


def in_thread(fn: Callable[[], None]) -> None:
    """Run ``fn`` in a daemon thread; what it raises is left for the caller's own later call to raise."""

    def run() -> None:
        with contextlib.suppress(Exception):
            fn()

    threading.Thread(target=run, name="l4lite-meanwhile", daemon=True).start()


def _mp_context() -> Any:
    """fork where it is safe (a POSIX process running no other thread): workers start at once with the modules
    already imported, and scripts need no ``__main__`` guard; else forkserver or spawn (a process with threads,
    say a Dask client's, must not fork)."""
    methods = multiprocessing.get_all_start_methods()
    if "fork" in methods and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")


GATHER_SHARDS = 8  # shard results a Dask run merges in the caller's process; more merge in a tree on the workers


class DaskEngine(Engine):
    """A Dask cluster: ``tcp://HOST:PORT`` (an existing scheduler) or ``local:N`` (a LocalCluster of N
    single-threaded worker processes started for this run). Shards scan on the workers; a few shards' results
    merge here, more merge on the workers in a tree of adjacent pairs, and only the job's merged scan comes
    back."""

    def __init__(self, scheduler: str, *, timeout: float = 10.0) -> None:
        try:
            import dask
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
            with warnings.catch_warnings(), dask.config.set(_local_worker_config()):
                warnings.simplefilter("ignore", UserWarning)  # "port 8787 in use": another cluster on this host
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

    def run(self, tasks: Sequence[ShardTask], progress: ProgressFn | None = None,
            meanwhile: Meanwhile | None = None) -> ShardResult:
        from distributed import as_completed

        tracker = _Tracker(tasks, progress)
        futures = self._client.map(scan_shard, list(tasks), pure=False)
        if len(futures) <= GATHER_SHARDS:
            # Few shards: each comes here as it finishes and they merge here. A tree of merges on the workers
            # would move the same bytes (the merged scan is about the sum of the shards) with more hops.
            told = _Told(meanwhile, len(futures), self.workers)
            told.started()
            folding = _Folding()
            for _fut, result in as_completed(futures, with_results=True):
                tracker.shard_done(result)
                told.result(result)
                folding.add(result)
            return folding.result()
        if meanwhile is not None:  # the results merge on the workers: nothing comes here to judge by
            meanwhile(None, False)
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


def _local_worker_config() -> dict[str, Any]:
    """Dask settings for the workers of the LocalCluster started for one run, which live only as long as the run.

    - No ``MALLOC_TRIM_THRESHOLD_``: Dask sets it in every worker so that freed memory goes back to the system
      at once. Setting it turns off glibc's sliding mmap threshold, and then every allocation of 128 KiB or more
      (each 1 MiB read of a log file among them) is a fresh ``mmap`` whose pages fault in anew. Alone on a
      worker, the shards of a 1M-line job took 285,000 page faults and 5.8 to 6.1 s with it, against 14,000 to
      36,000 and 5.0 s without it (``getrusage`` of the worker's thread).
    - No statistical profiler: it samples every worker thread's stack every 10 ms for a dashboard this cluster
      does not start.
    - A worker is sent its next shard when it has none left (``worker-saturation`` 1.0), as a process pool's
      worker takes it: Dask's default (1.1, rounded up to two tasks per single-threaded worker) hands each
      worker two shards at once, so a worker that a busy machine slowed down kept its second shard while the
      other worker sat idle.

    A cluster given by address keeps its own settings; the README says how to start its workers the same way.
    """
    import dask

    environ = dict(dask.config.get("distributed.nanny.pre-spawn-environ", default={}) or {})
    environ.pop("MALLOC_TRIM_THRESHOLD_", None)
    return {"distributed.nanny.pre-spawn-environ": environ, "distributed.worker.profile.enabled": False,
            "distributed.scheduler.worker-saturation": 1.0}


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
def scan_job_parallel(paths: Sequence[str], options: AnalyzeOptions, execution: ExecutionOptions | None = None,
                      engine: Engine | None = None) -> JobScan:
    """``pipeline.scan_job`` on shards: discover, plan, scan the shards on the engine, merge.

    ``execution`` says where (``jobs``, ``scheduler``) and reports ``progress``; ``engine`` overrides both.
    """
    from l4lite.scan.job import job_context, note_context, scan_job

    execution = execution if execution is not None else ExecutionOptions()
    started = time.perf_counter()
    accounting = Accounting()
    job = discover(list(paths), accounting)
    if any(f.is_stdin for f in job.files) or (piece_count(job.files) < 2 and engine is None):
        return scan_job(paths, options, progress=execution.progress)  # one stream, or one file too small to cut: nothing to split
    own = engine is None
    engine = engine if engine is not None else make_engine(execution.jobs, execution.scheduler)
    try:
        context = job_context(job.files, options, accounting)
        steps = steps_per_epoch_hint(job.files)
        tasks = [ShardTask(i, tuple(shard), job.root, context, tuple(options.rules_files),
                           float(options.bucket_seconds), steps)
                 for i, shard in enumerate(job_shards(job.files, engine.workers, ROUND_MIN_BYTES))]
        result = engine.run(tasks, execution.progress)
    finally:
        if own:
            engine.close()
    scan = finish_merge(result, job.root, accounting)
    scan.flight_records = read_dumps(job.dumps, scan.accounting)
    scan.info["scan_seconds"] = round(time.perf_counter() - started, 3)
    scan.info["shards"] = len(tasks)
    note_context(scan, context)
    return scan


__all__ = ["DaskEngine", "Engine", "LocalEngine", "Meanwhile", "PoolEngine", "ShardResult", "ShardTask", "finish_merge",
           "job_shards", "make_engine", "merge_results", "plan_shards", "remine", "scan_job_parallel", "scan_shard",
           "unify_templates"]
