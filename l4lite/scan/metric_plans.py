"""The fast path of ``l4lite.scan.metrics.parse_metric_line``: a bounded memo of per-shape plans, identical output.

A line's *shape* is its UTF-8 bytes with every ASCII digit replaced by "0": lines of one shape differ only in
the digits at the same offsets. None of the reference parser's regexes tells one ASCII digit from another (digits
only ever appear through ``\\d``, ``\\w`` or negated classes, and no literal digit is matched, except the
``\\.0`` after nan/inf in ``_NUM``), and its Python code compares text only with digit-free literals (except
"mtp_1 loss"). So which branch every gate, regex and comparison takes, and every match's span, is the same for
all lines of a shape; only the numbers differ. A plan records, for one shape, the output keys and the spans their
values come from, with the conversion the reference applies; the few value-dependent branches (a finite step, a
positive rate, ``int_or_none`` of an infinity, mmengine's epoch arithmetic) run again on every line with the same code.
Shapes where a literal digit could matter (``_DIGIT_LITERAL``) always go to the reference parser, and a plan is
kept only if it reproduces the reference output on the line it was learnt from.

tests/test_metrics_fast.py compares both on every fixture line and on generated lines; a change to a regex or a
branch of the reference parser must be mirrored in the planner of the same name here.
"""

from __future__ import annotations

import math
import operator
import re
from dataclasses import dataclass
from typing import Any

from l4lite.ingest.shape import shape_of
from l4lite.scan.metrics import (
    DS_STEP,
    DS_TIMER,
    IGNORED_KEYS,
    MEGATRON_ITER,
    MEGATRON_KEYS,
    MEGATRON_VAL,
    MM_HEAD,
    MM_HEAD_ITER,
    MM_PAIR,
    PTL_COUNT,
    PTL_PAIR,
    PTL_RATE,
    epoch_step_iteration,
    int_or_none,
    int_value,
    kv_steps,
    ms_value,
    overflow_match,
    parse_metric_line,
    to_float,
)

_DIGIT_LITERAL = re.compile(rb"[A-Za-z\x80-\xff]\.0|(?i:mtp_0)")
_SKIP = object()  # a composite conversion found its value-dependent branch not taken: no key
_NOT_METRIC = "not a metric line"
# A coarse shape: the shape with every run of 0s and of spaces cut to one, so that lines whose numbers change
# width (fairseq's ``wps=52203.1, bsz=8``, right-aligned columns) share it; their numbers are the tokens below.
_COARSE = re.compile(rb"(0)0+|( ) +")
_NUMBER = re.compile(r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")
COARSE_CHECKS = 3  # lines of new shapes a coarse plan must reproduce the reference on before it answers alone
_REFERENCE = "parse with the reference"

# One operation: (key, conversion, a, b). value = conversion(message[a:b]); with b None, value =
# conversion(message, a) (a composite, may return _SKIP); with conversion None, value = a (a constant).
_Op = tuple[str, Any, Any, Any]
_Steps = tuple[str, tuple[_Op, ...]]  # (kind, operations) as the planners build it
# A plan: (kind, operations, fast) where fast is (keys, conversions, getter) when every operation is a plain
# slice conversion: the getter cuts all the slices in one call.
_Plan = tuple[str, tuple[_Op, ...], tuple[tuple[str, ...], tuple[Any, ...], Any] | None]


_ms = ms_value  # a plan uses these only where the shape makes the text a number
_int_of = int_value


def _ms_float(text: str) -> float:
    return float(text) / 1000.0


def _int_float(text: str) -> int | None:
    return int_or_none(float(text))


_SMALL_INT = re.compile(r" *[0-9]{1,15} *")
# Where ``float(text)`` itself succeeds (the shape decides), to_float(text) is float(text): use the builtin.
_WHEN_FLOAT_PARSES = {to_float: float, _ms: _ms_float, _int_of: _int_float}


def _mm_iteration(message: str, spans: tuple[tuple[int, int], ...]) -> int:
    (a3, b3), (a4, b4), (a5, b5) = spans
    return epoch_step_iteration(int(message[a3:b3]), int(message[a4:b4]), int(message[a5:b5]))


def _ptl_iteration(message: str, spans: tuple[tuple[int, int], tuple[int, int] | None]) -> Any:
    (a, b), count = spans
    step = to_float(message[a:b])
    if step is not None and math.isfinite(step):
        return int(step)
    return int(message[count[0]:count[1]]) if count is not None else _SKIP


def _ptl_rate(message: str, spec: tuple[int, int, bool]) -> Any:
    a, b, per_second = spec
    rate = to_float(message[a:b])
    if rate and math.isfinite(rate) and rate > 0:
        return 1.0 / rate if per_second else rate
    return _SKIP


def apply_plan(plan: _Plan, message: str) -> dict[str, Any]:
    """The reference output for ``message`` from the plan of its shape."""
    kind, ops, fast = plan
    out: dict[str, Any] = {"kind": kind}
    if fast is not None:
        keys, conversions, getter = fast
        for key, convert, text in zip(keys, conversions, getter(message), strict=True):
            out[key] = convert(text)
        return out
    for key, fn, a, b in ops:
        if fn is None:
            out[key] = a
        elif b is None:
            value = fn(message, a)
            if value is not _SKIP:
                out[key] = value
        else:
            out[key] = fn(message[a:b])
    return out


def coarse_plan(message: str) -> tuple[str, tuple[str, ...], tuple[Any, ...], tuple[int, ...], int] | None:
    """A plan by number tokens instead of offsets: (kind, keys, conversions, token of each key, tokens), when
    every value of the reference is one whole token of ``_NUMBER`` with the reference's own conversion (no
    composite step, no constant); else None."""
    steps = _steps(message)
    if steps is None:
        return None
    spans = {m.span(): i for i, m in enumerate(_NUMBER.finditer(message))}
    picks = []
    for _key, fn, a, b in steps[1]:
        if fn is None or b is None:
            return None
        text = message[a:b]
        i = spans.get((a + len(text) - len(text.lstrip()), a + len(text.rstrip())))
        if i is None:
            return None
        picks.append(i)
    return (steps[0], tuple(op[0] for op in steps[1]), tuple(op[1] for op in steps[1]), tuple(picks),
            len(spans))


def apply_coarse(plan: tuple[str, tuple[str, ...], tuple[Any, ...], tuple[int, ...], int],
                 message: str) -> dict[str, Any] | None:
    """The metric fields of ``message`` by a ``coarse_plan``; None where its tokens do not fit the plan."""
    kind, keys, conversions, picks, count = plan
    tokens = _NUMBER.findall(message)
    if len(tokens) != count:
        return None
    out: dict[str, Any] = {"kind": kind}
    try:
        for key, convert, i in zip(keys, conversions, picks, strict=True):
            out[key] = convert(tokens[i])
    except (ValueError, OverflowError):
        return None
    return out


def _compile(steps: _Steps | None, message: str) -> _Plan | None:
    """Builtin conversions where the shape allows them, and the all-in-C form when every step is a slice."""
    if steps is None:
        return None
    kind, raw = steps
    ops: list[_Op] = []
    for key, fn, a, b in raw:
        faster = _WHEN_FLOAT_PARSES.get(fn) if b is not None else None
        if fn is _int_of and _SMALL_INT.fullmatch(message[a:b]):
            fn = int  # int_or_none(float(t)) is int(t) for up to 15 ASCII digits (exact in a double), blanks around
        elif faster is not None:
            try:
                float(message[a:b])
                fn = faster
            except ValueError:
                pass
        ops.append((key, fn, a, b))
    fast = None
    if len(ops) >= 2 and all(fn is not None and b is not None for _key, fn, _a, b in ops):
        fast = (tuple(op[0] for op in ops), tuple(op[1] for op in ops),
                operator.itemgetter(*(slice(a, b) for _key, _fn, a, b in ops)))
    return kind, tuple(ops), fast


def plan_metric_line(message: str) -> _Plan | None:
    """The plan of ``message``'s shape (None where the reference finds no metric line)."""
    return _compile(_steps(message), message)


def _steps(message: str) -> _Steps | None:
    """``parse_metric_line`` step by step, recording spans and conversions instead of values."""
    if "iteration" in message and "|" in message:
        plan = _plan_megatron(message)
        if plan is not None:
            return plan
    if "OVERFLOW" in message or "overflow" in message or "loss scale" in message:
        plan = _plan_overflow(message)
        if plan is not None:
            return plan
    if "skipped=" in message or "SamplesPerSec=" in message:
        plan = _plan_deepspeed(message)
        if plan is not None:
            return plan
    if "{" in message and "loss" in message:
        plan = _plan_kv(message)
        if plan is not None:
            return plan
    if "(train)" in message or "(val)" in message or "(test)" in message:
        plan = _plan_mmengine(message)
        if plan is not None:
            return plan
    if "it/s" in message or "s/it" in message or "%|" in message:
        plan = _plan_progress_bar(message)
        if plan is not None:
            return plan
    if "loss" in message or "Loss" in message:
        return _plan_kv(message)
    return None


def _parts(message: str, start: int) -> list[tuple[str, str, str, int, int]]:
    """``message[start:].split("|")``, each part as (raw key, separator, value, value start, value end)."""
    out = []
    pos = start
    for part in message[start:].split("|"):
        raw, sep, value = part.partition(":")
        out.append((raw, sep, value, pos + len(raw) + len(sep), pos + len(part)))
        pos += len(part) + 1
    return out


def _plan_megatron(message: str) -> _Steps | None:
    m = MEGATRON_VAL.search(message) if "loss at" in message else None
    if m:
        for raw, sep, _value, a, b in _parts(message, m.end()):
            if sep and raw.strip().lower().endswith("loss value"):
                return "val", (("iteration", int, *m.span(1)), ("val_loss", to_float, a, b))
        return None
    m = MEGATRON_ITER.search(message)
    if not m:
        return None
    ops: list[_Op] = [("iteration", int, *m.span(1))]
    seen: set[str] = set()
    loss_none = False
    for raw, sep, value, a, b in _parts(message, m.end()):
        if not sep:
            continue
        key = raw.strip().lower()
        if key in IGNORED_KEYS:
            continue
        name = MEGATRON_KEYS.get(key)
        if name is None:
            if key.startswith("elapsed time per iteration"):
                if to_float(value) is not None:
                    ops.append(("iter_time", _ms if "(ms)" in key else to_float, a, b))
            elif key.endswith("loss") and "loss" not in seen:
                seen.add("loss")
                loss_none = to_float(value) is None
                ops.append(("loss", to_float, a, b))
            continue
        if to_float(value) is None or name in seen:
            continue
        seen.add(name)
        ops.append((name, _int_of if name in ("skipped", "nan_count") else to_float, a, b))
    if loss_none:
        ops = [op for op in ops if op[0] != "loss"]
    return "train", tuple(ops)


def _plan_overflow(message: str) -> _Steps | None:
    m = overflow_match(message)
    if m is None:
        return None
    ops: list[_Op] = [("loss_scale", to_float, *m.span(m.lastindex or 1)), ("skipped", None, 1, 0)]
    bar = PTL_COUNT.search(message, 0, m.start())
    if bar is not None:
        ops.append(("iteration", int, *bar.span(1)))
    return "overflow", tuple(ops)


def _plan_deepspeed(message: str) -> _Steps | None:
    m = DS_STEP.search(message)
    if m:
        ops: list[_Op] = [("iteration", int, *m.span(1)), ("skipped_total", int, *m.span(2))]
        if m.group(3) and to_float(m.group(3)) is not None:
            ops.append(("lr", to_float, *m.span(3)))
        return "train", tuple(ops)
    m = DS_TIMER.search(message)
    if m:
        return "train", (("iteration", int, *m.span(1)), ("throughput", to_float, *m.span(2)))
    return None


def _pairs(pattern: re.Pattern[str], message: str, start: int, strip: bool = False
           ) -> dict[str, tuple[int, int, bool]]:
    """Like ``{k: to_float(v) for k, v in pattern.findall(message[start:])}``: key -> (start, end, is a number)."""
    out: dict[str, tuple[int, int, bool]] = {}
    for m in pattern.finditer(message[start:]):
        key = m.group(1).strip() if strip else m.group(1)
        out[key] = (start + m.start(2), start + m.end(2), to_float(m.group(2)) is not None)
    return out


def _plan_kv(message: str) -> _Steps | None:
    """The pairs reader's steps are spans already: its decisions depend on the line's letters only."""
    steps = kv_steps(message)
    return None if steps is None else (steps[0], tuple(steps[1]))


def _plan_mmengine(message: str) -> _Steps | None:
    m = MM_HEAD.search(message)
    if m and m.group(1) == "Epoch":
        mode = m.group(2)
        if m.group(4) is not None:
            iteration: _Op = ("iteration", _mm_iteration, (m.span(3), m.span(4), m.span(5)), None)
        else:
            iteration = ("iteration", None, None, None)
    else:
        m2 = MM_HEAD_ITER.search(message)
        if not m2:
            return None
        mode = m2.group(1)
        iteration = ("iteration", int, *m2.span(2))
        m = m2
    pairs = _pairs(MM_PAIR, message, m.end())
    if mode != "train":
        if "loss" in pairs and pairs["loss"][2]:
            return "val", (("val_loss", to_float, *pairs["loss"][:2]),)
        return None
    ops = [iteration]
    for src, dst in (("loss", "loss"), ("grad_norm", "grad_norm"), ("lr", "lr"), ("time", "iter_time")):
        if src in pairs and pairs[src][2]:
            ops.append((dst, to_float, *pairs[src][:2]))
    return ("train", tuple(ops)) if len(ops) > 1 else None


def _first(pairs: dict[str, tuple[int, int, bool]], *keys: str) -> tuple[int, int, bool] | None:
    """``pairs.get(k1, pairs.get(k2, ...))``: the first key present, whether or not its value is a number."""
    for key in keys:
        if key in pairs:
            return pairs[key]
    return None


def _plan_progress_bar(message: str) -> _Steps | None:
    bracket = message.find("[")
    if bracket < 0:
        return None
    pairs = _pairs(PTL_PAIR, message, bracket, strip=True)
    loss = _first(pairs, "reduced_train_loss", "train_loss", "loss")
    if loss is not None and not loss[2]:
        loss = None
    if loss is None and "val_loss" not in pairs:
        return None
    ops: list[_Op] = []
    if loss is not None:
        ops.append(("loss", to_float, *loss[:2]))
    step = _first(pairs, "global_step", "step")
    count = PTL_COUNT.search(message)
    if step is not None and step[2]:
        ops.append(("iteration", _ptl_iteration, (step[:2], count.span(1) if count else None), None))
    elif count:
        ops.append(("iteration", int, *count.span(1)))
    timing = _first(pairs, "train_step_timing in s", "train_step_timing")
    if timing is not None and timing[2]:
        ops.append(("iter_time", to_float, *timing[:2]))
    else:
        m = PTL_RATE.search(message)
        if m:
            ops.append(("iter_time", _ptl_rate, (*m.span(1), m.group(2) == "it/s"), None))
    for key in ("grad_norm", "val_loss", "lr"):
        if key in pairs and pairs[key][2]:
            ops.append((key, to_float, *pairs[key][:2]))
    return "train", tuple(ops)


def may_be_metric_line(message: str) -> bool:
    """False when ``parse_metric_line`` is sure to answer None: none of its gate words is in the message.

    ``any(word in message for word in _GATE_WORDS)``, unrolled (it runs on every line). The words have no digits,
    so the answer is the same for every message of one shape.
    """
    return ("loss" in message or "Loss" in message or "iteration" in message or "OVERFLOW" in message
            or "overflow" in message or "skipped=" in message or "SamplesPerSec=" in message or "(train)" in message
            or "(val)" in message or "(test)" in message or "it/s" in message or "s/it" in message or "%|" in message)


def same_output(a: dict[str, Any] | None, b: dict[str, Any] | None) -> bool:
    """Equal keys in the same order with values of the same type and repr (so nan equals nan, 1 differs from 1.0)."""
    if a is None or b is None:
        return a is b
    return [(k, type(v), repr(v)) for k, v in a.items()] == [(k, type(v), repr(v)) for k, v in b.items()]


# A value of these keys that is not finite flags a metric point (``MetricPoint.flagged``); a span of this shape
# (digits, one point, an exponent of at most two digits) always converts to a finite number.
_FLAG_KEYS = ("loss", "grad_norm", "val_loss")
# the fields of a metric point (``scan.jobscan.MetricPoint``) that a line's values give, besides its kind
POINT_KEYS = ("loss", "grad_norm", "lr", "iter_time", "loss_scale", "skipped", "nan_count", "val_loss", "throughput",
              "skipped_total")
_FINITE_SPAN = re.compile(rb" *[-+]?[0.]{1,30}(?:[eE][-+]?0{1,2})? *")


@dataclass(frozen=True, slots=True)
class DeferredPlan:
    """A learnt plan whose values a caller may work out later, from the message, for the few points it keeps.

    Only for shapes of all slices, ASCII, not an overflow, with a loss, gradient norm and validation loss that are
    always finite: a point of such a shape is flagged (``MetricPoint.flagged``) only by its NaN counter. What a
    caller needs of every line at once is the kind (the shape's) and the spans of the iteration and the NaN
    counter, each with its conversion: (conversion, start, end) in the message, or None."""

    kind: str
    fast: tuple[tuple[str, ...], tuple[Any, ...], Any]
    iteration: tuple[Any, int, int] | None
    nan_count: tuple[Any, int, int] | None
    epoch: bool  # the shape has an epoch, which stands in for a missing iteration in a scan
    # of each of ``POINT_KEYS`` the shape has: (its place in ``POINT_KEYS``, conversion, start, end)
    picks: tuple[tuple[int, Any, int, int], ...] = ()

    def values(self, message: str) -> dict[str, Any]:
        """The message's metric fields: what ``MetricParser.parse`` answers for it."""
        keys, conversions, getter = self.fast
        out: dict[str, Any] = {"kind": self.kind}
        for key, convert, text in zip(keys, conversions, getter(message), strict=True):
            out[key] = convert(text)
        return out

    def point_values(self, message: str) -> list[Any]:
        """``values(message).get(key)`` of each of ``POINT_KEYS``, converting only the fields a metric point
        keeps (a Megatron line states a dozen more)."""
        out: list[Any] = [None] * len(POINT_KEYS)
        for i, convert, a, b in self.picks:
            out[i] = convert(message[a:b])
        return out


def _deferred(plan: Any, shape: bytes) -> DeferredPlan | None:
    if type(plan) is not tuple or plan[2] is None or not shape.isascii():
        return None
    kind, ops, fast = plan
    if kind == "overflow" or "kind" in fast[0]:
        return None
    spans: dict[str, tuple[Any, int, int]] = {}
    for key, fn, a, b in ops:
        if key in _FLAG_KEYS and not _FINITE_SPAN.fullmatch(shape, a, b):
            return None
        spans[key] = (fn, a, b)  # a key twice: the last one, as in ``values``
    picks = tuple((i, *spans[key]) for i, key in enumerate(POINT_KEYS) if key in spans)
    return DeferredPlan(kind, fast, spans.get("iteration"), spans.get("nan_count"), "epoch" in spans, picks)


class MetricParser:
    """``parse_metric_line`` with a memo of shape plans: the same answers, several times faster on a stream.

    Progress lines repeat a handful of shapes with new numbers (every rank, every step), so after the first line
    of a shape the rest cost a byte translation, a dict look-up and a few ``float()`` calls instead of half a dozen
    case-insensitive regex searches. A shape is learnt when it comes back (a shape seen once costs one reference
    parse, as before). The memo is bounded (``max_shapes`` learnt and as many seen-once shapes, of at most
    ``max_chars`` characters, each cleared when full: at most a few MB with the defaults, ~16 MB if every line
    were 4-byte UTF-8), so memory stays flat however long the input; longer lines go to the reference parser.
    """

    def __init__(self, max_shapes: int = 2048, max_chars: int = 1024) -> None:
        self.max_shapes = max_shapes
        self.max_chars = max_chars
        self._plans: dict[bytes, Any] = {}
        self._deferred: dict[bytes, DeferredPlan | None] = {}  # of each learnt shape: a run asks it of every window
        self._seen: set[bytes] = set()  # shapes seen once, not learnt yet
        self._coarse: dict[bytes, list[Any]] = {}  # coarse shape -> [coarse plan or None, lines checked]

    def parse(self, message: str, shape: bytes | None = None) -> dict[str, Any] | None:
        """The metric fields of one line (exactly ``parse_metric_line(message)``). ``shape`` may be given when the
        caller has it already: the message's UTF-8 bytes with every ASCII digit a 0."""
        if not may_be_metric_line(message):
            return None
        return self.parse_gated(message, shape)

    def parse_gated(self, message: str, shape: bytes | None = None) -> dict[str, Any] | None:
        """``parse`` of a message that ``may_be_metric_line`` let through (the scan knows it per shape)."""
        if len(message) > self.max_chars:
            return parse_metric_line(message)
        if shape is None:
            shape = shape_of(message)
        plan = self._plans.get(shape)
        if type(plan) is tuple and plan[2] is not None:  # the common case, apply_plan inlined
            keys, conversions, getter = plan[2]
            out: dict[str, Any] = {"kind": plan[0]}
            # a loop of stores: a fifth fewer instructions than dict.update(zip(keys, map(operator.call, ...)))
            for key, convert, text in zip(keys, conversions, getter(message), strict=True):
                out[key] = convert(text)
            return out
        if plan is None:
            seen = self._seen
            if shape in seen:
                seen.discard(shape)
                return self._learn(message, shape)
            if len(seen) >= self.max_shapes:
                seen.clear()
            seen.add(shape)  # learning costs about two reference parses: only for a shape that comes back
            return self._first_sight(message, shape)
        if plan is _NOT_METRIC:
            return None
        if plan is _REFERENCE:
            return parse_metric_line(message)
        return apply_plan(plan, message)

    def deferred(self, shape: bytes) -> DeferredPlan | None:
        """The learnt plan of a message shape as a ``DeferredPlan``, when the shape allows one (None before the
        shape is learnt: it is learnt on its second line)."""
        return self._deferred.get(shape)

    def not_metric(self, shape: bytes) -> bool:
        """True when the shape is learnt as no metric line: ``parse`` answers None for every message of it."""
        return self._plans.get(shape) is _NOT_METRIC

    def __len__(self) -> int:
        return len(self._plans) + len(self._seen)

    def stats(self) -> dict[str, int]:
        """Shapes in the memo: with a plan, known not to be metric lines, seen once, sent to the reference."""
        plans = sum(1 for plan in self._plans.values() if isinstance(plan, tuple))
        not_metric = sum(1 for plan in self._plans.values() if plan is _NOT_METRIC)
        return {"plans": plans, "not_metric": not_metric, "reference": len(self._plans) - plans - not_metric,
                "seen_once": len(self._seen)}

    def _first_sight(self, message: str, shape: bytes) -> dict[str, Any] | None:
        """A line of a shape not seen before, by the plan of its coarse shape once that plan has given the
        reference's answer on ``COARSE_CHECKS`` lines of other shapes (fairseq's lines are nearly all of new
        shapes); a plan that once differs is dropped for good, and so is one whose tokens do not fit."""
        if _DIGIT_LITERAL.search(shape):
            return parse_metric_line(message)
        key = _COARSE.sub(rb"\1\2", shape)
        entry = self._coarse.get(key)
        if entry is None or entry[0] is None or entry[1] < COARSE_CHECKS:
            out = parse_metric_line(message)
            if entry is None:
                plan = coarse_plan(message) if out is not None else None
                if len(self._coarse) >= self.max_shapes:
                    self._coarse.clear()
                self._coarse[key] = [plan if plan is not None and same_output(apply_coarse(plan, message), out)
                                     else None, 0]
            elif entry[0] is not None:
                if same_output(apply_coarse(entry[0], message), out):
                    entry[1] += 1
                else:
                    entry[0] = None
            return out
        out = apply_coarse(entry[0], message)
        if out is None:
            entry[0] = None
            return parse_metric_line(message)
        return out

    def _learn(self, message: str, shape: bytes) -> dict[str, Any] | None:
        out = parse_metric_line(message)
        if len(self._plans) >= self.max_shapes:
            self._plans.clear()
            self._deferred.clear()
        if _DIGIT_LITERAL.search(shape):
            self._plans[shape] = _REFERENCE
            return out
        plan = plan_metric_line(message)
        if out is None:
            self._plans[shape] = _NOT_METRIC if plan is None else _REFERENCE
        elif plan is not None and same_output(apply_plan(plan, message), out):
            self._plans[shape] = plan  # checked on its first line; the shape argument above covers the rest
        else:
            self._plans[shape] = _REFERENCE
        self._deferred[shape] = _deferred(self._plans[shape], shape)
        return out
