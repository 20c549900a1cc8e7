"""Generation speed of the simulator: a healthy 16-node x 8-GPU, 2,000-iteration job in each trainer format
and file layout. Prints lines, seconds and lines per second; the target is well under a minute per job and a
volume between 10^5 and 10^6 lines.

    .venv/bin/python benchmarks/simulator_speed.py [--nodes 16] [--gpus-per-node 8] [--iterations 2000]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from l4lite.simulate import FORMATS, LAYOUTS, JobSpec, generate


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=16)
    ap.add_argument("--gpus-per-node", type=int, default=8)
    ap.add_argument("--iterations", type=int, default=2000)
    ap.add_argument("--scenario", default="healthy")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        print(f"{'format':<10} {'layout':<14} {'lines':>9} {'MB':>7} {'seconds':>8} {'lines/s':>10}")
        for k, (fmt, layout) in enumerate((f, lay) for f in FORMATS for lay in LAYOUTS):
            out = Path(tmp) / f"{fmt}-{layout}"
            started = time.perf_counter()
            truth = generate(JobSpec(args.scenario, nodes=args.nodes, gpus_per_node=args.gpus_per_node,
                                     iterations=args.iterations, seed=k, fmt=fmt, layout=layout), out)
            seconds = time.perf_counter() - started
            size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file()) / 1e6
            print(f"{fmt:<10} {layout:<14} {truth['lines']:>9,} {size:>7.1f} {seconds:>8.2f} "
                  f"{truth['lines'] / seconds:>10,.0f}")


if __name__ == "__main__":
    main()
