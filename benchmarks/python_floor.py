"""How fast the least per-line work a pure-Python log reader can do runs, against drain3 in the same run.

Usage: python benchmarks/python_floor.py [--archive DIR | --lines 1000000] [--baseline-lines 100000] [--repeat 3]

For every line of the archive the floor pass folds the digits (``bytes.translate``), looks the shape up in a
dict, reads the timestamp at the offset the shape gives (one ``datetime`` parse per minute, integer slices for
the seconds) and counts the line per (file, shape, 30-second window). That is a fraction of what ``l4lite parse``
does per line (no node, rank or GPU attribution, no multi-line records, no templates, no metric or rule tests, no
output), so its rate bounds what any pure-Python implementation of parse or analyze reaches on this machine; twice
its rate is the bound for two processes. The baseline is the same drain3 TemplateMiner with masking as in
``throughput.py``.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from throughput import count_lines, drain3_baseline, generate  # noqa: E402

ISO = re.compile(r"(\d{4})-(\d\d)-(\d\d)[ T](\d\d):(\d\d):(\d\d)")
FOLD = bytes.maketrans(b"123456789", b"000000000")


def floor_pass(job: Path) -> tuple[int, int]:
    """(lines, cells): the minimal pass over every file of the job."""
    counts: dict[tuple[str, bytes, int], int] = {}
    minute_of: dict[str, float] = {}
    offset_of: dict[bytes, int] = {}
    lines = 0
    for path in sorted(p for p in job.rglob("*") if p.is_file() and p.name != "ground_truth.json"):
        rel = str(path.relative_to(job))
        with path.open(encoding="utf-8", errors="surrogateescape") as fh:
            for s in fh:
                lines += 1
                key = s.encode("utf-8", "surrogateescape").translate(FOLD)
                off = offset_of.get(key)
                if off is None:
                    m = ISO.search(s)
                    off = offset_of[key] = m.start() if m else -1
                window = -1
                if off >= 0:
                    minute = s[off:off + 16]
                    base = minute_of.get(minute)
                    if base is None:
                        base = minute_of[minute] = datetime.strptime(minute[:10] + " " + minute[11:16],
                                                                     "%Y-%m-%d %H:%M").replace(
                            tzinfo=UTC).timestamp()
                    window = int((base + int(s[off + 17:off + 19])) // 30)
                cell = (rel, key, window)
                counts[cell] = counts.get(cell, 0) + 1
    return lines, len(counts)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--archive", help="job folder to read (default: generate a healthy 16 x 8 DeepSpeed job)")
    ap.add_argument("--lines", type=int, default=1_000_000, help="lines of the generated job")
    ap.add_argument("--baseline-lines", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3, help="runs of each measurement; the fastest is kept")
    ap.add_argument("--work", default="/tmp/l4lite-floor")
    args = ap.parse_args(argv)
    if args.archive:
        job, generated = Path(args.archive), False
        lines = count_lines(job)
    else:
        job, generated = Path(args.work) / "job", True
        lines = generate(job, args.lines)
    try:
        print(f"# {job}: {lines:,} lines; {os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f}")
        base = min((drain3_baseline(job, args.baseline_lines) for _ in range(args.repeat)), key=lambda r: r.seconds)
        print(f"  drain3 TemplateMiner+masking (baseline)  {base.rate:>10,.0f} lines/s   1.00x")
        best = None
        for _ in range(args.repeat):
            started = time.perf_counter()
            n, cells = floor_pass(job)
            seconds = time.perf_counter() - started
            best = seconds if best is None else min(best, seconds)
        assert best is not None
        rate = n / best
        print(f"  floor pass, one process                  {rate:>10,.0f} lines/s {rate / base.rate:>6.2f}x  "
              f"({best * 1e6 / n:.2f} us per line, {cells:,} cells)")
        print(f"  floor pass, two ideal processes          {2 * rate:>10,.0f} lines/s {2 * rate / base.rate:>6.2f}x")
    finally:
        if generated:
            shutil.rmtree(job, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
