"""Metric-line parsing speed: the shape-plan MetricParser against the reference parse_metric_line.

Usage: python benchmarks/metrics_speed.py [--nodes N] [--gpus-per-node G] [--iterations K] [--lines L] [--repeat R]

Both are measured in the same run on the same inputs, so the ratio does not depend on the machine:
- the trainer messages (header-stripped, as the scan sees them) of simulated healthy jobs in each simulator format
  (DeepSpeed, Megatron, Hugging Face): every record; the distinct messages only (the scan keeps an exact-message
  cache in front of the parser, so repeats of one line on every rank never reach it); and the distinct metric lines
  only;
- generated progress-line streams of the formats the simulator does not write (mmengine, NeMo/Lightning progress
  bars, nanoGPT, torchtitan, fairseq, Hugging Face with quoted numbers) with fresh random numbers on every line.
Each timing starts from an empty memo (learning included) and is the best of R runs. The script first checks that
both give the same output on every line.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from l4lite.ingest.reader import IngestOptions, iter_records
from l4lite.records import Accounting
from l4lite.scan.metric_plans import MetricParser, same_output
from l4lite.scan.metrics import parse_metric_line
from l4lite.simulate import JobSpec, generate


def simulated_messages(fmt: str, nodes: int, gpus: int, iterations: int) -> list[str]:
    with tempfile.TemporaryDirectory() as tmp:
        job = Path(tmp) / "job"
        generate(JobSpec("healthy", nodes=nodes, gpus_per_node=gpus, iterations=iterations, fmt=fmt), job)
        return [r.message for r in iter_records([str(job)], IngestOptions(), Accounting())]


def generated(kind: str, n: int, seed: int = 5) -> list[str]:
    r = random.Random(seed)
    out: list[str] = []
    for i in range(1, n + 1):
        loss, lr, t = r.uniform(1.5, 9.0), r.uniform(1e-6, 3e-4), r.uniform(0.2, 3.0)
        if kind == "mmengine":
            out.append(f"Epoch(train) [{1 + i // 735}][{i % 735:4d}/735]  lr: {lr:.4e}  eta: 1:{i % 60:02d}:00  "
                       f"time: {t:.4f}  data_time: {t / 9:.4f}  memory: 20{i % 10}  grad_norm: {r.uniform(1, 9):.4f}  "
                       f"loss: {loss:.4f}  loss_cls: {loss / 3:.4f}")
        elif kind == "nemo-progress":
            out.append(f"Epoch 0: {i * 100 // n:3d}%|▎ | {i}/{n} [1:42:{i % 60:02d}<55:37:46, "
                       f"reduced_train_loss={loss:.3g}, global_step={i}.0, consumed_samples={i * 256}.0, "
                       f"train_step_timing in s={t:.3g}, val_loss={loss + 0.1:.3f}]")
        elif kind == "lightning-rate":
            out.append(f"Epoch 0:   6%|██   | {i}/{n} [6:28:43<94:39:17,  {1 / t:.2f}it/s, loss={loss:.3g}, "
                       f"v_num=95nc]")
        elif kind == "nanogpt":
            out.append(f"iter {i}: loss {loss:.4f}, time {t * 1000:.2f}ms, mfu {r.uniform(20, 45):.2f}%")
        elif kind == "torchtitan":
            out.append(f"[rank0]:[titan] 2024-08-04 00:45:07,{i % 1000:03d} - root - INFO - step: {i:2d}  "
                       f"loss: {loss:7.4f}  memory: {r.uniform(30, 70):5.2f}GiB({r.uniform(40, 90):.2f}%)  "
                       f"tps: {r.randrange(1000, 9000):,}  mfu: {r.uniform(20, 45):.2f}%")
        elif kind == "fairseq":
            out.append(f"2020-07-17 07:11:02 | INFO | train_inner | epoch 001:   {i} / 160368 loss={loss:.3f}, "
                       f"ppl={2 ** loss:.2f}, wps={r.uniform(10, 90):.1f}, ups=0.04, wpb={r.randrange(400, 1700)}, "
                       f"bsz=80, num_updates={i}, lr={lr:.3g}, gnorm={r.uniform(1, 4):.3f}, train_wall=13, wall={i}")
        elif kind == "hf-quoted":
            out.append(f"{{'loss': '{loss:.4g}', 'grad_norm': '{r.uniform(0.5, 2):.4g}', 'learning_rate': "
                       f"'{lr:.4g}', 'epoch': '{i / n:.2g}'}}")
        else:
            raise ValueError(kind)
    return out


def best_rate(parse: Callable[[], Callable[[str], object]], lines: Sequence[str], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        fn = parse()  # a fresh parser each run: the memo learns its shapes inside the timing
        t0 = time.perf_counter()
        for line in lines:
            fn(line)
        best = min(best, time.perf_counter() - t0)
    return len(lines) / best


def check_same(lines: Sequence[str]) -> int:
    parser = MetricParser()
    metric = 0
    for line in lines:
        want = parse_metric_line(line)
        if not same_output(parser.parse(line), want):
            raise SystemExit(f"fast path differs from the reference on: {line!r}")
        metric += want is not None
    return metric


def distinct(lines: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(lines))


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=16)
    ap.add_argument("--gpus-per-node", type=int, default=8)
    ap.add_argument("--iterations", type=int, default=1200)
    ap.add_argument("--lines", type=int, default=50_000, help="lines per generated stream")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)

    workloads: list[tuple[str, list[str]]] = []
    for fmt in ("deepspeed", "megatron", "hf"):
        t0 = time.perf_counter()
        msgs = simulated_messages(fmt, args.nodes, args.gpus_per_node, args.iterations)
        print(f"simulated {fmt}: {args.nodes}x{args.gpus_per_node}, {args.iterations} iterations, "
              f"{len(msgs):,} messages ({time.perf_counter() - t0:.1f} s)")
        workloads.append((f"{fmt} job, every record", msgs))
        workloads.append((f"{fmt} job, distinct messages", distinct(msgs)))
        workloads.append((f"{fmt} job, distinct metric lines",
                          [m for m in distinct(msgs) if parse_metric_line(m) is not None]))
    for kind in ("mmengine", "nemo-progress", "lightning-rate", "nanogpt", "torchtitan", "fairseq", "hf-quoted"):
        workloads.append((f"{kind} progress lines", generated(kind, args.lines)))

    print(f"\n{'workload':<36} {'lines':>9} {'metric':>8} {'reference/s':>12} {'MetricParser/s':>15} {'ratio':>7}")
    total_ref = total_fast = 0.0
    for name, lines in workloads:
        metric = check_same(lines)
        ref = best_rate(lambda: parse_metric_line, lines, args.repeat)
        fast = best_rate(lambda: MetricParser().parse, lines, args.repeat)
        total_ref += len(lines) / ref
        total_fast += len(lines) / fast
        print(f"{name:<36} {len(lines):>9,} {metric:>8,} {ref:>12,.0f} {fast:>15,.0f} {fast / ref:>6.1f}x")
    print(f"\nall workloads: {total_ref:.2f} s with the reference, {total_fast:.2f} s with MetricParser "
          f"({total_ref / total_fast:.1f}x); identical output on every line")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
