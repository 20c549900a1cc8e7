"""Does cross-job filtering from the history store lower false evidence? Measured on simulated jobs.

For each setup (a trainer format, layout and node naming; jobs of one setup share the history key) the script
simulates the healthy history of the setup and some test jobs, scans each test job once and diagnoses the scan
three ways:

- ``no store``: no cross-job baseline (what analyze does on a fresh machine);
- ``store: healthy``: the store holds one plain healthy run of the setup;
- ``store: hard-neg healthy``: the store holds one healthy run of the setup that prints the same kind of
  alarming-but-benign lines (ACPI errors at boot, SYN flooding, fp16 overflow skips, ...), as a cluster that
  prints them in every job would have recorded.

It prints, per configuration: on the ``healthy_hard_negatives`` test jobs (every evidence entry there is false)
the false incidents and the evidence entries per job; on the failure jobs the evidence entries that cover no
ground-truth line, the root-evidence F1 and the faulty-node top-1 (to show that filtering costs nothing real).

    .venv/bin/python benchmarks/history_filtering.py [--setups 3] [--work DIR]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from l4lite.api import diagnose
from l4lite.evaluate.scoreboard import job_paths, load_truth, score_job
from l4lite.history.store import Store
from l4lite.options import AnalyzeOptions
from l4lite.scan.job import load_rules, scan_job
from l4lite.simulate.cluster import FORMATS, LAYOUTS, NAMINGS, JobSpec
from l4lite.simulate.generate import generate

FAILURES = ("ib_link_down", "xid79_fallen_off_bus", "nccl_hang", "data_pipeline_fault")
CONFIGS = ("no store", "store: healthy", "store: hard-neg healthy")


def covers_truth(entry: dict[str, Any], truth_lines: set[tuple[str, int]]) -> bool:
    lo = int(entry.get("line") or 0)
    hi = int(entry.get("end_line") or lo)
    f = str(entry.get("file") or "")
    return any(lo <= tl <= hi and (f == tf or f.endswith("/" + tf) or tf.endswith("/" + f))
               for tf, tl in truth_lines)


def simulate(work: Path, scenario: str, seed: int, setup: int, nodes: int, gpus: int) -> Path:
    out = work / f"setup{setup}" / f"{scenario}-{seed}"
    spec = JobSpec(scenario=scenario, nodes=nodes, gpus_per_node=gpus, seed=seed,
                   fmt=FORMATS[setup % len(FORMATS)], layout=LAYOUTS[setup % len(LAYOUTS)],
                   naming=NAMINGS[setup % len(NAMINGS)])
    generate(spec, out, overwrite=True)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--setups", type=int, default=3, help="setups (format/layout/naming) to simulate (3)")
    ap.add_argument("--nodes", type=int, default=4)
    ap.add_argument("--gpus-per-node", type=int, default=2)
    ap.add_argument("--failures", default=",".join(FAILURES), help="failure scenarios per setup")
    ap.add_argument("--work", help="folder for the simulated jobs and stores (default: a temporary folder)")
    ap.add_argument("--json", action="store_true", help="also print the per-job rows as JSON")
    args = ap.parse_args(argv)
    work = Path(args.work or tempfile.mkdtemp(prefix="l4lite-history-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    failures = [f for f in args.failures.split(",") if f]
    options = AnalyzeOptions()
    rules = load_rules(options)
    rows: list[dict[str, Any]] = []
    started = time.perf_counter()
    for setup in range(args.setups):
        stores = {"no store": None}
        for config, scenario in (("store: healthy", "healthy"), ("store: hard-neg healthy", "healthy_hard_negatives")):
            job = simulate(work, scenario, 100 + setup, setup, args.nodes, args.gpus_per_node)
            store = Store(work / f"setup{setup}" / f"{scenario}.sqlite3")
            scan = scan_job(job_paths(job), options, rules=rules)
            store.add_healthy(scan, store.job_key(scan), str(job))
            stores[config] = store
        for k, scenario in enumerate(["healthy_hard_negatives", *failures]):
            job = simulate(work, scenario, 200 + 10 * setup + k, setup, args.nodes, args.gpus_per_node)
            truth = load_truth(job)
            truth_lines = {(e["file"], int(e["line"])) for e in truth.get("evidence") or []}
            scan = scan_job(job_paths(job), options, rules=rules)
            for config, store in stores.items():
                incident = diagnose(scan, options, rules=rules, store=store).to_dict()
                result = score_job(job, truth, incident, config, 0.0)
                evidence = incident["evidence"]
                rows.append({
                    "setup": setup, "scenario": scenario, "config": config, "truth": truth["status"],
                    "status": incident["status"], "evidence": len(evidence),
                    "anomaly": sum(e["role"] == "anomaly" for e in evidence),
                    "false_evidence": sum(not covers_truth(e, truth_lines) for e in evidence),
                    "f1": (result.evidence_prf() or (None, None, None))[2], "top1": result.top(1),
                })
        for store in stores.values():
            if store is not None:
                store.close()
    print_table(rows, time.perf_counter() - started, work)
    if args.json:
        print(json.dumps(rows, indent=1))
    return 0


def print_table(rows: list[dict[str, Any]], seconds: float, work: Path) -> None:
    by: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by[(r["config"], "hard-neg" if r["scenario"] == "healthy_hard_negatives" else "failure")].append(r)

    def mean(values: list[Any]) -> str:
        vals = [float(v) for v in values if v is not None]
        return f"{sum(vals) / len(vals):.2f}" if vals else "-"

    header = ["configuration", "HN jobs", "HN false incidents", "HN evidence/job", "fail jobs",
              "fail false evidence/job", "fail anomaly/job", "fail root F1", "fail top-1"]
    table = [header]
    for config in CONFIGS:
        hn, fail = by[(config, "hard-neg")], by[(config, "failure")]
        table.append([
            config, str(len(hn)), str(sum(r["status"] == "incident" for r in hn)), mean([r["evidence"] for r in hn]),
            str(len(fail)), mean([r["false_evidence"] for r in fail]), mean([r["anomaly"] for r in fail]),
            mean([r["f1"] for r in fail]), mean([r["top1"] for r in fail]),
        ])
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for row in table:
        print("  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths,
                                                                                                     strict=True))))
    print(f"({len(rows) // len(CONFIGS)} test jobs, {seconds:.0f} s; jobs and stores in {work})", file=sys.stderr)


if __name__ == "__main__":
    raise SystemExit(main())
