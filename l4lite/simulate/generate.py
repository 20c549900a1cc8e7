"""Compose the simulator: spec -> variant -> cluster -> plan -> scenario -> streams -> files + ground truth."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import l4lite.simulate.io_faults as io_faults
import l4lite.simulate.node_faults as node_faults
from l4lite.errors import L4Error
from l4lite.simulate.cluster import JobSpec, build_cluster, choose_variant, rng_for
from l4lite.simulate.formats import FORMAT_CLASSES, TrainerFormat
from l4lite.simulate.plan import Plan, build_timeline, make_plan, make_schedule
from l4lite.simulate.render import all_streams
from l4lite.simulate.scenarios import (
    Healthy,
    HealthyHardNegatives,
    LossDivergence,
    NcclMisconfig,
    Overfitting,
    Scenario,
    UserCodeError,
)
from l4lite.simulate.writer import ground_truth, prepare_dir, write_ground_truth, write_streams


@dataclass(frozen=True)
class ScenarioInfo:
    name: str
    status: str
    category: str | None
    phase: str | None
    summary: str


def scenarios() -> list[ScenarioInfo]:
    return [ScenarioInfo(s.name, s.status, s.category, s.phase, s.summary) for s in registry().values()]


def scenario_names() -> list[str]:
    return list(registry())


def build_plan(spec: JobSpec) -> tuple[Plan, TrainerFormat, Scenario]:
    """Everything but the files: useful to tests that want the plan and the ground truth only."""
    spec.validate()
    reg = registry()
    scen = reg.get(spec.scenario)
    if scen is None:
        raise L4Error(f"unknown scenario {spec.scenario!r}; known: {', '.join(reg)}")
    variant = choose_variant(spec)
    if scen.precision:
        variant = replace(variant, precision=scen.precision)
    cluster = build_cluster(spec, variant)
    resume = scen.resume if scen.resume is not None else rng_for(spec.seed, "resume").random() < 0.25
    sched = scen.schedule(make_schedule(cluster, resume))
    plan = make_plan(cluster, sched)
    scen.prepare(plan)
    build_timeline(plan)
    fmt = FORMAT_CLASSES[variant.fmt](plan)
    plan.extras["site"] = fmt.site()
    scen.inject(plan, fmt)
    return plan, fmt, scen


def generate(spec: JobSpec, out_dir: str | Path, overwrite: bool = False) -> dict[str, Any]:
    """Write one simulated job into ``out_dir`` and return its ground truth."""
    plan, fmt, scen = build_plan(spec)
    out = Path(out_dir)
    prepare_dir(out, overwrite)
    written = write_streams(plan, all_streams(plan, fmt, scen.hard_negatives), out)
    truth = ground_truth(plan, spec.scenario, written)
    write_ground_truth(out, truth)
    return truth


def registry() -> dict[str, Scenario]:
    """Every scenario by name: the simple ones of ``scenarios`` and the node and I/O faults."""
    items: list[Scenario] = [Healthy(), HealthyHardNegatives(), *node_faults.SCENARIOS, *io_faults.SCENARIOS,
                             LossDivergence(), UserCodeError(), NcclMisconfig(), Overfitting()]
    return {s.name: s for s in items}
