"""Training-health signals from trainer metric lines.

Signals: NaN/Inf loss or grad norm and nan-iteration counters (numerical, job-wide); a loss spike that does not
recover, and whether the grad norm exploded before it; fp16 loss-scale collapse; validation loss rising while
training loss falls; per-node iteration-time slowdown (a fail-slow straggler) and a job-wide slowdown; no
progress (a hang: the last iteration per node, who stopped first, while the logs show the job alive).

Thresholds are robust (medians and MADs of the job's own earlier points), because loss and timing scales differ
by orders of magnitude between models. Findings of a numerical kind are global (they blame no node).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from statistics import median
from typing import Any

from l4lite.detect.base import Detector, Finding
from l4lite.detect.health_scale import ScaleLimits, loss_scale_findings
from l4lite.detect.series import align_copies, counted_median, step_of
from l4lite.records import Record
from l4lite.scan.clocks import job_clock, job_span
from l4lite.scan.scanner import JobScan, MetricPoint

TELEMETRY_RECORDS = 2  # the first readings that show a slowdown; the others say the same


@dataclass
class _Series:
    node: str | None
    points: list[MetricPoint]


def point_record(p: MetricPoint) -> Record:
    """A record for a metric point, so that it can be shown as evidence."""
    return Record(file=p.file, line=p.line, end_line=p.line, node=p.node, rank=p.rank, gpu=None, source="trainer",
                  time=p.time, level="info", message=p.text, text=p.text)


def copies(points: list[MetricPoint], p: MetricPoint, attr: str = "loss", limit: int = 16) -> list[Record]:
    """The same iteration's line as printed by every rank (lowest ranks first): one fault, many copies.

    Only lines that print ``attr`` count (DeepSpeed prints a step/skipped line and a loss line per step).
    """
    if p.iteration is not None:
        same = [q for q in points if q.iteration == p.iteration and q.kind == p.kind]
    else:  # no iteration numbers: the k-th line of every rank
        same = [q for q in points if q.iteration is None and q.seq == p.seq and q.kind == p.kind]
    same = [q for q in same if getattr(q, attr) is not None or (attr == "loss" and q.nan_count)]
    same.sort(key=lambda q: (q.rank if q.rank is not None else 1 << 30, q.time or 0.0, q.line))
    out = [point_record(q) for q in same[:limit]]
    return out or [point_record(p)]


def _before(p: MetricPoint, q: MetricPoint) -> bool:
    if p.iteration is not None and q.iteration is not None:
        return p.iteration < q.iteration
    if p.time is not None and q.time is not None:
        return p.time < q.time
    return (p.file, p.line) < (q.file, q.line)


def _finite(v: float | None) -> bool:
    return v is not None and math.isfinite(v)


def _mad(values: list[float], center: float) -> float:
    return median(abs(v - center) for v in values) if values else 0.0


def _order(p: MetricPoint) -> tuple[float, float]:
    return (p.iteration if p.iteration is not None else -1.0, float(p.seq))


def non_finite_of(p: MetricPoint) -> list[str]:
    """What of a training point is not a number: its loss, its gradient norm, or the trainer's NaN counter."""
    bad = [name for name in ("loss", "grad_norm") if getattr(p, name) is not None
           and not math.isfinite(getattr(p, name))]
    if p.nan_count:
        bad.append("nan iterations")
    return bad


def maybe_non_finite(p: MetricPoint) -> bool:
    """A cheap test that ``non_finite_of(p)`` may be non-empty: a finite sum is a sum of finite numbers (a sum
    that overflows to Inf only sends the point to the exact test)."""
    return not math.isfinite((p.loss or 0.0) + (p.grad_norm or 0.0)) or bool(p.nan_count)


def _last_finite(train: list[MetricPoint]) -> dict[tuple[str | None, int | None], MetricPoint]:
    """Per (node, rank), its last training point whose loss and gradient norm are both numbers."""
    out: dict[tuple[str | None, int | None], MetricPoint] = {}
    for q in train:
        if _finite(q.grad_norm) and _finite(q.loss):
            last = out.get((q.node, q.rank))
            if last is None or _order(q) > _order(last):
                out[(q.node, q.rank)] = q
    return out


def _skipped_step(last: dict[tuple[str | None, int | None], MetricPoint], p: MetricPoint, bad: list[str]) -> bool:
    """A NaN/Inf gradient norm with a finite loss, and finite numbers later on the same rank: a mixed-precision
    loss scaler skipped an overflowing step and training went on; not a divergence."""
    after = last.get((p.node, p.rank)) if bad == ["grad_norm"] and _finite(p.loss) else None
    return after is not None and _before(p, after)


class HealthDetector(Detector):
    """Training-health findings from ``scan.metrics`` and ``scan.progress``."""

    name = "health"

    def __init__(self, *, spike_ratio: float = 1.5, spike_mad: float = 6.0, spike_window: int = 20,
                 grad_ratio: float = 10.0, slow_ratio: float = 0.04, slow_mad: float = 6.0,
                 straggler_ratio: float = 0.15, hang_factor: float = 10.0, hang_min_seconds: float = 300.0,
                 min_points: int = 3, grad_severe: float = 100.0, rise_window: int = 20,
                 scale_warmup: int = 100, scale_low: float = 128.0, scale_halvings: int = 10,
                 scale_low_halvings: int = 4, scale_floor: float = 8.0) -> None:
        self.spike_ratio = spike_ratio
        self.spike_mad = spike_mad
        self.spike_window = spike_window
        self.grad_ratio = grad_ratio
        self.slow_ratio = slow_ratio
        self.slow_mad = slow_mad
        self.straggler_ratio = straggler_ratio
        self.hang_factor = hang_factor
        self.hang_min_seconds = hang_min_seconds
        self.min_points = min_points
        self.grad_severe = grad_severe
        self.rise_window = rise_window
        self.scale_warmup = scale_warmup
        self.scale_low = scale_low
        self.scale_halvings = scale_halvings
        self.scale_low_halvings = scale_low_halvings
        self.scale_floor = scale_floor

    # ------------------------------------------------------------------ entry point
    def detect(self, scan: JobScan) -> list[Finding]:
        train = align_copies([p for p in scan.metrics if p.kind == "train"])
        findings: list[Finding] = []
        ref = self.reference_series(train, "loss")
        grad_ref = self.reference_series(train, "grad_norm")
        findings += self._non_finite(train)
        spike = self._loss_spike(ref, train)
        grad = self._grad_explosion(grad_ref, ref, train)
        if spike is not None:
            grew = self._grad_grew_before(grad_ref, spike.data["iteration_key"])
            if grew is not None:
                spike.data["grad_norm_grew_first"] = grew[0]
                if grew[0]:
                    spike.explain += (f"; the gradient norm had grown {grew[1]:.1f}x over the iterations before "
                                      "it")
            findings.append(spike)
        if grad is not None:
            findings.append(grad)
        findings += self._loss_scale(scan.metrics)
        findings += self._val_rising(scan.metrics, ref)
        findings += self._slowdown(train)
        findings += self._device_slowdown(scan)
        findings += self._hang(scan, train)
        return findings

    @staticmethod
    def reference_series(points: list[MetricPoint], attr: str) -> _Series:
        """The series of one metric from the node that printed it most (trainers print it on one rank or all),
        in one line format: lines that state their step and lines that do not are two trainers' (or a trainer's
        and a callback's) counts, and their values are no baseline for each other."""
        by_node: dict[str | None, list[MetricPoint]] = {}
        for p in points:
            if getattr(p, attr) is not None:
                by_node.setdefault(p.node, []).append(p)
        if not by_node:
            return _Series(None, [])
        node = max(by_node, key=lambda n: (len(by_node[n]), str(n)))
        stepped = [p for p in by_node[node] if p.iteration is not None]
        unstepped = [p for p in by_node[node] if p.iteration is None]
        series = sorted(stepped if len(stepped) >= len(unstepped) else unstepped, key=_order)
        return _Series(node, series)

    # ------------------------------------------------------------------ numerical
    def _non_finite(self, train: list[MetricPoint]) -> list[Finding]:
        # the last finite point of each rank is needed only to forgive a skipped step: a healthy run has none
        suspect = [(p, bad) for p in train if maybe_non_finite(p) and (bad := non_finite_of(p))]
        last = _last_finite(train) if suspect else {}
        flagged = [(p, bad) for p, bad in suspect if not _skipped_step(last, p, bad)]
        if not flagged:
            return []
        count = len(flagged)
        # the earliest by time, then by iteration (of equal keys, the first in ``train``)
        first, bad = min(flagged, key=lambda pb: (pb[0].time if pb[0].time is not None else math.inf,
                                                  _order(pb[0])))
        what = " and ".join(bad)
        step = step_of(train, first)
        at = f" at iteration {step}" if step is not None else ""
        label = {"loss": "the loss became NaN/Inf", "grad_norm": "the gradient norm became NaN/Inf",
                 "nan iterations": "the trainer counted NaN iterations"}
        explain = (label.get(what, f"{what} became NaN/Inf") + at
                   + ": the training diverged numerically (check the learning rate, the data and the loss scale)")
        bad_first = [p for p, _ in flagged if p.iteration == first.iteration]
        return [Finding(self.name, "numerical", "root", 0.9, explain, node=first.node, rank=first.rank,
                        time=first.time, records=copies(bad_first or [first], first), count=count,
                        data={"signal": "nan", "iteration": step, "scope": "global"})]

    def _loss_spike(self, ref: _Series, train: list[MetricPoint]) -> Finding | None:
        pts = [p for p in ref.points if _finite(p.loss)]
        start = 0
        steps: Counter[int] = Counter()  # logging steps between the points since ``start``
        for i in range(1, len(pts)):
            if self._discontinuous(pts, i, steps):
                start = i  # another run or a resume far away: the loss before it is no baseline
                steps.clear()
            else:
                a, b = pts[i - 1].iteration, pts[i].iteration
                if a is not None and b is not None and b > a:
                    steps[b - a] += 1
            if i - start < self.min_points:
                continue
            prev = [p.loss for p in pts[max(start, i - self.spike_window):i]]  # type: ignore[misc]
            base = median(prev)
            spread = max(_mad(prev, base), 0.01 * abs(base), 1e-6)
            v = pts[i].loss
            assert v is not None
            if v > base * self.spike_ratio and v - base > self.spike_mad * spread:
                p = pts[i]
                # After the spike: did the loss come back near its level, with finite gradients? A loss printed
                # as 0.0 next to a NaN grad norm (Hugging Face after a NaN) is no recovery.
                start = ref.points.index(p)
                limit = base * (1 + (self.spike_ratio - 1) / 2)
                after = ref.points[start:]
                recovered = sum(1 for q in after if _finite(q.loss) and 0.0 < q.loss <= limit  # type: ignore[operator]
                                and (q.grad_norm is None or math.isfinite(q.grad_norm)))
                sustained = recovered <= 0.2 * len(after)
                step = step_of(train, p)
                at = f"iteration {step}" if step is not None else "one step"
                explain = (f"the loss jumped from {base:.4g} to {v:.4g} at {at}"
                           + (" and did not recover: the training diverged" if sustained else " and recovered"))
                return Finding(self.name, "numerical", "root" if sustained else "anomaly",
                               0.8 if sustained else 0.3, explain, node=p.node, rank=p.rank, time=p.time,
                               records=copies(train, p),
                               data={"signal": "loss_spike", "iteration": step, "baseline": base,
                                     "value": v, "sustained": sustained, "iteration_key": _order(p),
                                     "scope": "global"})
        return None

    def _discontinuous(self, pts: list[MetricPoint], i: int, steps: Counter[int]) -> bool:
        """Whether point ``i`` jumps far ahead of the points before it (more than the spike window and ten times
        their usual logging step, the median of ``steps``) to a loss level that then holds: a resumed or
        different run, whose loss need not continue theirs. The steps are counted as the points go by, for a
        long run has thousands of points."""
        a, b = pts[i - 1].iteration, pts[i].iteration
        if a is None or b is None or b - a <= self.spike_window:
            return False
        usual = counted_median(steps) if steps else 1
        if b - a <= max(self.spike_window, 10 * usual):
            return False
        # a new level that holds over the next points; one wild value at the gap is still a spike
        level = [q.loss for q in pts[i:i + self.min_points] if q.loss is not None]
        return len(level) == self.min_points and max(level) <= min(level) * self.spike_ratio

    def _grad_grew_before(self, ref: _Series, key: tuple[float, float], recent: int = 10,
                          factor: float = 2.0) -> tuple[bool, float] | None:
        """Did the grad norm grow before the loss spike? (peak of the last iterations before it / earlier level)."""
        pts = [p for p in ref.points if _finite(p.grad_norm) and p.grad_norm > 0 and _order(p) < key]  # type: ignore[operator]
        if len(pts) < recent + self.min_points:
            return None
        base = median(p.grad_norm for p in pts[: -recent][-3 * recent:])  # type: ignore[misc]
        peak = max(p.grad_norm for p in pts[-recent:])  # type: ignore[type-var]
        if base <= 0:
            return None
        return (peak > factor * base, peak / base)  # type: ignore[operator]

    def _grad_explosion(self, ref: _Series, loss_ref: _Series, train: list[MetricPoint]) -> Finding | None:
        pts = [p for p in ref.points if _finite(p.grad_norm) and p.grad_norm > 0]  # type: ignore[operator]
        for i in range(self.min_points, len(pts)):
            prev = [p.grad_norm for p in pts[max(0, i - self.spike_window):i]]  # type: ignore[misc]
            base = median(prev)
            v = pts[i].grad_norm
            assert v is not None
            if base > 0 and v > base * self.grad_ratio:
                p = pts[i]
                at = f"iteration {p.iteration}" if p.iteration is not None else "one step"
                rise = self._loss_rise(loss_ref, p)
                # Two orders of magnitude, or one with the loss doubling around it: the update blew the weights.
                # The two orders may take a few steps: the peak over the next ``spike_window`` iterations counts.
                peak = self._grad_peak(pts, i)
                severe = peak > base * self.grad_severe or (rise is not None and rise >= 2.0)
                explain = f"the gradient norm exploded from {base:.4g} to {v:.4g} ({v / base:.0f}x) at {at}"
                if peak > v * 1.5:
                    explain += f", then to {peak:.4g} ({peak / base:.0f}x) within {self.spike_window} iterations"
                if rise is not None and rise >= 1.5:
                    explain += f" and the loss rose {rise:.1f}x within {self.rise_window} iterations"
                if severe:
                    explain += ": the training diverged (check the learning rate, the data batch and the clipping)"
                return Finding(self.name, "numerical", "root" if severe else "symptom", 0.7 if severe else 0.5,
                               explain, node=p.node, rank=p.rank, time=p.time,
                               records=copies(train, p, "grad_norm") if severe else [point_record(p)],
                               data={"signal": "grad_explosion", "iteration": p.iteration, "baseline": base,
                                     "value": v, "iteration_key": _order(p), "scope": "global",
                                     "loss_rise": rise})
        return None

    def _grad_peak(self, pts: list[MetricPoint], i: int) -> float:
        """The largest gradient norm from point ``i`` over the next ``spike_window`` iterations (points when the
        lines state no iteration)."""
        p = pts[i]
        ahead = [q.grad_norm for q in pts[i:i + self.spike_window + 1]
                 if p.iteration is None or q.iteration is None or q.iteration - p.iteration <= self.spike_window]
        return max(ahead)  # type: ignore[type-var,return-value]

    def _loss_rise(self, ref: _Series, p: MetricPoint) -> float | None:
        """How much the loss rose from just before ``p`` to its peak over the next ``rise_window`` iterations."""
        key = _order(p)
        pts = [q for q in ref.points if _finite(q.loss) and q.loss > 0]  # type: ignore[operator]
        before = [q.loss for q in pts if _order(q) < key][-self.min_points:]
        after = [q.loss for q in pts if _order(q) >= key
                 and (p.iteration is None or q.iteration is None or q.iteration - p.iteration <= self.rise_window)]
        if not before or not after:
            return None
        return max(after[:self.rise_window]) / median(before)  # type: ignore[type-var,operator]

    def _loss_scale(self, metrics: list[MetricPoint]) -> list[Finding]:
        """The fp16 loss-scale signals (``l4lite.detect.health_scale``)."""
        limits = ScaleLimits(self.scale_warmup, self.scale_low, self.scale_halvings, self.scale_low_halvings,
                             self.scale_floor)
        return loss_scale_findings(metrics, limits, self.name)

    def _val_rising(self, metrics: list[MetricPoint], ref: _Series) -> list[Finding]:
        """Validation loss rising at every evaluation since its best while the training loss keeps falling."""
        vals: list[MetricPoint] = []
        for p in sorted((p for p in metrics if _finite(p.val_loss)), key=lambda p: (_order(p), p.time or 0.0)):
            if not vals or (vals[-1].val_loss != p.val_loss and vals[-1].iteration != p.iteration) or \
                    (p.iteration is None and vals[-1].val_loss != p.val_loss):
                vals.append(p)
        if len(vals) < 4:
            return []
        values = [p.val_loss for p in vals]
        best = min(range(len(vals)), key=lambda i: values[i])  # type: ignore[arg-type,return-value]
        after = vals[best + 1:]
        if len(after) < 3:
            return []
        rising = [values[best + 1 + k] > values[best + k] for k in range(len(after))]  # type: ignore[operator]
        if not all(rising[:3]) or sum(rising) < 0.8 * len(rising) or \
                values[-1] <= values[best] * 1.02:  # type: ignore[operator]
            return []
        first = after[0]
        losses_before = [p.loss for p in ref.points if _finite(p.loss) and _before(p, first)]
        losses_after = [p.loss for p in ref.points if _finite(p.loss) and not _before(p, first)]
        if len(losses_before) >= 3 and len(losses_after) >= 3 and \
                median(losses_after) >= median(losses_before):  # type: ignore[type-var]
            return []  # training loss not falling: a divergence, not overfitting
        at = f"iteration {vals[best].iteration}" if vals[best].iteration is not None else "its best"
        return [Finding(self.name, "numerical", "root", 0.45,
                        f"validation loss has risen at every evaluation since {at} (from {values[best]:.4g} to "
                        f"{values[-1]:.4g}) while the training loss kept falling: the model is overfitting; stop "
                        "or roll back to the best checkpoint", node=first.node, rank=first.rank, time=first.time,
                        records=[point_record(p) for p in after[:3]],
                        data={"signal": "val_rising", "iteration": first.iteration,
                              "since_iteration": vals[best].iteration, "scope": "global",
                              "distinct_records": True})]

    # ------------------------------------------------------------------ speed
    def _slowdown(self, train: list[MetricPoint]) -> list[Finding]:
        by_node: dict[str | None, list[MetricPoint]] = {}
        for p in train:
            if _finite(p.iter_time) and p.iter_time > 0:  # type: ignore[operator]
                by_node.setdefault(p.node, []).append(p)
        for pts in by_node.values():
            pts.sort(key=_order)
        out: list[Finding] = []
        straggler = self._straggler(by_node)
        if straggler is not None:
            out.append(straggler)
        slow = [f for f in (self._temporal_slowdown(n, pts) for n, pts in by_node.items()) if f is not None]
        if slow and straggler is None:
            if len(slow) == 1 or len(slow) < len(by_node):
                out.extend(slow)
            else:  # every node slowed down alike: a job-wide slowdown, not a node
                worst = max(slow, key=lambda f: f.data["ratio"])
                worst.node = None
                worst.data["nodes"] = sorted(str(f.node) for f in slow)
                out.append(worst)
        return out

    def _straggler(self, by_node: dict[str | None, list[MetricPoint]]) -> Finding | None:
        recent = {n: median(p.iter_time for p in pts[len(pts) // 2:])  # type: ignore[misc]
                  for n, pts in by_node.items() if len(pts) >= self.min_points}
        if len(recent) < 3:
            return None
        worst = max(recent, key=lambda n: recent[n])
        others = [v for n, v in recent.items() if n != worst]
        base = median(others)
        spread = max(_mad(others, base), 0.005 * base)
        v = recent[worst]
        if v > base * (1 + self.straggler_ratio) and v - base > self.slow_mad * spread:
            pts = by_node[worst]
            first = next((p for p in pts if p.iter_time > base * (1 + self.straggler_ratio)), pts[-1])  # type: ignore[operator]
            return Finding(self.name, "gpu_hardware", "root", 0.6,
                           f"node {worst} is a straggler: {v:.3g}s per iteration against {base:.3g}s on the other "
                           "nodes (a slow or throttled GPU is the usual cause; check clocks, temperature, power and "
                           "the node's links)", node=worst, rank=first.rank, time=first.time,
                           records=[point_record(first)],
                           data={"signal": "straggler", "iteration": first.iteration, "ratio": v / base,
                                 "scope": "node", "phase_hint": "train"})
        return None

    def _temporal_slowdown(self, node: str | None, pts: list[MetricPoint]) -> Finding | None:
        n = len(pts)
        k = max(2, n // 5)
        if n - k < self.min_points:
            return None
        head = [p.iter_time for p in pts[:-k]]  # type: ignore[misc]
        tail = [p.iter_time for p in pts[-k:]]  # type: ignore[misc]
        base = median(head)
        spread = _mad(head, base)
        low = min(tail)
        if low > base * (1 + self.slow_ratio) and low - base > self.slow_mad * spread:
            first = pts[-k]
            ratio = median(tail) / base
            return Finding(self.name, "gpu_hardware", "root", 0.55,
                           f"iterations slowed down from {base:.4g}s to {median(tail):.4g}s "
                           f"(+{(ratio - 1) * 100:.0f}%) from iteration {first.iteration} on and stayed slow: a "
                           "fail-slow fault (a throttled or degraded GPU is the usual cause; check clocks, "
                           "temperature and links)", node=node, rank=first.rank, time=first.time,
                           records=[point_record(first)],
                           data={"signal": "slowdown", "iteration": first.iteration, "ratio": ratio, "scope": "node",
                                 "phase_hint": "train"})
        return None

    def _device_slowdown(self, scan: JobScan) -> list[Finding]:
        """GPUs whose telemetry shows a hardware (thermal, power brake) clock slowdown in two or more readings."""
        out: list[Finding] = []
        by_node: dict[str, list[Any]] = {}
        for (node, _gpu), events in scan.device_events.items():
            if sum(e.count for e in events) >= 2:
                by_node.setdefault(node, []).extend(events)
        for node, events in by_node.items():
            events.sort(key=lambda e: (e.record.time if e.record.time is not None else math.inf, e.record.line))
            first = events[0]
            firsts = events  # the first readings that show it, whichever GPU they come from
            gpus = ", ".join(sorted({e.detail.get("gpu", "?") for e in events}, key=lambda g: (len(g), g)))
            out.append(Finding(self.name, "gpu_hardware", "root", 0.6,
                               f"GPU {gpus} on {node} report a hardware clock slowdown ({first.detail['reasons']}) "
                               f"at {first.detail.get('temperature') or '?'} C: the GPUs are throttled (cooling, power "
                               "or a failing GPU) and slow the whole job", node=node, time=first.record.time,
                               records=[e.record for e in firsts[:TELEMETRY_RECORDS]],
                               count=sum(e.count for e in firsts),
                               data={"signal": "gpu_slowdown", "scope": "node", "source": "telemetry",
                                     "phase_hint": "train" if scan.progress else None}))
        return out

    # ------------------------------------------------------------------ progress
    def progress_interval(self, train: list[MetricPoint]) -> float | None:
        """Typical seconds between two progress lines of the reference node."""
        ref = self.reference_series([p for p in train if p.iteration is not None], "iteration")
        ranks = [p.rank for p in ref.points]
        if ranks:  # one rank's lines: several ranks print the same iteration at the same moment
            top = max(set(ranks), key=lambda r: (ranks.count(r), -(r if r is not None else 0)))
            ref = _Series(ref.node, [p for p in ref.points if p.rank == top])
        times = [p.time for p in ref.points if p.time is not None]
        gaps = [b - a for a, b in zip(times, times[1:], strict=False) if b > a]
        if len(gaps) >= 2:
            return median(gaps)
        its = [p.iter_time for p in ref.points if _finite(p.iter_time)]
        steps = [b.iteration - a.iteration for a, b in zip(ref.points, ref.points[1:], strict=False)  # type: ignore[operator]
                 if b.iteration is not None and a.iteration is not None and b.iteration > a.iteration]
        if its:
            return median(its) * (median(steps) if steps else 1)  # type: ignore[operator]
        return None

    def _hang(self, scan: JobScan, train: list[MetricPoint]) -> list[Finding]:
        progress = {n: p for n, p in scan.progress.items() if p.points}
        end = scan.job_end()
        # a node whose clock is measured hours off its peers' (another time zone) would read as silent for
        # hours, or its peers as silent: every time on the reference's clock (``scan.clocks``)
        clock = job_clock(scan, None)
        if clock.offsets:
            end = job_span(scan, clock)[1]
        if not progress or end is None:
            return []
        stops = {n: clock.shift(n, p.stop_time) for n, p in progress.items() if p.stop_time is not None}
        if not stops:
            return []
        last_stop = max(stops.values())  # type: ignore[type-var]
        if any(m.kind == "shutdown" and m.detail.get("success") and (m.time is None or m.time >= last_stop - 60.0)
               for m in scan.markers):
            return []  # the run said it finished: progress stopped because training was done
        gap = end - last_stop
        interval = self.progress_interval(train) or 0.0
        threshold = max(self.hang_min_seconds, self.hang_factor * interval)
        if gap <= threshold:
            return []
        known = {n: p.last_iteration for n, p in progress.items() if p.last_iteration is not None}
        top_iter = max(known.values()) if known else None
        behind = sorted((n for n, it in known.items() if top_iter is not None and it < top_iter),
                        key=lambda n: (known[n], stops.get(n) or math.inf))
        last_seen = {n: clock.shift(n, t) for n, (t, _) in scan.node_last.items()}
        silent = sorted((n for n, t in last_seen.items()
                         if t is not None and t <= last_stop + max(interval, 1.0) and end - t > threshold),
                        key=lambda n: last_seen[n] or 0.0)
        first_node = behind[0] if behind else (silent[0] if len(silent) < len(scan.node_last) and silent else None)
        alive = [n for n, t in last_seen.items() if t is not None and t > last_stop + threshold / 2]
        where = first_node or max(progress, key=lambda n: (progress[n].last_iteration or 0, stops.get(n) or 0.0))
        if where not in progress:
            where = max(progress, key=lambda n: (progress[n].last_iteration or 0, stops.get(n) or 0.0))
        prog = progress[where]
        rec = Record(file=prog.last_file, line=prog.last_line, end_line=prog.last_line, node=where, rank=None,
                     gpu=None, source="trainer", time=prog.last_time, level="info",
                     message=f"last progress: iteration {prog.last_iteration}",
                     text=f"last progress: iteration {prog.last_iteration}")
        records = [rec]
        last_by_rank: dict[int | None, MetricPoint] = {}
        for p in train:
            if p.node == where and p.iteration is not None:
                q = last_by_rank.get(p.rank)
                if q is None or (p.iteration, p.seq) > (q.iteration, q.seq):  # type: ignore[operator]
                    last_by_rank[p.rank] = p
        if last_by_rank:
            ordered = sorted(last_by_rank.values(), key=lambda p: p.rank if p.rank is not None else 1 << 30)
            records = [point_record(p) for p in ordered[:4]]
        minutes = gap / 60.0
        if first_node is not None and behind:
            who = (f"node {first_node} stopped first at iteration {progress[first_node].last_iteration} while others "
                   f"reached {top_iter}")
        elif first_node is not None:
            who = f"node {first_node} went silent first"
        elif top_iter is not None:
            who = f"every node stopped at iteration {top_iter}"
        else:
            who = "every node stopped at the same point"
        explain = (f"no training progress for {minutes:.0f} min (typically every {interval:.3g}s) while the job "
                   f"was still logging: a hang; {who}")
        # The run went on to its teardown (a shutdown marker after the last step: the loop's end, wandb's
        # summary, destroy_process_group) and never exited: a hang at exit, not in training.
        at_exit = any(m.kind == "shutdown" and m.time is not None and m.time >= last_stop for m in scan.markers)
        if at_exit:
            explain += "; training had ended and the processes never exited (a hang in the teardown)"
        data: dict[str, Any] = {
            "signal": "hang", "iteration": top_iter, "last_progress_time": last_stop, "gap_seconds": gap,
            "interval_seconds": interval, "behind": behind, "silent": silent, "alive": sorted(alive),
            "last_iterations": {n: p.last_iteration for n, p in progress.items()},
            "scope": "node" if first_node else "global",
        }
        if at_exit:
            data["phase_hint"] = "shutdown"
        # A hang with no error line at all: nothing in the logs points at hardware or the network, so the
        # category is software (a stuck process, a deadlock in the job's code or a library); the node that
        # stopped first, when there is one, is where to take stack dumps.
        category = "software"
        latest = max(stops, key=lambda n: stops[n] or 0.0)  # the finding's time as its node logged it
        return [Finding(self.name, category, "root", 0.5, explain, node=first_node,
                        time=last_stop if not clock.offsets else progress[latest].stop_time, records=records,
                        data=data)]
