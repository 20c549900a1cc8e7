"""What ``l4lite parse`` and ``l4lite analyze`` cost before they read a line, against plain Python and drain3 in the
same run.

Usage: python benchmarks/startup.py [--repeat 7] [--work DIR] [--imports]

A process's fixed cost belongs to no log format: the zoo's fastest formats (composer: 0.5 s of a 200,000-line
``analyze``) spend half their CPU on it, and every ``--jobs N`` worker pays what the parent did not import or
build before the pool forked it. Each row is a fresh subprocess on a 10-line job of two files (two, so that
``--jobs 2`` forks its pool), measured by its CPU (user + system of it and its workers, ``os.wait4``), the least of
``--repeat`` runs (a busy machine only ever adds to it). The baselines, run in the same loop: ``python -c pass``
(the interpreter) and ``python -c "import drain3"`` (the library a log miner starts from); the rows print their
CPU and its ratio to drain3's. ``--imports`` adds ``-X importtime`` of each command: the least self time of each
top-level package over the runs.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from throughput import compile_l4lite  # noqa: E402

PY = sys.executable
LINE = "2026-01-01 00:00:{s:02d},000 INFO [rank{r}]: iteration {i}/ 1000 | lm loss: 2.345E+00 | grad norm: 0.5\n"


def small_job(root: Path) -> Path:
    """Two nodes of five lines each."""
    job = root / "job"
    for node in range(2):
        d = job / f"node{node:03d}"
        d.mkdir(parents=True, exist_ok=True)
        (d / "train.log").write_text("".join(LINE.format(s=i, r=node * 8, i=i + 1) for i in range(5)),
                                     encoding="utf-8")
    return job


def rows(job: Path, out: Path) -> list[tuple[str, list[str]]]:
    l4 = [PY, "-m", "l4lite"]
    return [
        ("python -c pass", [PY, "-c", "pass"]),
        ("python -c 'import drain3'", [PY, "-c", "import drain3"]),
        ("parse -o .jsonl --jobs 1", [*l4, "parse", str(job), "-o", str(out / "r.jsonl"), "-q", "--jobs", "1"]),
        ("parse -o .parquet --jobs 1", [*l4, "parse", str(job), "-o", str(out / "r.parquet"), "-q", "--jobs", "1"]),
        ("parse -o .parquet --jobs 2", [*l4, "parse", str(job), "-o", str(out / "r.parquet"), "-q", "--jobs", "2"]),
        ("analyze --jobs 1", [*l4, "analyze", str(job), "--no-store", "-q", "--json", str(out / "i.json"),
                              "--jobs", "1"]),
        ("analyze --jobs 2", [*l4, "analyze", str(job), "--no-store", "-q", "--json", str(out / "i.json"),
                              "--jobs", "2"]),
    ]


def cpu_of(argv: Sequence[str], env: dict[str, str] | None = None) -> tuple[float, float, str]:
    """(CPU seconds of the process and its waited-for children, wall seconds, stderr)."""
    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        raise SystemExit(f"{' '.join(argv)} failed: {err.strip()[-400:]}")
    return usage.ru_utime + usage.ru_stime, wall, err


_IMPORT = re.compile(r"import time:\s+(\d+) \|\s+\d+ \|( +)(\S+)")


def import_selves(text: str) -> dict[str, float]:
    """Self import time (seconds) per top-level package (l4lite per stage package) of one ``-X importtime``."""
    out: dict[str, float] = {}
    for m in _IMPORT.finditer(text):
        parts = m[3].split(".")
        key = ".".join(parts[:2]) if parts[0] == "l4lite" else parts[0]
        out[key] = out.get(key, 0.0) + int(m[1]) / 1e6
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=7, help="runs of each row; the least CPU is kept (7)")
    ap.add_argument("--work", help="folder for the job and outputs (default: a temporary one)")
    ap.add_argument("--imports", action="store_true", help="also the import time per package of each command")
    args = ap.parse_args(argv)
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="l4lite-startup-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        job = small_job(work)
        print(f"# l4lite start-up; {os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f}; "
              f"modules compiled first ({compile_l4lite() or 'failed'}); least of {args.repeat} runs")
        table = rows(job, work)
        best = {name: (float("inf"), float("inf")) for name, _ in table}
        for _ in range(max(1, args.repeat)):  # rows interleaved: a burst of load touches every row alike
            for name, cmd in table:
                cpu, wall, _ = cpu_of(cmd)
                best[name] = (min(best[name][0], cpu), min(best[name][1], wall))
        base = best["python -c 'import drain3'"][0]
        print(f"{'command':<30} {'CPU ms':>8} {'wall ms':>8} {'x drain3 import':>16}")
        for name, _ in table:
            cpu, wall = best[name]
            print(f"{name:<30} {cpu * 1000:8.0f} {wall * 1000:8.0f} {cpu / base if base else 0:16.2f}")
        if args.imports:
            for name, cmd in table[2:]:
                if "--jobs 2" in name:
                    continue
                least: dict[str, float] = {}
                for _ in range(max(1, args.repeat)):
                    env = dict(os.environ, PYTHONPROFILEIMPORTTIME="1")
                    for key, sec in import_selves(cpu_of(cmd, env)[2]).items():
                        least[key] = min(least.get(key, sec), sec)
                top = sorted(least.items(), key=lambda kv: -kv[1])[:12]
                print(f"\n## {name}: import self time {sum(least.values()) * 1000:.0f} ms; largest: "
                      + ", ".join(f"{k} {v * 1000:.0f}" for k, v in top))
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
