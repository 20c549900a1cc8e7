"""Job simulator with fault injection: realistic multi-node training archives with exact ground truth.

``generate(JobSpec(...), out_dir)`` writes one job (logs plus ``ground_truth.json``); ``build_suite`` writes a
folder of jobs covering every scenario in mixed formats, layouts and node namings. The same seed always gives a
byte-identical archive.
"""

from __future__ import annotations

from l4lite.simulate.cluster import FORMATS, LAYOUTS, NAMINGS, JobSpec
from l4lite.simulate.generate import ScenarioInfo, build_plan, generate, scenario_names, scenarios
from l4lite.simulate.suite import SUITE_INDEX, build_suite, suite_jobs
from l4lite.simulate.writer import GROUND_TRUTH

__all__ = [
    "FORMATS", "GROUND_TRUTH", "LAYOUTS", "NAMINGS", "SUITE_INDEX", "JobSpec", "ScenarioInfo", "build_plan",
    "build_suite", "generate", "scenario_names", "scenarios", "suite_jobs",
]
