"""Rule matching speed: the keyword-gated RulePack.match against trying every rule's regex on every record.

Usage: python benchmarks/rules_speed.py [--lines N] [--repeat R]

Two inputs, measured in the same run so that the ratio does not depend on the machine:
- healthy trainer output (Megatron/DeepSpeed/HF iteration lines, NCCL INFO set-up lines, launcher and kernel
  noise), the common case every record of a job goes through;
- the lines of the real failure excerpts (fixtures/real/real-failures.jsonl), where many rules do fire.
Both methods must find the same matches; the script checks that before timing.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from l4lite.records import Record
from l4lite.rulepack import RulePack

ROOT = Path(__file__).resolve().parent.parent


def healthy_lines(n: int, seed: int = 1) -> list[str]:
    r = random.Random(seed)
    out: list[str] = []
    it = 1000
    while len(out) < n:
        it += 1
        k = r.randrange(10)
        host = f"gpu-a100-{r.randrange(1, 64):03d}"
        if k < 3:
            out.append(
                f" iteration {it:8d}/  500000 | consumed samples: {it * 512:12d} | elapsed time per iteration (ms): "
                f"{r.uniform(900, 1300):.1f} | learning rate: {r.uniform(1e-5, 3e-4):.6E} | global batch size:   512 | "
                f"lm loss: {r.uniform(1.8, 3.2):.6E} | loss scale: 1.0 | grad norm: {r.uniform(0.2, 1.5):.3f} | "
                "number of skipped iterations:   0 | number of nan iterations:   0 |")
        elif k < 5:
            a, b = r.randrange(8), r.randrange(8)
            out.append(f"{host}:{r.randrange(10**5)}:{r.randrange(10**5)} [{a}] NCCL INFO Channel {r.randrange(32):02d}/0 : "
                       f"{a}[{a}] -> {b}[{b}] via P2P/CUMEM/read")
        elif k == 5:
            out.append(f"[2024-01-09 14:22:{r.randrange(60):02d},331] [INFO] [logging.py:96:log_dist] [Rank 0] "
                       f"step={it}, skipped=5, lr=[9.8e-05], mom=[(0.9, 0.95)]")
        elif k == 6:
            out.append(f"{{'loss': {r.uniform(1, 3):.4f}, 'grad_norm': {r.uniform(0.2, 2):.4f}, "
                       f"'learning_rate': {r.uniform(1e-6, 1e-4):.3e}, 'epoch': {it / 1000:.2f}}}")
        elif k == 7:
            out.append(f"[rank{r.randrange(64)}]:[W{r.randrange(1000, 1300)} 10:11:12.345678 ProcessGroupNCCL.cpp:4000] "
                       "Warning: TORCH_NCCL_AVOID_RECORD_STREAMS is the default now, this environment variable is "
                       "thus deprecated. (function operator())")
        elif k == 8:
            out.append(f"[{r.uniform(1, 99999):.6f}] IPv6: ADDRCONF(NETDEV_CHANGE): ibp{r.randrange(300)}s0: link "
                       "becomes ready")
        else:
            out.append(f"{host}:{r.randrange(10**5)}:{r.randrange(10**5)} [{r.randrange(8)}] NCCL INFO "
                       f"ncclCommInitRank comm 0x{r.getrandbits(40):x} rank {r.randrange(64)} nranks 64 cudaDev "
                       f"{r.randrange(8)} busId {r.randrange(16**5):x} commId 0x{r.getrandbits(60):x} - Init COMPLETE")
    return out


def failure_lines() -> list[str]:
    lines: list[str] = []
    for row in (ROOT / "fixtures" / "real" / "real-failures.jsonl").read_text(encoding="utf-8").splitlines():
        lines.extend(json.loads(row)["lines"])
    return lines


def records(lines: Sequence[str]) -> list[Record]:
    return [Record("job.log", i + 1, i + 1, "node01", 0, None, "trainer", None, None, s, s)
            for i, s in enumerate(lines)]


def naive_matcher(pack: RulePack) -> Callable[[Record], list[str]]:
    """Every rule's regex on its field for every record (the fallback rules handled the same way)."""
    rules = list(pack.rules)

    def match(rec: Record) -> list[str]:
        hits: list[str] = []
        fallbacks = []
        for r in rules:
            value = rec.message if r.match == "message" else rec.text
            if r.compiled.search(value):
                (fallbacks if r.fallback else hits).append(r)
        if hits or not fallbacks:
            return sorted(r.id for r in hits)  # type: ignore[attr-defined]
        return [max(fallbacks, key=lambda r: r.priority).id]

    return match


def rate(fn: Callable[[Record], object], recs: Sequence[Record], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for rec in recs:
            fn(rec)
        best = min(best, time.perf_counter() - t0)
    return len(recs) / best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--lines", type=int, default=100_000, help="healthy lines to generate")
    ap.add_argument("--repeat", type=int, default=3, help="timing repetitions (best is kept)")
    args = ap.parse_args()
    pack = RulePack.load()
    naive = naive_matcher(pack)
    fast = lambda rec: sorted(m.rule.id for m in pack.match(rec))  # noqa: E731
    inputs = {
        "healthy trainer lines": records(healthy_lines(args.lines)),
        "real failure excerpt lines": records(failure_lines() * 40),
    }
    print(f"rule pack: {len(pack)} rules, {sum(r.match == 'text' for r in pack.rules)} on record text")
    for name, recs in inputs.items():
        sample = recs[:: max(1, len(recs) // 5000)]
        mismatch = [r.message for r in sample if fast(r) != naive(r)]
        if mismatch:
            raise SystemExit(f"prefilter and naive matching disagree on: {mismatch[0][:200]!r}")
        hits = sum(1 for r in sample if fast(r))
        f = rate(fast, recs, args.repeat)
        n = rate(naive, recs, max(1, args.repeat - 1))
        print(f"{name:28s} {len(recs):8d} records, {hits / len(sample):6.1%} matched | "
              f"prefiltered {f:12,.0f} lines/s | every regex {n:10,.0f} lines/s | ratio {f / n:6.1f}x")


if __name__ == "__main__":
    main()
