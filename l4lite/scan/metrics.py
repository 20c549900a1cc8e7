"""Trainer metric lines: iteration, loss, grad norm, iteration time and friends, from the common frameworks.

Parsed formats (each gated by a cheap substring test before any regex, because this runs on every line):

- Megatron-LM / Megatron-DeepSpeed: `` iteration  29020/ 311541 | ... | elapsed time per iteration (ms): 22306.6 |
  learning rate: 9.850E-05 | lm loss: 2.775923E+00 | loss scale: 32768.0 | grad norm: 0.000 | number of skipped
  iterations: 0 | number of nan iterations: 0 |`` and ``validation loss at iteration 100 | lm loss value: ...``.
- DeepSpeed: ``step=40, skipped=2, lr=[5e-05], ...``, timer ``0/40, SamplesPerSec=83.48, ...`` and
  ``[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 4294967296, reducing to 2147483648``
  (apex: ``Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to 32768.0``).
- mmengine: ``Epoch(train) [1][200/735]  lr: 1.98e-04  eta: ...  time: 2.8906  ...  loss: 2.7522  grad_norm: 3.06``
  and ``Iter(train) [ 200/10000] ...``, ``Epoch(val) ...``.
- NeMo / PyTorch Lightning progress bars: ``Epoch 0:  3%|▎ | 9000/301500 [1:42:42<55:37:46, reduced_train_loss=2.59,
  global_step=9e+3, train_step_timing in s=0.615, val_loss=7.040]``.
- Everything else that prints pairs, through one reader (``kv_steps``) and one alias table (``ALIASES``): Hugging
  Face Trainer dicts (``{'loss': '5.385', 'grad_norm': '0.8066', ...}``, numbers or quoted numbers), JSON lines
  (fairseq ``{"epoch": 25, "loss": "3.097", ...}``), ``key: value`` (torchtitan ``step: 10  loss: 7.9  tps: 7,282``),
  ``key=value`` (fairseq ``train_inner``), ``| key value |`` tables (fairseq), ``key value`` (nanoGPT, llm.c),
  Composer ``[batch=10/100]: Train loss/train/total: 7.4``.

The parser returns plain dicts; the scan turns them into ``MetricPoint`` records.
"""

from __future__ import annotations

import math
import re
from typing import Any

_NUM = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:nan|NaN|NAN|inf|Inf|INF|infinity|Infinity)(?:\.0)?"

MEGATRON_ITER = re.compile(r"\biteration\s+(\d+)\s*/\s*\d+")
MEGATRON_VAL = re.compile(r"\bvalid(?:ation)?\s+loss\s+at\s+(?:iteration|step)\s+(\d+)", re.I)
DS_STEP = re.compile(r"\bstep=(\d+),\s*skipped=(\d+)(?:,\s*lr=\[([^\],]+))?")
DS_TIMER = re.compile(r"\b\d+/(\d+),\s*SamplesPerSec=(" + _NUM + ")")
DS_OVERFLOW = re.compile(r"Attempted loss scale:\s*(" + _NUM + r"),\s*reducing to\s*(" + _NUM + ")")
APEX_OVERFLOW = re.compile(r"(?:reducing|setting) loss scale to:?\s*(" + _NUM + ")")
# DeepSpeed's fused and unfused fp16 optimizers: ``Reducing dynamic loss scale from 8.0 to 4.0``
DYNAMIC_REDUCE = re.compile(r"[Rr]educing dynamic loss scale from\s*(" + _NUM + r")\s*to\s*(" + _NUM + ")")
MM_HEAD = re.compile(r"\b(Epoch|Iter)\((train|val|test)\)\s*\[\s*(\d+)\s*\](?:\s*\[\s*(\d+)\s*/\s*(\d+)\s*\])?")
MM_HEAD_ITER = re.compile(r"\bIter\((train|val|test)\)\s*\[\s*(\d+)\s*/\s*(\d+)\s*\]")
MM_PAIR = re.compile(r"(?:^|\s)([A-Za-z_][\w/.]*):\s+(" + _NUM + r")(?=\s|$)")
PTL_PAIR = re.compile(r"([A-Za-z_][\w ]*?)=(" + _NUM + r")(?=[,\]\s]|$)")
PTL_COUNT = re.compile(r"\|\s*(\d+)/(\d+)\s*\[")
PTL_RATE = re.compile(r"(" + _NUM + r")\s*(it/s|s/it)")
ERRORISH = ("Error", "error:", "Traceback", "Exception", "WARN")
_ERROR_RECORD = ("Error", "Traceback", "Exception")  # words of an error in a JSON record, never in a metrics dict


def to_float(text: str) -> float | None:
    """Parse a number as trainers print it, including ``nan``, ``nan.0``, ``inf`` and ``-inf``."""
    try:
        return float(text)  # the common case, fast (float() accepts surrounding blanks, nan and inf)
    except ValueError:
        pass
    t = text.strip().rstrip(",|]")
    if not t:
        return None
    low = t.lower()
    if low.startswith(("nan", "+nan", "-nan")):
        return math.nan
    if low.lstrip("+-").startswith("inf"):
        return -math.inf if low.startswith("-") else math.inf
    try:
        return float(t)
    except ValueError:
        return None


def int_or_none(value: float | None) -> int | None:
    if value is None or not math.isfinite(value):
        return None
    return int(value)


# Every gate in parse_metric_line requires one of these words; a line with none of them is no metric line
# (l4lite.scan.metric_plans.MetricParser relies on this to skip its memo for most lines: keep it in step).
_GATE_WORDS = ("loss", "Loss", "iteration", "OVERFLOW", "overflow", "skipped=", "SamplesPerSec=", "(train)",
               "(val)", "(test)", "it/s", "s/it", "%|")


def parse_metric_line(message: str) -> dict[str, Any] | None:
    """Return the metric fields of one trainer line, or None when the line is not a metric line.

    Keys: ``kind`` ("train", "val" or "overflow") and any of iteration, loss, grad_norm, lr, iter_time (seconds),
    loss_scale, skipped (per logging interval), skipped_total (cumulative), nan_count, val_loss, throughput.
    This is the reference parser; ``l4lite.scan.metric_plans.MetricParser`` gives the same answers several times
    faster on a stream.
    """
    try:
        return _parse_metric_line(message)
    except ValueError:  # int() refuses more than 4300 digits: a hostile line, not a metric line
        return None


def _parse_metric_line(message: str) -> dict[str, Any] | None:
    # Cheap gates first: the great majority of lines contain none of these.
    if "iteration" in message and "|" in message:
        out = _megatron(message)
        if out is not None:
            return out
    if "OVERFLOW" in message or "overflow" in message or "loss scale" in message:
        out = _overflow(message)
        if out is not None:
            return out
    if "skipped=" in message or "SamplesPerSec=" in message:
        out = _deepspeed(message)
        if out is not None:
            return out
    if "{" in message and "loss" in message:
        out = _kv(message)  # a Python dict or JSON line (Hugging Face Trainer), even glued to a progress bar
        if out is not None:
            return out
    if "(train)" in message or "(val)" in message or "(test)" in message:
        out = _mmengine(message)
        if out is not None:
            return out
    if "it/s" in message or "s/it" in message or "%|" in message:
        out = _progress_bar(message)
        if out is not None:
            return out
    if "loss" in message or "Loss" in message:
        return _kv(message)
    return None


MEGATRON_KEYS: dict[str, str] = {
    "learning rate": "lr", "loss scale": "loss_scale", "grad norm": "grad_norm",
    "number of skipped iterations": "skipped", "number of nan iterations": "nan_count",
    "samples per second": "throughput", "tflops": "throughput", "throughput per gpu (tflop/s/gpu)": "throughput",
}
IGNORED_KEYS = frozenset({"consumed samples", "consumed tokens", "global batch size", "num zeros",
                           "actual seqlen", "params norm", "batch generator", "mtp_1 loss"})


def _megatron(message: str) -> dict[str, Any] | None:
    m = MEGATRON_VAL.search(message) if "loss at" in message else None
    if m:
        out: dict[str, Any] = {"kind": "val", "iteration": int(m.group(1))}
        for part in message[m.end():].split("|"):
            key, sep, value = part.partition(":")
            key = key.strip().lower()
            if sep and key.endswith("loss value"):
                out["val_loss"] = to_float(value)
                break
        return out if "val_loss" in out else None
    m = MEGATRON_ITER.search(message)
    if not m:
        return None
    out = {"kind": "train", "iteration": int(m.group(1))}
    for part in message[m.end():].split("|"):
        key, sep, value = part.partition(":")
        if not sep:
            continue
        key = key.strip().lower()
        if key in IGNORED_KEYS:
            continue
        name = MEGATRON_KEYS.get(key)
        if name is None:
            if key.startswith("elapsed time per iteration"):
                v = to_float(value)
                if v is not None:
                    out["iter_time"] = v / 1000.0 if "(ms)" in key else v
            elif key.endswith("loss") and "loss" not in out:
                out["loss"] = to_float(value)
            continue
        v = to_float(value)
        if v is None or name in out:
            continue
        out[name] = int_or_none(v) if name in ("skipped", "nan_count") else v
    if out.get("loss", 0.0) is None:
        del out["loss"]
    return out


def _overflow(message: str) -> dict[str, Any] | None:
    m = overflow_match(message)
    if m is None:
        return None
    out: dict[str, Any] = {"kind": "overflow", "loss_scale": to_float(m.group(m.lastindex or 1)), "skipped": 1}
    bar = PTL_COUNT.search(message, 0, m.start())  # printed in the middle of a tqdm bar: the bar's step
    if bar is not None:
        out["iteration"] = int(bar.group(1))
    return out


def overflow_match(message: str) -> re.Match[str] | None:
    """The scaler's announcement of a reduced loss scale (its last group is the new scale), or None. DeepSpeed
    words it ``Attempted loss scale: X, reducing to Y`` (the ``OVERFLOW!`` or ``Overflow detected`` line) and
    ``Reducing dynamic loss scale from X to Y``; apex and fairseq ``reducing/setting loss scale to Y``."""
    m = DS_OVERFLOW.search(message)
    if m is None and "dynamic loss scale" in message:
        m = DYNAMIC_REDUCE.search(message)
    if m is None and ("reducing loss scale" in message or "setting loss scale" in message):
        m = APEX_OVERFLOW.search(message)
    return m


def _deepspeed(message: str) -> dict[str, Any] | None:
    m = DS_STEP.search(message)
    if m:
        out: dict[str, Any] = {"kind": "train", "iteration": int(m.group(1)), "skipped_total": int(m.group(2))}
        if m.group(3):
            lr = to_float(m.group(3))
            if lr is not None:
                out["lr"] = lr
        return out
    m = DS_TIMER.search(message)
    if m:
        return {"kind": "train", "iteration": int(m.group(1)), "throughput": to_float(m.group(2))}
    return None


def _mmengine(message: str) -> dict[str, Any] | None:
    m = MM_HEAD.search(message)
    iteration: int | None = None
    if m and m.group(1) == "Epoch":
        mode = m.group(2)
        if m.group(4) is not None:
            iteration = epoch_step_iteration(int(m.group(3)), int(m.group(4)), int(m.group(5)))
    else:
        m2 = MM_HEAD_ITER.search(message)
        if not m2:
            return None
        mode = m2.group(1)
        iteration = int(m2.group(2))
        m = m2
    pairs = {k: to_float(v) for k, v in MM_PAIR.findall(message[m.end():])}
    if mode != "train":
        out: dict[str, Any] = {"kind": "val"}
        if pairs.get("loss") is not None:
            out["val_loss"] = pairs["loss"]
        return out if "val_loss" in out else None
    out = {"kind": "train", "iteration": iteration}
    for src, dst in (("loss", "loss"), ("grad_norm", "grad_norm"), ("lr", "lr"), ("time", "iter_time")):
        if pairs.get(src) is not None:
            out[dst] = pairs[src]
    return out if len(out) > 2 else None


def epoch_step_iteration(epoch: int, step: int, steps_per_epoch: int) -> int:
    """The run's iteration from an epoch index and a step within it (``[1][200/735]``): the steps of the epochs
    before it and this one's. Epoch 0 and epoch 1 both count as the first (mmengine counts from 1, DeiT from 0)."""
    return (max(epoch, 1) - 1) * steps_per_epoch + step


# A step pair after an epoch index with no key of its own: ``Epoch:[0/2](7000/293491)``, mmcv's
# ``Epoch [1][200/62598]``, DeiT's ``Epoch: [24]  [1230/1251]``. It starts where the epoch's value ends: an optional
# ``/total`` of epochs, the epoch's closing bracket, then ``[i/N]`` or ``(i/N)`` with blanks only between. A tqdm
# ``[00:12<01:23, 3.2it/s]`` is no ``i/N`` pair, and an ``Epoch [1/2]`` with nothing after it has no step.
EPOCH_STEP = re.compile(r"(?:\s*/\s*\d+)?\s*[\])]?\s*(?:\[\s*(\d+)\s*/\s*(\d+)\s*\]|\(\s*(\d+)\s*/\s*(\d+)\s*\))")
_EPOCH_STEP_TEXT = re.compile(r"(\d+)" + EPOCH_STEP.pattern)


def epoch_step_value(text: str) -> int | None:
    """The iteration of an epoch index and the step pair after it (the text from the epoch's value to the pair's
    end), as mmengine's head reads: see ``epoch_step_iteration``."""
    m = _EPOCH_STEP_TEXT.fullmatch(text)
    if m is None:
        return None
    i, n = (m.group(2), m.group(3)) if m.group(2) is not None else (m.group(4), m.group(5))
    return epoch_step_iteration(int(m.group(1)), int(i), int(n))


def _progress_bar(message: str) -> dict[str, Any] | None:
    bracket = message.find("[")
    if bracket < 0:
        return None
    pairs: dict[str, float | None] = {}
    for k, v in PTL_PAIR.findall(message[bracket:]):
        pairs[k.strip()] = to_float(v)
    loss = pairs.get("reduced_train_loss", pairs.get("train_loss", pairs.get("loss")))
    if loss is None and "val_loss" not in pairs:
        return None
    out: dict[str, Any] = {"kind": "train"}
    if loss is not None:
        out["loss"] = loss
    step = pairs.get("global_step", pairs.get("step"))
    if step is not None and math.isfinite(step):
        out["iteration"] = int(step)
    else:
        m = PTL_COUNT.search(message)
        if m:
            out["iteration"] = int(m.group(1))
    timing = pairs.get("train_step_timing in s", pairs.get("train_step_timing"))
    if timing is not None:
        out["iter_time"] = timing
    else:
        m = PTL_RATE.search(message)
        if m:
            rate = to_float(m.group(1))
            if rate and math.isfinite(rate) and rate > 0:
                out["iter_time"] = 1.0 / rate if m.group(2) == "it/s" else rate
    if pairs.get("grad_norm") is not None:
        out["grad_norm"] = pairs["grad_norm"]
    if pairs.get("val_loss") is not None:
        out["val_loss"] = pairs["val_loss"]
    if pairs.get("lr") is not None:
        out["lr"] = pairs["lr"]
    return out


# ---------------------------------------------------------------------- any trainer: key/value pairs
# One reader for the progress lines of every trainer that prints its metrics as pairs: ``key: value``, ``key=value``,
# ``key value`` (nanoGPT, llm.c, fairseq tables), Python dicts and JSON (Hugging Face Trainer, with numbers or quoted
# numbers), torchtitan, Composer, Lightning and NeMo pairs. A key is one to five words; its last words name the
# metric through ALIASES (the longest suffix that is a known name wins), so "train loss", "lm loss", "loss/train/total",
# "reduced_train_loss" are all the loss. Every decision below depends on the letters of the line only (keys are
# read with their digits folded), so the fast path in ``l4lite.scan.metric_plans`` can plan a line shape once.
# A key word is never a non-finite value: in ``train_loss nan lr 3e-03`` the loss is nan, not a key "train_loss nan lr".
_KEY = r"(?!(?i:[-+]?(?:nan|inf(?:inity)?))(?![\w/.\-]))[A-Za-z_][\w/.\-]*"
_VALUE = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\d,])|" + _NUM
# The value follows ``:``, ``=``, blanks, or a bracket (Ignite's ``Epoch[1], Iter[18] Loss: 0.5``, the PyTorch
# tutorials' ``Epoch [1/10], Step [100/600], Loss: 0.21``).
# A key may follow a logger's ``name:`` prefix (``INFO:tensorflow:loss = 1.87, step = 31601``); a later word of a key
# is never ``is``, the separator of ``Loss is 1.26`` (BigDL); a value may sit in brackets after its colon
# (``Epoch: [8]``, the MetricLogger of DeiT and MAE) and end a sentence (``Loss is 1.26. Current ...``).
KV_PAIR = re.compile(r"(?:^|(?<=[\s,;{\[(|:]))([\"']?)(" + _KEY + r"(?: (?!is\s)" + _KEY + r"){0,4})\1"
                     r"(\s*[:=]\s*|\s*[:=]?\s*\[\s*|\s+is\s+|\s+)"
                     r"([\"']?)(" + _VALUE + r")\4(?:\s?(ms|s)(?![A-Za-z]))?(?=[\s,;}\])|%/]|:\s|:$|\.\s|\.$|$)")
ALIASES: dict[str, str] = {
    **dict.fromkeys(("iteration", "iter", "step", "steps", "global_step", "global step", "trainer/global_step",
                     "train/global_step", "num_updates", "batch", "update", "it"), "iteration"),
    "epoch": "epoch",
    **dict.fromkeys(("loss", "train loss", "train_loss", "lm loss", "lm_loss", "reduced_train_loss", "train/loss",
                     "loss/train/total", "loss/train", "training_loss", "total_loss", "train/total_loss",
                     "train_loss_step", "train/loss_step"), "loss"),
    **dict.fromkeys(("val loss", "val_loss", "valid loss", "valid_loss", "validation loss", "validation_loss",
                     "eval loss", "eval_loss", "val/loss", "eval/loss", "loss/val", "loss/eval", "validation/loss",
                     "test_loss", "test loss", "val_loss_epoch", "loss/eval/total"), "val_loss"),
    **dict.fromkeys(("grad_norm", "grad norm", "gnorm", "gradient_norm", "grad_norm/total", "train/grad_norm",
                     "total_norm", "norm", "grad-norm"), "grad_norm"),
    **dict.fromkeys(("lr", "learning_rate", "learning rate", "train/learning_rate", "lr/group0", "lr-adam",
                     "lr-adamw", "lr-sgd"), "lr"),
    **dict.fromkeys(("loss_scale", "loss scale", "cur_scale", "scale", "grad_scale", "loss-scale"), "loss_scale"),
    **dict.fromkeys(("skipped", "skipped_iters", "skipped_steps", "number of skipped iterations"), "skipped"),
    **dict.fromkeys(("nan_count", "nan_iters", "nan_iterations", "number of nan iterations"), "nan_count"),
    **dict.fromkeys(("tps", "wps", "ups", "samples_per_second", "samples per second", "samplespersec", "throughput",
                     "tokens_per_second", "tok/s", "tflops", "train_samples_per_second", "samples/sec",
                     "throughput/tokens_per_sec", "throughput/samples_per_sec"), "throughput"),
    **dict.fromkeys(("iter_time", "step_time", "time_per_step", "iteration_time", "train_step_timing",
                     "train_step_timing in s", "time", "took", "batch_time"), "iter_time"),
}
# A space between key and value (``loss 2.3``) only for these: elsewhere "at step 10" or "rank 0" is prose.
SPACED = frozenset({"iteration", "epoch", "loss", "val_loss", "grad_norm", "lr", "loss_scale", "iter_time"})
INT_KEYS = frozenset({"iteration", "skipped", "nan_count"})
# Hugging Face's end-of-training averages (``{'train_runtime': ..., 'train_loss': ...}``); a JSON line of a tracker
# (``{"step": 2, "train_loss": 5.4, "grad_norm": 0.4}``) names ``train_loss`` too and is a progress line.
_SUMMARY_KEYS = ("train_runtime", "train_samples_per_second", "train_steps_per_second")


def canonical_key(key: str) -> str | None:
    """The metric a progress-line key names (its longest known suffix of words), or None."""
    words = key.lower().split(" ")
    for i in range(len(words)):
        name = ALIASES.get(" ".join(words[i:]))
        if name is not None:
            return name
    last = words[-1]
    if "loss" in last:
        parts = last.replace("/", "_").split("_")
        if "scale" in parts:
            return "loss_scale"
        if any(p in ("val", "valid", "validation", "eval", "test") for p in parts):
            return "val_loss"
        if parts[-1] == "loss" or parts[-2:] == ["loss", "step"]:
            return "loss"
    return None


_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+")
_NOT_TRAIN_LOSS = frozenset({"val", "valid", "validation", "eval", "test", "scale"})


def names_a_loss(key: str) -> bool:
    """Whether a key no alias knows still names a training loss: one of its words, in any separator or case
    style, ends in ``loss`` (``loss_G``, ``IDLoss``, ``loss_generators``), and none says validation or scale.
    A GAN or multi-task trainer prints several such losses and no plain one."""
    words = [w.lower() for w in _WORDS.findall(key)]
    return any(w.endswith("loss") for w in words) and not any(w in _NOT_TRAIN_LOSS for w in words)


def non_finite_value(text: str) -> float | None:
    """The value of a loss that is not the run's own loss only when it is NaN or infinite: its finite values
    are no series to find spikes in (each loss of a GAN has its own scale), a NaN is a NaN whichever loss it is."""
    value = to_float(text)
    return value if value is not None and not math.isfinite(value) else None


def comma_float(text: str) -> float | None:
    """A number printed with thousands separators (torchtitan's ``tps: 7,282``)."""
    return to_float(text.replace(",", ""))


def comma_int(text: str) -> int | None:
    return int_or_none(to_float(text.replace(",", "")))


def ms_value(text: str) -> float | None:
    """Milliseconds as seconds."""
    value = to_float(text)
    return value / 1000.0 if value is not None else None


def int_value(text: str) -> int | None:
    return int_or_none(to_float(text))


def kv_steps(message: str) -> tuple[str, list[tuple[str, Any, int, int]]] | None:
    """The metric fields of a pairs line as (kind, [(key, conversion, start, end)]): where each value is and how to
    read it, or None when the line is no progress line. ``parse_metric_line`` applies the conversions; the fast
    path keeps them per line shape."""
    dict_line = "{" in message
    if dict_line and any(k in message for k in _SUMMARY_KEYS):
        return None
    if any(word in message for word in (_ERROR_RECORD if dict_line else ERRORISH)):
        return None  # (a JSON error record, torchelastic's error.json: "FloatingPointError: loss is nan at step 12")
    ops: list[tuple[str, Any, int, int]] = []
    seen: set[str] = set()
    other_loss: tuple[str, Any, int, int] | None = None  # the first other key that names a loss
    epoch_step: tuple[str, Any, int, int] | None = None  # an iteration from the epoch and its step pair
    for m in KV_PAIR.finditer(message):
        name = canonical_key(m.group(2).translate(_FOLD))
        if name is None and other_loss is None and m.group(3).strip() and names_a_loss(m.group(2)):
            other_loss = ("loss", non_finite_value, *m.span(5))
        if name is None or name in seen or (not m.group(3).strip() and name not in SPACED):
            continue
        seen.add(name)
        value = m.group(5)
        if name == "epoch" and value.isdigit():
            pair = EPOCH_STEP.match(message, m.end(5))
            if pair is not None:
                epoch_step = ("iteration", epoch_step_value, m.start(5), pair.end())
        if "," in value:
            convert: Any = comma_int if name in INT_KEYS else comma_float
        elif name in INT_KEYS:
            convert = int_value
        elif name == "iter_time" and m.group(6) == "ms":
            convert = ms_value
        else:
            convert = to_float
        ops.append((name, convert, *m.span(5)))
    if "iteration" not in seen and epoch_step is not None:
        seen.add("iteration")
        ops.append(epoch_step)
    if "loss" not in seen and other_loss is not None:
        seen.add("loss")
        ops.append(other_loss)
    if not ("loss" in seen or "grad_norm" in seen or "val_loss" in seen):
        return None
    if not (dict_line or "iteration" in seen or "epoch" in seen):
        return None
    return ("train" if "loss" in seen or "grad_norm" in seen else "val"), ops


_FOLD = str.maketrans("0123456789", "0000000000")


def _kv(message: str) -> dict[str, Any] | None:
    steps = kv_steps(message)
    if steps is None:
        return None
    out: dict[str, Any] = {"kind": steps[0]}
    for key, convert, a, b in steps[1]:
        out[key] = convert(message[a:b])
    return out


_FACTS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"Total optimization steps = ([\d,]+)"), "total_steps"),
    (re.compile(r"Num Epochs = ([\d,]+)"), "num_epochs"),
    (re.compile(r"using world size:\s*(\d+)"), "world_size"),
    (re.compile(r"^\s*world_size\s*\.{3,}\s*(\d+)"), "world_size"),
    (re.compile(r"tensor-model-parallel size:\s*(\d+)"), "tensor_parallel"),
    (re.compile(r"^\s*tensor_model_parallel_size\s*\.{3,}\s*(\d+)"), "tensor_parallel"),
    (re.compile(r"pipeline-model-parallel size:\s*(\d+)"), "pipeline_parallel"),
    (re.compile(r"^\s*pipeline_model_parallel_size\s*\.{3,}\s*(\d+)"), "pipeline_parallel"),
    (re.compile(r"^\s*num_layers\s*\.{3,}\s*(\d+)"), "num_layers"),
    (re.compile(r"^\s*hidden_size\s*\.{3,}\s*(\d+)"), "hidden_size"),
    (re.compile(r"^\s*global_batch_size\s*\.{3,}\s*(\d+)"), "global_batch_size"),
    (re.compile(r"^\s*train_iters\s*\.{3,}\s*(\d+)"), "train_iters"),
)


def parse_job_facts(message: str) -> dict[str, int]:
    """Job facts a trainer prints at start-up (world size, parallelism, model shape, total steps).

    They key the history store's baselines ("the same setup") and turn Hugging Face epochs into iterations.
    """
    out: dict[str, int] = {}
    for pattern, name in _FACTS:
        m = pattern.search(message)
        if m:
            out.setdefault(name, int(m.group(1).replace(",", "")))
    return out


# ---------------------------------------------------------------------- GPU telemetry (nvidia-smi CSV queries)
_SLOW_COLUMNS = ("hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown", "sw_thermal_slowdown")


def telemetry_header(message: str) -> list[str] | None:
    """Column names of an ``nvidia-smi --query-gpu=... --format=csv`` header that reports clock slowdowns."""
    if "clocks_event_reasons" not in message and "clocks_throttle_reasons" not in message:
        return None
    cols = [c.strip().lower() for c in message.split(",")]
    return cols if any(c.endswith(_SLOW_COLUMNS) for c in cols) else None


def telemetry_slowdown(header: list[str], message: str) -> dict[str, str] | None:
    """For one CSV data line: the slowdown reasons that are ``Active`` (with the GPU index), or None."""
    values = [v.strip() for v in message.split(",")]
    if len(values) != len(header):
        return None
    active = [name.rsplit(".", 1)[-1] for name, v in zip(header, values, strict=True)
              if name.endswith(_SLOW_COLUMNS) and v.lower() == "active"]
    if not active:
        return None
    row = dict(zip(header, values, strict=True))
    return {"reasons": ",".join(active), "gpu": row.get("index", ""), "bus": row.get("pci.bus_id", ""),
            "temperature": row.get("temperature.gpu", ""), "clock": row.get("clocks.sm [mhz]", "")}
