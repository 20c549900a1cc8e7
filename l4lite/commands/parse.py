"""`l4lite parse JOB... [-o records.parquet|records.csv|records.jsonl] [--node-from REGEX] [--jobs N|auto] [--quiet]`.

One row per record: file, line, end_line, node, rank, gpu, source, time, level, template_id, template, text.
Template ids are only final once every line has been mined, so parsing takes two passes: the first streams
the records through the template miner into a spool file on disk (Arrow IPC, in batches) and the second reads
the spool back, adds the final template of each record and writes the output in batches. Memory stays bounded
by the batch size and the templates, whatever the size of the job.

The line accounting (lines read = lines in records + lines skipped by reason) is printed to stderr at the end
and stored with the output: in the Parquet schema metadata under ``l4lite.accounting``, and for CSV and JSON
lines in a sidecar ``<output>.meta.json``. Without ``-o`` (or with ``-o -``) JSON lines (or with ``--format csv``,
CSV) go to stdout.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import queue
import sys
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from l4lite import __version__
from l4lite.errors import L4Error
from l4lite.parallel import jobs_argument, resolve_jobs
from l4lite.records import Accounting
from l4lite.spool import strings, write_spool
from l4lite.terminal import printable

FORMATS = ("parquet", "csv", "jsonl")
_SUFFIXES = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl",
             ".json": "jsonl"}
ACCOUNTING_KEY = "l4lite.accounting"
COLUMNS = ("file", "line", "end_line", "node", "rank", "gpu", "source", "time", "level", "template_id",
           "template", "text")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "parse", help="turn a job's logs into records with stable template ids (Parquet, CSV or JSON lines)",
        description="Parse a job's logs into one row per record (file, line, end_line, node, rank, gpu, source, "
                    "time, level, template_id, template, text) and print the line accounting.")
    p.add_argument("paths", nargs="+", metavar="JOB", help="job directory, log files, or - for stdin")
    p.add_argument("-o", "--output", default="-", metavar="FILE",
                   help="records.parquet, records.csv or records.jsonl (default: JSON lines on stdout)")
    p.add_argument("--format", choices=FORMATS, help="output format (default: from the output's extension)")
    p.add_argument("--node-from", metavar="REGEX",
                   help="regex whose first group (or group 'node') names the node in a file's relative path")
    p.add_argument("--jobs", type=jobs_argument, default="auto", metavar="N|auto",
                   help="parallel processes reading shards of files, large files in pieces (default auto: one "
                        "per core for inputs over 64 MB, else 1)")
    p.add_argument("--quiet", action="store_true", help="no line accounting, warnings or progress bar")
    p.set_defaults(run=run)


def output_format(output: str, explicit: str | None) -> str:
    """The output format: explicit, else from the file's extension; stdout is JSON lines."""
    if explicit:
        return explicit
    if output == "-":
        return "jsonl"
    suffix = Path(output).suffix.lower()
    if suffix not in _SUFFIXES:
        raise L4Error(f"{output}: cannot tell the output format from the extension; use .parquet, .csv or .jsonl "
                      "(or --format)")
    return _SUFFIXES[suffix]


def run(args: argparse.Namespace) -> int:
    fmt = output_format(args.output, args.format)
    if args.output == "-" and fmt == "parquet":
        raise L4Error("--format parquet needs an output file (-o FILE)")
    jobs = resolve_jobs(args.jobs, args.paths)
    from l4lite.gctune import fewer_collections
    from l4lite.ingest import IngestOptions, iter_job
    from l4lite.mining import TemplateMiner
    from l4lite.progress import progress_bar, track_records
    from l4lite.sources import discover

    bar = progress_bar(args.quiet)
    with tempfile.TemporaryDirectory(prefix="l4lite-parse-") as tmp, contextlib.ExitStack() as stack:
        engine = None
        if jobs > 1:  # shards of files in a process pool, templates re-mined across shards
            from l4lite.engine import PoolEngine
            from l4lite.parse_engine import finalized_batches, parse_parallel

            engine = stack.enter_context(PoolEngine(jobs))
            results, accounting, templates = parse_parallel(args.paths, args.node_from, engine, Path(tmp), bar)
            n = sum(r.records for r in results)
            batches = finalized_batches(results)
        else:
            accounting = Accounting()
            miner = TemplateMiner()
            spool = Path(tmp) / "records.arrows"
            job = discover(args.paths, accounting)
            records = iter_job(job, IngestOptions(node_from=args.node_from), accounting, runs=True)
            with fewer_collections():
                n = write_spool(track_records(records, job.files, bar), miner, spool)
            templates = len(miner)
            batches = finalize_spool(spool, miner.finalize())
        if bar is not None:
            bar.close()
        metadata = {"l4lite.version": __version__, ACCOUNTING_KEY: accounting.to_dict(), "records": n,
                    "templates": templates}
        if args.output == "-":
            sys.stdout.flush()
            if fmt == "csv":
                _write_csv(batches, sys.stdout.buffer)
            else:
                write_jsonl(batches, sys.stdout.buffer)
            sys.stdout.flush()
        elif engine is not None:  # each worker writes its shards' rows as a part, the parts then join
            from l4lite.parse_engine import write_parallel

            pool = engine
            write_atomically(Path(args.output),
                             lambda path: write_parallel(results, pool, Path(tmp), path, fmt, metadata),
                             sidecar(fmt, metadata))
        else:
            write_output(prefetched(batches), Path(args.output), fmt, metadata)
    if not args.quiet:
        for warning in accounting.warnings:
            print(f"l4lite: warning: {printable(warning)}", file=sys.stderr)
        print(f"l4lite: {accounting.summary_line()}", file=sys.stderr)
    return 0


# -- pass 2: spool -> final records --------------------------------------------------------------------


def output_schema(metadata: dict[str, Any] | None = None) -> Any:
    import pyarrow as pa

    schema = pa.schema([("file", pa.string()), ("line", pa.int64()), ("end_line", pa.int64()), ("node", pa.string()),
                        ("rank", pa.int64()), ("gpu", pa.int64()), ("source", pa.string()),
                        ("time", pa.timestamp("us", tz="UTC")), ("level", pa.string()),
                        ("template_id", pa.string()), ("template", pa.string()), ("text", pa.string())])
    if metadata:
        schema = schema.with_metadata({k: json.dumps(v) for k, v in metadata.items()})
    return schema


def finalize_spool(path: Path, table: dict[int, tuple[str, str]]) -> Iterator[Any]:
    """Batches of final records: the spool's batches with the template id and text of their cluster."""
    import pyarrow as pa
    import pyarrow.compute as pc

    size = max(table, default=0) + 1
    ids: list[str] = [""] * size
    texts: list[str] = [""] * size
    for cid, (tid, text) in table.items():
        ids[cid] = tid
        texts[cid] = text
    id_array = strings(ids)
    text_array = strings(texts)
    schema = output_schema()
    with pa.OSFile(str(path), "rb") as source, pa.ipc.open_stream(source) as reader:
        for batch in reader:
            cluster = batch.column("cluster")
            columns = {
                **{name: batch.column(name) for name in ("file", "line", "end_line", "node", "rank", "gpu", "source",
                                                         "time", "level")},
                "template_id": pc.take(id_array, cluster),
                "template": pc.take(text_array, cluster),
                "text": batch.column("text"),
            }
            yield pa.record_batch([columns[name] for name in COLUMNS], schema=schema)


# -- writers -------------------------------------------------------------------------------------------


def prefetched(batches: Iterable[Any], depth: int = 2) -> Iterator[Any]:
    """``batches``, worked out in a background thread while the caller writes the ones before: Arrow's kernels
    and its Parquet writer release the GIL, so finalising the spool and writing the file overlap on two cores.
    An error in the thread is raised here; the thread stops when the caller stops early."""
    box: queue.Queue[Any] = queue.Queue(maxsize=depth)
    stop = threading.Event()
    end = object()

    def put(item: Any) -> bool:
        while not stop.is_set():
            try:
                box.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def work() -> None:
        try:
            for batch in batches:
                if not put(batch):
                    return
            put(end)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            put(exc)

    thread = threading.Thread(target=work, name="l4lite-finalize", daemon=True)
    thread.start()
    try:
        while True:
            item = box.get()
            if item is end:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        thread.join()


def _iso_times(batch: Any) -> Any:
    """The time column as ISO 8601 text, ``2024-07-25T11:09:50.116000Z``: what ``strftime`` with
    ``%Y-%m-%dT%H:%M:%SZ`` gives, at a seventh of its cost (a cast without a time zone skips the zone lookups)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    naive = batch.column("time").cast(pa.timestamp("us")).cast(pa.string())  # UTC values, without the zone
    return pc.binary_join_element_wise(pc.replace_substring(naive, " ", "T", max_replacements=1), "Z", "")


def write_jsonl(batches: Iterable[Any], out: IO[bytes]) -> None:
    """JSON lines, one object per record, time as ISO 8601 (UTC)."""
    from l4lite.jsonlines import write_jsonl_batches

    write_jsonl_batches(batches, COLUMNS, out, {"time": _iso_times})


def write_output(batches: Iterable[Any], path: Path, fmt: str, metadata: dict[str, Any]) -> None:
    """Write the records atomically; CSV and JSON lines get a sidecar ``<output>.meta.json`` with the
    accounting."""

    write_atomically(path, lambda tmp: write_file(batches, tmp, fmt, metadata), sidecar(fmt, metadata))


def sidecar(fmt: str, metadata: dict[str, Any]) -> dict[str, Any] | None:
    """What ``<output>.meta.json`` holds: the metadata, for CSV and JSON lines; Parquet keeps it in its footer."""
    return None if fmt == "parquet" else metadata


def write_file(batches: Iterable[Any], path: Path, fmt: str, metadata: dict[str, Any], header: bool = True) -> None:
    """The records as one file of ``fmt``; ``header=False`` leaves out the CSV header (of a part that joins
    another)."""
    if fmt == "parquet":
        write_parquet(batches, path, metadata)
    elif fmt == "csv":
        _write_csv(batches, path, header)
    else:
        with path.open("wb") as fh:
            write_jsonl(batches, fh)


def write_atomically(path: Path, fill: Callable[[Path], None], sidecar: dict[str, Any] | None = None) -> None:
    """``fill`` a temporary file in ``path``'s folder, then rename it to ``path``: a reader never sees half a file.
    With ``sidecar``, ``<path>.meta.json`` holds it."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise L4Error(f"{path}: cannot write: {exc.strerror or exc}") from None
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        fill(tmp)
        if sidecar is not None:
            from l4lite.incident import write_atomic

            write_atomic(Path(f"{path}.meta.json"), json.dumps(sidecar, indent=2, sort_keys=True) + "\n")
        os.replace(tmp, path)
    except OSError as exc:
        raise L4Error(f"{path}: cannot write: {exc.strerror or exc}") from None
    finally:
        tmp.unlink(missing_ok=True)


DICTIONARY_COLUMNS = ("file", "node", "rank", "gpu", "source", "level", "template_id", "template")
UNSORTED_COLUMNS = ("text", "template")  # written without min/max statistics


def write_parquet(batches: Iterable[Any], path: Path, metadata: dict[str, Any]) -> None:
    import pyarrow.parquet as pq

    schema = output_schema(metadata)
    # Dictionary pages only for the few-valued columns: for the text (every line different) Arrow would build
    # a dictionary per row group and throw it away; zstd level 1 packs these columns as small as the default.
    # No min/max statistics for the two long texts, the line and its template: no reader skips a row group by
    # their sort order (``template_id`` keeps its statistics for that). The template's took a tenth of the
    # writer's instructions: a record's template mostly equals the one it is compared with, so every compare
    # runs to its end (callgrind, 100,000 records of a merged Slurm file: 482M instructions, 433M without both).
    with pq.ParquetWriter(str(path), schema, compression="zstd", compression_level=1,
                          use_dictionary=list(DICTIONARY_COLUMNS),
                          write_statistics=[name for name in COLUMNS if name not in UNSORTED_COLUMNS]) as writer:
        for batch in batches:
            writer.write_batch(batch.replace_schema_metadata(schema.metadata))


def _write_csv(batches: Iterable[Any], path: Path | IO[bytes], header: bool = True) -> None:
    import pyarrow as pa
    import pyarrow.csv as pcsv

    schema = output_schema()
    csv_schema = schema.set(COLUMNS.index("time"), pa.field("time", pa.string()))
    with pcsv.CSVWriter(str(path) if isinstance(path, Path) else path, csv_schema,
                        write_options=pcsv.WriteOptions(include_header=header)) as writer:
        for batch in batches:
            columns = [_iso_times(batch) if name == "time" else batch.column(name) for name in COLUMNS]
            writer.write_batch(pa.record_batch(columns, schema=csv_schema))
