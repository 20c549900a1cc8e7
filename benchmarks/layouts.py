"""Node accuracy per log layout: the table of docs/layouts.md.

Each layout of ``tests/layout_jobs.py`` (built from real lines) is written to a temporary folder and analysed;
the real torchrun jobs of fixtures/real_jobs (``--log-dir`` archives) are analysed as they are. A job counts as
right when its faulty node is the first suspect (for a job whose lines name no host: when no suspect is a
folder or file name), and every layout's jobs are checked for suspects that are not hosts of the job.

    .venv/bin/python benchmarks/layouts.py
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from layout_jobs import LAYOUTS  # noqa: E402

from l4lite.api import analyze  # noqa: E402
from l4lite.evaluate.scoreboard import job_paths  # noqa: E402
from l4lite.ingest.reader import IngestOptions, iter_records  # noqa: E402
from l4lite.options import AnalyzeOptions  # noqa: E402
from l4lite.records import Accounting  # noqa: E402


def _score(paths: list[str], faulty: str | None, hosts: set[str]) -> tuple[bool, list[str], set[str]]:
    """Whether the faulty node is top-1, the suspects that are not hosts, the record nodes that are not."""
    suspects = [s.node for s in analyze(paths, AnalyzeOptions()).suspects]
    strays = [s for s in suspects if s not in hosts and not s.startswith("rank:")]
    right = (suspects[:1] == [faulty]) if faulty is not None else not strays
    nodes = {r.node for r in iter_records(paths, IngestOptions(), Accounting()) if r.node} - hosts
    return right, strays, nodes


def main() -> None:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, build in LAYOUTS.items():
            job = Path(tmp) / name
            faulty, hosts = build(job)
            right, strays, nodes = _score([str(job)], faulty, set(hosts))
            rows.append((name, 1, int(right), len(strays), len(nodes)))
    real = sorted(p for p in (ROOT / "fixtures" / "real_jobs").iterdir() if (p / "ground_truth.json").exists())
    n = right_n = strays_n = nodes_n = 0
    for job in real:
        truth = json.loads((job / "ground_truth.json").read_text())
        faulty = (truth.get("faulty_nodes") or [None])[0]
        if faulty is None:
            continue
        right, strays, nodes = _score(job_paths(job), faulty, set(truth.get("node_names", [])))
        n, right_n, strays_n, nodes_n = n + 1, right_n + int(right), strays_n + len(strays), nodes_n + len(nodes)
    rows.append(("torchrun-logdir (fixtures/real_jobs, one faulty node)", n, right_n, strays_n, nodes_n))
    print("| layout | jobs | node top-1 | suspects that are not hosts | record nodes that are not hosts |")
    print("| --- | --- | --- | --- | --- |")
    for name, jobs, right, strays, nodes in rows:
        print(f"| {name} | {jobs} | {right}/{jobs} | {strays} | {nodes} |")


if __name__ == "__main__":
    main()
