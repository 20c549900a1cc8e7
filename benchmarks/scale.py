"""Time and memory of ``l4lite analyze`` on one large mixed archive (issue 29: 100M lines, 10 minutes, 1 GB).

Usage: python benchmarks/scale.py [--lines 10M] [--work DIR] [--runs jobs2,local2] [--gen-jobs 2]
                                  [--keep] [--reuse] [--nice 5]

It writes, streaming (a few thousand lines in memory at a time, files written by ``--gen-jobs`` processes), a
16-node x 8-GPU job of about ``--lines`` lines, laid out as a job's nodes leave their logs:

- ``nodeNNN/rank{R}.log``: one trainer file per rank, 93 % of the lines. The nodes take turns over six formats
  of ``format_zoo`` (Megatron-LM, DeepSpeed, fairseq, NeMo, Hugging Face Trainer, Lightning), so one job mixes
  them; the ranks of the last node of every eight write gzip files (``rank{R}.log.gz``, rotated logs). Each rank
  file carries its GPU's NCCL INFO communicator lines at its start and again every 430 lines (3 % of its lines:
  more than a job that builds its communicators once, as one that creates many of them, or logs with
  ``NCCL_DEBUG=INFO`` after every re-init);
- ``nodeNNN/syslog`` (2.5 %): benign system lines, kernel lines (NVRM, mlx5, thermal, martian source) and
  storage client lines (Lustre, NFS, GPFS) with a syslog header and the kernel's uptime;
- ``nodeNNN/dmesg.log.gz`` (1.5 %): kernel lines in dmesg's bare uptime form.

Every trainer clock covers the same span (about half a second per trainer line of a rank), so the formats agree
on the job's time. The planted fault (the ground truth): GPU 3 of ``node007`` falls off the bus (NVRM Xid 79 in
its syslog and dmesg) right after the last training line; its rank aborts on a CUDA error a second later, and
every other rank's NCCL watchdog times out ten minutes after. The right verdict names ``node007`` and
``gpu_hardware``.

Then it runs ``l4lite analyze JOB --no-store --quiet --json OUT`` with ``--jobs 2`` and with ``--scheduler
local:2`` (``--runs``), each under ``/usr/bin/time -v`` and ``nice -n 5``, and prints per run: wall time, CPU
seconds (user + system of the command and every child it waited for, from ``time -v``), lines/s, the load
average before and after, peak memory and the verdict. Peak memory of the whole process tree (the parent, its
pool workers, the Dask scheduler's and workers' processes) is polled every 0.25 s from ``/proc``: the sum of RSS,
which counts twice the pages a forked worker still shares with its parent, and the sum of PSS
(``/proc/PID/smaps_rollup``: a shared page counts once, split between its sharers), the tree's real footprint;
``time -v``'s maximum RSS is of the largest single process only. A peak that lives less than the poll interval
can be missed.
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import os
import random
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from multiprocessing import Pool
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import format_zoo  # noqa: E402
from format_zoo import START, gen_kernel, gen_storage, nccl_lines, syslog_time  # noqa: E402
from throughput import parse_size  # noqa: E402

NODES = 16
GPUS = 8
FAULTY_NODE = 6  # node007, a Megatron-LM node
FAULTY_GPU = 3
TRAINER_SHARE, SYSLOG_SHARE, DMESG_SHARE = 0.93, 0.025, 0.015
NCCL_EVERY = 430  # trainer lines between a rank's NCCL communicator blocks
SECONDS_PER_LINE = 0.5  # of a rank's trainer file: the job's span grows with its size
FORMATS = ("megatron", "deepspeed", "fairseq", "nemo", "hf-trainer", "lightning")
TICKS_PER_LINE = {"megatron": 1.0, "deepspeed": 0.5, "fairseq": 1.0, "nemo": 1.0}  # clock ticks of a line
BOOT = START - 3600.0
ORIGINAL_CLOCK = format_zoo.Clock


@dataclass(frozen=True)
class FileTask:
    """One file to write: what kind, whose, how many lines, and the job's span."""

    kind: str  # "rank", "syslog" or "dmesg"
    node: int
    rank: int
    path: Path
    lines: int
    span: float  # seconds of training the job covers, START to the fault
    seed: int


def host(node: int) -> str:
    return f"node{node + 1:03d}"


def fault_time(span: float) -> float:
    return START + span + 120.0


def c10_head(rank: int, t: float, level: str, src: str) -> str:
    """PyTorch's c10 logging header, ``[rank3]:[E1129 04:01:02.715298746 ProcessGroupNCCL.cpp:607] ``."""
    tm = time.gmtime(t)
    return (f"[rank{rank}]:[{level}{tm.tm_mon}{tm.tm_mday:02d} {time.strftime('%H:%M:%S', tm)}."
            f"{int((t % 1) * 1e9):09d} {src}] ")


def rank_ending(task: FileTask) -> list[str]:
    """What a rank prints after the fault: the faulty GPU's rank dies on a CUDA error, the others time out."""
    t = fault_time(task.span)
    r = task.rank
    if task.node == FAULTY_NODE and r % GPUS == FAULTY_GPU:
        t += 1.2
        return [c10_head(r, t, "E", "ProcessGroupNCCL.cpp:1515") + f"[PG 0 (default_pg) Rank {r}] Process group "
                "watchdog thread terminated with exception: CUDA error: unknown error",
                "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace "
                "below might be incorrect.",
                "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
                "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
                "",
                "Exception raised from c10_cuda_check_implementation at ../c10/cuda/CUDAException.cpp:43 (most "
                "recent call first):",
                "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x7f3a3c3b8446 in "
                "/usr/local/lib/python3.10/dist-packages/torch/lib/libc10.so)",
                "terminate called after throwing an instance of 'c10::DistBackendError'"]
    t += 600.0 + (r % 7) * 0.013
    work = ("WorkNCCL(SeqNum=98213, OpType=ALLREDUCE, NumelIn=466119168, NumelOut=466119168, Timeout(ms)=600000) "
            f"ran for {600020 + r % 90} milliseconds before timing out.")
    return [c10_head(r, t, "E", "ProcessGroupNCCL.cpp:607") + f"[Rank {r}] Watchdog caught collective operation "
            f"timeout: {work}",
            c10_head(r, t, "E", "ProcessGroupNCCL.cpp:1664") + f"[PG 0 (default_pg) Rank {r}] Exception (either "
            "an error or timeout) detected by watchdog at work: 98213, last enqueued NCCL work: 98213, last "
            "completed NCCL work: 98212.",
            c10_head(r, t + 0.02, "E", "ProcessGroupNCCL.cpp:1515") + f"[PG 0 (default_pg) Rank {r}] Process "
            f"group watchdog thread terminated with exception: [Rank {r}] Watchdog caught collective operation "
            f"timeout: {work}",
            "terminate called after throwing an instance of 'c10::DistBackendError'"]


def rank_lines(task: FileTask) -> Iterator[str]:
    """A rank's trainer file: its format's lines with a clock stretched over the job's span, NCCL blocks."""
    fmt = FORMATS[task.node % len(FORMATS)]
    rnd = random.Random(task.seed)
    nccl_n = task.lines // NCCL_EVERY * 13 + 13
    trainer_n = max(1, task.lines - nccl_n)
    ticks = trainer_n * TICKS_PER_LINE.get(fmt, 1.0)
    step = task.span / ticks / 1.025  # Clock.tick draws 0.9-1.15 of a step
    format_zoo.Clock = lambda t, step_s: ORIGINAL_CLOCK(t, step)  # type: ignore[misc, assignment]
    gen = format_zoo.FORMATS[fmt][0](task.node, rnd)
    try:
        first = next(gen)  # the generator makes its clock before its first line
    finally:
        format_zoo.Clock = ORIGINAL_CLOCK  # type: ignore[misc]
    gen = itertools.chain([first], gen)
    gpu = task.rank % GPUS
    mine = f" [{gpu}] "

    def nccl() -> list[str]:
        return [line for line in nccl_lines(host(task.node), task.node, rnd) if mine in line]

    yield from nccl()
    for i in range(trainer_n):
        yield next(gen)
        if i % NCCL_EVERY == NCCL_EVERY - 1:
            yield from nccl()
    yield from rank_ending(task)


_PREFIX = re.compile(r"^(?:\[\s*[\d.]+\] |\w{3} [ \d]\d \d\d:\d\d:\d\d \S+ (?:kernel: \[\s*[\d.]+\] )?)")
BENIGN = ("systemd[1]: Started Session {n} of User slurm.", "CRON[{n}]: (root) CMD (/usr/lib/sa/sa1 1 1)",
          "sshd[{n}]: Accepted publickey for slurm from 10.0.0.2 port {p} ssh2",
          "slurmd[{n}]: launch task StepId={n}.0 request from UID:1000 GID:1000 HOST:10.0.0.2 PORT:{p}",
          "systemd-logind[812]: New session {n} of user slurm.", "nvidia-persistenced[1402]: Verbose syslog "
          "connection opened")


def system_lines(task: FileTask) -> Iterator[str]:
    """A node's syslog (``kernel`` with uptime, benign daemons, storage clients) or dmesg (bare uptime)."""
    rnd = random.Random(task.seed)
    kernel, storage = gen_kernel(task.node, rnd), gen_storage(task.node, rnd)
    name = host(task.node)
    t_fault = fault_time(task.span)
    dt = task.span / max(1, task.lines)
    t = START
    planted = task.node != FAULTY_NODE
    for i in range(task.lines):
        t += dt * rnd.uniform(0.5, 1.5)
        if not planted and t > t_fault - 30:
            planted = True
            yield from fault_kernel_lines(task, t_fault)
        if task.kind == "dmesg":
            msg = _PREFIX.sub("", next(kernel))
            while "segfault" in msg:  # every node's own: noise of one job is not a fault of one node
                msg = _PREFIX.sub("", next(kernel))
            yield f"[{t - BOOT:12.6f}] {msg}"
            continue
        k = i % 10
        if k < 4:
            yield f"{syslog_time(t)} {name} " + BENIGN[i % len(BENIGN)].format(n=rnd.randrange(2, 99999),
                                                                               p=rnd.randrange(1024, 65535))
        elif k < 8:
            msg = _PREFIX.sub("", next(kernel))
            while "segfault" in msg:
                msg = _PREFIX.sub("", next(kernel))
            yield f"{syslog_time(t)} {name} kernel: [{t - BOOT:12.6f}] {msg}"
        else:
            line = next(storage)
            msg = _PREFIX.sub("", line)
            yield (f"{syslog_time(t)} {name} kernel: [{t - BOOT:12.6f}] {msg}" if "kernel: [" in line
                   else f"{syslog_time(t)} {name} {msg}")
    if not planted:
        yield from fault_kernel_lines(task, t_fault)


def fault_kernel_lines(task: FileTask, t: float) -> list[str]:
    """The Xid 79 lines of the faulty GPU, in the file's form (as in ``l4lite.simulate.node_faults.Xid79``)."""
    bus = f"{0x18 + FAULTY_GPU * 0x11:02x}"
    msgs = [f"NVRM: Xid (PCI:0000:{bus}:00): 79, pid=52871, name=pt_main_thread, GPU has fallen off the bus.",
            f"NVRM: GPU 0000:{bus}:00.0: GPU has fallen off the bus.",
            "NVRM: A GPU crash dump has been created. If possible, please run",
            "NVRM: nvidia-bug-report.sh as root to collect this data before",
            "NVRM: the NVIDIA kernel module is unloaded."]
    if task.kind == "dmesg":
        return [f"[{t - BOOT:12.6f}] {m}" for m in msgs]
    return [f"{syslog_time(t)} {host(task.node)} kernel: [{t - BOOT:12.6f}] {m}" for m in msgs]


def write_file(task: FileTask) -> int:
    """Write one file a chunk of lines at a time; returns its line count."""
    lines = rank_lines(task) if task.kind == "rank" else system_lines(task)
    task.path.parent.mkdir(parents=True, exist_ok=True)
    gz = task.path.suffix == ".gz"
    n = 0
    with (gzip.open(task.path, "wt", compresslevel=1, encoding="utf-8") if gz  # noqa: SIM115
          else task.path.open("w", encoding="utf-8")) as fh:
        chunk: list[str] = []
        for line in lines:
            chunk.append(line)
            if len(chunk) == 8192:
                fh.write("\n".join(chunk) + "\n")
                n += len(chunk)
                chunk.clear()
        if chunk:
            fh.write("\n".join(chunk) + "\n")
            n += len(chunk)
    return n


def plan_files(job: Path, lines: int) -> list[FileTask]:
    per_rank = int(lines * TRAINER_SHARE / (NODES * GPUS))
    span = per_rank * SECONDS_PER_LINE
    tasks = []
    for node in range(NODES):
        folder = job / host(node)
        gz = ".gz" if node % 8 == 7 else ""
        for g in range(GPUS):
            rank = node * GPUS + g
            tasks.append(FileTask("rank", node, rank, folder / f"rank{rank}.log{gz}", per_rank, span,
                                  29_000 + rank))
        tasks.append(FileTask("syslog", node, -1, folder / "syslog", int(lines * SYSLOG_SHARE / NODES), span,
                              7_000 + node))
        tasks.append(FileTask("dmesg", node, -1, folder / "dmesg.log.gz", int(lines * DMESG_SHARE / NODES), span,
                              8_000 + node))
    return sorted(tasks, key=lambda t: -t.lines)  # largest first, so the pool ends together


def generate(job: Path, lines: int, processes: int) -> int:
    shutil.rmtree(job, ignore_errors=True)
    tasks = plan_files(job, lines)
    with Pool(processes) as pool:
        return sum(pool.imap_unordered(write_file, tasks))


# ----------------------------------------------------------------------------------------------- measuring
@dataclass
class TreePeak:
    rss: int = 0  # bytes: the largest sum of RSS over the tree seen
    pss: int = 0  # bytes: the largest sum of PSS
    processes: int = 0  # the most processes seen at once
    one_pss: int = 0  # bytes: the largest PSS of one process


def _tree(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    out, stack = [], [pid]
    while stack:
        p = stack.pop()
        out.append(p)
        stack.extend(children.get(p, []))
    return out


def _memory(pid: int) -> tuple[int, int]:
    """RSS and PSS of one process in bytes, from ``smaps_rollup``."""
    rss = pss = 0
    try:
        with open(f"/proc/{pid}/smaps_rollup") as fh:
            for line in fh:
                if line.startswith("Rss:"):
                    rss = int(line.split()[1]) * 1024
                elif line.startswith("Pss:"):
                    pss = int(line.split()[1]) * 1024
    except OSError:
        pass
    return rss, pss


def watch(pid: int, peak: TreePeak, done: threading.Event) -> None:
    while not done.is_set():
        pids = _tree(pid)
        mem = [_memory(p) for p in pids]
        peak.rss = max(peak.rss, sum(m[0] for m in mem))
        peak.pss = max(peak.pss, sum(m[1] for m in mem))
        peak.processes = max(peak.processes, len(pids))
        peak.one_pss = max([peak.one_pss, *(m[1] for m in mem)])
        done.wait(0.25)


@dataclass
class RunResult:
    name: str
    wall: float
    cpu: float
    max_rss_one: float  # MB, time -v: the largest single process
    peak: TreePeak
    load_before: float
    load_after: float
    exit_code: int


def run(name: str, argv: list[str], nice: int) -> RunResult:
    load_before = os.getloadavg()[0]
    cmd = ["/usr/bin/time", "-v"] + (["nice", "-n", str(nice)] if nice else []) + argv
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    peak, done = TreePeak(), threading.Event()
    poller = threading.Thread(target=watch, args=(proc.pid, peak, done), daemon=True)
    poller.start()
    _, err = proc.communicate()
    wall = time.perf_counter() - started
    done.set()
    poller.join()
    fields = dict(re.findall(r"^\s*([^:\n]+(?:\([^)]*\))?): (.*)$", err, re.M))
    cpu = float(fields.get("User time (seconds)", 0)) + float(fields.get("System time (seconds)", 0))
    code = int(fields.get("Exit status", proc.returncode))
    if code not in (0, 1):
        raise SystemExit(f"{name} failed ({code}): {err.strip()[-800:]}")
    return RunResult(name, wall, cpu, int(fields.get("Maximum resident set size (kbytes)", 0)) / 1024, peak,
                     load_before, os.getloadavg()[0], code)


def verdict(path: Path) -> str:
    import json

    inc = json.loads(path.read_text())
    nodes = [s["node"] for s in inc.get("suspects", [])[:3]]
    right = bool(nodes) and nodes[0] == host(FAULTY_NODE) and inc.get("category") == "gpu_hardware"
    return (f"{'RIGHT' if right else 'WRONG'}: status {inc.get('status')}, category {inc.get('category')}, phase "
            f"{inc.get('phase')}, suspects {nodes} (truth {host(FAULTY_NODE)}, gpu_hardware)")


RUNS = {"jobs2": ["--jobs", "2"], "local2": ["--scheduler", "local:2"], "jobs1": ["--jobs", "1"]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lines", default="10M", help="lines of the archive, e.g. 1M, 10M, 100M (10M)")
    ap.add_argument("--work", default="/tmp/l4lite-scale", help="folder of the archive and outputs")
    ap.add_argument("--runs", default="jobs2,local2", help="comma-separated, of: " + ", ".join(RUNS))
    ap.add_argument("--gen-jobs", type=int, default=2, help="processes writing the archive (2)")
    ap.add_argument("--nice", type=int, default=5, help="niceness of the measured commands (5)")
    ap.add_argument("--reuse", action="store_true", help="measure the archive already in --work/job")
    ap.add_argument("--keep", action="store_true", help="keep the archive afterwards")
    args = ap.parse_args(argv)
    work = Path(args.work)
    job = work / "job"
    work.mkdir(parents=True, exist_ok=True)
    if not args.reuse:
        load = os.getloadavg()[0]
        t0, c0 = time.perf_counter(), os.times()
        n = generate(job, parse_size(args.lines), args.gen_jobs)
        c1 = os.times()
        print(f"# archive: {n:,} lines in {time.perf_counter() - t0:.0f} s (CPU of the writers "
              f"{c1.children_user - c0.children_user + c1.children_system - c0.children_system:.0f} s), load "
              f"average {load:.1f} -> {os.getloadavg()[0]:.1f}", flush=True)
    else:
        n = int((work / "lines").read_text()) if (work / "lines").exists() else 0
    (work / "lines").write_text(str(n))
    size = sum(p.stat().st_size for p in job.rglob("*") if p.is_file())
    gz = sum(1 for p in job.rglob("*.gz"))
    print(f"# {job}: {n:,} lines, {size / 2**30:.2f} GB on disk, {sum(1 for p in job.rglob('*') if p.is_file())} "
          f"files ({gz} gzip), {NODES} nodes x {GPUS} GPUs; {os.cpu_count()} cores", flush=True)
    exe = [sys.executable, "-m", "l4lite", "analyze", str(job), "--no-store", "--quiet"]
    for key in [k.strip() for k in args.runs.split(",") if k.strip()]:
        out = work / f"incident-{key}.json"
        out.unlink(missing_ok=True)
        r = run(key, exe + RUNS[key] + ["--json", str(out)], args.nice)
        print(f"analyze {' '.join(RUNS[key])}: {r.wall:.1f} s wall, {r.cpu:.1f} s CPU, {n / r.wall:,.0f} lines/s; "
              f"load average {r.load_before:.1f} -> {r.load_after:.1f}; peak of the tree: RSS sum "
              f"{r.peak.rss / 2**20:,.0f} MB, PSS sum {r.peak.pss / 2**20:,.0f} MB ({r.peak.processes} processes); "
              f"largest process {r.max_rss_one:,.0f} MB RSS, {r.peak.one_pss / 2**20:,.0f} MB PSS; exit {r.exit_code}", flush=True)
        print(f"  verdict {verdict(out) if out.exists() else 'no incident written'}", flush=True)
    if not args.keep:
        shutil.rmtree(job, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
