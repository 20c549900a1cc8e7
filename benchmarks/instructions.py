"""Instructions per line of each l4lite stage against drain3, counted by valgrind (callgrind): the same counts on
every run, however busy the machine, where wall-clock ratios move by a third from one run to the next.

Usage: python benchmarks/instructions.py [--archive DIR | --lines 50000 [--nodes 16]]
                                         [--layout per-node-dir|merged-slurm] [--baseline-lines 5000]

Each measurement is a child process under ``valgrind --tool=callgrind`` that imports what it needs, reads the
drain3 sample into memory, and then does one thing; a child that only does that is the zero point, so each row's
count is the stage's own work (reading the files included for l4lite), divided by its lines. Rows:

- ``drain3``: drain3's TemplateMiner with masking on a sample of the raw lines (the baseline, as in
  ``throughput.py``);
- ``ingest``: ``l4lite.ingest.reader`` records from the files (headers, node/rank/GPU, timestamps, multi-line records),
  lines of known shapes in runs (``l4lite.ingest.runs``), as ``parse`` and ``analyze`` read them;
- ``parse``: what ``l4lite parse -o FILE.parquet`` does after start-up: ingest (in runs of known-shape lines,
  ``l4lite.ingest.runs``), the template miner, the Arrow spool, template ids, the Parquet file;
- ``ingest + scan``: ingest plus the scan (``analyze``'s pass: counts, metrics, rules, markers), finished.

The ratio column is drain3's instructions per line over the row's. Instructions are not seconds (a cache miss
costs more than an add), but between two Python programs on the same interpreter they track CPU time closely.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from throughput import count_lines, generate, sample_lines  # noqa: E402

MODES = ("zero", "drain3", "ingest", "parse", "scan")


def child(mode: str, job: Path, sample: int) -> None:
    """One measurement (run under callgrind by the parent)."""
    import pandas  # noqa: F401 - imported in every mode: the same zero point (pyarrow imports it on first use)
    import pyarrow.compute  # noqa: F401
    import pyarrow.parquet  # noqa: F401
    from throughput import drain3_miner

    from l4lite.export.spool import write_spool
    from l4lite.export.writers import finalize_spool, write_output
    from l4lite.ingest.files import discover
    from l4lite.ingest.reader import IngestOptions, prepare_job, read_file
    from l4lite.mining.miner import TemplateMiner
    from l4lite.options import AnalyzeOptions
    from l4lite.records import Accounting
    from l4lite.scan.gctune import fewer_collections
    from l4lite.scan.job import load_rules
    from l4lite.scan.scanner import Scanner

    rules = load_rules(AnalyzeOptions())
    lines = sample_lines(job, sample)  # read in every mode: the same zero point
    found = discover([str(job)], Accounting())
    miner = drain3_miner()  # built in every mode: the same zero point
    if mode == "drain3":
        for line in lines:
            miner.add_log_message(line)
        return
    if mode == "zero":
        return
    acc = Accounting()
    options = IngestOptions()
    prepare_job(found, options, acc)
    with fewer_collections():
        records = (r for f in found.files for r in read_file(f, options, acc, runs=True))
        if mode == "ingest":
            for _ in records:
                pass
        elif mode == "parse":
            from l4lite.ingest.reader import iter_job

            out = Path(tempfile.mkdtemp(prefix="l4lite-parse-"))
            miner = TemplateMiner()
            job_acc = Accounting()
            write_spool(iter_job(discover([str(job)], job_acc), IngestOptions(), job_acc, runs=True), miner,
                        out / "spool.arrows")
            write_output(finalize_spool(out / "spool.arrows", miner.finalize()), out / "records.parquet", "parquet",
                         {})
            shutil.rmtree(out)
        else:
            scanner = Scanner(TemplateMiner(), rules, bucket_seconds=30.0)
            scanner.add_many(records)
            scanner.finish(acc)


def measure(mode: str, job: Path, out_dir: Path, sample: int) -> int:
    out = out_dir / f"callgrind.{mode}"
    proc = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable,
                           __file__, "--child", mode, "--archive", str(job), "--baseline-lines", str(sample)],
                          capture_output=True, text=True)
    m = re.search(r"Collected : (\d+)", proc.stderr)
    if proc.returncode != 0 or m is None:
        raise SystemExit(f"{mode}: valgrind failed ({proc.returncode}): {proc.stderr.strip()[-400:]}")
    return int(m.group(1))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--archive", help="job folder (default: generate a healthy 16 x 8 DeepSpeed job)")
    ap.add_argument("--lines", type=int, default=50_000, help="lines of the generated job")
    ap.add_argument("--baseline-lines", type=int, default=5_000,
                    help="lines of the drain3 sample (its cost per line does not depend on the archive's size)")
    ap.add_argument("--layout", default="per-node-dir", choices=["per-node-dir", "per-rank-file", "merged-slurm"])
    ap.add_argument("--nodes", type=int, default=16,
                    help="nodes of the generated job (8 ranks each; fewer nodes: longer files, as in a real archive)")
    ap.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(args.child, Path(args.archive), args.baseline_lines)
        return 0
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (Debian: apt-get install valgrind)")
    work = Path(tempfile.mkdtemp(prefix="l4lite-instructions-"))
    try:
        if args.archive:
            job = Path(args.archive)
            lines = count_lines(job)
        else:
            job = work / "job"
            lines = generate(job, args.lines, args.layout, args.nodes)
        print(f"# {job}: {lines:,} lines ({f'{args.layout}, {args.nodes} nodes' if not args.archive else 'given'}); "
              f"python {sys.version.split()[0]}; {os.cpu_count()} cores")
        counts = {mode: measure(mode, job, work, args.baseline_lines) for mode in MODES}
        zero = counts["zero"]
        base = (counts["drain3"] - zero) / min(lines, args.baseline_lines)
        print(f"  {'stage':<22} {'instructions/line':>18} {'x drain3':>9}")
        names = {"drain3": "drain3 (baseline)", "ingest": "ingest", "parse": "parse",
                 "scan": "ingest + scan"}
        for mode in MODES[1:]:
            per_line = (counts[mode] - zero) / (min(lines, args.baseline_lines) if mode == "drain3" else lines)
            print(f"  {names[mode]:<22} {per_line:>18,.0f} {base / per_line:>9.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
