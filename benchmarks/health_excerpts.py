"""Training-health signals on real excerpts: status, category and health signals of each, analysed end to end.

Usage: python benchmarks/health_excerpts.py [--corpus fixtures/real/corpus.jsonl] [--nodes N] [--jobs DIR ...]
       python benchmarks/health_excerpts.py --file fixtures/real/health-study.jsonl [--file ...]

The excerpts are the real-failures rows and the corpus's dev rows (never the held-out ones) whose lines carry
trainer progress, loss-scale or collective sequence numbers. Each is analysed as a job of ``--nodes`` nodes: the
excerpt on node001 and, for a failure, the usual cascade (an NCCL watchdog timeout per rank, the abort, a broken
pipe) on every other node; a healthy excerpt's other nodes print nothing. Real jobs run on this machine (a folder
per job with a ground_truth.json) are analysed as they are. ``--file`` scores only the rows of the given
JSON-lines files (the corpus schema: ``id``, ``status``, ``lines``), every row whatever its wording. Prints one line per excerpt, so that runs before and
after a change can be compared with diff.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from l4lite.api import analyze
from l4lite.options import AnalyzeOptions

ROOT = Path(__file__).resolve().parent.parent
WORDS = ("loss", "grad_norm", "grad norm", "SeqNum", "not joined", "not joining", "ingerprint", "OVERFLOW",
         "loss scale", "reducing loss scale")


def file_rows(paths: list[Path]) -> list[dict]:
    """Rows of excerpt files in the corpus schema; each row's label is its ``status``."""
    out = []
    for path in paths:
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                row["want"] = row["status"]
                out.append(row)
    return out


def rows(corpus: Path | None) -> list[dict]:
    out = []
    for line in (ROOT / "fixtures" / "real" / "real-failures.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            row["want"] = "healthy" if row["kind"] == "normal_run" else "incident"
            out.append(row)
    if corpus is not None and corpus.exists():
        for line in corpus.read_text(encoding="utf-8").splitlines():
            row = json.loads(line) if line.strip() else {}
            if row.get("split") == "dev":  # never the held-out part
                row["want"] = row["status"]
                out.append(row)
    return [r for r in out if any(w in " ".join(r["lines"]) for w in WORDS)]


CASCADE = [
    "[E ProcessGroupNCCL.cpp:828] [Rank {rank}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=4180, "
    "OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1800081 milliseconds before timing out.",
    "[E ProcessGroupNCCL.cpp:455] Some NCCL operations have failed or timed out. Due to the asynchronous nature of "
    "CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.",
    "[E ProcessGroupNCCL.cpp:460] To avoid data inconsistency, we are taking the entire process down.",
    "RuntimeError: [{rank}] is setting up NCCL communicator and retrieving ncclUniqueId from [0] via c10d key-value "
    "store by key '0', but store->get('0') got error: Broken pipe",
]


def write_job(job: Path, row: dict, nodes: int) -> None:
    for k in range(1, nodes + 1):
        node = job / f"node{k:03d}"
        node.mkdir(parents=True)
        if k == 1:
            lines = row["lines"]
        elif row["want"] == "incident":
            lines = [c.format(rank=8 * (k - 1)) for c in CASCADE]
        else:
            continue
        (node / "train.log").write_text("\n".join(lines) + "\n", encoding="utf-8")


def signals(incident) -> str:
    """The rules or health signals of the evidence marked root (a health finding has no rule)."""
    names = sorted({e.rule or (e.explain or "")[:40] for e in incident.evidence if e.role == "root"})
    return "; ".join(names)[:120] or "-"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=ROOT / "fixtures" / "real" / "corpus.jsonl")
    ap.add_argument("--jobs", type=Path, nargs="*", default=[])
    ap.add_argument("--nodes", type=int, default=1)
    ap.add_argument("--file", type=Path, action="append", default=[], help="score these excerpt files only")
    args = ap.parse_args()
    right = total = 0
    chosen = file_rows(args.file) if args.file else rows(args.corpus)
    with tempfile.TemporaryDirectory() as tmp:
        for row in chosen:
            job = Path(tmp) / row["id"]
            write_job(job, row, args.nodes)
            inc = analyze([str(job)], AnalyzeOptions())
            total += 1
            right += inc.status == row["want"]
            mark = "ok" if inc.status == row["want"] else "XX"
            top = inc.suspects[0].node if inc.suspects else "-"
            print(f"{mark} {row['id'][:52]:<52} {inc.status:<8} {inc.category or '-':<12} {top:<8} "
                  f"want {row['want']:<8} {signals(inc)}")
    for job in args.jobs:
        truth = json.loads((job / "ground_truth.json").read_text(encoding="utf-8"))
        inc = analyze([str(job)], AnalyzeOptions())
        series = inc.extra.get("health", {}).get("series", {})
        metrics = ",".join(f"{k}:{len(v)}" for k, v in series.items()) or "none"
        mark = "ok" if inc.status == truth["status"] else "XX"
        print(f"{mark} job {job.name:<48} {inc.status:<8} {inc.category or '-':<12} want {truth['status']:<8} "
              f"{signals(inc)} charts={metrics} | {inc.recommendations[-1][:90] if inc.recommendations else ''}")
    print(f"status right on {right}/{total} excerpts")


if __name__ == "__main__":
    main()
