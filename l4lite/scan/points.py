"""Per-shape gates and pending metric points: the small pieces shared by the scan's record path and run path.

A gate says which of the scan's per-message tests may apply to a message; the answer depends only on the
message's shape, so it is remembered per shape. A pending point is a metric line as the scan keeps it until
``finish``; most are thinned away before a ``MetricPoint`` is ever built.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

from l4lite.scan.jobscan import MetricPoint
from l4lite.scan.metric_plans import DeferredPlan, may_be_metric_line
from l4lite.scan.phases import may_be_marker

EXEMPLAR_BUDGET = 200_000  # exemplar records kept in all before only error and warning lines get one
METRIC_CACHE = 4096  # distinct metric messages whose parse is remembered
PHASE_OF_KIND = {"train": "train", "val": "eval"}  # metric line kind -> the phase it implies
GATE_CACHE = 8192  # message shapes whose gate bits are remembered
G_CLOCKS, G_FACT, G_MARKER, G_METRIC = 1, 2, 4, 8
G_RARE = G_CLOCKS | G_FACT | G_MARKER
# What the scan's memo of ``RulePack.line_rules`` keeps for a line too long to decide by its shape, or for a rule
# pack without ``line_rules``: its lines go to the pack's ``match``.
LONG_LINE: Any = object()


def message_gates(msg: str) -> int:
    """Which of the scan's per-message tests (metric line, telemetry header, job facts, phase markers) may apply.

    Every test is a search for digit-free words, so its answer is the same for all messages of one shape (the
    message with each digit a 0): the answer is remembered per shape.
    """
    gates = G_METRIC if may_be_metric_line(msg) else 0
    if "clocks_" in msg:
        gates |= G_CLOCKS
    if "steps =" in msg or "Epochs =" in msg or "world size" in msg or " ....." in msg:
        gates |= G_FACT
    if (" NCCL INFO " not in msg or "NCCL version" in msg or "Init COMPLETE" in msg or "Bootstrap" in msg) \
            and may_be_marker(msg):
        gates |= G_MARKER
    return gates


def may_be_active(text: str) -> bool:
    """Whether a line of ``nvidia-smi`` CSV may hold a field that is ``Active`` (a clock slowdown): more
    ``active`` than ``not active`` in it, in any case. A field that is ``Active`` adds an ``active`` that no
    ``not`` precedes (a comma does), so no such line is missed; lines of ``Not Active`` only, nearly all of a
    GPU's telemetry, then take the run's path (0.9 s of CPU against 2.6 s for 40 MB of telemetry)."""
    low = text.lower()
    return low.count("active") > low.count("not active")



# A metric line as the scan keeps it until ``finish`` (a named tuple, not a record: a line of a run needs no
# record). Most points of a long job are thinned away before then, so
# the ``MetricPoint`` is only built for the ones that stay. For a line of a run, ``values`` may be a token
# (plan, message start, message end) instead: the values are worked out in ``point`` for the points that stay.
class PendingPoint(NamedTuple):
    values: Any  # the parsed values, or a (plan, message start, message end) token of a run's line
    iteration: int | None
    seq: int
    node: str | None
    rank: int | None
    time: float | None
    file: str
    line: int
    text: str


# A metric shape of a run whose values can wait: its token, the iteration's conversion and span in the line,
# what may make a line of the shape need its values now (``now``: NaN counter conversion, start, end, whether
# the shape has an epoch; None if nothing can), its kind and the phase it implies.
class Deferred(NamedTuple):
    token: tuple[DeferredPlan, int, int]
    convert: Any  # the iteration's conversion, or None
    start: int
    end: int
    now: tuple[Any, int, int, bool] | None
    kind: str
    implied: str | None


def deferred_metric(plan: DeferredPlan | None, msg_start: int, msg_end: int) -> Deferred | None:
    if plan is None:
        return None
    convert, a, b = plan.iteration if plan.iteration is not None else (None, 0, 0)
    now = None
    if plan.nan_count is not None or plan.epoch:
        count, na, nb = plan.nan_count if plan.nan_count is not None else (nothing, 0, 0)
        now = (count, msg_start + na, msg_start + nb, plan.epoch)
    return Deferred((plan, msg_start, msg_end), convert, msg_start + a, msg_start + b, now, plan.kind,
                    PHASE_OF_KIND.get(plan.kind))


def nothing(_text: str) -> None:
    return None


def remember(memo: dict[bytes, Any], key: bytes, value: Any) -> Any:
    """Store a per-shape answer in a memo bounded to ``GATE_CACHE`` entries (cleared when full); return it."""
    if len(memo) >= GATE_CACHE:
        memo.clear()
    memo[key] = value
    return value


def is_flagged(p: PendingPoint, isfinite: Any = math.isfinite) -> bool:
    """``MetricPoint.flagged`` of the point ``p`` will be (unrolled: thinning asks it of every other point)."""
    if type(p[0]) is tuple:
        return False  # a deferred point: a line of its shape that is flagged (by its NaN counter) has values
    get = p[0].get
    v = get("loss")
    if v is not None and not isfinite(v):
        return True
    v = get("grad_norm")
    if v is not None and not isfinite(v):
        return True
    v = get("val_loss")
    if v is not None and not isfinite(v):
        return True
    return bool(get("nan_count")) or get("kind") == "overflow"


def point(p: PendingPoint) -> MetricPoint:
    values, iteration, seq, node, rank, t, file, line, text = p
    if type(values) is tuple:  # a deferred point: only the fields the point keeps are converted
        plan, a, b = values
        v = plan.point_values(text[a:b])
        return MetricPoint(node, rank, t, iteration, file, line, v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8],
                           plan.kind, v[9], seq, text[:500])
    get = values.get
    return MetricPoint(node, rank, t, iteration, file, line, get("loss"), get("grad_norm"), get("lr"),
                       get("iter_time"), get("loss_scale"), get("skipped"), get("nan_count"), get("val_loss"),
                       get("throughput"), get("kind", "train"), get("skipped_total"), seq, text[:500])


def thin_series(series: list[PendingPoint], target: int, flagged: bool = True) -> list[PendingPoint]:
    """Thin one node's series (in arrival order) to about ``target`` points, as ``thin_metrics`` does.
    ``flagged``: whether any point of the series may be flagged (if not, every other point goes)."""
    keep_tail = target // 2
    head, tail = series[:-keep_tail], series[-keep_tail:]
    while len(head) + len(tail) > target:
        thinner = [p for i, p in enumerate(head) if i % 2 == 0 or is_flagged(p)] if flagged else head[::2]
        if len(thinner) == len(head):
            break
        head = thinner
    return head + tail


