"""Progress lines of any trainer, and the health findings read from them, on real lines.

Each line below is quoted from the source in the comment above it (numbers changed only where a test needs a
series: the line's format stays as printed). The fast path must give the same answers:
tests/test_metrics_fast.py compares both on every format.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from scan_helpers import DigitMiner, rec

from l4lite.api import analyze
from l4lite.detect.desync import DesyncDetector
from l4lite.detect.health import HealthDetector
from l4lite.options import AnalyzeOptions
from l4lite.records import Record
from l4lite.rules.pack import RulePack
from l4lite.scan.metric_plans import MetricParser, same_output
from l4lite.scan.metrics import canonical_key, parse_metric_line
from l4lite.scan.phases import match_marker
from l4lite.scan.scanner import JobScan, scan_records

ROOT = Path(__file__).resolve().parent.parent
REAL = ROOT / "fixtures" / "real" / "real-failures.jsonl"
REAL_JOBS = ROOT / "fixtures" / "real_jobs"


def excerpt(row_id: str) -> list[str]:
    for line in REAL.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row["id"] == row_id:
            return row["lines"]
    raise KeyError(row_id)


def parsed(line: str) -> dict:
    """The reference parse, checked against the fast path on the line and on a second sighting of its shape."""
    want = parse_metric_line(line)
    parser = MetricParser()
    for _ in range(3):
        assert same_output(parser.parse(line), want)
    assert want is not None, line
    return want


# ------------------------------------------------------------------------------------------------ the reader
READS = [
    # Hugging Face Trainer 4.5x on this machine (fixtures/real_jobs/008-hf-healthy): numbers printed as strings
    ("{'loss': '5.385', 'grad_norm': '0.8066', 'learning_rate': '0.00075', 'epoch': '0.1'}",
     {"kind": "train", "loss": 5.385, "grad_norm": 0.8066, "lr": 0.00075, "epoch": 0.1}),
    # https://github.com/zai-org/GLM-4/issues/174
    ("{'loss': 0.2096, 'grad_norm': nan, 'learning_rate': 0.00026000000000000003, 'epoch': 5.38}",
     {"kind": "train", "loss": 0.2096, "grad_norm": math.nan, "lr": 0.00026000000000000003, "epoch": 5.38}),
    # https://github.com/pytorch/torchtitan/pull/3393
    ("[rank0]:[titan] 2026-05-18 16:04:46,338 - root - INFO - step: 14  loss:  3.24405  grad_norm:  0.8319  "
     "memory:  9.46GiB(64.99%)  tps: 7,282  tflops: 0.52  mfu: 0.17%",
     {"kind": "train", "iteration": 14, "loss": 3.24405, "grad_norm": 0.8319, "throughput": 7282.0}),
    # https://github.com/karpathy/llm.c/issues/114
    ("step 396: train loss 4.406373 (took 127.762113 ms)",
     {"kind": "train", "iteration": 396, "loss": 4.406373, "iter_time": 0.127762113}),
    # https://github.com/facebookresearch/fairseq/issues/2338 (fairseq train_inner, key=value)
    ("2020-07-17 07:11:02 | INFO | train_inner | epoch 001:   2800 / 160368 loss=9.255, ppl=611.12, wps=57.3, "
     "ups=0.04, wpb=1613, bsz=80, num_updates=2800, lr=2.8e-05, gnorm=3.23, train_wall=13, wall=1236",
     {"kind": "train", "epoch": 1.0, "loss": 9.255, "throughput": 57.3, "iteration": 2800, "lr": 2.8e-05,
      "grad_norm": 3.23}),
    # https://github.com/facebookresearch/fairseq/issues/506 (fairseq end-of-epoch table, key value)
    ("| epoch 030 | loss 3.736 | nll_loss 2.045 | ppl 4.13 | wps 1.18305e+06 | ups 2.8 | wpb 417527 | bsz 14131 | "
     "num_updates 11001 | lr 0.000602995 | gnorm 0.434 | clip 100% | oom 0 | loss_scale 2.000 | wall 4464",
     {"kind": "train", "epoch": 30.0, "loss": 3.736, "iteration": 11001, "lr": 0.000602995, "grad_norm": 0.434,
      "loss_scale": 2.0}),
    ("| epoch 001 | valid on 'valid' subset | valid_loss 8.11425 | valid_nll_loss 6.8834 | valid_ppl 118.06 | "
     "num_updates 600",  # https://github.com/facebookresearch/fairseq/issues/940
     {"kind": "val", "epoch": 1.0, "val_loss": 8.11425, "iteration": 600}),
    # https://github.com/facebookresearch/fairseq/issues/233 (fairseq JSON log format)
    ('{"epoch": 25, "loss": "3.097", "nll_loss": "1.328", "ppl": "2.51", "wps": 1667443, "ups": "2.7", '
     '"wpb": 617156, "bsz": 16626, "num_updates": 53749, "lr": 0.00019096019143386865, "gnorm": "0.194", '
     '"clip": "100%", "oom": 0.02612141621239465, "loss_scale": "4.000", "wall": 20721}',
     {"kind": "train", "epoch": 25.0, "loss": 3.097, "throughput": 1667443.0, "iteration": 53749,
      "lr": 0.00019096019143386865, "grad_norm": 0.194, "loss_scale": 4.0}),
    # https://github.com/NVIDIA-BioNeMo/bionemo-recipes/pull/740 (NeMo 2 progress, a | key: value | table)
    ("Training epoch 0, iteration 120/149 | lr: 3e-05 | consumed_samples: 121 | global_batch_size: 1 | "
     "global_step: 120 | reduced_train_loss: 1.233 | train_step_timing in s: 0.03146 | val_loss: 4.106",
     {"kind": "train", "iteration": 120, "loss": 1.233}),
    # https://github.com/ymcui/Chinese-LLaMA-Alpaca/issues/534: a DeepSpeed overflow printed mid tqdm bar
    (" 14%|█▍        | 381/2724 [14:04:45<85:52:52, 131.96s/it][2023-06-07 22:22:34,914] [INFO] "
     "[loss_scaler.py:181:update_scale] [deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 8, "
     "reducing to 4", {"kind": "overflow", "loss_scale": 4.0, "skipped": 1, "iteration": 381}),
    # https://github.com/facebookresearch/fairseq/issues/1967
    ("2020-04-05 18:47:19 | INFO | fairseq.trainer | NOTE: overflow detected, setting loss scale to: 64.0",
     {"kind": "overflow", "loss_scale": 64.0, "skipped": 1}),
    # an Accelerate JSON-lines tracker on this machine (fixtures/real_jobs/123-accelerate-diverge): `train_loss`
    # in a JSON line is a progress line, not Hugging Face's end-of-training summary
    ('{"step": 2, "_timestamp": 1796476332.542, "train_loss": 5.446578502655029, "grad_norm": 0.40103137493133545, '
     '"lr": 0.003}', {"kind": "train", "iteration": 2, "loss": 5.446578502655029, "grad_norm": 0.40103137493133545,
                      "lr": 0.003}),
    # TensorFlow Estimator (https://github.com/tensorflow/tensor2tensor/issues/106): the key after the logger's colon
    ("INFO:tensorflow:loss = 1.8717, step = 31601 (182.200 sec)",
     {"kind": "train", "loss": 1.8717, "iteration": 31601}),
    # BigDL (https://github.com/intel-analytics/BigDL/issues/1486): `key is value` ending a sentence, and Infinity
    ("2017-08-20 16:11:46 INFO  DistriOptimizer$:295 - [Epoch 64 740096/1281167][Iteration 45459][Wall Clock "
     "197340.717246379s] Train 1792 in 4.006890034seconds. Throughput is 447.22968 records/second. Loss is Infinity. "
     "Current learning rate is 0.1.", {"kind": "train", "epoch": 64.0, "iteration": 45459, "throughput": 447.22968,
                                        "loss": math.inf, "lr": 0.1}),
    # DeiT/MAE's MetricLogger (https://github.com/facebookresearch/mae/issues/69): a bracketed value after a colon
    ("[11:41:33.534863] Epoch: [8]  [ 200/2293]  eta: 1:52:52  lr: 0.000004  loss: 0.2606 (0.2654)  time: 3.0808  "
     "data: 0.0002  max mem: 32637", {"kind": "train", "epoch": 8.0, "lr": 4e-06, "loss": 0.2606,
                                      "iter_time": 3.0808, "iteration": 7 * 2293 + 200}),
]


@pytest.mark.parametrize("line, want", READS, ids=lambda v: v[:40] if isinstance(v, str) else "")
def test_real_progress_lines_are_read(line: str, want: dict) -> None:
    got = parsed(line)
    assert set(got) == set(want)
    for key, value in want.items():
        if isinstance(value, float) and math.isnan(value):
            assert math.isnan(got[key])
        else:
            assert got[key] == pytest.approx(value) if isinstance(value, float) else got[key] == value, key


def test_lightning_bar_from_a_real_job_is_read() -> None:
    """Lightning 2 on this machine (fixtures/real_jobs/020-lightning-nan): a bar segment with train_loss."""
    got = parsed("Epoch 0:   5%|▌         | 1/20 [00:00<00:09,  2.03it/s, train_loss=5.670]")
    assert got["loss"] == 5.67 and got["iteration"] == 1


@pytest.mark.parametrize("key, name", [
    ("lm loss", "loss"), ("reduced_train_loss", "loss"), ("loss/train/total", "loss"), ("train_loss_step", "loss"),
    ("valid_loss", "val_loss"), ("eval_loss", "val_loss"), ("gnorm", "grad_norm"), ("grad norm", "grad_norm"),
    ("learning_rate", "lr"), ("loss_scale", "loss_scale"), ("num_updates", "iteration"), ("tps", "throughput"),
    ("number of skipped iterations", "skipped"), ("nll_loss", "loss"), ("memory", None), ("eta", None),
])
def test_aliases(key: str, name: str | None) -> None:
    assert canonical_key(key) == name


@pytest.mark.parametrize("line", [
    "RuntimeError: loss is nan at step 10",
    "saving checkpoint at iteration 100 to /ckpt",
    "{'train_runtime': 10.0, 'train_loss': 1.5, 'epoch': 3.0}",  # Hugging Face's end-of-training averages
    "val loss 4.517293",  # no step: nothing to place it at (https://github.com/karpathy/llm.c/issues/114)
    "Epoch 0, global step 9000: 'val_loss' reached 7.04238 (best 7.04238), saving model to '/data/x.ckpt'",
])
def test_lines_that_are_no_progress(line: str) -> None:
    assert parse_metric_line(line) is None


# ------------------------------------------------------------------------------------------------ health
def scan_of(lines_by_node: dict[str, list[str]], step: float = 10.0) -> JobScan:
    records: list[Record] = []
    for node, lines in lines_by_node.items():
        for n, msg in enumerate(lines, start=1):
            records.append(rec(msg, node=node, time=1000.0 + n * step, file=f"{node}.log", line=n))
    return scan_records(records, DigitMiner())


def health(lines: list[str]) -> dict:
    return {f.data["signal"]: f for f in HealthDetector().detect(scan_of({"n1": lines}))}


def megatron(i: int, loss: float, grad: float, scale: float = 65536.0) -> str:
    """The Megatron-DeepSpeed line of bs176-normal-iteration (BLOOM-176B), numbers replaced."""
    return (f" [default7]: iteration {i:8d}/  115311 | consumed samples:      9841584 | consumed tokens:  20155564032 "
            f"| elapsed time per iteration (s): 105.22 | learning rate: 5.969E-05 | global batch size:  2048 | "
            f"lm loss: {loss:.6E} | loss scale: {scale} | grad norm: {grad:.3f} | num zeros: 0.0 | number of skipped "
            "iterations:   0 | number of nan iterations:   0 | samples per second: 19.463 | TFLOPs: 149.02 |")


def test_grad_norm_jump_of_three_orders_with_the_loss_doubling_is_a_root_within_a_few_iterations() -> None:
    lines = [megatron(100 + i, 2.46 - 0.01 * i, 0.17 + 0.01 * i) for i in range(4)]
    lines += [megatron(104, 2.50, 310.0), megatron(105, 5.90, 95.0), megatron(106, 6.40, 40.0)]
    found = health(lines)
    grad = found["grad_explosion"]
    assert grad.role == "root" and grad.category == "numerical" and grad.data["iteration"] == 104
    assert grad.data["loss_rise"] > 2.0
    assert found["loss_spike"].data["iteration"] == 105


def test_a_tenfold_grad_norm_wobble_alone_is_only_a_symptom() -> None:
    lines = [megatron(100 + i, 2.46, 0.17) for i in range(5)] + [megatron(105, 2.47, 2.2), megatron(106, 2.45, 0.18)]
    grad = health(lines)["grad_explosion"]
    assert grad.role == "symptom"


def test_a_grad_norm_growing_two_orders_over_a_few_iterations_is_a_root_at_its_first_jump() -> None:
    # the jump past 10x at 105, then 40x, then 150x within 20 iterations, the loss barely moving yet
    grads = [0.2] * 5 + [2.5, 8.0, 30.0, 0.3, 0.25]
    lines = [megatron(100 + i, 2.46, g) for i, g in enumerate(grads)]
    grad = health(lines)["grad_explosion"]
    assert grad.role == "root" and grad.data["iteration"] == 105 and "then to 30 (150x) within 20 iterations" in grad.explain


def test_megatron_loss_spike_with_fp16_scaler_is_found_at_its_first_iteration() -> None:
    found = health(excerpt("bs13-loss-spike-fp16-scaler"))
    assert found["loss_spike"].role == "root" and found["loss_spike"].data["iteration"] == 29050


def test_loss_scale_halved_mid_run_in_a_tqdm_bar_is_an_incident() -> None:
    found = health(_chllama())
    halving = found["loss_scale_halving"]
    assert halving.role == "root" and halving.category == "numerical"
    # anchored where the run of halvings began, not where it crossed the threshold
    assert "halved 4 times" in halving.explain and halving.data["iteration"] == 379


def _chllama() -> list[str]:
    # https://github.com/ymcui/Chinese-LLaMA-Alpaca/issues/534 (tqdm bar with DeepSpeed overflow lines inside)
    bar = " 14%|█▍        | {i}/2724 [14:0{k}:09<86:18:35, 132.44s/it][2023-06-07 22:16:00,018] [INFO] " \
          "[loss_scaler.py:181:update_scale] [deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: {a}, " \
          "reducing to {b}"
    return [bar.format(i=378 + k, k=k, a=64 >> k, b=32 >> k) for k in range(5)]


@pytest.mark.parametrize("start", [2 ** 32, 2 ** 16])
def test_the_fp16_loss_scale_search_at_the_start_is_no_incident(start: int) -> None:
    # https://github.com/zai-org/CogVideo/issues/233 and https://github.com/deepspeedai/DeepSpeed/issues/5779
    line = ("[2024-09-11 17:52:18,030] [INFO] [loss_scaler.py:183:update_scale] [deepspeed] OVERFLOW! Rank 0 "
            "Skipping step. Attempted loss scale: {a}, reducing to {b}")
    lines = [line.format(a=start >> k, b=start >> (k + 1)) for k in range(8)]
    assert health(lines) == {}


def test_ten_halvings_in_a_row_after_the_scale_had_grown_are_an_incident() -> None:
    lines = [megatron(1000 + i, 2.4, 0.2, 65536.0) for i in range(3)] + [megatron(1003, 2.4, 0.2, 131072.0)]
    lines += [megatron(1004 + k, 2.4, 0.2, 131072.0 / 2 ** (k + 1)) for k in range(10)]
    halving = health(lines)["loss_scale_halving"]
    assert halving.data["iteration"] == 1004 and "halved 10 times" in halving.explain


def test_halvings_after_the_scale_held_are_no_search_even_early() -> None:
    # fixtures/real_jobs/121-amp-overflow: the search ends at iteration 14, the scale holds, then every step
    # overflows from iteration 18; Megatron prints the scale an iteration used, so the cut shows on the next line
    search = [megatron(i, 5.7, 0.4, 2.0 ** (33 - i)) for i in range(1, 15)]
    held = [megatron(i, 5.0, 0.4, 2.0 ** 19) for i in range(15, 18)]
    line = megatron(18, 4.99, 0.4, 2.0 ** 19).replace("iterations:   0 | number of nan", "iterations:   1 | number "
                                                      "of nan")
    falling = [megatron(19 + k, 4.98, 0.4, 2.0 ** (18 - k)) for k in range(12)]
    found = health(search + held + [line] + falling)
    halving = found["loss_scale_halving"]
    assert halving.data["iteration"] == 18 and "from iteration 18" in halving.explain
    assert health(search + held) == {}  # the search alone, then a steady scale: healthy


def test_a_search_with_hysteresis_shows_each_scale_twice_and_is_still_the_search() -> None:
    # Megatron's and DeepSpeed's scalers halve only on the second overflow in a row (hysteresis 2): each scale
    # of the search is printed twice, the second time with a skipped step
    skipped = "iterations:   1 | number of nan"
    search = [megatron(1 + i, 5.7, 0.4, 2.0 ** (32 - i // 2)).replace("iterations:   0 | number of nan", skipped)
              for i in range(24)]
    after = [megatron(25 + i, 5.0, 0.4, 2.0 ** 20) for i in range(20)]
    assert health(search + after) == {}
    # later, every step overflows: each scale shows twice, and the halvings still add up from the first skip
    burst = [megatron(45 + i, 5.0, 0.4, 2.0 ** (20 - (i + 1) // 2)).replace("iterations:   0 | number of nan",
                                                                            skipped) for i in range(20)]
    halving = health(search + after + burst)["loss_scale_halving"]
    assert halving.data["iteration"] == 45


def test_the_search_over_the_first_iterations_of_a_real_fp16_run_is_healthy() -> None:
    assert analyze(str(REAL_JOBS / "120-amp-healthy")).status == "healthy"


def test_a_real_fp16_run_whose_every_step_overflows_is_found_where_it_began() -> None:
    incident = analyze(str(REAL_JOBS / "121-amp-overflow"))
    assert (incident.status, incident.category, incident.iteration) == ("incident", "numerical", 18)
    advice = " ".join(incident.recommendations)
    assert "skipped every overflowing step" in advice and "reset the scale" in advice
    assert "diverged weights" not in advice


def test_loss_scale_at_its_floor_is_an_incident() -> None:
    lines = [megatron(5000 + i, 2.4, 0.2, 4.0 / 2 ** i) for i in range(3)]
    assert health(lines)["loss_scale_collapse"].role == "root"


# ------------------------------------------------------------------------------------------------ desync
WATCHDOG = ("[E ProcessGroupNCCL.cpp:458] [Rank {rank}] Watchdog caught collective operation timeout: "
            "WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1800081 milliseconds before timing "
            "out.")  # https://github.com/pytorch/pytorch/issues/118369


def _desync(lines_by_node: dict[str, list[str]]) -> list:
    records: list[Record] = []
    for node, lines in lines_by_node.items():
        for n, msg in enumerate(lines, start=1):
            records.append(rec(msg, node=node, time=1000.0 + n, file=f"{node}.log", line=n))
    return DesyncDetector().detect(scan_records(records, DigitMiner(), rules=RulePack.load()))


def test_the_rank_behind_in_sequence_numbers_is_named_with_its_node() -> None:
    nodes = {f"node{k}": [WATCHDOG.format(rank=2 * k + j, seq=1580) for j in range(2)] for k in range(4)}
    nodes["node2"][1] = WATCHDOG.format(rank=5, seq=1579)
    found = _desync(nodes)
    assert len(found) == 1
    f = found[0]
    assert f.rank == 5 and f.node == "node2" and f.data["where"] == "behind" and f.role == "symptom"
    assert "#1579" in f.explain and "#1580" in f.explain


def test_agreeing_sequence_numbers_are_no_desync() -> None:
    nodes = {f"node{k}": [WATCHDOG.format(rank=k, seq=96120)] for k in range(4)}
    assert _desync(nodes) == []


def test_desync_report_names_the_ranks_that_did_not_join() -> None:
    found = _desync({"node0": [
        "[PG 0 (default_pg) Rank 0] Timeout at NCCL work: 812, last enqueued NCCL work: 812, last completed NCCL "
        "work: 811.",
        "\t   - [2, 3] finished collective #811, but didn't join collective #812 (count from 1)"]})
    assert found and found[0].data["ranks"] == [2, 3] and found[0].data["where"] == "behind"


def test_fingerprint_mismatch_names_the_rank_out_of_step() -> None:
    # https://github.com/pytorch/pytorch/pull/101422 (TORCH_DISTRIBUTED_DEBUG=DETAIL)
    line = ("RuntimeError: Detected mismatch between collectives on ranks. Rank {a} is running collective: "
            "CollectiveFingerPrint(SequenceNumber=1977865401, OpType=BROADCAST, TensorShape=[1], TensorDtypes=Long), "
            "but Rank {b} is running collective: CollectiveFingerPrint(SequenceNumber=54090078, OpType=BROADCAST, "
            "TensorShape=[1], TensorDtypes=Long).")
    found = _desync({"node0": [line.format(a=0, b=16)], "node1": [line.format(a=1, b=16)],
                     "node3": [line.format(a=17, b=16)]})
    assert found and found[0].rank == 16 and "rank 16" in found[0].explain


# ------------------------------------------------------------------------------------------------ end to end
@pytest.mark.parametrize("line, iteration", [
    ("Saving model checkpoint to /out/run/checkpoint-20", 20),
    ("successfully saved checkpoint at iteration     200 to /ckpt/iter_0000200", 200),
    ("Saving checkpoint to /ckpt/global_step300", 300),
])
def test_checkpoint_iteration_from_its_path(line: str, iteration: int) -> None:
    m = match_marker(line)
    assert m is not None and m.iteration == iteration


def test_checkpoint_advice_never_says_iteration_none(tmp_path: Path) -> None:
    node = tmp_path / "job" / "node001"
    node.mkdir(parents=True)
    lines = [f"{{'loss': '{5.0 - i * 0.1:.3f}', 'grad_norm': '0.8', 'learning_rate': '0.001', 'epoch': '{i / 10}'}}"
             for i in range(1, 8)]
    lines += ["Saving model checkpoint to /out/run/checkpoint-latest",
              "{'loss': 'nan', 'grad_norm': 'nan', 'learning_rate': '0.001', 'epoch': '0.8'}"]
    (node / "train.log").write_text("\n".join(lines) + "\n", encoding="utf-8")
    inc = analyze([str(tmp_path / "job")], AnalyzeOptions())
    assert inc.category == "numerical"
    assert not any("iteration None" in r for r in inc.recommendations)
    assert inc.extra["health"]["series"]["loss"]


@pytest.mark.skipif(not (REAL_JOBS / "008-hf-healthy").exists(), reason="real jobs not generated here")
def test_hugging_face_trainer_job_fills_the_health_charts() -> None:
    inc = analyze([str(REAL_JOBS / "008-hf-healthy")], AnalyzeOptions())
    series = inc.extra["health"]["series"]
    assert inc.status == "healthy" and len(series["loss"]) >= 10 and len(series["grad_norm"]) >= 10


@pytest.mark.parametrize("name", ["004-ddp-nan", "020-lightning-nan"])
def test_real_nan_jobs_are_numerical(name: str) -> None:
    if not (REAL_JOBS / name).exists():
        pytest.skip("real jobs not generated here")
    inc = analyze([str(REAL_JOBS / name)], AnalyzeOptions())
    assert (inc.status, inc.category, inc.phase) == ("incident", "numerical", "train")


@pytest.mark.parametrize("job", ["034-deepspeed-enospc", "046-deepspeed-erofs"])
def test_a_save_begun_just_after_the_failure_s_first_line_is_the_one_it_cut_short(job: str) -> None:
    # DeepSpeed logs "Saving model checkpoint" a few milliseconds after the file system's first error line
    incident = analyze(str(REAL_JOBS / job))
    assert incident.checkpoint["in_progress"]["iteration"] == 20
    assert any(r.startswith("Do not resume from the checkpoint at iteration 20") for r in incident.recommendations)


@pytest.mark.parametrize(("job", "path"), [("213-ddp-exit_hang", "step_000040.pt"),
                                           ("214-fabric-exit_hang_k8s", "step_000040.ckpt")])
def test_a_save_its_script_says_it_finished_in_the_failure_s_second_is_the_one_to_resume(job: str,
                                                                                         path: str) -> None:
    """A rank stuck at exit after the last step: the hang is dated to its second, and the step-40 save, begun and
    ended (the script's own ``saved checkpoint <path>``) within that second, is complete, not cut short."""
    if not (REAL_JOBS / job).exists():
        pytest.skip("real jobs not generated here")
    incident = analyze(str(REAL_JOBS / job))
    assert incident.checkpoint["in_progress"] is None
    assert incident.checkpoint["last_saved"]["path"].endswith(path)
    assert not any(r.startswith("Do not resume") for r in incident.recommendations)


def test_hugging_face_epochs_become_iterations_per_epoch_not_per_run() -> None:
    """The banner says 3 epochs of 30 steps in all: epoch 2.0 is step 20, not 60."""
    lines = ["***** Running training *****", "  Num examples = 240", "  Num Epochs = 3",
             "  Total optimization steps = 30",
             "{'loss': 2.5, 'grad_norm': 1.0, 'learning_rate': 1e-05, 'epoch': 1.0}",
             "{'loss': 2.1, 'grad_norm': 0.9, 'learning_rate': 1e-05, 'epoch': 2.0}"]
    iterations = [p.iteration for p in scan_of({"n1": lines}).metrics]
    assert iterations == [10, 20]


def test_hugging_face_epochs_without_an_epoch_count_read_the_total_as_one_epoch() -> None:
    lines = ["  Total optimization steps = 40", "{'loss': 2.5, 'grad_norm': 1.0, 'learning_rate': 1e-05, 'epoch': 0.5}"]
    assert [p.iteration for p in scan_of({"n1": lines}).metrics] == [20]


def test_sharded_scans_get_the_steps_per_epoch_from_the_banner(tmp_path: Path) -> None:
    from l4lite.ingest.files import discover
    from l4lite.records import Accounting
    from l4lite.scale.shards import steps_per_epoch_hint

    (tmp_path / "rank0.log").write_text("***** Running training *****\n  Num Epochs = 4\n"
                                        "  Total optimization steps = 100\n{'loss': 2.5, 'epoch': 0.04}\n")
    job = discover([str(tmp_path)], Accounting())
    assert steps_per_epoch_hint(job.files) == 25.0
