"""Chart geometry for the HTML report: downsampling and plain-number SVG layouts.

The report draws its charts as inline SVG. Python computes the geometry here (scaled coordinates as numbers,
colours as fixed hex strings) and the Jinja macros in ``templates/_charts.j2`` turn it into elements. Every
piece of text that can come from a log (node names, event labels) reaches the page only through Jinja's
autoescaping, and SVG path data is built from floats only, so the charts are escaped by construction. No
plotting library is needed, the output stays small (a few kB per chart) and the file opens offline.

Downsampling keeps the page size bounded whatever the length of the logs: series use
largest-triangle-three-buckets (keeps spikes and the overall shape), the heatmap max-pools time buckets so that
a short burst of anomalies never disappears.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from l4lite.report.scale import (
    clean,
    finite,
    fmt_num,
    fmt_tick,
    fmt_time,
    lttb_indices,
    nice_ticks,
    parse_time,
    pool_columns,
    time_ticks,
    xy_arrays,
)
from l4lite.report.scale import lttb as lttb  # re-exported: callers and tests import it from here

HEAT_RAMP = ((0.0, (255, 255, 255)), (0.25, (254, 240, 170)), (0.5, (253, 186, 90)),
             (0.75, (240, 100, 60)), (1.0, (165, 15, 21)))

_CHAR_W = 6.8  # width of one character of an 11 px monospace row label, in chart units


def label_chars(left: int) -> int:
    """How many label characters fit in a ``left`` margin (with its 8-unit gap to the plot)."""
    return max(6, int((left - 10) / _CHAR_W))


def fit_label(name: str, chars: int) -> str:
    """A row label that fits ``chars`` characters: long names lose their middle, not their ends, because node
    names that share a prefix (``llm-pretrain-...-worker-0`` / ``-worker-1``) differ at the end; the full name
    goes in the row's tooltip."""
    if len(name) <= chars:
        return name
    tail = (chars - 1) // 2 + 1
    return name[: chars - 1 - tail] + "…" + name[-tail:]



def heat_colour(score: float) -> str:
    s = min(max(score, 0.0), 1.0)
    for (p0, c0), (p1, c1) in zip(HEAT_RAMP, HEAT_RAMP[1:], strict=False):
        if s <= p1:
            f = (s - p0) / (p1 - p0)
            return "#" + "".join(f"{round(a + (b - a) * f):02x}" for a, b in zip(c0, c1, strict=True))
    return "#a50f15"


ROLE_COLOURS = {"root": "#c81e1e", "cascade": "#e67e22", "symptom": "#b7950b", "confirmation": "#2563eb",
                "anomaly": "#7c3aed"}
PHASE_COLOURS = {"init": "#e0e7ff", "load": "#dbeafe", "train": "#dcfce7", "checkpoint": "#fef3c7",
                 "eval": "#fae8ff", "shutdown": "#e5e7eb"}
LINE_PALETTE = ("#c81e1e", "#e67e22", "#7c3aed", "#0e7490", "#be185d")


# ---------------------------------------------------------------------------------------------- line charts
@dataclass
class LineChart:
    """A line chart laid out in a ``width`` x ``height`` box; everything numeric except labels."""

    title: str
    width: int = 560
    height: int = 190
    left: int = 56
    right: int = 14
    top: int = 22
    bottom: int = 30
    lines: list[dict[str, Any]] = field(default_factory=list)  # {"d", "colour", "width", "label", "muted"}
    xticks: list[tuple[float, str]] = field(default_factory=list)
    yticks: list[tuple[float, str]] = field(default_factory=list)
    marker_x: float | None = None
    marker_label: str = ""
    bad_points: list[float] = field(default_factory=list)  # x of non-finite values (drawn at the top)
    log_y: bool = False
    shown: int = 0
    total: int = 0
    note: str = ""


def line_chart(title: str, series: dict[str, Sequence[Sequence[Any]]], *, max_points: int,
               failure_x: float | None = None, highlight: Sequence[str] = (), width: int = 560,
               height: int = 190, x_min: float | None = None) -> LineChart | None:
    """Lay out one or more [x, y] series; non-finite y values become red ticks at the top of the plot."""
    chart = LineChart(title=title, width=width, height=height)
    kept: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    bad_parts: list[np.ndarray] = []
    for name, pts in series.items():
        x, y = xy_arrays(pts)
        if x_min is not None:
            x, y = x[x >= x_min], y[x >= x_min]
        chart.total += len(x)
        finite = np.isfinite(y)
        bad_parts.append(x[~finite])
        x, y = x[finite], y[finite]
        order = np.argsort(x, kind="stable")
        x, y = x[order], y[order]
        if len(x):
            # Downsample only when it saves much: a few hundred extra points cost less than a note.
            sel = lttb_indices(x, y, max_points if len(x) > max_points * 1.5 else len(x))
            kept[name] = (x[sel], y[sel])
            chart.shown += len(sel)
    bad = np.concatenate(bad_parts) if bad_parts else np.empty(0)
    if not kept and not len(bad):
        return None
    xs = [float(v) for px, _ in kept.values() for v in (px.min(), px.max())] + \
        ([float(bad.min()), float(bad.max())] if len(bad) else []) + ([failure_x] if failure_x is not None else [])
    ys = [float(v) for _, py in kept.values() for v in (py.min(), py.max())]
    x0, x1 = min(xs), max(xs)
    if x1 == x0:
        x0, x1 = x0 - 1, x1 + 1
    y0, y1 = (min(ys), max(ys)) if ys else (0.0, 1.0)
    chart.log_y = bool(ys) and y0 > 0 and y1 / y0 > 1e3
    if chart.log_y:
        y0, y1 = math.log10(y0), math.log10(y1)
    if y1 == y0:
        y0, y1 = y0 - 1, y1 + 1
    pad = (y1 - y0) * 0.06
    y0, y1 = y0 - pad, y1 + pad
    pw = width - chart.left - chart.right
    ph = height - chart.top - chart.bottom

    def sx(x: Any) -> Any:
        return np.round(chart.left + (np.asarray(x, dtype=float) - x0) / (x1 - x0) * pw, 1)

    def sy(y: Any) -> Any:
        v = np.asarray(y, dtype=float)
        v = np.log10(v) if chart.log_y else v
        return np.round(chart.top + (1 - (v - y0) / (y1 - y0)) * ph, 1)

    high = list(highlight)
    for name, (px, py) in sorted(kept.items(), key=lambda kv: -high.index(kv[0]) if kv[0] in high else -999):
        d = "M" + " L".join(f"{a:g},{b:g}" for a, b in zip(sx(px).tolist(), sy(py).tolist(), strict=True))
        muted = len(kept) > 1 and name not in high
        colour = ("#9ca3af" if muted else LINE_PALETTE[high.index(name) % len(LINE_PALETTE)]) if len(kept) > 1 \
            else "#1d4ed8"
        chart.lines.append({"d": d, "colour": colour, "width": 1 if muted else 1.8, "label": clean(name)[:80],
                            "muted": muted, "points": len(px)})
    chart.xticks = [(float(sx(t)), fmt_num(t)) for t in nice_ticks(x0, x1, 6)
                    if float(sx(t)) + 3.2 * len(fmt_num(t)) <= width]
    if chart.log_y:
        chart.yticks = [(float(sy(10.0**e)), fmt_num(10.0**e)) for e in range(math.ceil(y0), math.floor(y1) + 1)]
    else:
        chart.yticks = [(float(sy(t)), fmt_num(t)) for t in nice_ticks(y0, y1, 4)]
    chart.bad_points = np.unique(sx(bad)).tolist()[:200] if len(bad) else []
    if failure_x is not None:
        chart.marker_x = float(sx(failure_x))
        chart.marker_label = f"failure at {fmt_num(failure_x)}"
    if chart.shown < chart.total - len(bad):
        chart.note = f"{chart.shown} of {chart.total - len(bad)} points drawn (LTTB downsampling)"
    if len(bad):
        chart.note = (chart.note + "; " if chart.note else "") + f"{len(bad)} non-finite values (red ticks)"
    return chart


# ---------------------------------------------------------------------------------------------- heatmap
def _row_array(row: Any) -> np.ndarray:
    """One heatmap row as floats in [0, 1]; anything unreadable counts as 0."""
    if not isinstance(row, list | tuple):
        return np.zeros(0)
    try:
        arr = np.asarray(row, dtype=float)
    except (TypeError, ValueError):
        arr = np.array([finite(v) or 0.0 for v in row], dtype=float)
    if arr.ndim != 1:
        return np.zeros(0)
    return np.clip(np.nan_to_num(arr, nan=0.0, posinf=1.0, neginf=0.0), 0.0, 1.0)


@dataclass
class Heatmap:
    width: int
    height: int
    left: int
    top: int
    cell_w: float
    cell_h: float
    rows: list[dict[str, Any]]  # {"node", "y", "suspect", "cells": [(x, colour, title)]}
    xticks: list[tuple[float, str]]
    marker_x: float | None
    note: str
    legend: list[tuple[float, str]]


def heatmap(data: dict[str, Any], *, suspects: Sequence[str], max_rows: int, max_cols: int,
            failure_time: float | None) -> Heatmap | None:
    nodes = [clean(n)[:80] for n in data.get("nodes") or []]
    scores = data.get("scores") or []
    times = [parse_time(t) for t in data.get("times") or []]
    if not nodes or not scores or not times:
        return None
    bucket = finite(data.get("bucket_seconds")) or 0.0
    rows_all = []
    for node, row in zip(nodes, scores, strict=False):
        vals = np.zeros(len(times))
        arr = _row_array(row)[: len(times)]
        vals[: len(arr)] = arr
        rows_all.append((node, vals))
    notes = []
    sus = {clean(n)[:80] for n in suspects}
    if len(rows_all) > max_rows:
        ranked = sorted(rows_all, key=lambda r: (r[0] not in sus, -float(r[1].max(initial=0.0))))
        keep = {r[0] for r in ranked[:max_rows]}
        notes.append(f"{len(rows_all) - max_rows} of {len(rows_all)} nodes with lower scores not shown")
        rows_all = [r for r in rows_all if r[0] in keep]
    ncols = len(times)
    cols = min(ncols, max_cols)
    if cols < ncols:
        notes.append(f"{ncols} time buckets pooled into {cols} columns (maximum score per column)")
    col_times = [times[(c * ncols) // cols] for c in range(cols)]
    t_first = next((t for t in times if t is not None), None)
    t_last = next((t for t in reversed(times) if t is not None), None)
    left, top = 120, 8
    width = 1180
    plot_w = width - left - 12
    cell_w = plot_w / cols
    cell_h = 18.0 if len(rows_all) <= 32 else max(6.0, 576 / len(rows_all))
    rows = []
    for i, (node, vals) in enumerate(rows_all):
        # Scores quantised to 0.05 steps; equal neighbours merge into one rect; only notable runs get a tooltip.
        q = [round(v * 20) / 20 for v in pool_columns(vals, cols)]
        cells = []
        c = 0
        while c < cols:
            end = c
            while end + 1 < cols and q[end + 1] == q[c]:
                end += 1
            if q[c] >= 0.05:
                span = fmt_time(col_times[c])
                if end > c:
                    span += f" – {fmt_time(col_times[end], False)}"
                cells.append((round(left + c * cell_w, 2), round((end - c + 1) * cell_w, 2), heat_colour(q[c]),
                              f"{node} · {span} · score {q[c]:.2f}" if q[c] >= 0.2 else ""))
            c = end + 1
        rows.append({"node": node, "label": fit_label(node, label_chars(left)), "y": round(top + i * cell_h, 2),
                     "suspect": node in sus, "cells": cells})
    height = int(top + len(rows) * cell_h + 26)
    # Ticks and the failure mark go by column (not by linear time), so irregular bucket times stay right.
    xticks: list[tuple[float, str]] = []
    marker = None
    if t_first is not None and t_last is not None:
        span = (t_last + bucket) - t_first
        for c in range(0, cols, max(1, cols // 8)):
            x = left + c * cell_w
            if col_times[c] is not None and x + 30 <= width:
                xticks.append((round(x, 1), fmt_tick(col_times[c], span)))
        if failure_time is not None and t_first <= failure_time <= t_last + bucket:
            idx = max((i for i, t in enumerate(times) if t is not None and t <= failure_time), default=0)
            frac = min(max((failure_time - (times[idx] or failure_time)) / bucket, 0.0), 1.0) if bucket else 0.0
            marker = round(left + (idx + frac) * cell_w * cols / ncols, 1)
    legend = [(v, heat_colour(v)) for v in (0.1, 0.3, 0.5, 0.7, 0.9)]
    return Heatmap(width, height, left, top, round(cell_w, 3), cell_h, rows, xticks, marker, "; ".join(notes),
                   legend)


# ---------------------------------------------------------------------------------------------- timeline
@dataclass
class Timeline:
    title: str
    width: int
    height: int
    left: int
    lane_h: int
    bands: list[dict[str, Any]]
    lanes: list[dict[str, Any]]
    marks: list[dict[str, Any]]
    xticks: list[tuple[float, str]]
    marker_x: float | None
    note: str


_EVENT_RANK = {"root": 0, "cascade": 1, "symptom": 2, "confirmation": 3, "anomaly": 4}


def timeline_events(data: dict[str, Any]) -> list[tuple[float, dict[str, Any]]]:
    out = []
    for e in data.get("events") or []:
        if isinstance(e, dict):
            t = parse_time(e.get("time"))
            if t is not None:
                out.append((t, e))
    return sorted(out, key=lambda te: te[0])


def focus_window(data: dict[str, Any], failure_time: float | None, full: tuple[float, float]) -> tuple[float, float] | None:
    """The stretch around the failure worth a zoomed view, or None when the whole run is already that short."""
    ts = [t for t, e in timeline_events(data) if str(e.get("role")) in _EVENT_RANK]
    if failure_time is not None:
        ts.append(failure_time)
    if not ts:
        return None
    lo, hi = min(ts), max(ts)
    pad = max((hi - lo) * 0.08, 30.0)
    lo, hi = max(full[0], lo - pad), min(full[1], hi + pad)
    return (lo, hi) if (hi - lo) < 0.5 * (full[1] - full[0]) else None


def time_range(data: dict[str, Any], phases: Sequence[dict[str, Any]], failure_time: float | None) -> tuple[float, float] | None:
    ts = [t for t, _ in timeline_events(data)]
    ts += [t for p in phases for t in (parse_time(p.get("start")), parse_time(p.get("end"))) if t is not None]
    ts += [t for t in (parse_time(data.get("start")), parse_time(data.get("end")), failure_time) if t is not None]
    if not ts:
        return None
    t0, t1 = min(ts), max(ts)
    return (t0 - 30, t1 + 30) if t1 - t0 < 1 else (t0, t1)


def timeline(data: dict[str, Any], phases: Sequence[dict[str, Any]], *, max_events: int,
             failure_time: float | None, suspects: Sequence[str], window: tuple[float, float] | None = None,
             title: str = "Whole run") -> Timeline | None:
    """Phases as bands, events as marks in lanes (job-wide, the top suspects' lanes, other nodes)."""
    full = time_range(data, phases, failure_time)
    if full is None:
        return None
    t0, t1 = window or full
    events = [(t, e) for t, e in timeline_events(data) if t0 <= t <= t1]
    notes = []
    if len(events) > max_events:
        kept = sorted(events, key=lambda te: (_EVENT_RANK.get(str(te[1].get("role")), 5), te[0]))[:max_events]
        notes.append(f"{len(events) - max_events} of {len(events)} events not drawn (lowest priority first)")
        events = sorted(kept, key=lambda te: te[0])
    lane_names = [str(n) for n in (data.get("lanes") or [])][:8]
    for s in suspects:
        if s not in lane_names and len(lane_names) < 8:
            lane_names.append(s)
    left, lane_h, top = 130, 26, 26
    width = 1180
    plot_w = width - left - 12

    def sx(t: float) -> float:
        return round(left + (t - t0) / (t1 - t0) * plot_w, 1)

    lane_y = {n: top + (i + 1) * lane_h for i, n in enumerate(lane_names)}
    lanes = [{"label": "job-wide", "full": "events of no single node", "y": top, "suspect": False}]
    lanes += [{"label": fit_label(clean(n), label_chars(left)), "full": clean(n)[:200], "y": y, "suspect": n in suspects}
              for n, y in lane_y.items()]
    other_y = top + (len(lane_names) + 1) * lane_h
    if any(e.get("node") and str(e.get("node")) not in lane_y for _, e in events):
        lanes.append({"label": "other nodes", "full": "nodes without a lane of their own", "y": other_y,
                      "suspect": False})
    marks = []
    for t, e in events:
        node = e.get("node")
        y = lane_y.get(str(node), other_y) if node else top
        role = str(e.get("role") or "anomaly")
        label = clean(str(e.get("label") or e.get("rule") or role)[:120])
        marks.append({"x": sx(t), "y": y + lane_h / 2, "role": role, "colour": ROLE_COLOURS.get(role, "#6b7280"),
                      "title": f"{fmt_time(t)} · {clean(node)[:80] if node else 'job-wide'} · {clean(role)[:20]} · "
                               f"{label}"})
    marks.sort(key=lambda m: -_EVENT_RANK.get(m["role"], 5))  # root causes drawn last, on top
    bands = []
    for p in phases:
        s, e = parse_time(p.get("start")), parse_time(p.get("end"))
        if s is None and e is None:
            continue
        s, e = max(t0, full[0] if s is None else s), min(t1, full[1] if e is None else e)
        if e <= s:
            continue
        name = clean(p.get("name") or "")[:20]
        w = max(sx(e) - sx(s), 1.0)
        bands.append({"x": sx(s), "w": w, "name": name, "colour": PHASE_COLOURS.get(name, "#f3f4f6"),
                      "show_label": w > 7 * len(name) + 8})
    height = int(top + len(lanes) * lane_h + 28)
    marker = sx(failure_time) if failure_time is not None and t0 <= failure_time <= t1 else None
    xticks = [(sx(t), fmt_tick(t, t1 - t0)) for t in time_ticks(t0, t1, 8) if sx(t) + 30 <= width]
    return Timeline(title, width, height, left, lane_h, bands, lanes, marks, xticks, marker, "; ".join(notes))
