"""The shape-plan fast path (l4lite.scan.metric_plans.MetricParser) gives exactly parse_metric_line's answers.

Exactly means the same keys in the same order and values of the same type and repr (nan is nan, 1 is not 1.0).
Every fixture line and message goes through one parser, then again with its digits changed (the same shapes, other
numbers, so learnt plans are applied to lines they were not learnt from); generated progress lines of every
format pair a line with a same-shape twin whose digits differ, including the value-dependent corners (nan/inf,
signs, exponent overflow, zero rates).
"""

from __future__ import annotations

import json
import math
import random
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from l4lite.ingest.reader import IngestOptions, iter_records
from l4lite.ingest.shape import shape_of
from l4lite.records import Accounting
from l4lite.scan import metric_plans as metrics_fast
from l4lite.scan import metrics
from l4lite.scan.metric_plans import POINT_KEYS, MetricParser, plan_metric_line, same_output
from l4lite.scan.metrics import parse_metric_line
from l4lite.scan.points import PendingPoint, point

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"


def _fixture_files() -> list[Path]:
    files = [p for d in ("suite", "jobs") for p in sorted((FIXTURES / d).rglob("*")) if p.is_file()]
    assert len(files) > 100
    return files


def _fixture_lines() -> list[str]:
    lines: list[str] = []
    for path in _fixture_files():
        lines.extend(path.read_text(encoding="utf-8", errors="surrogateescape").splitlines())
    for row in (FIXTURES / "real" / "real-failures.jsonl").read_text(encoding="utf-8").splitlines():
        if row.strip():
            lines.extend(json.loads(row)["lines"])
    corpus = FIXTURES / "real" / "corpus.jsonl"  # the real corpus's rule-writing part, where present
    if corpus.exists():
        for row in corpus.read_text(encoding="utf-8").splitlines():
            entry = json.loads(row) if row.strip() else {}
            if entry.get("split") == "dev":
                lines.extend(entry["lines"])
    return lines


def _fixture_messages() -> list[str]:
    """The header-stripped messages the scan hands to the parser, from ingesting every fixture job."""
    jobs = sorted(p for d in ("suite", "jobs") for p in (FIXTURES / d).iterdir() if p.is_dir())
    out: list[str] = []
    for job in jobs:
        out.extend(r.message for r in iter_records([str(job)], IngestOptions(), Accounting()))
    return out


def _redigit(line: str, rng: random.Random) -> str:
    return re.sub(r"[0-9]", lambda _m: rng.choice("0000123456789"), line)


def _never_flagged(values: dict) -> bool:
    """What ``MetricPoint.flagged`` answers for a point of these values, negated."""
    finite = all(values.get(k) is None or math.isfinite(values[k]) for k in ("loss", "grad_norm", "val_loss"))
    return finite and not values.get("nan_count") and values["kind"] != "overflow"


def _check_stream(lines: list[str], parser: MetricParser | None = None) -> int:
    """Parse every line with one parser and the reference; return how many are metric lines. Where the line's
    shape has a deferred plan, its values and iteration must be the reference's too, and never flagged."""
    parser = MetricParser() if parser is None else parser
    found = 0
    for line in lines:
        want = parse_metric_line(line)
        got = parser.parse(line)
        assert same_output(got, want), (line, got, want)
        found += want is not None
        deferred = parser.deferred(shape_of(line))
        assert want is None or not parser.not_metric(shape_of(line)), line  # a run skips such shapes' lines
        if deferred is not None:
            assert same_output(deferred.values(line), want), (line, want)
            convert, a, b = deferred.iteration or (lambda _text: None, 0, 0)
            assert convert(line[a:b]) == want.get("iteration"), line
            convert, a, b = deferred.nan_count or (lambda _text: None, 0, 0)
            assert convert(line[a:b]) == want.get("nan_count"), line
            assert _never_flagged(want) or want.get("nan_count"), line  # only the NaN counter flags such a line
            assert deferred.epoch == ("epoch" in want), line
            # a kept point converts only the fields it holds: what it would hold of the values
            assert [repr(v) for v in deferred.point_values(line)] == [repr(want.get(k)) for k in POINT_KEYS], line
            args = (7, 3, "node-1", 0, 1.5, "train.log", 9, line)
            assert repr(point(PendingPoint((deferred, 0, len(line)), *args))) == repr(point(PendingPoint(want, *args)))
    return found


@pytest.fixture(scope="module")
def corpus() -> list[str]:
    return _fixture_lines() + _fixture_messages()


def test_every_fixture_line_and_message(corpus: list[str]) -> None:
    parser = MetricParser()
    found = _check_stream(corpus, parser)
    assert found > 1000  # the fixtures do hold plenty of progress lines
    assert parser.stats()["plans"] > 20
    rng = random.Random(7)  # the same shapes with other numbers, learnt plans applied to them
    _check_stream([_redigit(line, rng) for line in corpus], parser)
    _check_stream([_redigit(line, rng) for line in reversed(corpus)], MetricParser())


def test_fast_path_does_use_plans(corpus: list[str]) -> None:
    parser = MetricParser()
    metric = [line for line in corpus if parse_metric_line(line) is not None]
    for line in metric:
        parser.parse(line)
    stats = parser.stats()
    assert stats["plans"] >= 0.9 * (stats["plans"] + stats["reference"])  # almost no shape falls back
    deferred = [line for line in metric if parser.deferred(shape_of(line)) is not None]
    assert len(deferred) > 0.5 * len(metric)  # most progress lines can wait for their values in a scan


def test_tiny_memo_stays_bounded_and_correct(corpus: list[str]) -> None:
    parser = MetricParser(max_shapes=8, max_chars=120)
    _check_stream(corpus[:5000], parser)
    assert len(parser) <= 2 * 8  # learnt shapes and shapes seen once


# --------------------------------------------------------------------------- generated lines, all formats
_INT = st.text("0123456789", min_size=1, max_size=6)
_FRAC = st.text("0123456789", max_size=6)
_SIGN = st.sampled_from(["", "-", "+"])
_NUMBER = st.one_of(
    _INT,
    st.builds(lambda s, a, b: f"{s}{a}.{b}", _SIGN, _INT, _FRAC),
    st.builds(lambda s, a, b, e, es, x: f"{s}{a}.{b}{e}{es}{x}", _SIGN, _INT, _FRAC, st.sampled_from("eE"), _SIGN,
              st.text("0123456789", min_size=1, max_size=3)),
    st.sampled_from(["nan", "NaN", "-nan", "inf", "-inf", "Inf", "INF", "infinity", "nan.0", "inf.0", "0", "0.0",
                     "0.00", ".5", "1_000", "1e999", "-1e999", "9" * 320, "0e0"]),
)
_PREFIX = st.sampled_from(["", "[default3]:", "3: ", "[Rank 12] ", "[rank0]: ",
                           "[INFO|trainer.py:3819] 2024-08-04 00:43:58,027 >> ", "[1,0]<stdout>:"])

# Each format: (number of integer slots, number of numeric slots, builder)
_FORMATS: dict[str, tuple[int, int, Callable[[list[str], list[str]], str]]] = {
    "deepspeed_progress": (2, 4, lambda i, x: f"[Rank {i[0]}] step={i[1]}, loss={x[0]}, grad_norm={x[1]}, "
                                              f"lr={x[2]}, step_time={x[3]}s"),
    "nanogpt": (1, 3, lambda i, x: f"iter {i[0]}: loss {x[0]}, time {x[1]}ms, mfu {x[2]}%"),
    "torchtitan": (1, 3, lambda i, x: f"step: {i[0]}  loss: {x[0]}  memory: {x[1]}GiB  tps: {x[2]}"),
    "generic_val": (1, 2, lambda i, x: f"step {i[0]}: train loss {x[0]}, val loss {x[1]}"),
    "generic_val_only": (1, 2, lambda i, x: f"global_step={i[0]} val_loss={x[0]} time={x[1]}s"),
    "megatron": (4, 7, lambda i, x: f" iteration {i[0]:>8}/ {i[1]} | consumed samples: {i[2]} | elapsed time per "
                                    f"iteration (ms): {x[0]} | learning rate: {x[1]} | global batch size: {i[2]} | "
                                    f"lm loss: {x[2]} | loss scale: {x[3]} | grad norm: {x[4]} | num zeros: "
                                    f"{x[5]} | number of skipped iterations: {i[3]} | number of nan iterations: "
                                    f"{x[6]} |"),
    "megatron_mtp": (3, 3, lambda i, x: f"iteration {i[0]}/{i[1]} | mtp_{i[2]} loss: {x[0]} | lm loss: {x[1]} | "
                                        f"grad norm: {x[2]} |"),
    "megatron_seconds": (2, 3, lambda i, x: f"iteration {i[0]}/{i[1]} | elapsed time per iteration (s): {x[0]} | "
                                            f"lm loss: {x[1]} | tflops: {x[2]} | samples per second: {x[1]} |"),
    "megatron_val": (1, 2, lambda i, x: f"validation loss at iteration {i[0]} | lm loss value: {x[0]} | "
                                        f"lm loss PPL: {x[1]} |"),
    "deepspeed_step": (3, 1, lambda i, x: f"[Rank {i[0]}] step={i[1]}, skipped={i[2]}, lr=[{x[0]}], "
                                          "mom=[[0.9, 0.95]]"),
    "deepspeed_timer": (2, 3, lambda i, x: f"{i[0]}/{i[1]}, SamplesPerSec={x[0]}, MemAllocated={x[1]}GB, "
                                           f"MaxMemAllocated={x[2]}GB"),
    "deepspeed_running": (3, 2, lambda i, x: f"epoch={i[0]}/micro_step={i[1]}/global_step={i[2]}, "
                                             f"RunningAvgSamplesPerSec={x[0]}, CurrSamplesPerSec={x[1]}"),
    "overflow": (1, 2, lambda i, x: f"[deepspeed] OVERFLOW! Rank {i[0]} Skipping step. Attempted loss scale: "
                                    f"{x[0]}, reducing to {x[1]}"),
    "apex": (1, 1, lambda i, x: f"Gradient overflow.  Skipping step, loss scaler {i[0]} reducing loss scale to "
                                f"{x[0]}"),
    "hf": (0, 4, lambda i, x: f"{{'loss': {x[0]}, 'grad_norm': {x[1]}, 'learning_rate': {x[2]}, 'epoch': {x[3]}}}"),
    "hf_step": (0, 3, lambda i, x: f"{{'loss': {x[0]}, 'step': {x[1]}, 'loss1': {x[2]}, 'loss2': {x[0]}}}"),
    "hf_eval": (0, 3, lambda i, x: f"{{'eval_loss': {x[0]}, 'eval_runtime': {x[1]}, 'step': {x[2]}}}"),
    "mmengine_epoch": (4, 4, lambda i, x: f"Epoch(train) [{i[0]}][{i[1]}/{i[2]}]  lr: {x[0]}  eta: 1:0{i[3]}:00  "
                                          f"time: {x[1]}  data_time: {x[2]}  loss: {x[3]}  grad_norm: {x[2]}"),
    "mmengine_iter": (2, 2, lambda i, x: f"Iter(train) [{i[0]}/{i[1]}]  lr: {x[0]}  loss: {x[1]}  loss_0: {x[0]}"),
    "mmengine_val": (3, 1, lambda i, x: f"Epoch(val) [{i[0]}][{i[1]}/{i[2]}]  loss: {x[0]}  data_time: 0.1"),
    "mmengine_epoch_only": (1, 2, lambda i, x: f"Epoch(train) [{i[0]}]  loss: {x[0]}  time: {x[1]}"),
    "ptl_nemo": (4, 4, lambda i, x: f"Epoch {i[0]}:  3%|▎ | {i[1]}/{i[2]} [1:42:42<55:37:4{i[3]}, "
                                    f"reduced_train_loss={x[0]}, global_step={x[1]}, train_step_timing in s={x[2]}, "
                                    f"val_loss={x[3]}]"),
    "ptl_rate": (3, 3, lambda i, x: f"Epoch {i[0]}:   6%|██   | {i[1]}/{i[2]} [6:28:43<94:39:17,  {x[0]}it/s, "
                                    f"loss={x[1]}, v_num=95nc, grad_norm={x[2]}]"),
    # the pairs reader (l4lite.scan.metrics.kv_steps): real formats, sources in tests/test_metrics.py
    "hf_quoted": (0, 4, lambda i, x: f"{{'loss': '{x[0]}', 'grad_norm': '{x[1]}', 'learning_rate': '{x[2]}', "
                                     f"'epoch': '{x[3]}'}}"),
    "json": (2, 3, lambda i, x: f'{{"epoch": {i[0]}, "loss": "{x[0]}", "wps": {i[1]},{i[1]}00, "num_updates": '
                                f'{i[1]}, "gnorm": "{x[1]}", "loss_scale": "{x[2]}"}}'),
    "fairseq_inner": (4, 4, lambda i, x: f"| epoch {i[0]}:   {i[1]} / {i[2]} loss={x[0]}, nll_loss={x[1]}, "
                                         f"wps={x[2]}, num_updates={i[3]}, lr={x[3]}, gnorm={x[1]}, train_wall={i[0]}"),
    "fairseq_table": (2, 4, lambda i, x: f"| epoch {i[0]} | loss {x[0]} | nll_loss {x[1]} | wps {x[2]} | "
                                         f"num_updates {i[1]} | lr {x[3]} | gnorm {x[1]} | clip 100% | "
                                         f"loss_scale {x[2]} | wall {i[0]}"),
    "fairseq_valid": (2, 2, lambda i, x: f"| epoch {i[0]} | valid on 'valid' subset | valid_loss {x[0]} | "
                                         f"valid_ppl {x[1]} | num_updates {i[1]}"),
    "torchtitan_real": (3, 4, lambda i, x: f"[rank0]:[titan] 2026-05-18 16:04:46,338 - root - INFO - step: {i[0]}  "
                                           f"loss:  {x[0]}  grad_norm:  {x[1]}  memory:  {x[2]}GiB({x[3]}%)  "
                                           f"tps: {i[1]},{i[2]}  tflops: {x[2]}  mfu: {x[3]}%"),
    "llmc": (1, 2, lambda i, x: f"step {i[0]}: train loss {x[0]} (took {x[1]} ms)"),
    "composer": (3, 2, lambda i, x: f"[epoch={i[0]}][batch={i[1]}/{i[2]}]: Train loss/train/total: {x[0]} "
                                    f"Train trainer/grad_norm: {x[1]}"),
    "lightning_vnum": (3, 3, lambda i, x: f"Epoch {i[0]}: 100%|#| {i[1]}/{i[2]} [00:02<00:00, {x[0]}it/s, v_num=3, "
                                          f"train_loss_step={x[1]}, val_loss={x[2]}]"),
    "ptl_s_per_it": (2, 3, lambda i, x: f"Training: {i[0]}%|#| {i[1]}/9 [00:01<00:02, {x[0]}s/it, step={x[1]}, "
                                        f"train_loss={x[2]}, lr={x[0]}]"),
}

_TOKENS = ["loss", "Loss", "val_loss", "train loss", "iteration", "iter", "step", "global_step", "grad_norm",
           "grad norm", "time", "step_time", "ms", "s", "lr", "=", ": ", ":", " ", "  ", ",", "|", "[", "]", "/",
           "{'", "'", "}", "(train)", "(val)", "Epoch", "Iter", "it/s", "s/it", "%|", "OVERFLOW", "overflow",
           "skipped=", "SamplesPerSec=", "loss at", "lm loss value", "mtp_1 loss", "mtp_7 loss", "nan", "inf",
           ".0", ".5", "e-", "E+", "-", "+", "0", "1", "7", "42", "3.25", "Error", "reducing loss scale to",
           "Attempted loss scale:", "reducing to", "elapsed time per iteration (ms)", "number of skipped iterations",
           "ſ", "K", "٣", "é", "{", '"', "tps", "gnorm", "epoch", "took", "batch=", "1,234", "loss/train/total",
           "valid_loss", "num_updates"]


def _twins(data: st.DataObject, line: str) -> list[str]:
    """The line and three same-shape twins with other digits (the first sighting of a shape goes to the reference,
    the second learns its plan, the rest use it)."""
    count = sum(ch in "0123456789" for ch in line)
    out = [line]
    for _ in range(3):
        digits = iter(data.draw(st.lists(st.sampled_from("0123456789"), min_size=count, max_size=count)))
        out.append(re.sub(r"[0-9]", lambda _m, d=digits: next(d), line))
    return out


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(sorted(_FORMATS)), _PREFIX, st.data())
def test_generated_progress_lines(fmt: str, prefix: str, data: st.DataObject) -> None:
    n_int, n_num, build = _FORMATS[fmt]
    ints = data.draw(st.lists(_INT, min_size=n_int, max_size=n_int))
    nums = data.draw(st.lists(_NUMBER, min_size=n_num, max_size=n_num))
    line = prefix + build(ints, nums)
    parser = MetricParser()
    _check_stream(_twins(data, line), parser)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(_TOKENS), max_size=30), st.data())
def test_generated_token_soup(tokens: list[str], data: st.DataObject) -> None:
    _check_stream(_twins(data, "".join(tokens)))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(sorted(_FORMATS)), _PREFIX, st.data())
def test_lines_of_new_shapes_by_the_coarse_plan(fmt: str, prefix: str, data: st.DataObject) -> None:
    """Numbers of every width in one stream: after its checks, a coarse shape's plan answers alone for lines of
    shapes never seen (fairseq's lines are nearly all of new shapes); it must give the reference's answer."""
    n_int, n_num, build = _FORMATS[fmt]
    lines = []
    for _ in range(metrics_fast.COARSE_CHECKS + 6):
        ints = data.draw(st.lists(_INT, min_size=n_int, max_size=n_int))
        nums = data.draw(st.lists(_NUMBER, min_size=n_num, max_size=n_num))
        lines.append(prefix + build(ints, nums))
    _check_stream(lines)


def test_coarse_plan_answers_alone_only_after_its_checks_and_is_dropped_when_wrong() -> None:
    rng = random.Random(29)
    build = _FORMATS["fairseq_inner"][2]

    def line() -> str:
        return build([str(rng.randrange(10 ** rng.randrange(1, 6))) for _ in range(4)],
                     [f"{rng.random() * 10 ** rng.randrange(0, 5):.{rng.randrange(1, 4)}f}" for _ in range(4)])

    parser = MetricParser()
    first = line()
    _check_stream([first] + [line() for _ in range(40)], parser)
    entry = parser._coarse[metrics_fast._COARSE.sub(rb"\1\2", shape_of(first))]
    assert entry[0] is not None and entry[1] == metrics_fast.COARSE_CHECKS
    kind, keys, conversions, picks, count = entry[0]
    entry[0] = (kind, keys, conversions, tuple(reversed(picks)), count)  # a plan that reads the wrong numbers
    probe = line()
    assert not same_output(metrics_fast.apply_coarse(entry[0], probe), parse_metric_line(probe))
    entry[1] = 0
    _check_stream([line() for _ in range(10)], parser)  # checked against the reference: dropped, never answers
    assert entry[0] is None


@pytest.mark.parametrize("a, b", [
    # the only literal digits the reference matches: "nan.0" in numbers and the "mtp_1 loss" Megatron key
    ("Epoch(train) [1][2/3]  loss: nan.0  lr: 1.0", "Epoch(train) [1][2/3]  loss: nan.5  lr: 1.0"),
    ("Epoch(train) [1][2/3]  loss: infinity.0  lr: 1.0", "Epoch(train) [1][2/3]  loss: infinity.5  lr: 1.0"),
    ("iteration 5/9 | mtp_1 loss: 2.0 | lm loss: 3.0 |", "iteration 5/9 | mtp_2 loss: 2.0 | lm loss: 3.0 |"),
    ("iteration 5/9 | mtp_2 loss: 2.0 | lm loss: 3.0 |", "iteration 5/9 | mtp_1 loss: 2.0 | lm loss: 3.0 |"),
    # value-dependent branches: a zero rate, an infinite step, an overflowing integer field
    ("Epoch 0: 1%| | 5/9 [00:01<00:02, 2.00it/s, loss=1.5]", "Epoch 0: 1%| | 5/9 [00:01<00:02, 0.00it/s, loss=1.5]"),
    ("Epoch 0: 1%| | 5/9 [00:01, 1e+099it/s, loss=1.5]", "Epoch 0: 1%| | 5/9 [00:01, 1e+999it/s, loss=1.5]"),
    ("Epoch 0: 1%| | 5/9 [00:01, 1e-099s/it, loss=1.5]", "Epoch 0: 1%| | 5/9 [00:01, 0e-099s/it, loss=1.5]"),
    ("Epoch 0: 1%| | 5/9 [00:01, loss=1.5, global_step=1e+3]", "Epoch 0: 1%| | 5/9 [00:01, loss=1.5, global_step=1e+999]"),
    ("iteration 5/9 | lm loss: 1.0 | number of skipped iterations: 1e2 |",
     "iteration 5/9 | lm loss: 1.0 | number of skipped iterations: 1e999 |"),
    ("{'loss': 1.0, 'step': 1e3}", "{'loss': 1.0, 'step': 1e999}"),
    # integers past a double's precision: _int(float(text)) is not int(text)
    ("iteration 5/9 | lm loss: 1.0 | number of nan iterations: 10000000000000000 |",
     "iteration 5/9 | lm loss: 1.0 | number of nan iterations: 12345678901234567 |"),
    ("iteration 5/9 | lm loss: 1.0 | number of nan iterations:  999999999999999 |",
     "iteration 5/9 | lm loss: 1.0 | number of nan iterations:  100000000000001 |"),
    ("Epoch(train) [2][3/4]  loss: 1.5", "Epoch(train) [0][3/4]  loss: 1.5"),
])
def test_lines_where_the_digits_matter(a: str, b: str) -> None:
    _check_stream([a, a, b, a])  # seen, learnt from a, the plan applied to b
    _check_stream([b, b, a, b])


@pytest.mark.parametrize("fmt", sorted(_FORMATS))
def test_every_format_gets_a_plan(fmt: str) -> None:
    """Ordinary numbers: each format's first line yields a plan that the following lines of its shape reuse."""
    n_int, n_num, build = _FORMATS[fmt]
    parser = MetricParser()
    rng = random.Random(3)
    line = build([str(5 + k) for k in range(n_int)], [f"{1.25 + k:.4f}" for k in range(n_num)])
    lines = [line] + [_redigit(line, rng).replace("00", "12") for _ in range(20)]
    _check_stream(lines, parser)
    metric = parse_metric_line(line) is not None
    stats = parser.stats()
    del stats["seen_once"]
    if fmt == "megatron_mtp":  # "mtp_1 loss" is a key where the digit matters: always the reference parser
        assert stats == {"plans": 0, "not_metric": 0, "reference": 1}
    else:
        assert stats == {"plans": int(metric), "not_metric": int(not metric), "reference": 0}


def test_hostile_huge_integer_is_no_metric_line() -> None:
    line = "step " + "9" * 5000 + " loss 1.0"  # int() refuses more than 4300 digits; as a float it is infinite
    want = parse_metric_line(line)
    assert want == {"kind": "train", "iteration": None, "loss": 1.0}
    parser = MetricParser(max_chars=10_000)
    assert all(same_output(parser.parse(line), want) for _ in range(3))


def test_same_output_is_strict() -> None:
    assert same_output({"a": float("nan")}, {"a": float("nan")})
    assert not same_output({"a": 1}, {"a": 1.0})
    assert not same_output({"a": 1.0, "b": 2.0}, {"b": 2.0, "a": 1.0})
    assert not same_output({"a": 0.0}, {"a": -0.0})
    assert not same_output(None, {})


def test_gate_words_cover_the_unrolled_gate() -> None:
    for word in metrics._GATE_WORDS:
        assert metrics_fast.may_be_metric_line(f"x {word} y")
    assert not metrics_fast.may_be_metric_line("NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read")


def test_reference_regexes_tell_no_digit_from_another() -> None:
    """The shape argument: no regex of the reference matches a literal digit, except the ``\\.0`` in _NUM."""
    assert not re.search(r"[0-9]", re.sub(r"\\d|\\\.0", "", metrics._NUM))
    for name in dir(metrics):
        value = getattr(metrics, name)
        if isinstance(value, re.Pattern) and name.startswith(("MEGATRON", "DS_", "APEX", "KV_", "MM_", "PTL_")):
            text = value.pattern.replace(metrics._NUM, "")
            text = re.sub(r"\\d|\\[1-9]|\{\d+(?:,\d*)?\}", "", text)  # digit classes, back-references, counts
            assert not re.search(r"[0-9]", text), (name, value.pattern)


def test_plan_is_none_exactly_where_the_reference_finds_nothing() -> None:
    assert plan_metric_line("NCCL INFO Bootstrap : Using ib0") is None
    assert plan_metric_line("{'train_runtime': 10.0, 'train_loss': 1.5, 'epoch': 3.0}") is None
    assert plan_metric_line("[Rank 0] step=16, loss=9.7881, grad_norm=5.0039, step_time=1.579s") is not None
