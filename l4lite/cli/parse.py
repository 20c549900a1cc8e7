"""`l4lite parse`: records with template ids written out, composed here from ``ingest`` and ``export``.

`l4lite parse JOB... [-o records.parquet|records.csv|records.jsonl] [--format FMT] [--node-from REGEX]
[--jobs N|auto] [--quiet]`. With one process: ``ingest.files.discover``, ``ingest.reader.iter_job``,
``export.spool.write_spool``, ``export.writers``; with ``--jobs N``: ``export.parse_engine.parse_parallel`` and
``write_parallel`` on a ``scale.engine.PoolEngine``.

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
import sys
import tempfile
from pathlib import Path

from l4lite.cli.commands import summary
from l4lite.cli.terminal import printable
from l4lite.errors import L4Error
from l4lite.export.spool import write_spool
from l4lite.export.writers import (
    ACCOUNTING_KEY,
    finalize_spool,
    prefetched,
    sidecar,
    write_atomically,
    write_csv,
    write_jsonl,
    write_output,
)
from l4lite.records import Accounting
from l4lite.scale.parallel import jobs_argument, resolve_jobs
from l4lite.version import __version__

FORMATS = ("parquet", "csv", "jsonl")
_SUFFIXES = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl",
             ".json": "jsonl"}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "parse", help=summary("parse"),
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
    p.add_argument("-q", "--quiet", action="store_true", help="no line accounting, warnings or progress bar")
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
    from l4lite.cli.progress import progress_bar, track_records
    from l4lite.ingest.files import discover
    from l4lite.ingest.reader import IngestOptions, iter_job
    from l4lite.mining.miner import TemplateMiner
    from l4lite.scan.gctune import fewer_collections

    bar = progress_bar(args.quiet)
    with tempfile.TemporaryDirectory(prefix="l4lite-parse-") as tmp, contextlib.ExitStack() as stack:
        engine = None
        if jobs > 1:  # shards of files in a process pool, templates re-mined across shards
            from l4lite.export.parse_engine import finalized_batches, parse_parallel
            from l4lite.scale.engine import PoolEngine

            engine = stack.enter_context(PoolEngine(jobs))
            results, accounting, templates = parse_parallel(args.paths, args.node_from, engine, Path(tmp), bar,
                                                            fmt)
            n = sum(r.records for r in results)
            batches = finalized_batches(results)
        else:
            accounting = Accounting()
            miner = TemplateMiner()
            spool = Path(tmp) / "records.arrows"
            job = discover(args.paths, accounting)
            records = iter_job(job, IngestOptions(node_from=args.node_from, fold_shapes=True), accounting, runs=True)
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
                write_csv(batches, sys.stdout.buffer)
            else:
                write_jsonl(batches, sys.stdout.buffer)
            sys.stdout.flush()
        elif engine is not None:  # each worker writes its shards' rows as a part, the parts then join
            from l4lite.export.parse_engine import write_parallel

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
