"""What building ``tail``'s job context again costs as a job grows (``live.jobfacts``).

A real Slurm job's merged output (``srun --label``: every rank's lines in one file whose path names no node) is
written ``--steps`` times larger into a folder, and the context is built after each step, as ``tail`` builds it
when the bytes it follows have doubled or a file appears. Prints each build's seconds and the bytes its whole
reads took; a build that reads every file no path places whole costs the size of the archive each time.

    python benchmarks/context_builds.py --mb 64 --steps 6
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "fixtures" / "real_jobs" / "078-jax-exception_srun" / "slurm-4178.out"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=float, default=64.0, help="size of the file at the last step")
    ap.add_argument("--steps", type=int, default=6)
    args = ap.parse_args(argv)
    from l4lite.live.jobfacts import LiveContext

    lines = SOURCE.read_bytes().splitlines(keepends=True)
    body = b"".join(lines[20:-20])  # the ranks' running lines, written over and over
    head, tail = b"".join(lines[:20]), b"".join(lines[-20:])
    total = int(args.mb * (1 << 20))
    with tempfile.TemporaryDirectory(prefix="l4lite-builds-") as tmp:
        log = Path(tmp) / "slurm-4178.out"
        log.write_bytes(head)
        facts = LiveContext(tmp)
        spent = 0.0
        for step in range(1, args.steps + 1):
            want = total * step // args.steps
            with open(log, "ab") as fh:
                size = log.stat().st_size
                while size < want:
                    fh.write(body)
                    size += len(body)
                if step == args.steps:
                    fh.write(tail)
            read_before = getattr(getattr(facts, "reads", None), "bytes_read", None)
            began = time.perf_counter()
            facts.build([str(log)])
            took = time.perf_counter() - began
            spent += took
            read = getattr(getattr(facts, "reads", None), "bytes_read", None)
            note = f"  whole reads {(read - read_before) / (1 << 20):7.1f} MB" if read is not None else ""
            print(f"build {step}: file {log.stat().st_size / (1 << 20):7.1f} MB  {took:6.2f} s{note}", flush=True)
        print(f"all builds: {spent:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
