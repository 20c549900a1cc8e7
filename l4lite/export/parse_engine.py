"""``l4lite parse --jobs N``: shards of files read and mined in a process pool, spooled, merged in file order.

Each worker reads its shard (contiguous files in discovery order), mines the records with its own template
miner and spools them to an Arrow file with their local cluster ids (``l4lite.export.spool``). The parent
then re-mines the shards' template texts with one Drain (``engine.remine``), so that a template that one shard
kept literal and another generalised ends as one template with one stable id, and writes the spools out in
shard order: the rows come out in the same order as with one process. A file output is written by the workers
too, a part per shard, and the parts are joined without decoding them (``l4lite.export.parquet_join``): Parquet row
groups under one footer, CSV (the header in the first part only) and JSON lines one after the other.

A rank-only record (no host on its line, its stream or its file) takes its node from the rank ties learned in
the files before it, as in one process: the worker knows the ties of its own shard, and the parent fills in the
ties of the earlier shards.

A worker that reads several shards of one job keeps the line shapes it learnt (``shaperun.ShapeBook``, a cache of
how a shape's first line was read: the records do not depend on it) from one shard to the next, as one process
keeps them from file to file, instead of learning every shape again per shard.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# The modules a worker's ``spool_shard`` reads and mines with are imported here, by the parent, before the pool
# forks: each worker then has them, instead of importing drain3 (with jsonpickle, which reads its package
# metadata) and the reader on its first shard, 0.05 s of CPU per worker.
from l4lite.errors import L4Error
from l4lite.export.spool import write_spool
from l4lite.export.writers import finalize_spool, write_file
from l4lite.ingest.attribution import RankMap
from l4lite.ingest.context import JobContext, build_context
from l4lite.ingest.files import InputFile, discover
from l4lite.ingest.reader import IngestOptions, read_file
from l4lite.ingest.shaperun import ShapeBook
from l4lite.mining.miner import TemplateMiner
from l4lite.records import Accounting
from l4lite.scale.engine import PoolEngine
from l4lite.scale.shards import job_shards, remine
from l4lite.scan.gctune import fewer_collections


@dataclass(frozen=True)
class SpoolTask:
    index: int
    files: tuple[InputFile, ...]
    context: JobContext
    spool: str
    job: str = ""  # names the parse run: a worker's shards of one run share their shape books (``worker_books``)


@dataclass
class SpoolResult:
    index: int
    spool: str
    records: int
    accounting: Accounting
    table: dict[int, tuple[str, str]]
    ties: RankMap
    bytes: int
    seconds: float


def spool_shard(task: SpoolTask) -> SpoolResult:
    """Read, mine and spool one shard (runs in a worker process)."""
    started = time.perf_counter()
    accounting = Accounting()
    ingest = IngestOptions(node_from=task.context.node_from, fold_shapes=True,
                           shape_books=worker_books(task.job)).use(task.context)
    miner = TemplateMiner()
    records = (r for f in task.files for r in read_file(f, ingest, accounting, runs=True))
    with fewer_collections():
        n = write_spool(records, miner, Path(task.spool))
    return SpoolResult(task.index, task.spool, n, accounting, miner.finalize(), ingest.rank_map,
                       sum(f.size for f in task.files), time.perf_counter() - started)


_BOOKS: dict[str, dict[tuple, ShapeBook]] = {}


def worker_books(job: str) -> dict[tuple, ShapeBook]:
    """This process's shape books for the parse run ``job``: the shards a worker reads after its first start with
    the shapes of those before (a job of 16 files in 4 shards learnt each shape 4 times, 1.5x the CPU of one
    process on syslog lines). Only the latest run's are kept; an unnamed run shares nothing."""
    if not job:
        return {}
    if job not in _BOOKS:
        _BOOKS.clear()
    return _BOOKS.setdefault(job, {})


def parse_parallel(paths: Sequence[str], node_from: str | None, engine: PoolEngine, spool_dir: Path,
                   progress: Any = None, fmt: str | None = None) -> tuple[list[SpoolResult], Accounting, int]:
    """Spool every shard of the job on ``engine``'s workers; returns the shard results in file order, the job's
    accounting and the number of templates after re-mining. ``fmt``: the output format the workers will write
    (``write_parallel``), whose Arrow modules they then inherit (``preload_arrow``)."""
    preload_arrow(fmt)
    accounting = Accounting()
    job = discover(list(paths), accounting)
    if any(f.is_stdin for f in job.files):
        raise L4Error("stdin (-) cannot be split into shards: drop --jobs or pass files")
    context = build_context(job.files, node_from, accounting=accounting)
    shards = job_shards(job.files, engine.workers)
    tasks = [SpoolTask(i, tuple(files), context, str(spool_dir / f"shard-{i:04d}.arrows"), str(spool_dir))
             for i, files in enumerate(shards)]
    total = sum(f.size for files in shards for f in files)  # as the shards weigh them (gzip: uncompressed)
    done = records = 0
    results: list[SpoolResult] = []
    for result in engine.map(spool_shard, tasks):
        results.append(result)
        done += result.bytes
        records += result.records
        if progress is not None:
            progress(done, total, records)
    results.sort(key=lambda r: r.index)
    for r in results:
        accounting.merge(r.accounting)
    tables = unify_tables([r.table for r in results])
    for r, table in zip(results, tables, strict=True):
        r.table = table
    distinct = len({tid for table in tables for tid, _ in table.values()})
    return results, accounting, distinct


def preload_arrow(fmt: str | None = None) -> None:
    """Import the Arrow modules a worker spools and writes with (IPC, the compute kernels of ``take``, the
    writer of ``fmt``) here, before the pool forks its workers: each forked worker then has them, instead of
    importing them itself (0.05-0.1 s of CPU per worker, as much as a worker of a small job spends reading).
    Where the pool does not fork (forkserver, spawn) each worker imports them as before."""
    import pyarrow.compute  # noqa: F401
    import pyarrow.ipc  # noqa: F401

    if fmt == "parquet":
        import pyarrow.parquet  # noqa: F401
    elif fmt == "csv":
        import pyarrow.csv  # noqa: F401


def unify_tables(tables: Sequence[dict[int, tuple[str, str]]]) -> list[dict[int, tuple[str, str]]]:
    """Each shard's cluster -> (template id, text) table, re-keyed to the templates re-mined over all shards."""
    from l4lite.mining.miner import template_id

    texts = [text for table in tables for _, (_, text) in sorted(table.items())]
    final = remine(texts)
    out = []
    for table in tables:
        new = {}
        for cid, (tid, text) in table.items():
            f = final.get(text, text)
            new[cid] = (tid, text) if f == text else (template_id(f), f)
        out.append(new)
    return out


def finalized_batches(results: Sequence[SpoolResult]) -> Iterator[Any]:
    """The output batches of every shard in file order, rank-only nodes filled from earlier shards' ties."""

    for r, known in zip(results, _earlier_ties(results), strict=True):
        yield from _filled(finalize_spool(Path(r.spool), r.table), known)


def _earlier_ties(results: Sequence[SpoolResult]) -> list[dict[int, str]]:
    """For each shard, the rank -> node ties learnt in the shards before it."""
    prior = RankMap()
    out = []
    for r in results:
        out.append(prior.as_dict())
        prior.merge(r.ties)
    return out


def _filled(batches: Iterator[Any], known: dict[int, str]) -> Iterator[Any]:
    """``batches`` with the node of each rank-only record that ``known`` ties to its rank."""
    import pyarrow.compute as pc

    from l4lite.export.spool import strings

    for batch in batches:
        if known:
            node = batch.column("node")
            missing = pc.and_(pc.is_null(node), pc.is_valid(batch.column("rank")))
            if pc.any(missing).as_py():
                ranks = batch.column("rank").to_pylist()
                nodes = node.to_pylist()
                filled = [n if n is not None or k is None else known.get(k) for n, k in zip(nodes, ranks,
                                                                                           strict=True)]
                idx = batch.schema.get_field_index("node")
                batch = batch.set_column(idx, "node", strings(filled))
        yield batch


# -- the output, written by the workers ---------------------------------------------------------------------


@dataclass(frozen=True)
class PartTask:
    index: int
    spool: str
    table: dict[int, tuple[str, str]]
    known: dict[int, str]
    path: str
    metadata: dict[str, Any]
    fmt: str = "parquet"
    header: bool = True  # CSV: only the first part has the header line


def write_part(task: PartTask) -> int:
    """Write one shard's final records as a file of its own (runs in a worker process); its spool is then no
    longer needed."""

    write_file(_filled(finalize_spool(Path(task.spool), task.table), task.known), Path(task.path), task.fmt,
               task.metadata, task.header)
    Path(task.spool).unlink()
    return task.index


def write_parallel(results: Sequence[SpoolResult], engine: PoolEngine, spool_dir: Path, out: Path, fmt: str,
                   metadata: dict[str, Any]) -> None:
    """The job's output file: each shard's rows encoded (and for Parquet compressed) by a worker into a part,
    the parts then joined byte for byte: Parquet row groups under one footer (``l4lite.export.parquet_join``), CSV and
    JSON lines one after the other. The file equals the one that writing every batch in this process makes,
    but the parent's serial work is a copy."""
    from l4lite.export.parquet_join import join_parquet, join_text

    if not results:
        write_file(iter(()), out, fmt, metadata)
        return
    tasks = [PartTask(r.index, r.spool, r.table, known, str(spool_dir / f"part-{r.index:04d}.{fmt}"), metadata,
                      fmt, header=i == 0)
             for i, (r, known) in enumerate(zip(results, _earlier_ties(results), strict=True))]
    for _ in engine.map(write_part, tasks):
        pass
    (join_parquet if fmt == "parquet" else join_text)([Path(t.path) for t in tasks], out)
    for t in tasks:
        Path(t.path).unlink()
