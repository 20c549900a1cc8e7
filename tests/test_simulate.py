"""The simulator: every scenario in every format and layout, ground truth that names real lines, determinism,
volume that scales, and the committed suite reproducible from its recorded command."""

from __future__ import annotations

import hashlib
import json
import re
from datetime import datetime
from pathlib import Path

import pytest

from l4lite.cli.main import main
from l4lite.errors import L4Error
from l4lite.simulate import (
    FORMATS,
    LAYOUTS,
    NAMINGS,
    JobSpec,
    build_plan,
    build_suite,
    generate,
    scenario_names,
)
from l4lite.simulate.cluster import choose_variant
from l4lite.vocab import CATEGORIES, PHASES

ROOT = Path(__file__).resolve().parent.parent
SUITE = ROOT / "fixtures" / "suite"
EXAMPLE = ROOT / "fixtures" / "jobs" / "ib-link-down"

PROGRESS = r"iteration\s+\d+/\s*\d+ \||\] step=\d+, loss=|^\{'loss': "
# What the evidence of each scenario must say: every pattern is matched by at least one evidence line.
CLAIMS: dict[str, list[str]] = {
    "xid79_fallen_off_bus": [r"NVRM: Xid \(PCI:0000:[0-9a-f]{2}:00\): 79, ", r"GPU has fallen off the bus", r"CUDA error"],
    "ecc_uncorrectable": [r"NVRM: Xid \(PCI:[0-9a-f:]+\): (48|94|95), ", r"uncorrectable ECC error encountered"],
    "nvlink_error": [r"NVRM: Xid \(PCI:[0-9a-f:]+\): (74|145|149), ", r"NVLink"],
    "ib_link_down": [r"mlx5_core 0000:[0-9a-f]{2}:00\.0 ibp\d+s0: Link down",
                     r"NCCL WARN NET/IB : Got completion from peer \S+ with status=12 "],
    "nccl_hang": [PROGRESS],
    "slow_node": [r"temperature above threshold, cpu clock throttled", r", Active, Active, "],
    "device_oom": [r"torch\.OutOfMemoryError: CUDA out of memory\. Tried to allocate"],
    "host_oom": [r"invoked oom-killer", r"Out of memory: Killed process \d+ \(python3\)"],
    "checkpoint_save_failure": [r"OSError: \[Errno (28|5)\]|IoError\(Os \{ code: (28|5)"],
    "checkpoint_load_failure": [r"PytorchStreamReader failed reading zip archive: failed finding central directory"],
    "data_pipeline_fault": [r"skipping malformed sample", r"Caught \w+ in DataLoader worker process \d+"],
    "loss_divergence": [PROGRESS, r"\bnan\b|NaN"],
    "user_code_error": [r"(AssertionError|ValueError): "],
    "nccl_misconfig": [r"NCCL WARN (Bootstrap : no socket interface found|Duplicate GPU detected)"],
    "overfitting": [r"validation loss at iteration \d+|eval_loss"],
}
# Lines evidence may consist of (beyond the claims), per scenario.
ALLOWED_EXTRA: dict[str, str] = {
    "xid79_fallen_off_bus": r"NVRM",
    "ecc_uncorrectable": r"NVRM",
    "nvlink_error": r"NVRM",
    "ib_link_down": r"Port module event\[error\]",
    # the launcher's report of the killed pid (not under merged Slurm output, which has no torchrun log)
    "host_oom": r"failed \(exitcode: -9\) local_rank: \d+ \(pid: \d+\)|Signal 9 \(SIGKILL\) received by PID \d+",
    "checkpoint_save_failure": r"LustreError|nfs: server",
    "data_pipeline_fault": r"Error: ",
}
NODE_FAULTS = {"xid79_fallen_off_bus", "ecc_uncorrectable", "nvlink_error", "ib_link_down", "nccl_hang", "slow_node",
               "device_oom", "host_oom", "checkpoint_save_failure", "checkpoint_load_failure", "data_pipeline_fault"}


def file_lines(job: Path, rel: str, cache: dict[str, list[str]]) -> list[str]:
    if rel not in cache:
        cache[rel] = (job / rel).read_text(encoding="utf-8").split("\n")
    return cache[rel]


def node_of(truth: dict, rel: str, text: str) -> str | None:
    """The node a line belongs to, from the layout's naming of files and srun labels."""
    names, gpn = truth["node_names"], truth["gpus_per_node"]
    m = re.match(r"rank-(\d+)\.log$", rel)
    if m:
        return names[int(m.group(1)) // gpn]
    if rel.startswith("slurm-"):
        m = re.match(r"(\d+): ", text)
        return names[int(m.group(1)) // gpn] if m else None
    for name in names:
        if rel.startswith(name + "/") or rel.startswith(name + "-") or rel.endswith(f"/{name}.log") \
                or rel == f"launcher-{name}.log":
            return name
    return None


def check_truth(job: Path, truth: dict) -> None:
    scenario = truth["scenario"]
    assert truth["status"] in ("incident", "healthy")
    if truth["status"] == "healthy":
        assert truth["evidence"] == [] and truth["faulty_nodes"] == [] and truth["category"] is None
        return
    assert truth["category"] in CATEGORIES and truth["phase"] in PHASES
    datetime.fromisoformat(truth["fault_time"].replace("Z", "+00:00"))
    assert 1 <= len(truth["evidence"]) <= 12
    cache: dict[str, list[str]] = {}
    texts = []
    for e in truth["evidence"]:
        lines = file_lines(job, e["file"], cache)
        assert 1 <= e["line"] <= len(lines), e
        text = lines[e["line"] - 1]
        assert text.strip(), e
        texts.append(re.sub(r"^\d+: ", "", text) if e["file"].startswith("slurm-") else text)
        if scenario in NODE_FAULTS:
            assert node_of(truth, e["file"], text) in truth["faulty_nodes"], (e, text)
    for pattern in CLAIMS[scenario]:
        assert any(re.search(pattern, t) for t in texts), (scenario, pattern, texts)
    allowed = CLAIMS[scenario] + ([ALLOWED_EXTRA[scenario]] if scenario in ALLOWED_EXTRA else [])
    for t in texts:
        assert any(re.search(p, t) for p in allowed), (scenario, t)
    if scenario in NODE_FAULTS:
        assert len(truth["faulty_nodes"]) == 1 and truth["faulty_nodes"][0] in truth["node_names"]
    else:
        assert truth["faulty_nodes"] == []


@pytest.mark.parametrize("scenario", scenario_names())
def test_every_scenario_in_every_format_and_layout(tmp_path: Path, scenario: str) -> None:
    for k, (fmt, layout) in enumerate((f, lay) for f in FORMATS for lay in LAYOUTS):
        job = tmp_path / f"{fmt}-{layout}"
        truth = generate(JobSpec(scenario, nodes=2 + k % 2, gpus_per_node=2, iterations=40, seed=k,
                                 fmt=fmt, layout=layout, naming=NAMINGS[k % 4]), job)
        assert (truth["format"], truth["layout"]) == (fmt, layout)
        assert json.loads((job / "ground_truth.json").read_text()) == truth
        check_truth(job, truth)
        written = {p.relative_to(job).as_posix() for p in job.rglob("*") if p.is_file()} - {"ground_truth.json"}
        assert len(written) == truth["files"]
        assert sum(len((job / f).read_text(encoding="utf-8").splitlines()) for f in written) == truth["lines"]


def progress_by_rank(job: Path, truth: dict) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    for path in sorted(job.rglob("*")):
        rel = path.relative_to(job).as_posix()
        m = re.search(r"rank-?(\d+)\.log$", rel)
        if not (m or rel.startswith("slurm-")):
            continue
        for line in path.read_text(encoding="utf-8").split("\n"):
            rank = int(m.group(1)) if m else None
            if rank is None:
                lm = re.match(r"(\d+): (.*)", line)
                if not lm:
                    continue
                rank, line = int(lm.group(1)), lm.group(2)
            if re.search(PROGRESS, line):
                out.setdefault(rank, []).append(line)
    return out


@pytest.mark.parametrize("fmt", FORMATS)
def test_hang_culprit_stops_first_without_an_error_line(tmp_path: Path, fmt: str) -> None:
    truth = generate(JobSpec("nccl_hang", nodes=3, gpus_per_node=2, iterations=60, seed=5, fmt=fmt,
                             layout=LAYOUTS[FORMATS.index(fmt)]), tmp_path)
    culprit = truth["node_names"].index(truth["faulty_nodes"][0])
    progress = progress_by_rank(tmp_path, truth)
    gpn = truth["gpus_per_node"]
    bad = [r for r in progress if r // gpn == culprit]
    good = [r for r in progress if r // gpn != culprit]
    assert bad and good
    assert max(len(progress[r]) for r in bad) < min(len(progress[r]) for r in good)
    culprit_text = []
    for path in tmp_path.rglob("*"):
        rel = path.relative_to(tmp_path).as_posix()
        if not path.is_file() or path.name == "ground_truth.json":
            continue
        for line in path.read_text().split("\n"):
            if node_of(truth, rel, line) == truth["faulty_nodes"][0]:
                culprit_text.append(line)
    text = "\n".join(culprit_text)
    assert "iteration" in text or "loss" in text
    for word in ("Watchdog caught", "Traceback", "NCCL WARN", "Xid", "Error"):
        assert word not in text, word


def test_overfitting_evidence_shows_validation_loss_rising(tmp_path: Path) -> None:
    truth = generate(JobSpec("overfitting", nodes=2, gpus_per_node=2, iterations=80, seed=3, fmt="megatron"), tmp_path)
    cache: dict[str, list[str]] = {}
    values = [float(re.search(r"lm loss value: (\S+)", file_lines(tmp_path, e["file"], cache)[e["line"] - 1]).group(1))
              for e in truth["evidence"]]
    assert len(values) == 3 and values == sorted(values) and values[0] < values[-1]


def test_hard_negatives_are_present_and_not_evidence(tmp_path: Path) -> None:
    truth = generate(JobSpec("healthy_hard_negatives", nodes=2, gpus_per_node=2, iterations=40, seed=1,
                             fmt="deepspeed", layout="per-node-dir"), tmp_path)
    text = "\n".join(p.read_text() for p in tmp_path.rglob("*.log"))
    for needle in ("OVERFLOW! Rank 0 Skipping step", "Failed to find ncclTunerPlugin_v2", "Link INIT",
                   "-Werror=return-type", "error_handling.cpp", "ACPI Error", "Possible SYN flooding"):
        assert needle in text, needle
    assert truth["status"] == "healthy" and truth["evidence"] == []


def test_clock_skew_is_per_node_and_bounded() -> None:
    plan, _, _ = build_plan(JobSpec("healthy", nodes=16, gpus_per_node=1, iterations=20, seed=9))
    skews = [n.skew for n in plan.cluster.nodes]
    assert all(abs(s) <= 3.0 for s in skews) and len(set(skews)) > 8


def test_seed_picks_every_variant() -> None:
    variants = [choose_variant(JobSpec("healthy", seed=s)) for s in range(60)]
    assert {v.fmt for v in variants} == set(FORMATS)
    assert {v.layout for v in variants} == set(LAYOUTS)
    assert {v.naming for v in variants} == set(NAMINGS)


def digest(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and p.name != "README.md"}


def test_same_seed_same_bytes_other_seed_other_bytes(tmp_path: Path) -> None:
    spec = JobSpec("xid79_fallen_off_bus", nodes=3, gpus_per_node=2, iterations=50, seed=42)
    generate(spec, tmp_path / "a")
    generate(spec, tmp_path / "b")
    generate(JobSpec("xid79_fallen_off_bus", nodes=3, gpus_per_node=2, iterations=50, seed=43), tmp_path / "c")
    assert digest(tmp_path / "a") == digest(tmp_path / "b")
    assert digest(tmp_path / "a") != digest(tmp_path / "c")


def test_committed_suite_is_reproduced_byte_for_byte(tmp_path: Path) -> None:
    readme = (SUITE / "README.md").read_text()
    cmd = re.search(r"l4lite simulate --suite fixtures/suite (.*)", readme).group(1).split()
    args = dict(zip(cmd[::2], cmd[1::2], strict=True))
    build_suite(tmp_path, jobs_per_scenario=int(args["--jobs-per-scenario"]), nodes=int(args["--nodes"]),
                gpus_per_node=int(args["--gpus-per-node"]), iterations=int(args["--iterations"]),
                seed=int(args["--seed"]), extra_healthy=int(args["--extra-healthy"]))
    assert digest(tmp_path) == digest(SUITE)
    size = sum(p.stat().st_size for p in SUITE.rglob("*") if p.is_file())
    assert size < 8 * 1024 * 1024
    truths = [json.loads(p.read_text()) for p in SUITE.glob("*/ground_truth.json")]
    assert {t["scenario"] for t in truths} == set(scenario_names())
    assert {t["format"] for t in truths} == set(FORMATS) and {t["layout"] for t in truths} == set(LAYOUTS)


def test_committed_example_job_ground_truth_holds() -> None:
    truth = json.loads((EXAMPLE / "ground_truth.json").read_text())
    assert truth["scenario"] == "ib_link_down" and truth["nodes"] == 4
    check_truth(EXAMPLE, truth)
    summaries = [p for p in EXAMPLE.glob("*/launcher.log") if "Root Cause (first observed failure):" in p.read_text()]
    assert len(summaries) == 4


def count_lines(tmp: Path, iterations: int) -> int:
    truth = generate(JobSpec("healthy", nodes=16, gpus_per_node=8, iterations=iterations, seed=4, fmt="megatron",
                             layout="per-node-dir"), tmp / str(iterations))
    return truth["lines"]


def test_volume_scales_linearly_to_the_realistic_range(tmp_path: Path) -> None:
    a, b, c = (count_lines(tmp_path, k) for k in (60, 120, 180))
    step1, step2 = b - a, c - b
    assert abs(step1 - step2) <= 0.05 * step1
    per_iteration = step1 / 60
    assert per_iteration >= 0.9 * 128  # about one progress line per rank and iteration
    at_2000 = b + per_iteration * (2000 - 120)
    assert 1e5 <= at_2000 <= 1e6


def test_cli_simulate_list_job_and_suite(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--list"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in scenario_names())
    job = tmp_path / "job"
    assert main(["simulate", "device_oom", "--nodes", "2", "--gpus-per-node", "2", "--iterations", "30",
                 "-o", str(job)]) == 0
    assert "faulty node(s)" in capsys.readouterr().out
    assert main(["simulate", "device_oom", "--nodes", "2", "-o", str(job)]) == 2  # not empty, no --force
    assert "not empty" in capsys.readouterr().err
    assert main(["simulate", "device_oom", "--nodes", "2", "--iterations", "30", "-o", str(job), "--force"]) == 0
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    assert main(["simulate", "healthy", "-o", str(tmp_path / "mine"), "--force"]) == 2
    assert (tmp_path / "mine" / "notes.txt").exists()
    assert main(["simulate", "no_such_fault", "-o", str(tmp_path / "x")]) == 2
    assert main(["simulate", "--suite", str(tmp_path / "s"), "--scenarios", "healthy,host_oom", "--nodes", "2",
                 "--gpus-per-node", "1", "--iterations", "30"]) == 0
    index = json.loads((tmp_path / "s" / "suite.json").read_text())
    assert [j["scenario"] for j in index["jobs"]] == ["healthy", "host_oom"]


def test_spec_validation() -> None:
    for bad in (JobSpec("healthy", nodes=1), JobSpec("healthy", gpus_per_node=9), JobSpec("healthy", iterations=5),
                JobSpec("healthy", fmt="jax")):
        with pytest.raises(L4Error):
            bad.validate()
