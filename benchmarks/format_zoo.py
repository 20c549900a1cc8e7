"""Speed of ``l4lite parse`` and ``l4lite analyze`` on many trainer and launcher log formats, against drain3.

Usage: python benchmarks/format_zoo.py [--lines 1000000] [--formats megatron,deepspeed,...] [--work DIR]
                                       [--baseline-lines 50000] [--skip parse1,parse2,analyze2] [--repeat 1]
                                       [--keep] [--list]

The simulator writes a few formats that the fast path was tuned on; users bring others. For each format of the
zoo this generates a 16-node job (a folder per node, one trainer file per node, as a job's launcher leaves them)
of ``--lines`` lines with realistic values, widths and padding: right-aligned iteration counters whose digit
count grows, losses and rates that change their number of digits, timestamps that move on, and a few per cent of
other lines (start-up banners, NCCL INFO) where the framework prints them. Every line format is copied from a real
excerpt; each generator names its source. Then, on the same job and in the same run, it measures:

- drain3's own ``TemplateMiner`` with the masking of drain3's example ``drain3.ini`` on the job's first
  ``--baseline-lines`` lines (round-robin over its files), right before and after every l4lite row
  (``throughput.Bracket``): a row's ratio is to the mean of the two;
- ``l4lite parse JOB -o records.parquet --jobs 1`` and ``--jobs 2``, and ``l4lite analyze JOB --no-store --quiet
  --jobs 2`` (subprocesses; wall clock, and peak RSS of the largest process).

The table prints lines/s, the ratio to drain3 and the CPU microseconds per line per format and command, and the
worst format per command. On a
shared machine every wall-clock figure moves with the load, which is printed; the ratios compare code.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from throughput import (  # noqa: E402
    L4LITE,
    Bracket,
    Row,
    compile_l4lite,
    count_lines,
    machine_parallelism,
    run_measured,
)

NODES = 16
GPUS = 8
START = 1_764_388_862.0  # 2025-11-29 04:01:02 UTC
MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


@dataclass
class Clock:
    """A node's wall clock: moves on by about one step time per progress line."""

    t: float
    step_s: float

    def tick(self, rnd: random.Random, scale: float = 1.0) -> float:
        self.t += self.step_s * scale * rnd.uniform(0.9, 1.15)
        return self.t


def iso(t: float, sep: str = " ", frac: str = "") -> str:
    """``2025-11-29 04:01:02`` with ``frac`` ``","``/``"."`` and three digits of milliseconds, or none."""
    s = time.strftime(f"%Y-%m-%d{sep}%H:%M:%S", time.gmtime(t))
    return s + f"{frac}{int(t * 1000) % 1000:03d}" if frac else s


def syslog_time(t: float) -> str:
    tm = time.gmtime(t)
    return f"{MONTHS[tm.tm_mon - 1]} {tm.tm_mday:2d} {time.strftime('%H:%M:%S', tm)}"


def loss_at(step: int, rnd: random.Random) -> float:
    return 2.0 + 9.0 / (1.0 + step / 400.0) + rnd.gauss(0, 0.03)


def nccl_lines(host: str, node: int, rnd: random.Random) -> list[str]:
    """NCCL INFO start-up lines of one node's 8 GPUs, as in https://github.com/NVIDIA/Megatron-LM/issues/516
    (``09677202c889:5283:5699 [7] NCCL INFO Channel 21/0 : 1[101d0] -> 0[101c0] via P2P/IPC/read``)."""
    out = []
    for gpu in range(GPUS):
        pid = 5270 + gpu + 13 * node
        tid = pid + rnd.randrange(400, 430)
        h = f"{host}:{pid}:{tid} [{gpu}]"
        rank = node * GPUS + gpu
        out.append(f"{h} NCCL INFO cudaDriverVersion 12020")
        out.append(f"{h} NCCL INFO Bootstrap : Using eth0:10.{node}.{gpu}.{rnd.randrange(2, 250)}<0>")
        out.append(f"{h} NCCL INFO NET/IB : Using [0]mlx5_{gpu}:1/IB ; OOB eth0:10.0.{node}.{gpu}<0>")
        for ch in range(0, 32, 4):
            peer = (gpu + 1) % GPUS
            out.append(f"{h} NCCL INFO Channel {ch:02d}/0 : {rank}[{gpu}] -> {node * GPUS + peer}[{peer}] "
                       f"via P2P/IPC/read")
        out.append(f"{h} NCCL INFO ncclCommInitRank comm 0x{rnd.getrandbits(40):x} rank {rank} nranks "
                   f"{NODES * GPUS} cudaDev {gpu} busId {0x18 + gpu * 0x11:x}000 commId 0x{rnd.getrandbits(60):x} "
                   f"- Init COMPLETE")
        out.append(f"{h} NCCL INFO 24 coll channels, 0 nvls channels, 32 p2p channels, 32 p2p channels per peer")
    return out


# ----------------------------------------------------------------------------------------------- formats
# Each generator yields the lines of one node's file, forever; the caller takes what it needs.
Gen = Callable[[int, random.Random], Iterator[str]]


def gen_megatron(node: int, rnd: random.Random) -> Iterator[str]:
    """Megatron-LM, a timestamp and right-aligned counters, as in
    https://github.com/NVIDIA-NeMo/Megatron-Bridge/issues/4024 (``[2026-05-28 22:19:49] iteration       15/
    6069 | consumed samples:         7680 | elapsed time per iteration (ms): 27447.6 | ...``)."""
    clock = Clock(START + node * 0.3, 1.4)
    host = f"node{node + 1:03d}"
    yield from nccl_lines(host, node, rnd)
    total = 500000
    for it in range(1, 10**9):
        t = clock.tick(rnd)
        yield (f" [{iso(t)}] iteration {it:8d}/{total:8d} | consumed samples: {it * 1024:12d} | elapsed time per "
               f"iteration (ms): {rnd.uniform(1200, 1600):.1f} | throughput per GPU (TFLOP/s/GPU): "
               f"{rnd.uniform(90, 420):.1f} | learning rate: {3e-4 * min(1, it / 2000):E} | global batch size: "
               f"{1024:5d} | lm loss: {loss_at(it, rnd):E} | loss scale: {rnd.choice((1.0, 65536.0, 32768.0))} | "
               f"grad norm: {rnd.uniform(0.1, 12):.3f} | number of skipped iterations: {0:3d} | number of nan "
               f"iterations: {0:3d} |")
        if it % 500 == 0:
            yield (f"saving checkpoint at iteration {it:7d} to /lustre/fsw/ckpt/gpt-175b in torch_dist format")
            yield (f"  successfully saved checkpoint from iteration {it:7d} to /lustre/fsw/ckpt/gpt-175b "
                   f"[ t 1/8, p 1/16 ]")


def gen_megatron_deepspeed(node: int, rnd: random.Random) -> Iterator[str]:
    """Megatron-DeepSpeed with torchrun's ``[defaultN]:`` prefix and no timestamp, as in
    https://github.com/bigscience-workshop/bigscience/blob/master/train/tr11-176B-ml/README.md (``[default7]:
    iteration   85376/ 115311 | consumed samples:   158692272 | consumed tokens: 325001773056 | elapsed time
    per iteration (s)``) and the chronicles of tr1-13B (``iteration    29020/  311541 | ... | lm loss:
    2.775923E+00 | loss scale: 32768.0 | grad norm: 0.000 | ...``)."""
    clock = Clock(START, 22.0)
    total = 311541
    local = GPUS - 1
    for it in range(1, 10**9):
        clock.tick(rnd)
        yield (f"[default{local}]: iteration {it:8d}/{total:8d} | consumed samples: {it * 2048:12d} | consumed "
               f"tokens: {it * 2048 * 2048:12d} | elapsed time per iteration (ms): {rnd.uniform(21000, 23500):.1f} "
               f"| learning rate: {9.85e-5 * min(1, it / 3000):.3E} | global batch size: {2048:5d} | lm loss: "
               f"{loss_at(it, rnd):E} | loss scale: {rnd.choice((32768.0, 65536.0, 4096.0))} | grad norm: "
               f"{rnd.uniform(0.1, 3):.3f} | num zeros: 0.0 | number of skipped iterations: {rnd.random() < 0.01:3d} "
               f"| number of nan iterations: {0:3d} |")
        if it % 50 == 0:
            yield (f"[default{local}]: time (ms) | forward-compute: {rnd.uniform(4000, 9000):.2f} | backward-compute:"
                   f" {rnd.uniform(9000, 14000):.2f} | optimizer: {rnd.uniform(40, 900):.2f} | batch-generator: "
                   f"{rnd.uniform(1, 90):.2f}")


def gen_deepspeed(node: int, rnd: random.Random) -> Iterator[str]:
    """DeepSpeed's engine, as in https://github.com/deepspeedai/DeepSpeed/issues/1825 (``[2022-03-11
    02:06:58,985] [INFO] [logging.py:69:log_dist] [Rank 0] step=40, skipped=2, lr=[5e-05], mom=[[0.9,
    0.999]]``) with its throughput timer lines."""
    clock = Clock(START, 0.8)
    for step in range(1, 10**9):
        t = clock.tick(rnd)
        yield (f"[{iso(t, frac=',')}] [INFO] [logging.py:96:log_dist] [Rank 0] step={step}, skipped="
               f"{step // 997}, lr=[{3e-4 * min(1, step / 1000):.10g}], mom=[[0.9, 0.95]]")
        yield (f"[{iso(t + 0.002, frac=',')}] [INFO] [timer.py:260:stop] epoch=0/micro_step={step * 4}/global_step="
               f"{step}, RunningAvgSamplesPerSec={rnd.uniform(20, 400):.12g}, CurrSamplesPerSec="
               f"{rnd.uniform(20, 400):.12g}, MemAllocated={rnd.uniform(4, 70):.2f}GB, MaxMemAllocated="
               f"{rnd.uniform(60, 78):.2f}GB")


def gen_hf(node: int, rnd: random.Random) -> Iterator[str]:
    """Hugging Face Trainer dicts between tqdm bars, as in https://github.com/AnswerDotAI/ModernBERT/issues/233
    (``{'loss': 0.2051, 'grad_norm': nan, 'learning_rate': 9.774074342405685e-06, 'epoch': 0.53}``) and
    https://github.com/ymcui/Chinese-LLaMA-Alpaca/issues/534 (`` 14%|█▍        | 378/2724 [13:58:09<86:18:35,
    132.44s/it]``)."""
    total = 200000
    blocks = " ▏▎▍▌▋▊▉█"
    for step in range(1, 10**9):
        frac = step / total
        full = int(frac * 10)
        bar = "█" * full + (blocks[int(frac * 80) % 8] if full < 10 else "") + " " * (9 - full)
        el, rem = step * 1.3, (total - step) * 1.3
        yield (f"{int(frac * 100):3d}%|{bar[:10]}| {step}/{total} [{int(el // 3600):02d}:{int(el // 60 % 60):02d}:"
               f"{int(el % 60):02d}<{int(rem // 3600):02d}:{int(rem // 60 % 60):02d}:{int(rem % 60):02d}, "
               f"{rnd.uniform(0.5, 2.5):.2f}it/s]")
        if step % 2 == 0:
            yield (f"{{'loss': {round(loss_at(step, rnd), 4)}, 'grad_norm': {rnd.uniform(0.1, 9):.16g}, "
                   f"'learning_rate': {2e-5 * (1 - frac):.16g}, 'epoch': {round(step / 4000, 2)}}}")


def gen_lightning(node: int, rnd: random.Random) -> Iterator[str]:
    """PyTorch Lightning's progress bar as NeMo prints it, as in https://github.com/pytorch/pytorch/issues/118369
    (``Epoch 0:   6%|██    | 32040/500150 [6:28:43<94:39:17,  1.37it/s, loss=2.6, v_num=95nc,
    reduced_train_loss=2.590, global_step=3.2e+4, consumed_samples=2.56e+7]``)."""
    total = 500150
    for step in range(1, 10**9):
        frac = step / total
        el, rem = step * 0.73, (total - step) * 0.73
        bar = "█" * int(frac * 30)
        yield (f"Epoch {step // total}:  {int(frac * 100):2d}%|{bar:<33}| {step}/{total} [{int(el // 3600)}:"
               f"{int(el // 60 % 60):02d}:{int(el % 60):02d}<{int(rem // 3600)}:{int(rem // 60 % 60):02d}:"
               f"{int(rem % 60):02d}, {rnd.uniform(1.2, 1.5):5.2f}it/s, loss={loss_at(step, rnd):.3g}, v_num=95nc, "
               f"reduced_train_loss={loss_at(step, rnd):.3f}, global_step={float(step):.2g}, consumed_samples="
               f"{float(step * 800):.3g}]")


def gen_nemo(node: int, rnd: random.Random) -> Iterator[str]:
    """NeMo 2: ``[NeMo I ...]`` logger lines and its per-step line, as in
    https://github.com/NVIDIA-NeMo/Speech/pull/10128 and https://github.com/NVIDIA-BioNeMo/bionemo-recipes/pull/740
    (``Training epoch 0, iteration 120/149 | lr: 3e-05 | consumed_samples: 121 | global_batch_size: 1 |
    global_step: 120 | reduced_train_loss: 1.233 | train_step_timing in s: 0.03146 | val_loss: 4.106``)."""
    clock = Clock(START, 0.9)
    total = 100000
    val = 4.106
    for it in range(0, 10**9):
        t = clock.tick(rnd)
        if it % 1000 == 0:
            val = round(loss_at(it, rnd), 3)
            yield (f"[NeMo I {iso(t)} nemo_logging:393] Validation at step {it}: val_loss={val} "
                   f"(best {val:.4f})")
        yield (f"Training epoch 0, iteration {it}/{total - 1} | lr: {3e-5 * min(1, (it + 1) / 500):.4g} | "
               f"consumed_samples: {(it + 1) * 256} | global_batch_size: 256 | global_step: {it} | "
               f"reduced_train_loss: {round(loss_at(it, rnd), 4)} | train_step_timing in s: "
               f"{round(rnd.uniform(0.6, 0.9), 5)} | val_loss: {val}")


def gen_torchtitan(node: int, rnd: random.Random) -> Iterator[str]:
    """torchtitan behind torchrun's ``[rankN]:`` prefix, as in https://github.com/pytorch/torchtitan/pull/3393
    (``[rank0]:[titan] 2026-05-18 16:04:46,338 - root - INFO - step: 14  loss:  3.24405  grad_norm:  0.8319
    memory:  9.46GiB(64.99%)  tps: 7,282  tflops: 0.52  mfu: 0.17%``)."""
    clock = Clock(START, 1.1)
    rank = node * GPUS
    for step in range(1, 10**9):
        t = clock.tick(rnd)
        mem = rnd.uniform(8, 70)
        yield (f"[rank{rank}]:[titan] {iso(t, frac=',')} - root - INFO - step: {step:2d}  loss: "
               f"{loss_at(step, rnd):8.5f}  grad_norm: {rnd.uniform(0.2, 9):7.4f}  memory: {mem:5.2f}GiB"
               f"({mem / 80 * 100:.2f}%)  tps: {rnd.randrange(900, 12000):,}  tflops: {rnd.uniform(0.3, 400):.2f}  "
               f"mfu: {rnd.uniform(0.1, 60):.2f}%")
        if step % 500 == 0:
            yield (f"[rank{rank}]:[titan] {iso(t, frac=',')} - root - INFO - Saving the checkpoint (or staging if "
                   f"async is enabled).")


def gen_composer(node: int, rnd: random.Random) -> Iterator[str]:
    """MosaicML Composer's console logger (a ``[batch=N/M]:`` header, then one tab-indented line per metric), as
    in https://github.com/mosaicml/composer/pull/1884, and its Python logging header
    (``2022-06-29 11:36:17,871: rank0[824065][MainThread]: INFO: composer.utils.reproducibility: ...``,
    https://github.com/mosaicml/composer/pull/1218)."""
    clock = Clock(START, 2.0)
    total = 24800
    pid = 820000 + node * 17
    for batch in range(1, 10**9):
        t = clock.tick(rnd)
        if batch % 200 == 1:
            yield (f"{iso(t, frac=',')}: rank{node * GPUS}[{pid}][MainThread]: INFO: composer.trainer.trainer: "
                   f"Saving checkpoint to ep0-ba{batch}-rank{node * GPUS}.pt")
        yield f"[batch={batch}/{total}]:"
        yield f"\t Train time/batch: {batch - 1}"
        yield f"\t Train time/sample: {(batch - 1) * 512}"
        yield f"\t Train time/token: {(batch - 1) * 512 * 2048}"
        yield f"\t Train memory/allocated_mem: {rnd.randrange(10**9, 3 * 10**12)}"
        yield "\t Train trainer/device_train_microbatch_size: 8"
        yield f"\t Train loss/train/total: {loss_at(batch, rnd):.4f}"
        yield f"\t Train metrics/train/LanguageCrossEntropy: {loss_at(batch, rnd):.4f}"
        yield f"\t Train throughput/tokens_per_sec: {rnd.uniform(1000, 900000):.4f}"
        yield f"\t Train throughput/device/mfu: {rnd.uniform(0.1, 0.6):.4f}"
        yield f"\t Train lr-DecoupledAdamW/group0: {6e-4 * min(1, batch / 100):.4f}"


def gen_fairseq(node: int, rnd: random.Random) -> Iterator[str]:
    """fairseq and metaseq: ``date time | LEVEL | logger | message``, as in
    https://github.com/facebookresearch/metaseq/pull/497 (``2022-11-08 10:34:17 | INFO | metaseq.checkpoint_utils |
    Saved checkpoint ...``), with fairseq's ``train_inner`` progress (``epoch 001:    100 / 1563 loss=9.873,
    ppl=937.6, wps=...``)."""
    clock = Clock(START, 8.0)
    per_epoch = 12563
    for upd in range(100, 10**9, 100):
        t = clock.tick(rnd)
        ep, i = upd // per_epoch + 1, upd % per_epoch
        loss = loss_at(upd, rnd)
        yield (f"{iso(t)} | INFO | train_inner | epoch {ep:03d}:  {i:5d} / {per_epoch} loss={loss:.3f}, ppl="
               f"{2 ** loss:.2f}, wps={rnd.uniform(2000, 90000):.1f}, ups={rnd.uniform(0.5, 3):.2f}, wpb="
               f"{rnd.uniform(4000, 65536):.1f}, bsz={rnd.choice((8, 16, 256))}, num_updates={upd}, lr="
               f"{5e-4 * min(1, upd / 4000):.6g}, gnorm={rnd.uniform(0.1, 9):.3f}, loss_scale={rnd.choice((4, 8, 64, 128))}"
               f", train_wall={rnd.randrange(5, 200)}, gb_free={rnd.uniform(1, 70):.1f}, wall={int(t - START)}")
        if upd % 5000 == 0:
            yield (f"{iso(t)} | INFO | metaseq.checkpoint_utils | Saved checkpoint /scratch/slurm_tmpdir/"
                   f"{163814 + node}/checkpoint_{ep}_{upd}.pt (epoch {ep} @ {upd} updates, score None) (writing took "
                   f"{rnd.uniform(1, 300):.6f} seconds)")


def gen_pylog(node: int, rnd: random.Random) -> Iterator[str]:
    """Plain Python logging with a rank field (the job of issue 29: ``[2026-11-29 04:01:02,345] [INFO] [rank8]``,
    ``| key: value |`` fields, right-aligned iteration numbers), the header of
    https://github.com/bigscience-workshop/bigscience/blob/master/train/tr1-13B-base/chronicles.md."""
    clock = Clock(START, 1.5)
    rank = node * GPUS
    host = f"gpu-st-p4d-24xlarge-{node + 1}"
    yield from nccl_lines(host, node, rnd)
    for it in range(1, 10**9):
        t = clock.tick(rnd)
        yield (f"[{iso(t, frac=',')}] [INFO] [rank{rank}] iteration {it:7d}/ 500000 | consumed samples: "
               f"{it * 512:10d} | elapsed time per iteration (ms): {rnd.uniform(900, 2100):.1f} | learning rate: "
               f"{3e-4 * min(1, it / 2000):.3E} | lm loss: {loss_at(it, rnd):.6E} | loss scale: "
               f"{rnd.choice((65536.0, 131072.0))} | grad norm: {rnd.uniform(0.1, 4):.3f} |")
        if it % 100 == 0:
            yield (f"[{iso(t, frac=',')}] [INFO] [rank{rank}] throughput: {rnd.uniform(100, 400):.2f} TFLOP/s/GPU, "
                   f"{rnd.randrange(1000, 99999)} tokens/s/GPU, memory {rnd.uniform(20, 79):.2f} GiB")


def gen_jsonl(node: int, rnd: random.Random) -> Iterator[str]:
    """A JSON-lines metrics logger (one object per step, as structlog and MLflow-style loggers write them; the
    fields as in torchtitan's step line above)."""
    clock = Clock(START, 1.2)
    for step in range(1, 10**9):
        t = clock.tick(rnd)
        yield json.dumps({"time": iso(t, "T", ".") + "Z", "level": "INFO", "rank": node * GPUS, "step": step,
                          "loss": round(loss_at(step, rnd), 5), "lr": 3e-4 * min(1, step / 2000),
                          "grad_norm": round(rnd.uniform(0.1, 9), 4), "tokens_per_sec": rnd.randrange(900, 99999),
                          "mem_gib": round(rnd.uniform(8, 79), 2)})


def gen_ray_train(node: int, rnd: random.Random) -> Iterator[str]:
    """Ray Train workers' output as the driver relays it, a ``(RayTrainWorker pid=N, ip=A)`` prefix and Ray's
    ``[repeated Nx across cluster]`` note, as in https://github.com/ray-project/ray/issues/36866
    (``(RayTrainWorker pid=4566, ip=10.0.0.188) Moving model to device: cuda:0 [repeated 3x across cluster]``),
    carrying Hugging Face Trainer dicts."""
    ip = f"10.0.{node}.{rnd.randrange(2, 250)}"
    pids = [rnd.randrange(3000, 90000) for _ in range(GPUS)]
    for step in range(1, 10**9):
        pid = pids[step % GPUS]
        if step % 50 == 0:
            yield (f"(RayTrainWorker pid={pid}, ip={ip}) Checkpoint successfully created at: Checkpoint(filesystem="
                   f"local, path=/mnt/cluster_storage/TorchTrainer_2025-11-29/checkpoint_{step // 50:06d}) "
                   f"[repeated {GPUS - 1}x across cluster]")
        yield (f"(RayTrainWorker pid={pid}, ip={ip}) {{'loss': {round(loss_at(step, rnd), 4)}, 'grad_norm': "
               f"{rnd.uniform(0.1, 9):.16g}, 'learning_rate': {2e-5 * (1 - step / 10**6):.16g}, "
               f"'epoch': {round(step / 4000, 2)}}}")


def gen_torch_xla(node: int, rnd: random.Random) -> Iterator[str]:
    """PyTorch/XLA's example trainers, one ``| Training Device=...`` line per device and step, as in
    https://github.com/pytorch/xla/pull/4324 (``| Training Device=xla:0/4 Epoch=1 Step=420 Loss=0.00278
    Rate=557.26 GlobalRate=334.98 Time=22:00:43``)."""
    clock = Clock(START, 4.0)
    for step in range(20, 10**9, 20):
        t = clock.tick(rnd)
        loss = loss_at(step, rnd) / 1000
        for dev in rnd.sample(range(GPUS), GPUS):
            yield (f"| Training Device=xla:{node % 2}/{dev} Epoch={1 + step // 5000} Step={step} Loss={loss:.5f} "
                   f"Rate={rnd.uniform(300, 600):.2f} GlobalRate={rnd.uniform(300, 600):.2f} "
                   f"Time={time.strftime('%H:%M:%S', time.gmtime(t))}")


def gen_compose(node: int, rnd: random.Random) -> Iterator[str]:
    """A container's output as docker compose (SageMaker local mode) prints it, the container name padded and a
    bar before a logger's own line, as in https://github.com/aws/sagemaker-python-sdk/issues/1100
    (``algo-1-8gd7b_1  | 2019-10-22 09:06:21,345 sagemaker-containers INFO     Imported framework ...``)."""
    clock = Clock(START, 1.2)
    name = f"algo-{node + 1}-{rnd.randrange(16**5):05x}_1"
    for step in range(1, 10**9):
        t = clock.tick(rnd)
        yield (f"{name:<16}| {iso(t, frac=',')} train INFO     step {step}/{300000} loss={loss_at(step, rnd):.4f} "
               f"lr={3e-4 * (1 - step / 300000):.3e} tokens/s={rnd.randrange(20000, 90000)}")
        if step % 100 == 0:
            yield (f"{name:<16}| {iso(t, frac=',')} sagemaker_pytorch_container.training INFO     Saved checkpoint "
                   f"to /opt/ml/checkpoints/step_{step}.pt")


def gen_nccl(node: int, rnd: random.Random) -> Iterator[str]:
    """NCCL INFO/WARN lines with ``NCCL_DEBUG=INFO``: communicator start-ups over and over (a job that creates
    many communicators), see ``nccl_lines``."""
    host = f"dgx-a100-{node + 1:02d}"
    while True:
        yield from nccl_lines(host, node, rnd)


def gen_kernel(node: int, rnd: random.Random) -> Iterator[str]:
    """Kernel lines, dmesg and syslog forms, as in https://github.com/NVIDIA/NVSentinel/issues/155 (``[
    1843.308145] NVRM: The NVIDIA GPU 0000:b3:00.0``) and syslog's ``Nov 29 04:01:02 node07 kernel: ...``."""
    up = 1843.308145
    t = START
    host = f"node{node + 1:02d}"
    for i in range(10**9):
        up += rnd.expovariate(1 / 2.0)
        t += rnd.expovariate(1 / 2.0)
        k = i % 6
        msg = (f"NVRM: GPU at PCI:0000:{0x18 + (i % 8) * 0x11:02x}:00: GPU-{rnd.getrandbits(32):08x}" if k == 0 else
               f"mlx5_core 0000:{0x0c + i % 4:02x}:00.0: mlx5_cmd_out_err:{800 + i % 40}: ACCESS_REG(0x805) op_mod(0x1) "
               f"failed, status bad parameter(0x3), syndrome (0x{rnd.getrandbits(24):x}), err(-22)" if k == 1 else
               f"CPU{i % 96}: Core temperature above threshold, cpu clock throttled (total events = {i * 3 + 1})"
               if k == 2 else
               f"nvidia-peermem nv_get_p2p_free_callback:{127 + i % 7} free callback for {rnd.getrandbits(48):#x}"
               if k == 3 else
               f"python[{rnd.randrange(1000, 4000000)}]: segfault at {rnd.getrandbits(44):x} ip {rnd.getrandbits(47):016x}"
               f" sp {rnd.getrandbits(47):016x} error 4 in libc.so.6[{rnd.getrandbits(44):x}+{rnd.getrandbits(20):x}]"
               if k == 4 else f"IPv4: martian source 10.{node}.{i % 256}.{rnd.randrange(1, 255)} from "
               f"10.{node}.0.{rnd.randrange(1, 255)}, on dev ib{i % 4}")
        if i % 2:
            yield f"[{up:12.6f}] {msg}"
        else:
            yield f"{syslog_time(t)} {host} kernel: [{up:12.6f}] {msg}"


def gen_storage(node: int, rnd: random.Random) -> Iterator[str]:
    """Storage client lines (Lustre, NFS, GPFS) in syslog, as in
    https://github.com/linux-surface/linux-surface/issues/1494 (``nfs: server thinkcentre not responding, timed
    out``) and Lustre's ``LustreError: 11-0: ... operation ost_connect to node ... failed: rc = -16``."""
    t = START
    host = f"node{node + 1:02d}"
    up = 5000.0
    for i in range(10**9):
        t += rnd.expovariate(1 / 3.0)
        up += rnd.expovariate(1 / 3.0)
        k = i % 5
        ost = rnd.randrange(0, 300)
        msg = (f"LustreError: 11-0: scratch-OST{ost:04x}-osc-ffff{rnd.getrandbits(32):08x}: operation ost_connect to "
               f"node 10.{node}.{i % 256}.{rnd.randrange(1, 255)}@o2ib failed: rc = -{rnd.choice((16, 19, 107, 110))}"
               if k == 0 else
               f"Lustre: {rnd.randrange(1000, 99999)}:0:(client.c:{2000 + i % 300}:ptlrpc_expire_one_request()) @@@ "
               f"Request sent has timed out for slow reply: [sent {int(t) - 40}/real {int(t) - 40}]  req@"
               f"{rnd.getrandbits(48):016x} x{rnd.getrandbits(50)}/t0(0) o400->scratch-OST{ost:04x}-osc@10.1.0."
               f"{ost % 250}@o2ib:28/4 lens 224/224 e 0 to 1 dl {int(t)} ref 1 fl Rpc:XN/0/ffffffff rc 0/-1"
               if k == 1 else
               f"nfs: server fs{i % 4}.cluster.local not responding, still trying" if k == 2 else
               f"mmfs: [E] Unable to access file system gpfs{i % 3}, error {rnd.choice((5, 110, 2))} (disk {ost})"
               if k == 3 else f"nfs: server fs{i % 4}.cluster.local OK")
        yield f"{syslog_time(t)} {host} kernel: [{up:12.6f}] {msg}" if k != 3 else f"{syslog_time(t)} {host} {msg}"


# ----------------------------------------------------------------------------------------------- formats nobody planned
# Formats the fast path was not written for (issue 29's second part): other header layouts, prefixes and separators.


def glog_time(t: float, digits: int = 6) -> str:
    """glog's ``MMDD HH:MM:SS.ffffff`` (no year), with ``digits`` fraction digits."""
    tm = time.gmtime(t)
    return f"{tm.tm_mon:02d}{tm.tm_mday:02d} {time.strftime('%H:%M:%S', tm)}.{int(t * 10**digits) % 10**digits:0{digits}d}"


def gen_glog(node: int, rnd: random.Random) -> Iterator[str]:
    """absl/glog lines of a JAX or PyTorch C++ runtime: ``I0820 14:27:21.482718 4030958 ProcessGroupNCCL.cpp:980]
    [PG ID 1 PG GUID 1 Rank 1] ProcessGroupNCCL environments: ...`` as in https://github.com/meta-pytorch/torchforge/
    pull/55, and torchelastic's ``W0219 09:17:03.837000 140066961602368 torch/distributed/elastic/multiprocessing/
    api.py:858] Sending process 2448006 closing signal SIGTERM`` (https://github.com/hpcaitech/ColossalAI/issues/6202);
    the trainer's step lines through absl logging (thread ids of 4 to 15 digits, a padded one where glog pads)."""
    clock = Clock(START + node * 0.2, 1.3)
    main_tid = rnd.randrange(1_000_000, 4_200_000)
    rank = node * GPUS
    for step in range(1, 10**9):
        t = clock.tick(rnd)
        if step % 40 == 1:
            tid = main_tid + rnd.randrange(1, 40)
            yield (f"I{glog_time(t)} {tid:7d} ProcessGroupNCCL.cpp:{rnd.choice((980, 1669, 1998))}] [PG ID 0 PG GUID 0 "
                   f"Rank {rank}] ProcessGroupNCCL initialized with following options: NCCL_ASYNC_ERROR_HANDLING: 3, "
                   f"TIMEOUT(ms): 600000, USE_HIGH_PRIORITY_STREAM: 0")
        if step % 97 == 0:
            yield (f"W{glog_time(t)} {rnd.randrange(10**14, 10**15)} torch/distributed/elastic/agent/server/api.py:"
                   f"{rnd.choice((704, 725))}] [default] worker group heartbeat, rank {rank}, restarts 0")
        yield (f"I{glog_time(t)} {main_tid:7d} train.py:{rnd.choice((412, 415))}] step {step}, loss "
               f"{loss_at(step, rnd):.4f}, grad_norm {rnd.uniform(0.1, 9):.3f}, lr {3e-4 * min(1, step / 2000):.3e}, "
               f"tokens/s {rnd.randrange(9000, 99999)}, step_time {rnd.uniform(0.9, 1.6):.3f}s")


def gen_mpi_tf(node: int, rnd: random.Random) -> Iterator[str]:
    """OpenMPI's ``--tag-output`` prefix (``[1,1]<stdout>:``, https://github.com/horovod/horovod/issues/3871) before
    TensorFlow's own C++ log lines (``2021-01-12 20:45:46.201878: I tensorflow/stream_executor/platform/default/
    dso_loader.cc:48] Successfully opened dynamic library libcudart.so.10.1``,
    https://github.com/horovod/horovod/issues/2588) and a Horovod Keras trainer's output, ranks interleaved."""
    clock = Clock(START, 0.5)
    ranks = [node * GPUS + g for g in range(GPUS)]
    for step in range(1, 10**9):
        t = clock.tick(rnd)
        r = rnd.choice(ranks)
        stream = "stderr" if step % 7 == 0 else "stdout"
        if stream == "stderr":
            yield (f"[1,{r}]<stderr>:{iso(t)}.{int(t * 1e6) % 10**6:06d}: I tensorflow/core/common_runtime/gpu/"
                   f"gpu_device.cc:{rnd.choice((1510, 1862))}] Created device /job:localhost/replica:0/task:0/device:"
                   f"GPU:0 with {rnd.randrange(30000, 79000)} MB memory:  -> device: 0, name: NVIDIA A100-SXM4-80GB, "
                   f"pci bus id: 0000:{0x18 + (r % GPUS) * 0x11:02x}:00.0")
        else:
            yield (f"[1,{r}]<stdout>:{step % 500:3d}/500 [{'=' * (step % 500 * 30 // 500):<30}] - ETA: "
                   f"{rnd.randrange(1, 90)}s - loss: {loss_at(step, rnd):.4f} - accuracy: {rnd.uniform(0.1, 0.99):.4f}")


def gen_c10(node: int, rnd: random.Random) -> Iterator[str]:
    """torchrun's ``[rankN]:`` prefix before c10's own header, nine fraction digits and no year
    (``[rank0]:[W515 07:06:42.829549331 ProcessGroupNCCL.cpp:1117] WARNING: process group has NOT been destroyed
    ...``, https://github.com/pytorch/pytorch/issues/126275), between a trainer's printed step lines."""
    clock = Clock(START, 0.7)
    rank = node * GPUS
    for step in range(1, 10**9):
        t = clock.tick(rnd)
        if step % 5 == 0:
            src = rnd.choice(("ProcessGroupNCCL.cpp:4715", "CUDAAllocatorConfig.h:28", "reducer.cpp:1400"))
            yield (f"[rank{rank}]:[{rnd.choice('WI')}{glog_time(t, 9)} {src}] [PG ID 0 PG GUID 0 Rank {rank}] Warning: "
                   f"grad strides do not match bucket view strides. bucket_view.sizes() = [{rnd.randrange(64, 8192)}, "
                   f"{rnd.choice((1024, 4096))}], strides() = [{rnd.choice((1024, 4096))}, 1]")
        yield (f"[rank{rank}]:step {step:6d} | loss {loss_at(step, rnd):7.4f} | lr {3e-4 * min(1, step / 500):.2e} | "
               f"dt {rnd.uniform(600, 1400):7.2f}ms | tok/sec {rnd.uniform(30000, 420000):10.2f} | mfu "
               f"{rnd.uniform(20, 55):5.2f}%")


def cri_time(t: float, zone: str = "Z") -> str:
    """CRI's RFC 3339 time with nanoseconds (``2020-01-26T03:17:29.346494690+00:00`` or ``...Z``)."""
    return f"{iso(t, 'T')}.{int(t * 1e6) % 10**6:06d}{rnd_ns(t):03d}{zone}"


def rnd_ns(t: float) -> int:
    return int(t * 1e9) % 1000


def gen_cri(node: int, rnd: random.Random) -> Iterator[str]:
    """A pod's log as the kubelet keeps it under CRI-O or containerd: an RFC 3339 nanosecond time, the stream and a
    full/partial tag before the container's own line (``2020-01-26T03:17:29.346494690+00:00 stderr F 2020/01/26
    03:17:29 provider.go:117: ...``, https://github.com/cri-o/cri-o/issues/3181; ``... Z stdout F ...``,
    https://github.com/kubernetes/kubernetes/issues/70539), carrying DeepSpeed's engine lines with their own time."""
    clock = Clock(START, 0.8)
    for step in range(1, 10**9):
        t = clock.tick(rnd)
        yield (f"{cri_time(t + 0.0004)} stdout F [{iso(t, frac=',')}] [INFO] [logging.py:96:log_dist] [Rank 0] "
               f"step={step}, skipped={step // 997}, lr=[{3e-4 * min(1, step / 1000):.10g}], mom=[[0.9, 0.95]]")
        if step % 3 == 0:
            yield (f"{cri_time(t + 0.0021)} stderr F {time.strftime('%Y/%m/%d %H:%M:%S', time.gmtime(t))} "
                   f"dataloader.go:{rnd.choice((88, 117))}: prefetched shard {rnd.randrange(0, 4096):05d} "
                   f"({rnd.uniform(10, 900):.1f} MB) in {rnd.uniform(0.1, 4):.2f}s")


def gen_journal(node: int, rnd: random.Random) -> Iterator[str]:
    """A node's journal exported with ``journalctl -o short-iso-precise`` (ISO time with microseconds and a zone
    offset, https://github.com/systemd/systemd/pull/5884): kernel, systemd and daemon lines of a GPU node, as in
    https://github.com/leptonai/gpud/pull/1209 (``kernel: mlx5_core 0000:ab:00.0 mlx5_5: Port: 1 Link ACTIVE``)."""
    t = START
    host = f"gpu-node-{node + 1:03d}"
    for i in range(10**9):
        t += rnd.expovariate(1 / 2.0)
        stamp = f"{iso(t, 'T')}.{int(t * 1e6) % 10**6:06d}+00:00"
        k = i % 5
        if k == 0:
            yield (f"{stamp} {host} kernel: mlx5_core 0000:{0xab + i % 4:02x}:00.0 mlx5_{i % 8}: Port: 1 Link "
                   f"{rnd.choice(('ACTIVE', 'INIT', 'DOWN'))}")
        elif k == 1:
            yield (f"{stamp} {host} systemd[1]: Started session-{rnd.randrange(1, 99999)}.scope - Session "
                   f"{rnd.randrange(1, 99999)} of User slurm.")
        elif k == 2:
            yield (f"{stamp} {host} nvidia-persistenced[{rnd.randrange(900, 4000)}]: device 0000:"
                   f"{0x18 + (i % 8) * 0x11:02x}:00.0 - persistence mode enabled.")
        elif k == 3:
            yield (f"{stamp} {host} slurmstepd[{rnd.randrange(10000, 400000)}]: task/cgroup: _memcg_initialize: job: "
                   f"alloc={rnd.randrange(100000, 2000000)}MB mem.limit={rnd.randrange(100000, 2000000)}MB")
        else:
            yield (f"{stamp} {host} kernel: workqueue: ib_cache_event_task [ib_core] hogged CPU for >10000us "
                   f"{rnd.randrange(4, 64)} times, consider switching to WQ_UNBOUND")


def gen_pdsh(node: int, rnd: random.Random) -> Iterator[str]:
    """DeepSpeed's multi-node launcher through pdsh: every line behind the address of the host that wrote it
    (``9.206.63.59: [2023-12-14 11:07:45,660] [INFO] [r...``, https://github.com/huggingface/accelerate/issues/2249),
    DeepSpeed's engine lines and a Hugging Face Trainer's dicts as in the ``deepspeed`` and ``hf-trainer`` formats."""
    clock = Clock(START, 0.9)
    ip = f"10.{node // 4}.{node % 4 * 16 + 3}.{rnd.randrange(2, 250)}"
    for step in range(1, 10**9):
        t = clock.tick(rnd)
        yield (f"{ip}: [{iso(t, frac=',')}] [INFO] [logging.py:96:log_dist] [Rank 0] step={step}, skipped="
               f"{step // 997}, lr=[{3e-4 * min(1, step / 1000):.10g}], mom=[[0.9, 0.95]]")
        if step % 2 == 0:
            yield (f"{ip}: {{'loss': {round(loss_at(step, rnd), 4)}, 'grad_norm': {rnd.uniform(0.1, 9):.16g}, "
                   f"'learning_rate': {2e-5 * (1 - step / 10**6):.16g}, 'epoch': {round(step / 4000, 2)}}}")


def gen_logfmt(node: int, rnd: random.Random) -> Iterator[str]:
    """logfmt (``datetime=2022-02-22T14:14:48+03:00 level=ERROR code=42 message="error message"``,
    https://github.com/severuykhin/go-logfmt-logger), as a Go training operator or a trainer's structured logger
    writes it: a zoned ISO time first, quoted messages, and numbers as bare values."""
    clock = Clock(START, 1.0)
    rank = node * GPUS
    for step in range(1, 10**9):
        t = clock.tick(rnd)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t + 3 * 3600)) + f".{int(t * 1000) % 1000:03d}+03:00"
        yield (f"time={stamp} level=info msg=\"train step\" rank={rank} step={step} loss={loss_at(step, rnd):.5f} "
               f"grad_norm={rnd.uniform(0.1, 9):.4f} lr={3e-4 * min(1, step / 2000):.3e} "
               f"throughput={rnd.uniform(100, 9000):.1f}")
        if step % 25 == 0:
            yield (f"time={stamp} level=warn msg=\"slow data loader\" rank={rank} wait_ms={rnd.randrange(100, 90000)} "
                   f"shard=\"/data/shards/part-{rnd.randrange(0, 99999):05d}.arrow\"")


def gen_ansi(node: int, rnd: random.Random) -> Iterator[str]:
    """A coloured console logger written to a file, its ANSI colour codes kept around the level and the logger
    (``Oct 10, 2019 07:22:57 \\x1b[34mINFO:\\x1b[0m Some text``,
    https://github.com/mozilla-frontend-infra/react-lazylog/issues/57), the date as ``Mon DD, YYYY HH:MM:SS``."""
    clock = Clock(START, 1.1)
    for step in range(1, 10**9):
        t = clock.tick(rnd)
        tm = time.gmtime(t)
        stamp = f"{MONTHS[tm.tm_mon - 1]} {tm.tm_mday:02d}, {tm.tm_year} {time.strftime('%H:%M:%S', tm)}"
        yield (f"{stamp} \x1b[34mINFO:\x1b[0m \x1b[36mtrainer\x1b[0m epoch {step // 5000} step {step} loss "
               f"\x1b[1m{loss_at(step, rnd):.4f}\x1b[0m lr {3e-4 * min(1, step / 2000):.2e} "
               f"({rnd.uniform(0.5, 3):.2f} s/step)")
        if step % 50 == 0:
            yield (f"{stamp} \x1b[33mWARNING:\x1b[0m \x1b[36mtorch.distributed\x1b[0m NCCL watchdog is slow: "
                   f"{rnd.randrange(100, 5000)} ms since the last heartbeat")

FORMATS: dict[str, tuple[Gen, str]] = {
    "megatron": (gen_megatron, "train.log"),
    "megatron-deepspeed": (gen_megatron_deepspeed, "train.log"),
    "deepspeed": (gen_deepspeed, "train.log"),
    "hf-trainer": (gen_hf, "train.log"),
    "lightning": (gen_lightning, "train.log"),
    "nemo": (gen_nemo, "train.log"),
    "torchtitan": (gen_torchtitan, "train.log"),
    "composer": (gen_composer, "train.log"),
    "fairseq": (gen_fairseq, "train.log"),
    "python-logging": (gen_pylog, "train.log"),
    "json-lines": (gen_jsonl, "metrics.jsonl"),
    "ray-train": (gen_ray_train, "driver.log"),
    "torch-xla": (gen_torch_xla, "train.log"),
    "compose": (gen_compose, "train.log"),
    "nccl": (gen_nccl, "nccl.log"),
    "kernel": (gen_kernel, "kern.log"),
    "storage": (gen_storage, "syslog"),
    "glog": (gen_glog, "train.log"),
    "mpi-tf": (gen_mpi_tf, "mpirun.out"),
    "c10-rank": (gen_c10, "train.log"),
    "cri": (gen_cri, "0.log"),
    "journal": (gen_journal, "journal.log"),
    "pdsh": (gen_pdsh, "train.log"),
    "logfmt": (gen_logfmt, "train.log"),
    "ansi": (gen_ansi, "train.log"),
}


def generate(fmt: str, job: Path, lines: int, seed: int = 29) -> int:
    """A 16-node job of ``lines`` lines of one format: ``node001/train.log`` ... (see ``FORMATS``)."""
    gen, name = FORMATS[fmt]
    shutil.rmtree(job, ignore_errors=True)
    per_node = lines // NODES
    for node in range(NODES):
        rnd = random.Random(seed * 1000 + node)
        folder = job / f"node{node + 1:03d}"
        folder.mkdir(parents=True)
        it = gen(node, rnd)
        with (folder / name).open("w", encoding="utf-8") as fh:
            fh.write("\n".join(next(it) for _ in range(per_node)))
            fh.write("\n")
    return count_lines(job)


# ----------------------------------------------------------------------------------------------- report
STEPS = {
    "parse1": ("parse --jobs 1", ["parse", "{job}", "-o", "{out}", "--quiet", "--jobs", "1"]),
    "parse2": ("parse --jobs 2", ["parse", "{job}", "-o", "{out}", "--quiet", "--jobs", "2"]),
    "analyze2": ("analyze --jobs 2", ["analyze", "{job}", "--no-store", "--quiet", "--jobs", "2"]),
}


def cpu_us(row: Row) -> float:
    """CPU microseconds per line of a row (user + system of the process and its children): on a shared machine the
    one figure that does not move with the load as wall clock does."""
    return (row.cpu or 0.0) / max(row.lines, 1) * 1e6


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lines", type=int, default=1_000_000, help="lines per format (1,000,000)")
    ap.add_argument("--formats", default=",".join(FORMATS), help="comma-separated, of: " + ", ".join(FORMATS))
    ap.add_argument("--work", default="/tmp/l4lite-format-zoo", help="folder for the generated jobs and outputs")
    ap.add_argument("--baseline-lines", type=int, default=50_000, help="lines of each drain3 baseline run")
    ap.add_argument("--skip", default="", help="comma-separated: " + ", ".join(STEPS))
    ap.add_argument("--repeat", type=int, default=1, help="runs of each measurement; the fastest is kept")
    ap.add_argument("--keep", action="store_true", help="keep the generated jobs")
    ap.add_argument("--list", action="store_true", help="print one line of each format and stop")
    args = ap.parse_args(argv)
    formats = [f.strip() for f in args.formats.split(",") if f.strip()]
    unknown = [f for f in formats if f not in FORMATS]
    if unknown:
        ap.error(f"unknown formats: {', '.join(unknown)}")
    if args.list:
        for fmt in formats:
            it = FORMATS[fmt][0](3, random.Random(1))
            sample = [next(it) for _ in range(200)]
            print(f"{fmt}:\n  " + "\n  ".join(sample[-3:]))
        return 0
    steps = [k for k in STEPS if k not in {s.strip() for s in args.skip.split(",")}]
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    print(f"# l4lite format zoo; {os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f} at start; "
          f"{args.lines:,} lines per format, {NODES} nodes")
    print(f"# l4lite's modules compiled to bytecode first ({compile_l4lite() or 'failed'})")
    table: list[tuple[str, int, float, dict[str, Row]]] = []
    out = work / "records.parquet"
    for fmt in formats:
        job = work / fmt
        t0 = time.perf_counter()
        lines = generate(fmt, job, args.lines)
        bracket = Bracket(job, args.baseline_lines)
        print(f"\n## {fmt}: {lines:,} lines generated in {time.perf_counter() - t0:.0f} s; drain3 "
              f"{bracket.last.rate:,.0f} lines/s ({bracket.last.note})", flush=True)
        rows: dict[str, Row] = {}
        for key in steps:
            name, argv_ = STEPS[key]
            cmd = L4LITE + [a.format(job=job, out=out) for a in argv_]
            note = ""
            if key != "parse1":
                note = f"two processes of a Python loop: {machine_parallelism(1_000_000):.2f}x one"
            runs = [bracket.around(partial(run_measured, name, cmd, lines, note)) for _ in range(args.repeat)]
            row = min(runs, key=lambda r: r.seconds)
            row.rss_process_mb = max(r.rss_process_mb or 0.0 for r in runs)
            rows[key] = row
            base = row.base[0] if row.base else 0.0
            print(f"  {name:<18} {row.rate:>10,.0f} lines/s {row.rate / base if base else 0:6.1f}x drain3 "
                  f"({base:,.0f} lines/s around it)  {row.seconds:6.1f} s  {cpu_us(row):6.2f} us/line CPU  "
                  f"peak RSS {row.rss_process_mb:,.0f} MB"
                  + (f"  ({row.note})" if row.note else ""), flush=True)
        table.append((fmt, lines, sum(bracket.rates) / len(bracket.rates), rows))
        out.unlink(missing_ok=True)
        if not args.keep:
            shutil.rmtree(job, ignore_errors=True)
    print(f"\n# summary: lines/s and ratio to drain3 with masking (measured around each row); load average "
          f"{os.getloadavg()[0]:.1f} at the end")
    head = f"{'format':<20} {'lines':>10} {'drain3/s':>9}"
    for key in steps:
        head += f" | {STEPS[key][0] + ' (/s, x, CPU/line)':>30}"
    print(head + " | peak RSS MB")
    for fmt, lines, drain, rows in table:
        cells = ""
        for key in steps:
            r = rows[key]
            base = r.base[0] if r.base else drain
            cells += f" | {r.rate:>10,.0f} {r.rate / base:>5.1f}x {cpu_us(r):>5.1f}us"
        rss = max(r.rss_process_mb or 0.0 for r in rows.values()) if rows else 0.0
        print(f"{fmt:<20} {lines:>10,} {drain:>9,.0f}{cells} | {rss:,.0f}")
    for key in steps:
        ratios = [(rows[key].rate / (rows[key].base[0] if rows[key].base else drain), fmt)
                  for fmt, _, drain, rows in table]
        if ratios:
            worst = min(ratios)
            print(f"worst format for {STEPS[key][0]}: {worst[1]} at {worst[0]:.1f}x drain3")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
