"""Lay the streams out as files (three layouts), resolve evidence marks to file:line, write the ground truth.

Layouts:
- ``per-node-dir``: ``node017/rank8.log`` per rank, ``node017/dmesg.log`` (or ``kern.log``),
  ``node017/nvidia-smi.log`` and ``node017/launcher.log`` (torchrun on that node).
- ``per-rank-file``: ``rank-8.log`` per rank, ``<node>-dmesg.log``, ``<node>-nvidia-smi.log``,
  ``launcher-<node>.log``; the rank-to-host mapping is only in the NCCL lines.
- ``merged-slurm``: one ``slurm-<jobid>.out`` with ``srun --label`` prefixes (``8: ...``, one task per GPU, no
  torchrun) plus ``kernel/<node>.log`` and ``gpu/<node>.log``.
"""

from __future__ import annotations

import heapq
import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from l4lite.diagnose.incident import write_atomic
from l4lite.errors import L4Error
from l4lite.simulate.plan import Plan
from l4lite.simulate.render import Stream

GROUND_TRUTH = "ground_truth.json"
GROUND_TRUTH_SCHEMA = "l4lite.ground_truth/1"


@dataclass
class Written:
    files: dict[str, int] = field(default_factory=dict)  # relative path -> line count
    evidence: list[dict[str, Any]] = field(default_factory=list)  # file, line, time (local epoch s), node

    @property
    def lines(self) -> int:
        return sum(self.files.values())


def stream_path(plan: Plan, st: Stream) -> tuple[str, str | None]:
    """Relative file path of a stream, and the line label (merged Slurm output only)."""
    c = plan.cluster
    layout = c.variant.layout
    name = c.nodes[st.node].name if st.node is not None else ""
    klog = "dmesg.log" if c.variant.kernel_style == "dmesg" else "kern.log"
    if st.kind == "trainer":
        if layout == "per-node-dir":
            return f"{name}/rank{st.rank}.log", None
        if layout == "per-rank-file":
            return f"rank-{st.rank}.log", None
        return f"slurm-{c.job_id}.out", f"{st.rank}: "
    if st.kind == "slurm":
        return f"slurm-{c.job_id}.out", None
    if layout == "per-node-dir":
        return f"{name}/{ {'kernel': klog, 'gpu': 'nvidia-smi.log', 'launcher': 'launcher.log'}[st.kind]}", None
    if layout == "per-rank-file":
        return {"kernel": f"{name}-{klog}", "gpu": f"{name}-nvidia-smi.log", "launcher": f"launcher-{name}.log"}[
            st.kind], None
    return f"{ {'kernel': 'kernel', 'gpu': 'gpu'}[st.kind]}/{name}.log", None


def prepare_dir(out: Path, overwrite: bool) -> None:
    """Refuse to mix a new job into an existing folder, except to replace an earlier simulated job."""
    if out.exists() and any(out.iterdir()):
        if not overwrite:
            raise L4Error(f"{out}: folder exists and is not empty (use --force to replace a simulated job)")
        if not (out / GROUND_TRUTH).is_file():
            raise L4Error(f"{out}: not a simulated job (no {GROUND_TRUTH}); refusing to delete it")
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)


def _tagged(st: Stream, label: str | None) -> Iterator[tuple[float, str, Any, str | None, int | None]]:
    node = st.node
    for t, text, marks in st.events:
        yield t, text, marks, label, node


def write_streams(plan: Plan, streams: list[Stream], out: Path) -> Written:
    groups: dict[str, list[tuple[Stream, str | None]]] = {}
    for st in streams:
        path, label = stream_path(plan, st)
        groups.setdefault(path, []).append((st, label))
    written = Written()
    skews = [n.skew for n in plan.cluster.nodes]
    for path in sorted(groups):
        members = groups[path]
        iters = [_tagged(st, label) for st, label in members]
        items = iters[0] if len(iters) == 1 else heapq.merge(*iters, key=lambda e: e[0])
        parts: list[str] = []
        lineno = 1
        for t, text, marks, label, node in items:
            if marks:
                for off, _kind in marks:
                    written.evidence.append({"file": path, "line": lineno + off, "node": node,
                                             "time": t + (skews[node] if node is not None else 0.0)})
            if label:
                text = label + text.replace("\n", "\n" + label)
            parts.append(text)
            lineno += text.count("\n") + 1
        target = out / path
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "w", encoding="utf-8", newline="\n") as fh:
            if parts:  # a rank that never printed leaves an empty file, not a blank line
                fh.write("\n".join(parts))
                fh.write("\n")
        written.files[path] = lineno - 1
    return written


def ground_truth(plan: Plan, scenario: str, written: Written) -> dict[str, Any]:
    c = plan.cluster
    tr = plan.truth
    evidence = sorted(written.evidence, key=lambda e: (e["time"], e["file"], e["line"]))
    fault_time = None
    if tr.status == "incident":
        t = plan.extras.get("fault_t")
        if isinstance(t, float):
            skew = c.nodes[tr.faulty_nodes[0]].skew if tr.faulty_nodes else 0.0
            fault_time = plan.clock.iso8601(t + skew)
        elif evidence:
            fault_time = plan.clock.iso8601(evidence[0]["time"])
    return {
        "schema": GROUND_TRUTH_SCHEMA,
        "scenario": scenario,
        "status": tr.status,
        "faulty_nodes": [c.nodes[n].name for n in tr.faulty_nodes],
        "phase": tr.phase,
        "iteration": tr.iteration,
        "category": tr.category,
        "fault_time": fault_time,
        "evidence": [{"file": e["file"], "line": e["line"]} for e in evidence],
        "format": c.variant.fmt,
        "layout": c.variant.layout,
        "naming": c.variant.naming,
        "node_names": [n.name for n in c.nodes],
        "nccl_hostnames": {n.short: n.name for n in c.nodes},
        "seed": c.spec.seed,
        "notes": " ".join(tr.notes),
        "nodes": c.spec.nodes,
        "gpus_per_node": c.gpn,
        "world_size": c.world,
        "iterations": c.spec.iterations,
        "first_iteration": plan.sched.first,
        "resumed_from": plan.sched.resume_from,
        "precision": c.variant.precision,
        "files": len(written.files),
        "lines": written.lines,
    }


def write_ground_truth(out: Path, truth: dict[str, Any]) -> None:
    write_atomic(out / GROUND_TRUTH, json.dumps(truth, indent=2) + "\n")
