"""Two readings of real progress logs (issue 26): a step pair after an epoch index with no key of its own is the
iteration, and a non-finite warning that the fp16 loss scaler answers by skipping the step is no fault."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from l4lite.api import analyze
from l4lite.options import AnalyzeOptions
from l4lite.scan.metric_plans import MetricParser
from l4lite.scan.metrics import parse_metric_line

# (line, the iteration it names): baby-llama2-chinese #17, mmcv, DeiT/timm's MetricLogger (right-aligned step)
EPOCH_STEP_LINES = [
    ("[2023-08-30 16:29:49,699][pretrain.py][INFO] Epoch:[0/2](7000/293491) loss:4.294 lr:0.0000987 "
     "epoch_Time:1044.0min:", 7000),
    ("2020-05-01 10:00:00,000 - mmdet - INFO - Epoch [1][200/62598]\tlr: 1.000e-02, eta: 3 days, 1:02:03, "
     "time: 0.512, data_time: 0.011, memory: 3839, loss_cls: 0.5123, loss_bbox: 0.3011, loss: 0.8134, "
     "grad_norm: 4.2", 200),
    ("Epoch [3][200/1000]\tlr: 1.000e-02, time: 0.512, loss: 0.8134", 2 * 1000 + 200),
    ("Epoch: [24]  [1230/1251]  eta: 0:00:39  lr: 0.000729  loss: 4.1037 (4.0123)  time: 0.3101  data: 0.0002",
     23 * 1251 + 1230),
    ("Epoch: [24]  [   0/1251]  eta: 0:00:39  lr: 0.000729  loss: 4.1037 (4.0123)  time: 0.3101  data: 0.0002",
     23 * 1251),
]


@pytest.mark.parametrize(("line", "iteration"), EPOCH_STEP_LINES)
def test_a_step_pair_after_an_epoch_index_is_the_iteration(line: str, iteration: int) -> None:
    fast = MetricParser()
    got = parse_metric_line(line)
    assert got is not None and got["iteration"] == iteration and got["loss"] > 0
    for _ in range(3):  # the fast path learns the shape and answers alike
        assert fast.parse(line) == got


def test_the_epoch_step_reading_is_mmengines() -> None:
    mm = parse_metric_line("Epoch(train) [3][200/1000]  lr: 1.0000e-02  time: 0.5120  loss: 0.8134")
    assert mm is not None and mm["iteration"] == 2200
    plain = parse_metric_line("Epoch [3][200/1000]\tlr: 1.000e-02, time: 0.512, loss: 0.8134")
    assert plain is not None and plain["iteration"] == mm["iteration"]


@pytest.mark.parametrize("line", [
    "Epoch 3 [00:12<01:23, 3.2it/s] loss: 1.2",  # a tqdm timer is no step pair
    "Epoch [1/2] loss: 1.2",  # the epoch of a total, no step after it
    "Epoch [1/2], [3 images] loss: 1.2",  # a bracket after a comma is not the epoch's step
    "epoch: 0.09 [1/2] loss: 1.2",  # a fractional epoch (Hugging Face) has no step within it
])
def test_no_step_pair_is_read_where_there_is_none(line: str) -> None:
    got = parse_metric_line(line)
    assert got is not None and "iteration" not in got
    assert MetricParser().parse(line) == got


def test_a_step_with_its_own_key_wins_over_the_pair() -> None:
    got = parse_metric_line("Epoch [1/10], Step [100/600], Loss: 0.21")
    assert got is not None and got["iteration"] == 100


# UNITER #28 (apex AMP under ``mpirun --tag-output``): the loss scaler's search in the first two steps, then on
UNITER = [
    "[1,1]<stdout>:Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to 32768.0",
    "[1,0]<stdout>:Warning: NaN or Inf found in input tensor.",
    "[1,0]<stdout>:Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to 32768.0",
    "  0%|          | 1/8000 [00:02<5:51:34,  2.64s/it][1,0]<stdout>:Warning: NaN or Inf found in input tensor.",
    "[1,0]<stdout>:Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to 16384.0",
    "  0%|          | 2/8000 [00:03<4:48:42,  2.17s/it][1,1]<stdout>:Gradient overflow.  Skipping step, loss scaler 0 "
    "reducing loss scale to 16384.0",
    "  1%|▏         | 100/8000 [02:22<3:09:47,  1.44s/it][1,0]<stderr>:09/13/2020 04:37:50 - INFO - __main__ -   "
    "============Step 100=============",
    "[1,0]<stderr>:09/13/2020 04:37:50 - INFO - __main__ -   32000 examples trained at 225 ex/s",
    "[1,0]<stderr>:09/13/2020 04:37:50 - INFO - __main__ -   ===========================================",
]


def _analyze(tmp_path: Path, lines: list[str]) -> Any:
    d = tmp_path / "node-a"
    d.mkdir(parents=True)
    (d / "train.log").write_text("\n".join(lines) + "\n")
    return analyze([str(tmp_path)], AnalyzeOptions())


def test_the_fp16_scale_search_with_apexs_non_finite_warning_is_healthy(tmp_path: Path) -> None:
    """apex warns of a non-finite tensor, then skips the step and halves the scale; training goes on."""
    inc = _analyze(tmp_path, UNITER)
    assert inc.status == "healthy", inc.summary


def test_the_same_warning_with_no_skip_after_it_is_still_numerical(tmp_path: Path) -> None:
    inc = _analyze(tmp_path, [line for line in UNITER if "[1,0]<stdout>:Gradient" not in line])
    assert inc.status == "incident" and inc.category == "numerical", inc.summary


def test_a_skip_on_another_stream_does_not_answer_the_warning(tmp_path: Path) -> None:
    lines = [line.replace("[1,0]<stdout>:Gradient", "[1,1]<stdout>:Gradient") for line in UNITER]
    inc = _analyze(tmp_path, lines)
    assert inc.status == "incident" and inc.category == "numerical", inc.summary


def test_a_nan_loss_under_an_epoch_step_pair_names_its_iteration(tmp_path: Path) -> None:
    """baby-llama2-chinese #17: before, the NaN was found but no iteration could be given for it."""
    d = tmp_path / "node-a"
    d.mkdir(parents=True)
    lines = [f"[2023-08-30 16:{k:02d}:00,000][pretrain.py][INFO] Epoch:[0/2]({k * 1000}/293491) "
             f"loss:{'nan' if k >= 7 else f'{6.0 - k * 0.2:.3f}'} lr:0.0001000 epoch_Time:1044.0min:"
             for k in range(12)]
    (d / "train.log").write_text("\n".join(lines) + "\n")
    inc = analyze([str(tmp_path)], AnalyzeOptions())
    assert inc.status == "incident" and inc.category == "numerical", inc.summary
    assert "iteration 7000" in inc.summary, inc.summary
