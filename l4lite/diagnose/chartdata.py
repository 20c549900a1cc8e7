"""Chart data for the report, kept in ``Incident.extra`` and bounded in size whatever the length of the logs.

Keys: ``nodes``, ``heatmap`` (node x window anomaly scores), ``health`` (loss, grad norm, iteration time,
validation loss and loss scale series, per-node iteration time), ``timeline`` (root/cascade events, checkpoints,
restarts), ``templates`` (the most telling templates) and ``checklist`` (the investigation questions answered
from the data). Non-finite metric values are written as ``null`` so the JSON stays standard.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from l4lite.detect.base import Finding
from l4lite.detect.health import HealthDetector
from l4lite.detect.iforest import score_grid
from l4lite.diagnose.assemble import iso
from l4lite.diagnose.incident import Incident
from l4lite.diagnose.localize import Verdict
from l4lite.scan.scanner import JobScan, MetricPoint

MAX_NODES = 64
MAX_WINDOWS = 240
MAX_POINTS = 500
MAX_NODE_SERIES = 32
MAX_NODE_POINTS = 200
MAX_EVENTS = 300
MAX_TEMPLATES = 40


def _num(v: float | None) -> float | None:
    return float(v) if v is not None and math.isfinite(v) else None


def _decimate(pts: list[list[Any]], limit: int) -> list[list[Any]]:
    """Keep at most ``limit`` points: evenly spaced, plus every non-finite one (they matter most)."""
    if len(pts) <= limit:
        return pts
    step = len(pts) / limit
    keep = {int(i * step) for i in range(limit)} | {len(pts) - 1}
    keep |= {i for i, p in enumerate(pts) if p[1] is None}
    return [p for i, p in enumerate(pts) if i in keep]


def axis(scan: JobScan) -> tuple[float | None, float | None]:
    """The stretch of time the charts draw: the scan's first and last times, within the job's robust span (see
    ``ingest.context``) and a margin, so that dmesg lines from the node's boot weeks before the job do not make
    a fifteen-minute job look four weeks long."""
    lo, hi = scan.start_time, scan.end_time
    span = scan.info.get("job_span")
    if not span or lo is None or hi is None:
        return lo, hi
    pad = max(60.0, 0.05 * (span[1] - span[0]))
    return max(lo, span[0] - pad), min(hi, max(span[1] + pad, max(lo, span[0] - pad)))


def heatmap(scan: JobScan, window_seconds: float | None, suspects: list[str]) -> dict[str, Any] | None:
    grid = score_grid(scan, window_seconds)
    if grid.empty:
        return None
    lo, hi = axis(scan)
    times, values = grid.windows, grid.scores
    if lo is not None and hi is not None and len(times) > 1:
        width = times[1] - times[0]
        inside = [k for k, t in enumerate(times) if lo - width < t <= hi]
        if inside:
            times, values = [times[k] for k in inside], values[:, inside]
    window = times[1] - times[0] if len(times) > 1 else float(window_seconds or 60.0)
    if len(times) > MAX_WINDOWS:  # max-pool neighbouring windows
        k = math.ceil(len(times) / MAX_WINDOWS)
        pad = (-len(times)) % k
        padded = np.pad(values, ((0, 0), (0, pad)))
        values = padded.reshape(values.shape[0], -1, k).max(axis=2)
        times = times[::k]
        window *= k
    nodes = [str(n) for n in grid.nodes]
    if len(nodes) > MAX_NODES:
        order = sorted(range(len(nodes)), key=lambda i: (nodes[i] not in suspects, -float(values[i].max())))
        keep = sorted(order[:MAX_NODES])
        nodes = [nodes[i] for i in keep]
        values = values[keep]
    return {"nodes": nodes, "times": [iso(t) for t in times], "bucket_seconds": window,
            "scores": [[round(float(v), 3) for v in row] for row in values]}


def health(scan: JobScan, verdict: Verdict, suspects: list[str]) -> dict[str, Any]:
    train = [p for p in scan.metrics if p.kind == "train"]
    series: dict[str, list[list[Any]]] = {}
    for attr in ("loss", "grad_norm", "iter_time", "loss_scale"):
        ref = HealthDetector.reference_series(train, attr)
        pts = [[_x(p), _num(getattr(p, attr))] for p in ref.points]
        if pts:
            series[attr] = _decimate(pts, MAX_POINTS)
    vals = [p for p in scan.metrics if p.val_loss is not None]
    if vals:
        val_pts: list[list[Any]] = []
        for p in sorted(vals, key=lambda p: (_x(p), p.seq)):
            if not val_pts or val_pts[-1][1] != _num(p.val_loss) or val_pts[-1][0] != _x(p):
                val_pts.append([_x(p), _num(p.val_loss)])
        series["val_loss"] = _decimate(val_pts, MAX_POINTS)
    per_node: dict[str, list[list[Any]]] = {}
    by_node: dict[str, list[MetricPoint]] = {}
    for p in train:
        if p.iter_time is not None and p.node is not None:
            by_node.setdefault(p.node, []).append(p)
    if len(by_node) > 1:
        names = sorted(by_node, key=lambda n: (n not in suspects, n))[:MAX_NODE_SERIES]
        for n in names:
            pts = [[_x(p), _num(p.iter_time)] for p in sorted(by_node[n], key=lambda p: (_x(p), p.seq))]
            per_node[n] = _decimate(pts, MAX_NODE_POINTS)
    return {"series": series, "per_node_iter_time": per_node,
            "failure_iteration": verdict.iteration if verdict.status == "incident" else None}


def _x(p: MetricPoint) -> int:
    return p.iteration if p.iteration is not None else p.seq


def timeline(scan: JobScan, verdict: Verdict, suspects: list[str]) -> dict[str, Any]:
    events: list[dict[str, Any]] = []
    lo, hi = axis(scan)
    a = lo if lo is not None else float("-inf")
    b = hi if hi is not None else float("inf")
    for f, role in zip(verdict.findings, verdict.roles, strict=True):
        if role == "anomaly" and f.detector == "filters":
            continue
        for r in f.records[:3]:
            if r.time is None or (role != "root" and not a <= r.time <= b):  # the root is drawn wherever it is
                continue
            events.append({"time": iso(r.time), "node": r.node or f.node, "role": role,
                           "label": (f.explain or r.message)[:160], "rule": f.rule})
    for m in scan.markers:
        if m.time is None or not a <= m.time <= b:
            continue
        if m.kind == "checkpoint_saved":
            label = f"checkpoint saved{': iteration ' + str(m.iteration) if m.iteration is not None else ''}"
            events.append({"time": iso(m.time), "node": None, "role": "marker", "label": label,
                           "rule": "checkpoint-saved"})
        elif m.kind == "restart":
            events.append({"time": iso(m.time), "node": m.node, "role": "marker", "label": "restart",
                           "rule": "restart"})
    uniq: dict[tuple[Any, ...], dict[str, Any]] = {}
    for e in events:
        uniq.setdefault((e["time"], e["node"], e["label"]), e)
    ordered = sorted(uniq.values(), key=lambda e: (e["role"] != "root", e["time"]))[:MAX_EVENTS]
    ordered.sort(key=lambda e: e["time"])
    return {"start": iso(lo), "end": iso(hi), "lanes": suspects[:8], "events": ordered}


def templates(scan: JobScan, evidence_tids: list[str]) -> dict[str, Any]:
    chosen: list[str] = []
    for tid in evidence_tids:
        if tid and tid in scan.templates and tid not in chosen:
            chosen.append(tid)
    rest = sorted(scan.templates.values(), key=lambda s: (-_interest(s), -s.count))
    for s in rest:
        if len(chosen) >= MAX_TEMPLATES:
            break
        if s.template_id not in chosen:
            chosen.append(s.template_id)
    top = [{"template_id": t, "template": scan.templates[t].template[:300], "count": scan.templates[t].count,
            "nodes": len(scan.templates[t].nodes), "first_time": iso(scan.templates[t].first_time)}
           for t in chosen[:MAX_TEMPLATES]]
    return {"total": len(scan.templates), "top": top}


def _interest(s: Any) -> float:
    err = s.levels.get("error", 0) + 0.5 * s.levels.get("warning", 0)
    return (1.0 if err else 0.0) + 1.0 / (1 + len(s.nodes))


def checklist(incident: Incident, verdict: Verdict, scan: JobScan, findings: list[Finding]) -> list[dict[str, str]]:
    out: list[dict[str, str]] = []

    def item(q: str, a: str, s: str) -> None:
        out.append({"question": q, "answer": a, "status": s})

    if incident.iteration is not None:
        item("Which iteration was running?", f"Iteration {incident.iteration}"
             + (f" (phase {incident.phase})." if incident.phase else "."), "yes")
    else:
        item("Which iteration was running?", "No iteration line was seen before the failure.", "unknown")
    roots = [e for e in incident.evidence if e.role == "root"]
    if roots:
        first = min(roots, key=lambda e: (e.time is None, e.time or "", e.line))
        dev = f" GPU {first.gpu}" if first.gpu is not None else (f" rank {first.rank}" if first.rank is not None else "")
        item("Which device reported an error first?",
             f"{first.node or 'an unknown node'}{dev} ({first.source or 'log'}) at {first.time or 'an unknown time'}:"
             f" {(first.explain or first.text)[:160]}", "yes")
    else:
        item("Which device reported an error first?", "No root-cause line names a device.", "unknown")
    spike = next((f for f in findings if f.data.get("signal") == "loss_spike"), None)
    if spike is None:
        item("Did the gradient norm grow before the loss spike?", "The loss did not spike.", "no")
    elif "grad_norm_grew_first" in spike.data:
        grew = bool(spike.data["grad_norm_grew_first"])
        item("Did the gradient norm grow before the loss spike?",
             ("Yes: " if grew else "No: ") + spike.explain, "yes" if grew else "no")
    else:
        item("Did the gradient norm grow before the loss spike?",
             "The gradient norm did not explode around the loss spike (or was not logged).", "unknown")
    val = next((f for f in findings if f.data.get("signal") == "val_rising"), None)
    has_val = any(p.val_loss is not None for p in scan.metrics)
    item("Did the validation loss start rising earlier?",
         ("Yes: " + val.explain) if val else ("No: the validation loss was not rising." if has_val
                                              else "No validation loss was logged."),
         "yes" if val else ("no" if has_val else "unknown"))
    last = incident.checkpoint.get("last_saved")
    cut = incident.checkpoint.get("in_progress")
    if cut:
        item("Is the last checkpoint complete?", f"No: the save at iteration {cut.get('iteration')} was cut short;"
             + (f" the last complete one is iteration {last.get('iteration')}." if last else " none before it."),
             "no")
    elif last:
        item("Is the last checkpoint complete?", f"Yes: iteration {last.get('iteration')}"
             + (f" at {last['path']}" if last.get("path") else "") + " finished saving.", "yes")
    else:
        item("Is the last checkpoint complete?", "No checkpoint save was seen in the logs.", "unknown")
    restarts = [m.time for m in scan.markers if m.kind == "restart" and m.time is not None]
    ft = verdict.failure_time
    before = [t for t in restarts if ft is None or t <= ft]
    if before and ft is not None and ft - max(before) <= 900:
        item("Did the failure begin right after a restart?",
             f"Yes: {(ft - max(before)) / 60:.0f} min after the restart at {iso(max(before))}.", "yes")
    else:
        item("Did the failure begin right after a restart?",
             "No restart was seen shortly before the failure." if verdict.status == "incident" else
             "No failure.", "no")
    return out


def build_extra(scan: JobScan, verdict: Verdict, incident: Incident, window_seconds: float | None,
                with_heatmap: bool = True) -> dict[str, Any]:
    suspects = [s.node for s in incident.suspects]
    out: dict[str, Any] = {"nodes": scan.nodes}
    hm = heatmap(scan, window_seconds, suspects) if with_heatmap else None
    if hm is not None:
        out["heatmap"] = hm
    out["health"] = health(scan, verdict, suspects)
    out["timeline"] = timeline(scan, verdict, suspects or [n for n in scan.nodes[:4]])
    out["templates"] = templates(scan, [e.template_id for e in incident.evidence])
    out["checklist"] = checklist(incident, verdict, scan, verdict.findings)
    return out
