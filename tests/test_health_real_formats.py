"""Training-health and numerical signals on the wording of real logs (lines taken from public issue reports)."""

from __future__ import annotations

from scan_helpers import DigitMiner, rec
from test_health import healthy_lines, job, signals

from l4lite.detect.base import Finding
from l4lite.detect.desync import DesyncDetector
from l4lite.detect.health import HealthDetector
from l4lite.diagnose.phasing import node_trackers, phase_of
from l4lite.rules.pack import RulePack
from l4lite.scan.metric_plans import MetricParser
from l4lite.scan.metrics import names_a_loss, parse_metric_line
from l4lite.scan.scanner import scan_records

# DeepSpeed issue 697: the fused fp16 optimizer's wording, after the run's first 150 steps
DS697 = [
    "[2021-01-26 22:03:55,650] [INFO] [timer.py:166:stop] 0/130, SamplesPerSec=29.524899679768",
    "[2021-01-26 22:03:59,609] [INFO] [timer.py:166:stop] 0/140, SamplesPerSec=29.58340685172515",
    "[2021-01-26 22:04:03,811] [INFO] [timer.py:166:stop] 0/150, SamplesPerSec=29.515393227502443",
    "Grad overflow on iteration 3",
    "[2021-01-26 22:04:09,190] [INFO] [fused_optimizer.py:316:_update_scale] Reducing dynamic loss scale from 8.0 to "
    "4.0",
    "[2021-01-26 22:04:09,191] [INFO] [logging.py:60:log_dist] [Rank 0] Overflow detected. Skipping step. Attempted "
    "loss scale: 8.0, reducing to 4.0",
    "[2021-01-26 22:04:09,191] [INFO] [timer.py:166:stop] 0/160, SamplesPerSec=28.925970601141177",
]


def timed(lines: list[str], start: float = 1000.0) -> list[tuple[float, str]]:
    return [(start + k, line) for k, line in enumerate(lines)]


def test_both_deepspeed_wordings_of_a_scale_cut_are_read_alike_by_both_parsers() -> None:
    fast = MetricParser()
    for line in DS697[4:6]:
        want = {"kind": "overflow", "loss_scale": 4.0, "skipped": 1}
        assert parse_metric_line(line) == want
        for _ in range(3):  # learnt shape
            assert fast.parse(line) == want


def test_a_scale_cut_to_the_floor_after_the_start_that_never_grows_back_is_numerical() -> None:
    found = signals(job({"n1": timed(DS697)}))
    floor = found["loss_scale_floor"]
    assert floor.category == "numerical" and floor.role == "root"  # type: ignore[attr-defined]


def test_a_scale_that_grew_earlier_and_then_fell_to_the_floor_is_numerical() -> None:
    """A scaler that found its level and grew once is no proof against a later collapse: only growth after the
    first cut past the search says the run recovered."""
    grew = ["[2021-01-26 21:50:01,000] [INFO] [logging.py:60:log_dist] [Rank 0] Overflow detected. Skipping step. "
            "Attempted loss scale: 16.0, reducing to 8.0",
            "[2021-01-26 21:55:01,000] [INFO] [logging.py:60:log_dist] [Rank 0] Overflow detected. Skipping step. "
            "Attempted loss scale: 32.0, reducing to 16.0"]  # between the two cuts it grew from 8 to 32
    found = signals(job({"n1": timed([*grew, *DS697])}))
    assert found["loss_scale_floor"].category == "numerical"  # type: ignore[attr-defined]


def test_the_same_cut_in_the_run_s_first_steps_is_the_scale_search() -> None:
    early = [line.replace("0/1", "0/") for line in DS697]  # steps 30..60: the search of the first iterations
    assert "loss_scale_floor" not in signals(job({"n1": timed(early)}))


def test_a_low_scale_that_grows_back_is_no_collapse() -> None:
    """fairseq late in a run: the scale dips to 0.5 and grows again while the loss keeps falling."""
    def epoch(k: int, scale: str) -> str:
        return (f"| epoch {k:03d} | loss {3.7 - k * 0.005:.3f} | nll_loss 1.919 | wps 397237 | num_updates "
                f"{12000 + 250 * k} | lr 0.000555556 | gnorm 0.279 | loss_scale {scale} | wall 19720")

    lines = [(100.0 * k, epoch(k, "1.000")) for k in range(1, 10)] + [
        (1000.0, "| WARNING: overflow detected, setting loss scale to: 0.5"), (1100.0, epoch(10, "0.500")),
        (1200.0, epoch(11, "1.000")), (1300.0, "| WARNING: overflow detected, setting loss scale to: 0.5"),
    ]
    found = signals(job({"n1": lines}))
    assert not {"loss_scale_floor", "loss_scale_collapse", "loss_scale_halving"} & set(found)


def test_names_a_loss_in_any_style() -> None:
    for key in ("loss_G", "IDLoss", "loss_generators", "bce_loss_total"):
        assert names_a_loss(key), key
    for key in ("val_loss_G", "loss_scale", "lossy", "gloss"[:1]):
        assert not names_a_loss(key), key


def test_ignite_terminate_on_nan_output_is_a_nan_loss() -> None:
    line = ("TerminateOnNan: Output '{'loss_generators': nan, 'loss_generator_a2b': nan, 'loss_generator_b2a': "
            "1.1836220026016235, 'loss_discriminators': 0.06603499501943588}' contains NaN or Inf. Stop training")
    out = parse_metric_line(line)
    assert out is not None and out["kind"] == "train" and out["loss"] != out["loss"]
    found = signals(job({"n1": [(1000.0, line)]}))
    assert found["nan"].category == "numerical"  # type: ignore[attr-defined]


def test_a_finite_other_loss_is_no_series_but_its_nan_is() -> None:
    """``loss_G=1.2`` is one of a GAN's losses, with its own scale: no loss value; ``loss_G=nan`` is a NaN."""
    assert parse_metric_line("epoch: 3, iter: 50, loss_G=1.25, loss_D=0.3")["loss"] is None  # type: ignore[index]
    lines = [(1000.0 + i, f"epoch: 3, iter: {i}, loss_G={v}, loss_D=0.3")
             for i, v in enumerate([1.2, 9.5, 0.4, 1.1, 7.0, 1.3])]
    assert "loss_spike" not in signals(job({"n1": lines}))
    lines.append((1010.0, "epoch: 3, iter: 10, IDLoss=nan, loss_D=0.3"))
    assert signals(job({"n1": lines}))["nan"].data["iteration"] == 10  # type: ignore[attr-defined]


HOROVOD = [
    "[2019-10-09 05:33:38.249493: W horovod/common/stall_inspector.cc:105] One or more tensors were submitted to be "
    "reduced, gathered or broadcasted by subset of ranks and are waiting for remainder of ranks for more than 60 "
    "seconds. This may indicate that different ranks are trying to submit different tensors or that only subset of "
    "ranks is submitting tensors, which will cause deadlock.",
    "Missing ranks:",
    "0: [allreduce.fc.weight, allreduce.fc.bias]",
    "3: [allreduce.fc.weight]",
    "[2019-10-09 05:34:38.249493: I some later line",
]


def test_horovod_stall_inspector_names_the_missing_ranks() -> None:
    records = [rec(m, node="n1", time=1000.0 + k, file="n1.log", line=k + 1) for k, m in enumerate(HOROVOD)]
    scan = scan_records(records, DigitMiner(), rules=RulePack.load())
    found = DesyncDetector().detect(scan)
    assert len(found) == 1 and found[0].data["ranks"] == [0, 3] and found[0].rank == 0
    assert [r.line for r in found[0].records] == [3, 4]


def test_a_divergence_on_an_unstepped_bar_takes_the_step_printed_before_it() -> None:
    """Ignite: the per-step bar carries no global step; the logger's ``Iter[16]`` line above the bar's jump does."""
    lines = []
    for i in range(2, 15, 2):
        lines += [f"Epoch [1/2]: [{i}/20]  {i * 5}%|██ , batch loss={5.9 - i * 0.03:.2f} [00:00<00:00]",
                  f"Epoch[1], Iter[{i}] Loss: {3.9 - i * 0.02:.4f}"]
    lines += ["Epoch [1/2]: [16/20]  80%|███ , batch loss=5.35 [00:00<00:00]", "Epoch[1], Iter[16] Loss: 3.6376",
              "Epoch [1/2]: [16/20]  80%|███ , batch loss=22.1 [00:00<00:00]",
              "Epoch [1/2]: [18/20]  90%|███ , batch loss=89.2 [00:00<00:00]", "Epoch[1], Iter[18] Loss: 588.1",
              "Epoch [1/2]: [20/20]  90%|███ , batch loss=300.2 [00:00<00:00]", "Epoch[1], Iter[20] Loss: 1964.4"]
    for i in range(2, 21, 2):
        lines += [f"Epoch [2/2]: [{i}/20]  {i * 5}%|██ , batch loss={400 + i}.0 [00:00<00:00]",
                  f"Epoch[2], Iter[{20 + i}] Loss: {2000 + i}.0"]
    found = HealthDetector().detect(job({"n1": [(None, m) for m in lines]}))  # type: ignore[misc]
    spike = next(f for f in found if f.data["signal"] == "loss_spike")
    assert spike.data["iteration"] == 16


def test_torchelastic_error_json_traceback_places_a_checkpoint_failure() -> None:
    """error.json holds the whole traceback escaped on one line: its innermost frame (torch's ``_save``) says where
    the run was, not the training markers around the line's inherited time."""
    text = ('{"message": {"message": "RuntimeError: unexpected pos", "extraInfo": {"py_callstack": "Traceback (most '
            'recent call last):\\n  File \\"torch/serialization.py\\", line 1312, in _save\\n    zip_file.write_record('
            'name, storage, num_bytes)\\nOSError: [Errno 28] No space left on device\\n"}}}')
    record = rec(text, node="n1", time=None, file="error.json", line=1)
    finding = Finding("rules", "storage", "root", 0.9, "ENOSPC", node="n1", records=[record], rule="enospc")
    scan = scan_records([rec(" iteration 5/ 100 | lm loss: 2.0 |", node="n1", time=10.0)], DigitMiner())
    trackers, job_events = node_trackers(scan)
    assert phase_of(finding, scan, trackers, job_events) == "checkpoint"


def test_a_hang_after_the_training_loop_ended_is_in_the_shutdown() -> None:
    lines = healthy_lines(60) + [(161.0, "wandb: Waiting for W&B process to finish... (success).")]
    lines += [(200.0 + 60 * j, "heartbeat: rank alive") for j in range(60)]
    hang = signals(job({"n1": lines}))["hang"]
    assert hang.data["phase_hint"] == "shutdown"  # type: ignore[attr-defined]
    mid = healthy_lines(60) + [(200.0 + 60 * j, "heartbeat: rank alive") for j in range(60)]
    assert "phase_hint" not in signals(job({"n1": mid}))["hang"].data  # type: ignore[attr-defined]
