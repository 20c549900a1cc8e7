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
from datetime import UTC, datetime
from typing import Any

Point = tuple[float, float]


# ---------------------------------------------------------------------------------------------- downsampling
def lttb(points: Sequence[Point], threshold: int) -> list[Point]:
    """Largest-triangle-three-buckets: at most ``threshold`` points that keep the visual shape (and spikes)."""
    n = len(points)
    if threshold >= n or threshold < 3:
        return list(points) if threshold >= n else list(points[:: max(1, n // max(threshold, 1))])[:threshold]
    out = [points[0]]
    every = (n - 2) / (threshold - 2)
    a = 0
    for i in range(threshold - 2):
        start = int(math.floor((i + 1) * every)) + 1
        end = min(int(math.floor((i + 2) * every)) + 1, n)
        nxt = points[start:end] or [points[-1]]
        avg_x = sum(p[0] for p in nxt) / len(nxt)
        avg_y = sum(p[1] for p in nxt) / len(nxt)
        lo = int(math.floor(i * every)) + 1
        hi = int(math.floor((i + 1) * every)) + 1
        ax, ay = points[a]
        best, best_area = lo, -1.0
        for j in range(lo, min(hi, n - 1)):
            px, py = points[j]
            area = abs((ax - avg_x) * (py - ay) - (ax - px) * (avg_y - ay))
            if area > best_area:
                best, best_area = j, area
        out.append(points[best])
        a = best
    out.append(points[-1])
    return out


def pool_columns(row: Sequence[float], width: int) -> list[float]:
    """Max-pool a row of scores into ``width`` columns (a short burst stays visible)."""
    n = len(row)
    if n <= width:
        return [float(v) for v in row]
    out = []
    for c in range(width):
        lo, hi = (c * n) // width, ((c + 1) * n) // width
        out.append(max(float(v) for v in row[lo:max(hi, lo + 1)]))
    return out


# ---------------------------------------------------------------------------------------------- helpers
def parse_time(value: Any) -> float | None:
    """ISO 8601 (naive means UTC) or epoch seconds to epoch seconds; None when unreadable."""
    if value is None or value == "":
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value) if math.isfinite(value) else None
    try:
        dt = datetime.fromisoformat(str(value).strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.timestamp()


def fmt_time(epoch: float | None, with_date: bool = True) -> str:
    if epoch is None:
        return "—"
    dt = datetime.fromtimestamp(epoch, tz=UTC)
    return dt.strftime("%Y-%m-%d %H:%M:%S UTC" if with_date else "%H:%M:%S")


def fmt_num(v: float) -> str:
    if v == 0:
        return "0"
    a = abs(v)
    if a >= 1e5 or a < 1e-3:
        return f"{v:.2g}"
    if a >= 100:
        return f"{v:.0f}"
    if a >= 10:
        return f"{v:.1f}".rstrip("0").rstrip(".")
    return f"{v:.3g}"


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return [lo]
    raw = (hi - lo) / max(count, 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step) * step
    ticks, t = [], first
    while t <= hi + step * 1e-9 and len(ticks) < 20:
        ticks.append(round(t, 12))
        t += step
    return ticks


def time_ticks(lo: float, hi: float, count: int = 6) -> list[float]:
    span = max(hi - lo, 1.0)
    steps = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400)
    step = next((s for s in steps if span / s <= count), 86400 * math.ceil(span / 86400 / count))
    t = math.ceil(lo / step) * step
    out = []
    while t <= hi and len(out) < 30:
        out.append(float(t))
        t += step
    return out


def _finite(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


HEAT_RAMP = ((0.0, (255, 255, 255)), (0.25, (254, 240, 170)), (0.5, (253, 186, 90)),
             (0.75, (240, 100, 60)), (1.0, (165, 15, 21)))


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
    top: int = 12
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
               height: int = 190) -> LineChart | None:
    """Lay out one or more [x, y] series; non-finite y values become red ticks at the top of the plot."""
    chart = LineChart(title=title, width=width, height=height)
    clean: dict[str, list[Point]] = {}
    bad: list[float] = []
    for name, pts in series.items():
        good: list[Point] = []
        for p in pts:
            if not isinstance(p, list | tuple) or len(p) < 2:
                continue
            x, y = _finite(p[0]), _finite(p[1])
            if x is None:
                continue
            chart.total += 1
            if y is None:
                bad.append(x)
            else:
                good.append((x, y))
        good.sort()
        if good:
            clean[name] = lttb(good, max_points)
            chart.shown += len(clean[name])
    if not clean and not bad:
        return None
    xs = [p[0] for pts in clean.values() for p in pts] + bad + ([failure_x] if failure_x is not None else [])
    ys = [p[1] for pts in clean.values() for p in pts]
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

    def sx(x: float) -> float:
        return round(chart.left + (x - x0) / (x1 - x0) * pw, 1)

    def sy(y: float) -> float:
        v = math.log10(y) if chart.log_y else y
        return round(chart.top + (1 - (v - y0) / (y1 - y0)) * ph, 1)

    high = set(highlight)
    colours = iter(LINE_PALETTE * 10)
    for name, pts in sorted(clean.items(), key=lambda kv: kv[0] in high):
        d = "M" + " L".join(f"{sx(x)},{sy(y)}" for x, y in pts)
        muted = len(clean) > 1 and name not in high
        colour = "#9ca3af" if muted else next(colours) if len(clean) > 1 else "#1d4ed8"
        chart.lines.append({"d": d, "colour": colour, "width": 1 if muted else 1.8, "label": name,
                            "muted": muted, "points": len(pts)})
    chart.xticks = [(sx(t), fmt_num(t)) for t in nice_ticks(x0, x1, 6)]
    if chart.log_y:
        chart.yticks = [(sy(10**e), fmt_num(10**e)) for e in range(math.ceil(y0), math.floor(y1) + 1)]
    else:
        chart.yticks = [(sy(t), fmt_num(t)) for t in nice_ticks(y0, y1, 4)]
    chart.bad_points = sorted({sx(x) for x in bad})[:200]
    if failure_x is not None:
        chart.marker_x = sx(failure_x)
        chart.marker_label = f"failure @ {fmt_num(failure_x)}"
    if chart.shown < chart.total - len(bad):
        chart.note = f"{chart.shown} of {chart.total - len(bad)} points drawn (LTTB downsampling)"
    if bad:
        chart.note = (chart.note + "; " if chart.note else "") + f"{len(bad)} non-finite values (red ticks)"
    return chart


# ---------------------------------------------------------------------------------------------- heatmap
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
    nodes = [str(n) for n in data.get("nodes") or []]
    scores = data.get("scores") or []
    times = [parse_time(t) for t in data.get("times") or []]
    if not nodes or not scores or not times:
        return None
    bucket = _finite(data.get("bucket_seconds")) or 0.0
    rows_all = []
    for node, row in zip(nodes, scores, strict=False):
        vals = [(_finite(v) or 0.0) for v in (row or [])][: len(times)]
        vals += [0.0] * (len(times) - len(vals))
        rows_all.append((node, vals))
    notes = []
    sus = set(suspects)
    if len(rows_all) > max_rows:
        ranked = sorted(rows_all, key=lambda r: (r[0] not in sus, -max(r[1] or [0.0])))
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
        pooled = pool_columns(vals, cols)
        cells = []
        for c, s in enumerate(pooled):
            if s < 0.03:
                continue
            cells.append((round(left + c * cell_w, 2), heat_colour(s),
                          f"{node} · {fmt_time(col_times[c], False)} · score {s:.2f}"))
        rows.append({"node": node, "y": round(top + i * cell_h, 2), "suspect": node in sus, "cells": cells})
    height = int(top + len(rows) * cell_h + 26)
    xticks: list[tuple[float, str]] = []
    marker = None
    if t_first is not None and t_last is not None:
        span = (t_last + bucket) - t_first or 1.0

        def sx(t: float) -> float:
            return round(left + (t - t_first) / span * plot_w, 1)

        xticks = [(sx(t), fmt_time(t, False)) for t in time_ticks(t_first, t_last + bucket, 8)]
        if failure_time is not None and t_first <= failure_time <= t_last + bucket:
            marker = sx(failure_time)
    legend = [(v, heat_colour(v)) for v in (0.1, 0.3, 0.5, 0.7, 0.9)]
    return Heatmap(width, height, left, top, round(cell_w, 3), cell_h, rows, xticks, marker, "; ".join(notes),
                   legend)


# ---------------------------------------------------------------------------------------------- timeline
@dataclass
class Timeline:
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


def timeline(data: dict[str, Any], phases: Sequence[dict[str, Any]], *, max_events: int,
             failure_time: float | None, suspects: Sequence[str]) -> Timeline | None:
    events = []
    for e in data.get("events") or []:
        if not isinstance(e, dict):
            continue
        t = parse_time(e.get("time"))
        if t is not None:
            events.append((t, e))
    spans = [(parse_time(p.get("start")), parse_time(p.get("end")), str(p.get("name") or "")) for p in phases]
    ts = [t for t, _ in events] + [t for s, e, _ in spans for t in (s, e) if t is not None]
    for key in ("start", "end"):
        t = parse_time(data.get(key))
        if t is not None:
            ts.append(t)
    if failure_time is not None:
        ts.append(failure_time)
    if not ts:
        return None
    t0, t1 = min(ts), max(ts)
    if t1 - t0 < 1:
        t0, t1 = t0 - 30, t1 + 30
    notes = []
    if len(events) > max_events:
        rank = {"root": 0, "cascade": 1, "symptom": 2, "confirmation": 3, "anomaly": 4}
        kept = sorted(events, key=lambda te: (rank.get(str(te[1].get("role")), 5), te[0]))[:max_events]
        notes.append(f"{len(events) - max_events} of {len(events)} events not drawn (lowest priority first)")
        events = sorted(kept, key=lambda te: te[0])
    lane_names = [str(n) for n in (data.get("lanes") or [])][:8]
    for s in suspects:
        if s not in lane_names and len(lane_names) < 8:
            lane_names.append(s)
    left, lane_h, top = 130, 26, 30
    width = 1180
    plot_w = width - left - 12

    def sx(t: float) -> float:
        return round(left + (t - t0) / (t1 - t0) * plot_w, 1)

    lanes = [{"label": "job-wide", "y": top, "suspect": False}]
    lane_names_set = set(lane_names)
    lanes += [{"label": n, "y": top + (i + 1) * lane_h, "suspect": n in suspects}
              for i, n in enumerate(lane_names)]
    other_y = top + (len(lane_names) + 1) * lane_h
    has_other = any(e.get("node") and str(e.get("node")) not in lane_names_set for _, e in events)
    if has_other:
        lanes.append({"label": "other nodes", "y": other_y, "suspect": False})
    lane_y = {n: top + (i + 1) * lane_h for i, n in enumerate(lane_names)}
    marks = []
    for t, e in events:
        node = e.get("node")
        y = lane_y.get(str(node), other_y) if node else top
        role = str(e.get("role") or "anomaly")
        label = str(e.get("label") or e.get("rule") or role)[:300]
        marks.append({"x": sx(t), "y": y + lane_h / 2, "role": role, "colour": ROLE_COLOURS.get(role, "#6b7280"),
                      "title": f"{fmt_time(t)} · {node or 'job-wide'} · {role} · {label}"})
    bands = []
    for s, e, name in spans:
        if s is None and e is None:
            continue
        s = t0 if s is None else s
        e = t1 if e is None else e
        bands.append({"x": sx(s), "w": max(sx(e) - sx(s), 1.0), "name": name,
                      "colour": PHASE_COLOURS.get(name, "#f3f4f6")})
    height = int(top + len(lanes) * lane_h + 28)
    marker = sx(failure_time) if failure_time is not None else None
    xticks = [(sx(t), fmt_time(t, False)) for t in time_ticks(t0, t1, 8)]
    return Timeline(width, height, left, lane_h, bands, lanes, marks, xticks, marker, "; ".join(notes))
