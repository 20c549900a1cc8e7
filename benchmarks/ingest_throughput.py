"""Ingest throughput: lines per second of ``ingest.iter_records`` on a synthetic job of typical log lines.

Prints the speed of a plain ``for line in file`` loop over the same files (the baseline, measured in the same
run) beside the speed of ingest (timestamps, attribution, header stripping, levels, sources and multi-line
records), best of a few repeats in CPU time so that other processes on a shared machine disturb it less.

    python benchmarks/ingest_throughput.py [--lines 1000000] [--repeats 3] [--tiny-files 0]
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

from l4lite.ingest.reader import IngestOptions, iter_records
from l4lite.records import Accounting

TEMPLATES = [
    "[2024-05-01 10:{m:02d}:{s:02d},{ms:03d}] [INFO] [logging.py:96:log_dist] [Rank 0] step={i}, skipped=0, "
    "lr=[0.0001], mom=[(0.9, 0.95)]",
    "node{n:03d}:{pid}:{tid} [{g}] NCCL INFO Channel {c:02d}/0 : {g}[{g}] -> {h}[{h}] via P2P/IPC/read",
    "[rank{r}]: iteration {i}/ 100000 | consumed samples: {cs} | elapsed time per iteration (ms): 1234.5 | "
    "learning rate: 1.000E-04 | lm loss: 2.345678E+00 | loss scale: 65536.0 |",
    "2024-05-01 10:{m:02d}:{s:02d},{ms:03d} - trainer - INFO - Epoch {e} step {i}: loss={l:.4f} grad_norm={gn:.3f}",
    "[Wed May  1 10:{m:02d}:{s:02d} 2024] mlx5_core 0000:{b:02x}:00.0: mlx5_fw_tracer_handle_traces:{pid} event",
    "{r}: [rank{r}]:[W501 10:{m:02d}:{s:02d}.{us:06d} ProcessGroupNCCL.cpp:1234] Warning: something on rank {r}",
    " iteration {i}/  311541 | consumed samples: {cs} | elapsed time per iteration (ms): 22306.6 | learning rate: "
    "9.850E-05 | global batch size:  1024 | lm loss: 2.775923E+00 |",
    "May  1 10:{m:02d}:{s:02d} node{n:03d} kernel: [{up}.{us:06d}] NVRM: GPU at PCI:0000:{b:02x}:00: GPU-1234 ok",
]


def make_job(root: Path, lines: int, files: int = 8) -> list[Path]:
    rnd = random.Random(1)
    paths = []
    per = lines // files
    for f in range(files):
        p = root / f"node{f:03d}" / "train.log"
        p.parent.mkdir(parents=True, exist_ok=True)
        with open(p, "w") as fh:
            for i in range(f * per, (f + 1) * per):
                t = rnd.choice(TEMPLATES)
                fh.write(t.format(m=(i // 60000) % 60, s=(i // 1000) % 60, ms=i % 1000, i=i, n=i % 32, pid=1000 + i % 8,
                                  tid=2000 + i % 8, g=i % 8, h=(i + 1) % 8, c=i % 32, r=i % 16, cs=i * 1024,
                                  e=i // 10000, l=rnd.random() * 3, gn=rnd.random(), b=i % 256, us=i % 1000000,
                                  up=1000 + i // 100) + "\n")
        paths.append(p)
    return paths


def baseline(paths: list[Path]) -> int:
    n = 0
    for p in paths:
        with open(p, encoding="utf-8") as fh:
            for _ in fh:
                n += 1
    return n


def ingest(root: Path) -> Accounting:
    acc = Accounting()
    for _ in iter_records([str(root)], IngestOptions(year=2024), acc):
        pass
    return acc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--tiny-files", type=int, default=0, help="also time a job of this many two-line files")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "job"
        paths = make_job(root, args.lines)
        best_base = best_ing = float("inf")
        n = 0
        acc = Accounting()
        for _ in range(args.repeats):
            t0 = time.process_time()
            n = baseline(paths)
            t1 = time.process_time()
            acc = ingest(root)
            t2 = time.process_time()
            best_base, best_ing = min(best_base, t1 - t0), min(best_ing, t2 - t1)
        assert acc.balanced and acc.lines_read == n
        print(f"{n:,} lines, {acc.records:,} records")
        print(f"baseline (for line in file): {n / best_base:12,.0f} lines/s")
        print(f"ingest.iter_records:         {n / best_ing:12,.0f} lines/s  ({best_ing / best_base:.1f}x the baseline)")
        if args.tiny_files:
            tiny = Path(tmp) / "tiny"
            for i in range(args.tiny_files):
                d = tiny / f"d{i // 1000:04d}"
                if i % 1000 == 0:
                    d.mkdir(parents=True)
                (d / f"{i}.log").write_bytes(b"2024-05-01 10:00:00 INFO hello\nsecond line\n")
            t0 = time.perf_counter()
            acc = ingest(tiny)
            dt = time.perf_counter() - t0
            assert acc.balanced and acc.files == args.tiny_files
            print(f"{args.tiny_files:,} tiny files: {dt:.1f} s wall ({args.tiny_files / dt:,.0f} files/s)")


if __name__ == "__main__":
    main()
