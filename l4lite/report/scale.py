"""Numbers for the report's charts: downsampling, axis ticks, and times and values formatted for display.

Split from ``report_charts`` (the SVG geometry) because the facts and view modules need the same parsing and
formatting without the chart layouts; none of it depends on how a chart is drawn.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

import numpy as np

Point = tuple[float, float]


# ---------------------------------------------------------------------------------------------- downsampling
def xy_arrays(points: Any) -> tuple[np.ndarray, np.ndarray]:
    """``[[x, y], ...]`` as float arrays: points without a finite x are dropped, a missing y becomes NaN."""
    try:
        a = np.asarray(points, dtype=float)
        ok = a.ndim == 2 and a.shape[1] >= 2
    except (TypeError, ValueError):
        ok = False
    if ok:
        x, y = a[:, 0], a[:, 1]
    else:
        pairs = [(finite(p[0]), finite(p[1])) for p in points if isinstance(p, list | tuple) and len(p) >= 2]
        x = np.array([math.nan if px is None else px for px, _ in pairs], dtype=float)
        y = np.array([math.nan if py is None else py for _, py in pairs], dtype=float)
    keep = np.isfinite(x)
    return x[keep], y[keep]


def lttb_indices(x: np.ndarray, y: np.ndarray, threshold: int) -> np.ndarray:
    """Largest-triangle-three-buckets: indices of at most ``threshold`` points that keep the shape and spikes."""
    n = len(x)
    if n <= threshold:
        return np.arange(n)
    if threshold < 3:
        return np.array([0, n - 1][:max(threshold, 1)])
    every = (n - 2) / (threshold - 2)
    edges = np.minimum((np.floor(np.arange(threshold - 1) * every) + 1).astype(int), n - 1)
    edges[-1] = n - 1
    cx = np.concatenate(([0.0], np.cumsum(x)))
    cy = np.concatenate(([0.0], np.cumsum(y)))
    out = np.empty(threshold, dtype=int)
    out[0], out[-1] = 0, n - 1
    a = 0
    for i in range(threshold - 2):
        lo, hi = edges[i], max(edges[i + 1], edges[i] + 1)
        if i + 2 < len(edges):
            nlo, nhi = edges[i + 1], max(edges[i + 2], edges[i + 1] + 1)
            avg_x = (cx[nhi] - cx[nlo]) / (nhi - nlo)
            avg_y = (cy[nhi] - cy[nlo]) / (nhi - nlo)
        else:
            avg_x, avg_y = x[-1], y[-1]
        ax, ay = x[a], y[a]
        area = np.abs((ax - avg_x) * (y[lo:hi] - ay) - (ax - x[lo:hi]) * (avg_y - ay))
        a = lo + int(np.argmax(area))
        out[i + 1] = a
    return out


def lttb(points: Sequence[Point], threshold: int) -> list[Point]:
    """``lttb_indices`` on a list of (x, y) points sorted by x."""
    x, y = xy_arrays(points)
    return [(float(x[i]), float(y[i])) for i in lttb_indices(x, y, threshold)]


def pool_columns(row: Sequence[float] | np.ndarray, width: int) -> list[float]:
    """Max-pool a row of scores into ``width`` columns (a short burst stays visible)."""
    arr = np.asarray(row, dtype=float)
    n = len(arr)
    if n <= width:
        return arr.tolist()
    starts = (np.arange(width) * n) // width
    return np.maximum.reduceat(arr, starts).tolist()


# ---------------------------------------------------------------------------------------------- helpers
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def clean(text: Any) -> str:
    """Log text for display: control characters (NUL, escape sequences) become U+FFFD, surrogates are dropped."""
    s = "" if text is None else str(text)
    return _CONTROL.sub("\ufffd", s).encode("utf-8", "replace").decode("utf-8")


def parse_time(value: Any) -> float | None:
    """ISO 8601 (naive means UTC) or epoch seconds to epoch seconds; None when unreadable."""
    if value is None or value == "":
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value) if math.isfinite(value) else None
    return _parse_iso(str(value))


@lru_cache(maxsize=65536)
def _parse_iso(value: str) -> float | None:
    try:
        dt = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
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


def fmt_tick(epoch: float, span: float) -> str:
    """An axis label: the time of day, with the date when the axis spans most of a day or more."""
    dt = datetime.fromtimestamp(epoch, tz=UTC)
    return dt.strftime("%m-%d %H:%M" if span > 0.8 * 86400 else "%H:%M:%S")


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


def finite(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None
