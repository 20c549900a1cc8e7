"""Throughput and peak memory of ``l4lite parse`` and ``l4lite analyze`` against plain drain3, in one run.

Usage: python benchmarks/throughput.py [--sizes 100k,1M] [--archive DIR] [--work /tmp/l4lite-throughput]
                                       [--baseline-lines 100000] [--skip dask,jobs2] [--repeat 3]
                                       [--stage-pairs 5]
                                       [--layout per-node-dir|per-rank-file|merged-slurm] [--keep]

For each size the script generates a healthy simulated job (16 nodes x 8 GPUs, the iteration count chosen for the
size, one folder per node or ``--layout``; or uses ``--archive``) and measures, on the same archive and in the same
run:

- baseline: drain3's own ``TemplateMiner`` with drain3's masking config (numbers, hex, IPs, ids, as in drain3's
  example ``drain3.ini``), ``add_log_message`` on every raw line, in this process, on the first
  ``--baseline-lines`` lines of the archive (drain3's rate does not depend on the archive's size). It runs again
  right before and after every other row, and each row's ratio is to the mean of those two runs: the machine's
  speed drifts within minutes, and the ratio must compare code, not moments;
- ``l4lite parse JOB -o records.parquet``, with ``--jobs 1`` and ``--jobs 2``, and ``-o records.jsonl --jobs 2``
  (a subprocess each);
- ``l4lite analyze JOB --no-store --quiet``: ``--jobs 1``, ``--jobs 2``, and ``--scheduler local:2`` (a subprocess
  each; the last one includes starting the LocalCluster);
- the analyze stages (scan + diagnose) in one process on one core (forked before the cluster starts, so that no
  scheduler thread shares it) against a LocalCluster(2) started beforehand, which is the ">= 1.6x on two
  workers" figure (cluster start-up excluded, reported apart). The scan, the stage that runs on the cluster, is
  also compared alone: the diagnosis runs in the caller's process either way.

With ``--repeat N`` each measurement runs N times and the fastest run is kept: on a shared machine noise only
ever slows a run down. The two analyze-stage rows run in ``--stage-pairs`` pairs (one process, then the
LocalCluster, each pair after a fresh reading of the machine's two-process speed-up), which take seconds each on
a 1M-line job: the table keeps each row's fastest run, and each pair's ratio is printed too, beside what the
machine gave two processes of a pure-Python loop just before it.

Before each parallel measurement the script prints how much faster two processes of a pure-Python loop run
than one at that moment: on a shared 2-core machine that is the ceiling for every parallel figure.

Each row prints lines/s (wall clock), the ratio to the baseline's lines/s and the peak RSS: of the largest single
process (``ru_maxrss`` of the subprocess and its children, from ``os.wait4``) and of the whole process tree (sum of
RSS over the tree, polled from /proc every 50 ms). The load average is printed too: the machine may be shared,
and then every wall-clock figure is slower by the same factor while the ratios hold.
"""

from __future__ import annotations

import argparse
import contextlib
import glob
import os
import resource
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
L4LITE = [sys.executable, "-m", "l4lite"]
LINES_PER_ITERATION = 163  # 16 nodes x 8 GPUs, deepspeed: ~1.27 lines per rank and iteration


@dataclass
class Row:
    name: str
    lines: int
    seconds: float
    rss_process_mb: float | None = None
    rss_tree_mb: float | None = None
    note: str = ""
    cpu: float | None = None  # CPU seconds of the process (and its waited-for children)
    base: tuple[float, float] | None = None  # drain3 lines/s by wall clock and by CPU, measured around this row
    scan_seconds: float | None = None  # of an analyze-stages row: the scan alone, before the diagnosis
    scan_cpu: float | None = None  # and its CPU seconds: of the process, or of the cluster's workers

    @property
    def rate(self) -> float:
        return self.lines / self.seconds if self.seconds > 0 else 0.0


def parse_size(text: str) -> int:
    text = text.strip().lower()
    mult = 1
    if text.endswith("k"):
        mult, text = 1000, text[:-1]
    elif text.endswith("m"):
        mult, text = 1_000_000, text[:-1]
    return int(float(text) * mult)


def count_lines(job: Path) -> int:
    n = 0
    for path in job.rglob("*"):
        if path.is_file() and path.name != "ground_truth.json":
            with path.open("rb") as fh:
                while chunk := fh.read(1 << 20):
                    n += chunk.count(b"\n")
    return n


def generate(job: Path, lines: int, layout: str = "per-node-dir", nodes: int = 16) -> int:
    iterations = max(50, lines * 16 // nodes // LINES_PER_ITERATION)
    subprocess.run(L4LITE + ["simulate", "healthy", "--nodes", str(nodes), "--gpus-per-node", "8", "--iterations",
                             str(iterations), "--format", "deepspeed", "--layout", layout, "-o", str(job),
                             "--force"], check=True, stdout=subprocess.DEVNULL)
    return count_lines(job)


# ----------------------------------------------------------------------------------------------- measuring
def _tree_rss(pid: int) -> int:
    """Sum of RSS (bytes) of a process and all its descendants, from /proc."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    page = os.sysconf("SC_PAGE_SIZE")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            ppid = int(fields[1])
            with open(f"/proc/{entry}/statm") as fh:
                rss[int(entry)] = int(fh.read().split()[1]) * page
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    total = 0
    stack = [pid]
    while stack:
        p = stack.pop()
        total += rss.get(p, 0)
        stack.extend(children.get(p, []))
    return total


def run_measured(name: str, argv: list[str], lines: int, note: str = "") -> Row:
    """Run a subprocess; wall time, ru_maxrss of it (and its waited-for children), polled tree RSS."""
    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak = [0]
    done = threading.Event()

    def poll() -> None:
        while not done.is_set():
            with contextlib.suppress(OSError):
                peak[0] = max(peak[0], _tree_rss(proc.pid))
            done.wait(0.05)

    poller = threading.Thread(target=poll, daemon=True)
    poller.start()
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - started
    done.set()
    poller.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{name} failed ({proc.returncode}): {err.strip()[-500:]}")
    return Row(name, lines, seconds, usage.ru_maxrss / 1024, peak[0] / 2**20, note,
               usage.ru_utime + usage.ru_stime)


def best(rows: list[Row]) -> Row:
    """The fastest of repeated runs (a shared machine only ever slows a run down), with the highest peak RSS."""
    row = min(rows, key=lambda r: r.seconds)
    rss = [r.rss_process_mb for r in rows if r.rss_process_mb is not None]
    tree = [r.rss_tree_mb for r in rows if r.rss_tree_mb is not None]
    if len(rows) > 1:
        row.note = (row.note + "; " if row.note else "") + f"best of {len(rows)}"
    return Row(row.name, row.lines, row.seconds, max(rss) if rss else None, max(tree) if tree else None, row.note,
               row.cpu, row.base, row.scan_seconds, row.scan_cpu)


def drain3_miner() -> object:
    """drain3's TemplateMiner with the masking instructions of drain3's example ``drain3.ini``."""
    from drain3 import TemplateMiner
    from drain3.masking import MaskingInstruction
    from drain3.template_miner_config import TemplateMinerConfig

    config = TemplateMinerConfig()
    config.masking_instructions = [
        MaskingInstruction(r"((?<=[^A-Za-z0-9])|^)(([0-9a-f]{2,}:){3,}([0-9a-f]{2,}))((?=[^A-Za-z0-9])|$)", "ID"),
        MaskingInstruction(r"((?<=[^A-Za-z0-9])|^)(\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3})((?=[^A-Za-z0-9])|$)", "IP"),
        MaskingInstruction(r"((?<=[^A-Za-z0-9])|^)([0-9a-f]{6,} ?){3,}((?=[^A-Za-z0-9])|$)", "SEQ"),
        MaskingInstruction(r"((?<=[^A-Za-z0-9])|^)([0-9A-F]{4} ?){4,}((?=[^A-Za-z0-9])|$)", "SEQ"),
        MaskingInstruction(r"((?<=[^A-Za-z0-9])|^)(0x[a-f0-9A-F]+)((?=[^A-Za-z0-9])|$)", "HEX"),
        MaskingInstruction(r"((?<=[^A-Za-z0-9])|^)([\-\+]?\d+)((?=[^A-Za-z0-9])|$)", "NUM"),
        MaskingInstruction(r"(?<=executed cmd )(\".+?\")", "CMD"),
    ]
    config.profiling_enabled = False
    return TemplateMiner(config=config)


def sample_lines(job: Path, max_lines: int) -> list[str]:
    """The first ``max_lines`` lines taken round-robin over the job's files, so that the sample has every kind of
    log, not only the first node's kernel log."""
    lines: list[str] = []
    files = sorted(p for p in glob.glob(str(job / "**" / "*"), recursive=True)
                   if os.path.isfile(p) and not p.endswith("ground_truth.json"))
    handles = [open(p, encoding="utf-8", errors="replace") for p in files]  # noqa: SIM115
    try:
        while len(lines) < max_lines and handles:
            for fh in list(handles):
                line = fh.readline()
                if not line:
                    handles.remove(fh)
                    continue
                lines.append(line.rstrip("\n"))
    finally:
        for fh in handles:
            fh.close()
    return lines[:max_lines]


def drain3_baseline(job: Path, max_lines: int, lines: list[str] | None = None) -> Row:
    """drain3 TemplateMiner with drain3's masking instructions on raw lines, in this process."""
    miner = drain3_miner()
    lines = lines if lines is not None else sample_lines(job, max_lines)
    started = time.perf_counter()
    cpu = time.process_time()
    for line in lines:
        miner.add_log_message(line)
    seconds = time.perf_counter() - started
    cpu = time.process_time() - cpu
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return Row("drain3 TemplateMiner+masking (baseline)", len(lines), seconds, maxrss, None,
               f"{len(miner.drain.clusters)} clusters on a {len(lines):,}-line sample", cpu)


def stages_in_process(job: Path, lines: int, engine: object | None) -> Row:
    """scan + diagnose in this process (one core), or on a running Dask engine; the scan is timed alone too.

    The one-process run goes to ``solo_process`` (see there); its note says how much CPU other threads of its
    process took, which should be none. On the cluster, the workers' CPU seconds during the scan are read too
    (``Client.run``; their own housekeeping, a few per cent of a core each, is in it): on this machine the same
    work can cost much more CPU when both cores are busy, which no parallel code can win back.
    """
    from l4lite.api import diagnose
    from l4lite.options import AnalyzeOptions
    from l4lite.scale.engine import scan_job_parallel
    from l4lite.scan.job import load_rules, scan_job

    options = AnalyzeOptions()
    rules = load_rules(options)
    client = getattr(engine, "_client", None)
    workers_cpu = client.run(time.process_time) if client is not None else {}
    started = time.perf_counter()
    cpu, own = time.process_time(), time.thread_time()
    if engine is None:
        scan = scan_job([str(job)], options, rules=rules)
        name = "analyze stages, one process"
        scan_cpu = time.process_time() - cpu
    else:
        scan = scan_job_parallel([str(job)], options, engine=engine)  # type: ignore[arg-type]
        name = "analyze stages, LocalCluster(2)"
        scan_cpu = sum(client.run(time.process_time).values()) - sum(workers_cpu.values()) if client else 0.0
    scanned = time.perf_counter() - started
    incident = diagnose(scan, options, rules=rules)
    note = f"verdict {incident.status}; scan {scanned:.2f} s, {scan_cpu:.1f} s CPU"
    if engine is None:
        cpu, own = time.process_time() - cpu, time.thread_time() - own
        note += f"; other threads of its process {max(cpu - own, 0.0):.2f} s CPU"
    else:
        note += " on the workers"
    return Row(name, lines, time.perf_counter() - started, None, None, note,
               cpu if engine is None else None, scan_seconds=scanned, scan_cpu=scan_cpu)


def solo_process() -> Any:
    """A process forked before the LocalCluster starts, for the one-process analyze stages: the scheduler of a
    LocalCluster runs in the threads of the process that started it (about 5 % of a core when idle, and the GIL
    now and then), which would slow a one-process run there and flatter the cluster's ratio."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork"))
    pool.submit(int).result()  # fork now, while this process runs no other thread
    return pool


def solo_stages(solo: Any, job: Path, lines: int) -> Row:
    row: Row = solo.submit(stages_in_process, job, lines, None).result()
    return row


def _spin(n: int) -> int:
    total = 0
    for i in range(n):
        total += i * i
    return total


def machine_parallelism(n: int = 4_000_000) -> float:
    """Speed-up of two processes over one on a pure-Python loop, right now: on a shared machine the other
    tenants decide how much of the second core there is, and the parallel rows can only be read against it."""
    from concurrent.futures import ProcessPoolExecutor

    started = time.perf_counter()
    _spin(n)
    _spin(n)
    serial = time.perf_counter() - started
    with ProcessPoolExecutor(2) as pool:
        list(pool.map(_spin, [1000, 1000]))  # start the workers before timing
        started = time.perf_counter()
        list(pool.map(_spin, [n, n]))
        parallel = time.perf_counter() - started
    return serial / parallel


# ----------------------------------------------------------------------------------------------- report
HEADER = (f"  {'measurement':<40} {'lines':>11} {'wall s':>7} {'lines/s':>9} {'x drain3':>8} {'CPU s':>7} "
          f"{'x drain3 CPU':>12} {'RSS proc MB':>11} {'RSS tree MB':>11}")


class Bracket:
    """drain3's rate measured again right before and right after each row: a row's ratio is to the mean of the
    two. This machine's speed drifts by half or more within minutes (the same command took 27 s, then 38 s, then
    44 s of CPU in a row), so a baseline taken once at the start would credit or blame a row for the drift."""

    def __init__(self, job: Path, max_lines: int) -> None:
        self.job = job
        self.lines = sample_lines(job, max_lines)
        self.rates: list[float] = []
        self.last = self.measure()

    def measure(self) -> Row:
        row = drain3_baseline(self.job, len(self.lines), self.lines)
        self.rates.append(row.rate)
        return row

    def around(self, run: Callable[[], Row]) -> Row:
        before = self.last
        row = run()
        self.last = after = self.measure()
        row.base = ((before.rate + after.rate) / 2,
                    (before.lines / (before.cpu or 1) + after.lines / (after.cpu or 1)) / 2)
        return row

    def spread(self) -> str:
        lo, hi = min(self.rates), max(self.rates)
        return f"drain3 ran {len(self.rates)} times in this run: {lo:,.0f} to {hi:,.0f} lines/s ({hi / lo:.2f}x apart)"


def print_rows(rows: list[Row], base: Row) -> None:
    """Rates and ratios by wall clock and by CPU time, each against the drain3 runs around the row (``Bracket``)
    where there are some, else against ``base``."""
    for r in rows:
        base_rate, base_cpu_rate = r.base or (base.rate, base.lines / base.cpu if base.cpu else 0.0)
        ratio = r.rate / base_rate if base_rate else 0.0
        cpu = f"{r.cpu:.1f}" if r.cpu is not None else "-"
        cpu_ratio = "-"
        if r.cpu and base_cpu_rate:
            cpu_ratio = f"{(r.lines / r.cpu) / base_cpu_rate:.2f}"
        proc = f"{r.rss_process_mb:,.0f}" if r.rss_process_mb is not None else "-"
        tree = f"{r.rss_tree_mb:,.0f}" if r.rss_tree_mb is not None else "-"
        print(f"  {r.name:<40} {r.lines:>11,} {r.seconds:>7.1f} {r.rate:>9,.0f} {ratio:>8.2f} {cpu:>7} "
              f"{cpu_ratio:>12} {proc:>11} {tree:>11}" + (f"  ({r.note})" if r.note else ""))
    sys.stdout.flush()


def compile_l4lite() -> str:
    """Compile l4lite's modules to bytecode, as ``pip install`` does, and say so.

    A non-editable ``pip install`` writes the ``.pyc`` files at install time. An editable install leaves that to
    the first import, and with ``PYTHONDONTWRITEBYTECODE`` set they are never written: then every ``l4lite``
    subprocess compiles some ninety modules again, 0.1 to 0.4 s of start-up that a user's install does not pay.
    """
    code = ("import compileall, pathlib, l4lite; "
            "ok = compileall.compile_dir(pathlib.Path(l4lite.__file__).parent, quiet=1); "
            "print(pathlib.Path(l4lite.__file__).parent if ok else '')")
    done = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    return done.stdout.strip()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="100k,1M", help="archive sizes in lines, comma-separated (100k,1M)")
    ap.add_argument("--archive", help="measure this job folder instead of generating archives")
    ap.add_argument("--work", default="/tmp/l4lite-throughput", help="folder for generated archives and outputs")
    ap.add_argument("--baseline-lines", type=int, default=100_000, help="lines of the drain3 baseline sample")
    ap.add_argument("--skip", default="", help="comma-separated: parse, parse2, jsonl, single, jobs2, cli-dask, dask")
    ap.add_argument("--layout", default="per-node-dir", choices=["per-node-dir", "per-rank-file", "merged-slurm"],
                    help="file layout of generated archives (merged-slurm: the trainer output of every rank in one "
                         "srun --label file, which the parallel rows read in pieces)")
    ap.add_argument("--keep", action="store_true", help="keep the generated archives")
    ap.add_argument("--repeat", type=int, default=1,
                    help="run each measurement N times and keep the fastest (the machine's speed varies)")
    ap.add_argument("--stage-pairs", type=int, default=5,
                    help="pairs of analyze-stage runs (one process, LocalCluster(2)), alternated; 0: --repeat")
    args = ap.parse_args(argv)
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    print(f"# l4lite throughput; {os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f} at start")
    compiled = compile_l4lite()
    print(f"# l4lite's modules compiled to bytecode first, as pip install does ({compiled or 'failed'})")
    engine = solo = None
    if "dask" not in skip:
        solo = solo_process()
        from l4lite.scale.engine import DaskEngine

        t0 = time.perf_counter()
        engine = DaskEngine("local:2")
        print(f"# LocalCluster(2) started in {time.perf_counter() - t0:.1f} s (not counted below)")
        warm = work / "warm-up"  # the workers import l4lite and compile the rule pack once, before timing
        subprocess.run(L4LITE + ["simulate", "healthy", "--nodes", "2", "--gpus-per-node", "2", "--iterations", "20",
                                 "-o", str(warm), "--force"], check=True, stdout=subprocess.DEVNULL)
        stages_in_process(warm, 1, engine)
        solo_stages(solo, warm, 1)
        shutil.rmtree(warm, ignore_errors=True)
    jobs: list[tuple[str, Path, bool]] = []
    if args.archive:
        jobs.append((args.archive, Path(args.archive), False))
    else:
        for size in args.sizes.split(","):
            jobs.append((size.strip(), work / f"job-{size.strip()}", True))
    summary: list[tuple[str, dict[str, Row]]] = []
    try:
        for label, job, generated in jobs:
            if generated:
                t0 = time.perf_counter()
                lines = generate(job, parse_size(label), args.layout)
                print(f"\n## {label}: generated {lines:,} lines in {time.perf_counter() - t0:.0f} s ({job}, "
                      f"{args.layout})")
            else:
                lines = count_lines(job)
                print(f"\n## {job}: {lines:,} lines")
            bracket = Bracket(job, args.baseline_lines)
            base = bracket.last
            rows = {"baseline": base}
            print(HEADER)
            print_rows([base], base)
            out = work / "records.parquet"
            steps = [
                ("parse", "l4lite parse --jobs 1", L4LITE + ["parse", str(job), "-o", str(out), "--quiet", "--jobs", "1"]),
                ("parse2", "l4lite parse --jobs 2", L4LITE + ["parse", str(job), "-o", str(out), "--quiet", "--jobs", "2"]),
                ("jsonl", "l4lite parse --jobs 2 -o records.jsonl",
                 L4LITE + ["parse", str(job), "-o", str(out.with_suffix(".jsonl")), "--quiet", "--jobs", "2"]),
                ("single", "l4lite analyze --jobs 1",
                 L4LITE + ["analyze", str(job), "--no-store", "--quiet", "--jobs", "1"]),
                ("jobs2", "l4lite analyze --jobs 2",
                 L4LITE + ["analyze", str(job), "--no-store", "--quiet", "--jobs", "2"]),
                ("cli-dask", "l4lite analyze --scheduler local:2",
                 L4LITE + ["analyze", str(job), "--no-store", "--quiet", "--scheduler", "local:2"]),
            ]
            for key, name, cmd in steps:
                if key in skip:
                    continue
                if key in ("parse2", "jsonl", "jobs2", "cli-dask"):
                    print(f"  (two processes of a pure-Python loop run {machine_parallelism():.2f}x one right now)")
                note = "incl. cluster start" if key == "cli-dask" else ""
                rows[key] = best([bracket.around(partial(run_measured, name, cmd, lines, note))
                                  for _ in range(args.repeat)])
                print_rows([rows[key]], base)
            if engine is not None:
                runs: dict[str, list[Row]] = {"stages1": [], "stages2": []}
                pairs = args.stage_pairs or args.repeat
                machine: list[float] = []
                for _ in range(pairs):  # alternated, so that a slow spell of the machine hits both
                    machine.append(machine_parallelism())
                    runs["stages1"].append(bracket.around(partial(solo_stages, solo, job, lines)))
                    runs["stages2"].append(bracket.around(partial(stages_in_process, job, lines, engine)))
                rows["stages1"], rows["stages2"] = best(runs["stages1"]), best(runs["stages2"])
                print_rows([rows["stages1"], rows["stages2"]], base)
                speedup = rows["stages2"].rate / rows["stages1"].rate
                scans = [min(r.scan_seconds or r.seconds for r in runs[k]) for k in ("stages1", "stages2")]
                print(f"  LocalCluster(2) vs one process (analyze stages): {speedup:.2f}x; the scan alone, "
                      f"the stage that runs on the cluster (best of {pairs}): {scans[0] / scans[1]:.2f}x")
                print("  (pair by pair: one process s, LocalCluster(2) s, ratio; two processes of a pure-Python "
                      "loop just before)")
                ratios = [a.seconds / b.seconds for a, b in zip(runs["stages1"], runs["stages2"], strict=True)]
                for one, two, ratio, spin in zip(runs["stages1"], runs["stages2"], ratios, machine, strict=True):
                    print(f"    {one.seconds:6.2f} {two.seconds:6.2f} {ratio:5.2f}x   loop {spin:.2f}x")
                print(f"  (median of the pairs' ratios: {statistics.median(ratios):.2f}x; of the loop's: "
                      f"{statistics.median(machine):.2f}x)")
                cpus = [[r.scan_cpu or 0.0 for r in runs[k]] for k in ("stages1", "stages2")]
                print(f"  (the scan's CPU seconds, run by run: one process {', '.join(f'{c:.1f}' for c in cpus[0])}; "
                      f"the two workers together {', '.join(f'{c:.1f}' for c in cpus[1])})")
            print(f"  ({bracket.spread()})")
            out.unlink(missing_ok=True)
            for extra in (out.with_suffix(".jsonl"), Path(f"{out.with_suffix('.jsonl')}.meta.json")):
                extra.unlink(missing_ok=True)
            summary.append((label, rows))
            if generated and not args.keep:
                shutil.rmtree(job, ignore_errors=True)
    finally:
        if engine is not None:
            engine.close()
        if solo is not None:
            solo.shutdown()
    if len(summary) > 1 and all("single" in r for _, r in summary):
        (a_label, a), (b_label, b) = summary[0], summary[-1]
        print(f"\n# peak RSS of l4lite analyze (largest process): {a_label} {a['single'].rss_process_mb:,.0f} MB, "
              f"{b_label} {b['single'].rss_process_mb:,.0f} MB")
    print(f"# load average {os.getloadavg()[0]:.1f} at the end")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
