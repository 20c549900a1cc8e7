"""Trainer metric line parsing across the frameworks the tool meets in practice."""

from __future__ import annotations

import math

import pytest

from l4lite.scan.metrics import parse_metric_line, to_float

MEGATRON = (" iteration    29050/  311541 | consumed samples:     10728784 | elapsed time per iteration (ms): 22148.5 |"
            " learning rate: 9.849E-05 | global batch size:  1024 | lm loss: 7.343709E+00 | loss scale: 8192.0 |"
            " grad norm: 0.512 | num zeros: 0.0 | number of skipped iterations:   1 | number of nan iterations:   2 |")


def test_megatron_iteration_line() -> None:
    out = parse_metric_line(MEGATRON)
    assert out is not None
    assert out["kind"] == "train" and out["iteration"] == 29050
    assert out["loss"] == pytest.approx(7.343709)
    assert out["iter_time"] == pytest.approx(22.1485)
    assert out["loss_scale"] == 8192.0 and out["grad_norm"] == pytest.approx(0.512)
    assert out["skipped"] == 1 and out["nan_count"] == 2
    assert out["lr"] == pytest.approx(9.849e-05)


def test_megatron_seconds_and_nan_grad_norm() -> None:
    line = ("[default7]: iteration    45000/  115311 | elapsed time per iteration (s): 111.00 | lm loss: 2.11E+00 |"
            " grad norm: nan |")
    out = parse_metric_line(line)
    assert out is not None and out["iter_time"] == pytest.approx(111.0)
    assert math.isnan(out["grad_norm"])


def test_megatron_validation_line() -> None:
    out = parse_metric_line("valid loss at iteration 45000 | lm loss value: 2.327091E+00 | lm loss PPL: 1.02E+01 |")
    assert out == {"kind": "val", "iteration": 45000, "val_loss": pytest.approx(2.327091)}


def test_deepspeed_step_timer_and_overflow() -> None:
    step = parse_metric_line("[Rank 0] step=40, skipped=2, lr=[5e-05], mom=[[0.9, 0.999]]")
    assert step is not None and step["iteration"] == 40 and step["skipped_total"] == 2 and step["lr"] == 5e-05
    timer = parse_metric_line("0/50, SamplesPerSec=83.73838805358588, MemAllocated=0.26GB, MaxMemAllocated=9.02GB")
    assert timer is not None and timer["iteration"] == 50 and timer["throughput"] == pytest.approx(83.738, rel=1e-3)
    ovf = parse_metric_line("[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 4096, reducing to 2048")
    assert ovf == {"kind": "overflow", "loss_scale": 2048.0, "skipped": 1}
    apex = parse_metric_line("Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to 32768.0")
    assert apex is not None and apex["loss_scale"] == 32768.0


def test_hf_trainer_dicts() -> None:
    out = parse_metric_line("{'loss': 0.0, 'grad_norm': nan, 'learning_rate': 9.77e-06, 'epoch': 0.53}")
    assert out is not None and out["loss"] == 0.0 and math.isnan(out["grad_norm"]) and out["lr"] == 9.77e-06
    ev = parse_metric_line("{'eval_loss': 1.25, 'eval_runtime': 3.0, 'epoch': 1.0}")
    assert ev == {"kind": "val", "val_loss": 1.25, "epoch": 1.0}
    assert parse_metric_line("{'train_runtime': 10.0, 'train_loss': 1.5, 'epoch': 3.0}") is None


def test_mmengine_lines() -> None:
    line = ("10/30 22:19:57 - mmengine - INFO - Epoch(train) [2][240/735]  lr: 1.9813e-04  eta: 2:44:49  time: 2.8874"
            "  data_time: 0.0042  memory: 10762  loss: 2.5128  grad_norm: nan")
    out = parse_metric_line(line)
    assert out is not None and out["iteration"] == 735 + 240 and out["iter_time"] == pytest.approx(2.8874)
    assert out["loss"] == pytest.approx(2.5128) and math.isnan(out["grad_norm"])
    it = parse_metric_line("Iter(train) [  200/10000]  lr: 1.0e-04  eta: 1:00:00  time: 0.5  loss: 1.5")
    assert it is not None and it["iteration"] == 200
    val = parse_metric_line("Epoch(val) [1][50/50]  loss: 2.1  data_time: 0.1")
    assert val == {"kind": "val", "val_loss": 2.1}


def test_nemo_progress_bar() -> None:
    line = ("Epoch 0: :   3%|▎         | 9000/301500 [1:42:42<55:37:46, v_num=0-56, reduced_train_loss=nan.0,"
            " global_step=9e+3, consumed_samples=6.3e+5, train_step_timing in s=0.615, val_loss=7.040]")
    out = parse_metric_line(line)
    assert out is not None and out["iteration"] == 9000 and math.isnan(out["loss"])
    assert out["iter_time"] == pytest.approx(0.615) and out["val_loss"] == pytest.approx(7.04)
    rate = parse_metric_line("Epoch 0:   6%|██   | 32040/500150 [6:28:43<94:39:17,  2.00it/s, loss=2.6, v_num=95nc]")
    assert rate is not None and rate["iteration"] == 32040 and rate["iter_time"] == pytest.approx(0.5)


def test_generic_lines() -> None:
    assert parse_metric_line("iter 100: loss 2.3456, time 123.45ms, mfu 12.3%") == {
        "kind": "train", "iteration": 100, "loss": 2.3456, "iter_time": pytest.approx(0.12345)}
    out = parse_metric_line("step 200: train loss 2.30, val loss 2.35")
    assert out is not None and out["loss"] == 2.30 and out["val_loss"] == 2.35
    only_val = parse_metric_line("step 300: val loss 2.40")
    assert only_val == {"kind": "val", "iteration": 300, "val_loss": 2.40}


@pytest.mark.parametrize("line", [
    "RuntimeError: loss is nan at step 10",
    "NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC",
    "Traceback (most recent call last):",
    "saving checkpoint at iteration 100 to /ckpt",
    "",
])
def test_non_metric_lines(line: str) -> None:
    assert parse_metric_line(line) is None


def test_to_float_variants() -> None:
    assert math.isnan(to_float("nan.0") or 0.0)
    assert to_float("-inf") == -math.inf and to_float("Inf") == math.inf
    assert to_float("1.5E+00") == 1.5 and to_float("x") is None


def test_nvidia_smi_csv_slowdown() -> None:
    from l4lite.scan.metrics import telemetry_header, telemetry_slowdown

    header = telemetry_header("timestamp, index, pci.bus_id, temperature.gpu, clocks.sm [MHz], "
                              "clocks_event_reasons.hw_slowdown, clocks_event_reasons.hw_thermal_slowdown")
    assert header is not None and telemetry_header("timestamp, index, temperature.gpu") is None
    hot = telemetry_slowdown(header, "2024/10/29 07:13:00.763, 1, 00000000:0F:00.0, 89, 978 MHz, Active, Active")
    assert hot == {"reasons": "hw_slowdown,hw_thermal_slowdown", "gpu": "1", "bus": "00000000:0F:00.0",
                   "temperature": "89", "clock": "978 MHz"}
    assert telemetry_slowdown(header, "2024/10/29 07:12:00.763, 1, 00000000:0F:00.0, 68, 1410 MHz, Not Active, "
                                      "Not Active") is None
    assert telemetry_slowdown(header, "a, b") is None


@pytest.mark.parametrize(("line", "iteration", "loss"), [
    ("2026-12-04 10:54:31,305 ignite.distributed INFO: Epoch[1], Iter[18] Loss: 588.1194", 18, 588.1194),
    ("Epoch [1/10], Step [100/600], Loss: 0.2100", 100, 0.21),
    ("12/04/2026 10:57:52 - INFO - __main__ - [RANK 0] step 14/40: train_loss nan lr 3.00e-03", 14, math.nan),
    ("iteration 7 loss -inf grad_norm 1.5", 7, -math.inf),
])
def test_a_step_in_brackets_and_a_non_finite_value_are_read(line: str, iteration: int, loss: float) -> None:
    """A bracketed step (Ignite, the PyTorch tutorials) is the iteration, and ``nan`` after a key is its value, not
    one more word of a longer key."""
    out = parse_metric_line(line)
    assert out is not None and out["iteration"] == iteration
    assert out["loss"] == loss or (math.isnan(loss) and math.isnan(out["loss"]))


def test_a_rank_or_device_in_brackets_is_no_metric() -> None:
    assert parse_metric_line("[rank3]: GPU[0] memory[80] loss of connection") is None
