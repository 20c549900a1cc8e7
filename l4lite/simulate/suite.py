"""A suite: one folder per job, named ``NNN-scenario``, plus ``suite.json`` listing them.

Variants rotate with the job index so that a small suite still mixes every trainer format, file layout and
node naming; seeds derive from the suite seed, so the same command rebuilds the same bytes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from l4lite.diagnose.incident import write_atomic
from l4lite.errors import L4Error
from l4lite.simulate.cluster import FORMATS, LAYOUTS, NAMINGS, JobSpec
from l4lite.simulate.generate import generate, scenario_names
from l4lite.simulate.writer import GROUND_TRUTH

SUITE_INDEX = "suite.json"


def suite_specs(jobs_per_scenario: int, nodes: int, gpus_per_node: int, iterations: int, seed: int,
                names: Sequence[str] | None = None, extra_healthy: int = 0) -> list[tuple[str, JobSpec]]:
    names = list(names or scenario_names())
    unknown = sorted(set(names) - set(scenario_names()))
    if unknown:
        raise L4Error(f"unknown scenario(s): {', '.join(unknown)}")
    order = [n for n in names for _ in range(jobs_per_scenario)]
    order += ["healthy" if k % 2 == 0 else "healthy_hard_negatives" for k in range(extra_healthy)]
    out = []
    for idx, name in enumerate(order):
        spec = JobSpec(scenario=name, nodes=nodes, gpus_per_node=gpus_per_node, iterations=iterations,
                       seed=seed * 10007 + idx, fmt=FORMATS[idx % 3], layout=LAYOUTS[(idx + idx // 3) % 3],
                       naming=NAMINGS[idx % 4])
        out.append((f"{idx:03d}-{name}", spec))
    return out


def build_suite(out_dir: str | Path, jobs_per_scenario: int = 1, nodes: int = 4, gpus_per_node: int = 2,
                iterations: int = 200, seed: int = 0, names: Sequence[str] | None = None, extra_healthy: int = 0,
                overwrite: bool = False, progress: Callable[[str, dict[str, Any]], None] | None = None
                ) -> list[dict[str, Any]]:
    """Generate every job of the suite; returns the index entries (also written to ``suite.json``)."""
    if jobs_per_scenario < 1:
        raise L4Error(f"--jobs-per-scenario must be at least 1 (got {jobs_per_scenario})")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    index = []
    for job, spec in suite_specs(jobs_per_scenario, nodes, gpus_per_node, iterations, seed, names, extra_healthy):
        truth = generate(spec, out / job, overwrite=overwrite)
        entry = {"job": job, "scenario": spec.scenario, "status": truth["status"], "category": truth["category"],
                 "phase": truth["phase"], "faulty_nodes": truth["faulty_nodes"], "format": truth["format"],
                 "layout": truth["layout"], "naming": truth["naming"], "lines": truth["lines"], "seed": spec.seed}
        index.append(entry)
        if progress:
            progress(job, truth)
    write_atomic(out / SUITE_INDEX, json.dumps({"jobs": index}, indent=2) + "\n")
    return index


def suite_jobs(suite_dir: str | Path) -> list[Path]:
    """Job folders of a suite: those with a ground truth, in name order."""
    root = Path(suite_dir)
    if not root.is_dir():
        raise L4Error(f"{root}: not a folder")
    if (root / GROUND_TRUTH).is_file():
        return [root]
    jobs = sorted(p for p in root.iterdir() if p.is_dir() and (p / GROUND_TRUTH).is_file())
    if not jobs:
        raise L4Error(f"{root}: no simulated jobs ({GROUND_TRUTH} in a sub-folder) found")
    return jobs
