#!/usr/bin/env python3
"""Generate l4lite's "real jobs" fixtures: real 2-node x 2-rank CPU training jobs.

Each simulated node is its own UTS + mount namespace (`unshare --uts --mount`, root
needed) with its own hostname; the nodes meet in a c10d rendezvous on 127.0.0.1 and
train with DDP over gloo. Faults are injected by benchmarks/real_jobs/faults.py, which
prints nothing: the logs are what torchrun and the training stacks print by themselves.

    python3 benchmarks/real_jobs/generate.py                 # venv + all jobs
    python3 benchmarks/real_jobs/generate.py --only hf-      # jobs whose name matches
    python3 benchmarks/real_jobs/generate.py --list

Writes fixtures/real_jobs/<NNN-stack-fault>/{<host>/..., ground_truth.json, _meta/}
and fixtures/real_jobs/suite.json. A job whose expected proof lines are not found in
its logs is reported INVALID and not written.
"""
import argparse
import contextlib
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import capture  # noqa: E402  (beside this script)
import launchers  # noqa: E402

TORCH_VERSION = "2.13.0"
# Versions known to work with torch 2.13.0 on CPU (installed with torch pinned).
PACKAGES = ["transformers==5.24.0", "accelerate==1.16.0", "lightning==2.6.6", "pytorch-ignite==0.5.5", "tabulate"]
DEEPSPEED = "deepspeed==0.19.8"
DEEPSPEED_DEPS = ["hjson", "ninja", "psutil", "py-cpuinfo", "pydantic", "msgpack", "einops", "packaging", "tqdm"]

SCRIPTS = {"ddp": "train_ddp.py", "hf": "train_hf.py", "lightning": "train_lightning.py",
           "deepspeed": "train_deepspeed.py", "ignite": "train_ignite.py", "accelerate": "train_accelerate.py",
           "ray": "train_ray.py", "jax": "train_jax.py", "fabric": "train_fabric.py", "amp": "train_amp.py",
           "fsdp": "train_fsdp.py", "megatron": "train_megatron.py", "mmengine": "train_mmengine.py",
           "tf": "train_tf.py"}
FORMATS = {"ddp": "pytorch", "hf": "hf", "lightning": "lightning", "deepspeed": "deepspeed", "ignite": "ignite",
           "accelerate": "accelerate", "ray": "ray", "jax": "jax", "fabric": "fabric", "amp": "megatron",
           "fsdp": "fsdp", "megatron": "megatron", "mmengine": "mmengine", "tf": "tensorflow"}
# Ray Train runs in the torch venv (ray[train] installed with torch pinned); JAX has a venv of its own (no torch).
RAY = "ray[train]==2.60.0"
JAX_PACKAGES = ["jax[cpu]==0.10.2", "flax", "optax", "absl-py"]
TF_PACKAGES = ["tensorflow-cpu==2.21.0"]  # its own venv too (Keras 3, absl)
# OpenMMLab's MMEngine (its own pins allow torch 2.13), installed into the torch venv with the torch constraint
MMENGINE = "mmengine==0.10.7"

HOST_SETS = [
    ("gpu-node-07", "gpu-node-12"),
    ("a100-rack2-14", "a100-rack2-15"),
    ("cpu-node-a", "cpu-node-b"),
    ("llm-pretrain-7f9c4-worker-0", "llm-pretrain-7f9c4-worker-1"),
    ("h100-sxm-031", "h100-sxm-044"),
    ("dgx-b200-03", "dgx-b200-11"),
    ("compute-alpha", "compute-beta"),
    ("node0421", "node0422"),
    ("trn-sjc2-r08-n3", "trn-sjc2-r08-n4"),
]

# (stack, fault, fault_rank, fault_step, flight_recorder[, options])
# fault_step is the bad sample index for `data`, and for `worker_oom` the number of samples DataLoader
# worker 0 of the rank decodes before it runs out of memory. options: layout (torchelastic-logdir,
# srun-label, kubernetes-pods), loader_workers (DataLoader worker processes).
JOB_SPECS = [
    ("ddp", "healthy", None, None, False),
    ("ddp", "exception", 3, 17, False),
    ("ddp", "sigkill", 1, 23, False),
    ("ddp", "hang", 2, 15, False),
    ("ddp", "nan", 1, 12, False),
    ("ddp", "enospc", 0, 20, False),
    ("ddp", "corrupt_ckpt", None, None, False),
    ("ddp", "data", None, 300, False),
    ("hf", "healthy", None, None, False),
    ("hf", "exception", 2, 14, False),
    ("hf", "sigkill", 3, 21, False),
    ("hf", "hang", 1, 12, False),
    ("hf", "nan", 0, 16, False),
    ("hf", "enospc", 0, 20, False),
    ("hf", "corrupt_ckpt", None, None, False),
    ("hf", "data", None, 333, False),
    ("lightning", "healthy", None, None, False),
    ("lightning", "exception", 1, 19, False),
    ("lightning", "sigkill", 2, 13, False),
    ("lightning", "hang", 3, 18, False),
    ("lightning", "nan", 2, 13, False),
    ("lightning", "enospc", 0, 20, False),
    ("lightning", "corrupt_ckpt", None, None, False),
    ("lightning", "data", None, 411, False),
    ("ddp", "hang", 0, 25, False),
    ("hf", "hang", 3, 22, False),
    ("ddp", "hang", 3, 11, True),
    ("hf", "hang", 2, 17, True),
    ("lightning", "hang", 1, 14, True),
    ("deepspeed", "healthy", None, None, False),
    ("deepspeed", "exception", 2, 15, False),
    ("deepspeed", "sigkill", 0, 19, False),
    ("deepspeed", "hang", 1, 16, False),
    ("deepspeed", "nan", 3, 12, False),
    ("deepspeed", "enospc", 0, 20, False),
    ("deepspeed", "corrupt_ckpt", None, None, False),
    ("deepspeed", "hang", 2, 13, True),
    ("ddp", "host_oom", 2, 14, False),
    ("hf", "host_oom", 1, 17, False),
    ("ddp", "worker_oom", 1, 72, False, {"loader_workers": 2}),
    ("hf", "worker_oom", 3, 56, False, {"loader_workers": 2}),
    ("ddp", "sigstop", 1, 16, False),
    ("hf", "sigstop", 3, 13, False),
    ("ddp", "diverge", None, 15, False),
    ("hf", "diverge", None, 18, False),
    ("lightning", "erofs", 0, 20, False),
    ("deepspeed", "erofs", 0, 20, False),
    ("ddp", "host_oom", 3, 19, False, {"layout": "srun-label"}),
    ("hf", "exception", 1, 16, False, {"layout": "kubernetes-pods"}),
    ("ddp", "netdown", 3, 15, False),
    ("deepspeed", "netdown", 0, 17, False),
    # stacks l4lite's rules and readers were not written from: PyTorch-Ignite under torchrun, and a plain
    # Accelerate loop under `accelerate launch` (its own launcher, static rendezvous)
    ("ignite", "healthy", None, None, False),
    ("ignite", "exception", 1, 17, False),
    ("ignite", "sigkill", 3, 14, False),
    ("ignite", "hang", 2, 19, False),
    ("ignite", "diverge", None, 16, False),
    ("ignite", "enospc", 0, 20, False),
    ("ignite", "sigkill", 2, 22, False, {"layout": "srun-label"}),
    ("accelerate", "healthy", None, None, False),
    ("accelerate", "exception", 3, 13, False),
    ("accelerate", "sigkill", 1, 18, False),
    ("accelerate", "hang", 0, 15, False),
    ("accelerate", "nan", 2, 14, False),
    ("accelerate", "erofs", 0, 20, False),
    ("accelerate", "exception", 2, 11, False, {"layout": "kubernetes-pods"}),
    # two stacks without torchrun: Ray Train (a 2-node Ray cluster, TorchTrainer with 4 workers) and JAX
    # multi-process (jax.distributed, gloo CPU collectives, 2 processes per node)
    ("ray", "healthy", None, None, False),
    ("ray", "exception", 2, 14, False),
    ("ray", "sigkill", 1, 17, False),
    ("ray", "hang", 3, 12, False),
    ("ray", "nan", 1, 15, False),
    ("ray", "erofs", 0, 20, False),
    ("ray", "exception", 3, 16, False, {"layout": "kubernetes-pods"}),
    ("jax", "healthy", None, None, False),
    ("jax", "exception", 3, 15, False),
    ("jax", "sigkill", 2, 18, False),
    ("jax", "sigstop", 1, 13, False),
    ("jax", "nan", 2, 16, False),
    ("jax", "enospc", 0, 20, False),
    ("jax", "exception", 2, 12, False, {"layout": "srun-label"}),
    # kinds the jobs above do not cover: torchrun restarting the workers (--max-restarts 1), Lightning Fabric,
    # a DataLoader worker crashing, a wrong interface variable on one node, an address-space limit, one rank
    # alone in a collective, a token id past the vocabulary, a failure in the validation loop
    ("ddp", "restart", 2, 9, False, {"max_restarts": 1}),
    ("fabric", "healthy", None, None, False),
    ("fabric", "exception", 1, 12, False),
    ("ddp", "worker_segv", 3, 40, False, {"loader_workers": 2}),
    ("ddp", "bad_env", None, None, False),
    ("accelerate", "rlimit_as", 1, 14, False),
    ("ddp", "stray_barrier", 2, 13, False),
    ("ddp", "bad_token", None, 205, False),
    ("lightning", "eval_exception", 3, 20, False, {"validate": True}),
    ("fabric", "bad_token", None, 150, False),
    # node-local against job-wide: the same kind of fault on one node (its ranks fail, the other node's ranks
    # only lose them) and on every node; one rank's bad record of another kind; a checkpoint write under a
    # file-size limit; a wrong interface variable under Accelerate and in a merged `srun --label` file
    ("ddp", "bad_env_all", None, None, False),
    ("accelerate", "bad_env", None, None, False),
    ("ddp", "missing_file", None, None, False),
    ("lightning", "missing_file_all", None, None, False),
    ("lightning", "fsize", 0, 20, False),
    ("ddp", "short_sample", None, 230, False),
    ("accelerate", "short_sample", None, 170, False),
    ("ddp", "bad_env", None, None, False, {"layout": "srun-label"}),
    # one rank's own fault of kinds the jobs above do not cover: a NaN caught by autograd's anomaly detection
    # on the rank whose weight went bad, a sharded checkpoint missing one rank's file, a corrupt record read
    # by a DataLoader worker process (Lightning, Accelerate), a rank deadlocked on a lock before its collective
    # and a SIGKILLed rank under Lightning Fabric
    ("ddp", "anomaly_nan", 2, 12, False),
    ("ddp", "missing_shard", 3, None, False),
    ("lightning", "loader_data", None, 260, False, {"loader_workers": 2}),
    ("accelerate", "loader_data", None, 190, False, {"loader_workers": 2}),
    ("fabric", "deadlock", 3, 12, False),
    ("fabric", "sigkill", 2, 15, False),
    # kinds the jobs above do not cover: a restarted job whose two attempts share one merged `srun --label`
    # file, a rank that logs its failure through Python logging as JSON lines or in ANSI colours and exits, a
    # checkpoint write killed by SIGXFSZ, a DataLoader worker stuck in a read under a DataLoader timeout (plain
    # DDP and Accelerate), a background checkpoint upload that fails thousands of lines before the job hangs on
    # it, and one rank's short record under Lightning (its own data-fetching frames around the collate)
    ("ddp", "restart", 1, 9, False, {"max_restarts": 1, "layout": "srun-label"}),
    ("ddp", "json_exception", 2, 14, False),
    ("ddp", "ansi_exception", 3, 11, False),
    ("ddp", "fsize_signal", 0, 20, False),
    ("ddp", "loader_stall", 1, 60, False, {"loader_workers": 2}),
    ("ddp", "upload_enospc", 0, 250, False),
    ("accelerate", "loader_stall", 2, 40, False, {"loader_workers": 2}),
    ("lightning", "short_sample", None, 290, False),
    # training health on real numbers (jobs 120 on: `index` places them after the jobs other work adds): an fp16
    # loop with a dynamic loss scaler printed in Megatron-LM's layout, healthy (its first iterations search the
    # scale down from 2^32), with every step overflowing from one step on, and with a learning rate off by 10^3;
    # Accelerate with a JSON-lines tracker, diverging the same way
    ("amp", "healthy", None, None, False, {"index": 120}),
    ("amp", "overflow", None, 18, False, {"index": 121}),
    ("amp", "diverge", None, 17, False, {"index": 122}),
    ("accelerate", "diverge", None, 15, False, {"index": 123, "tracker": "jsonl"}),
    ("accelerate", "healthy", None, None, False, {"index": 124, "tracker": "jsonl"}),
    # kinds the jobs above do not cover (111-118): the other node's clock in another time zone (its lines 5 hours
    # behind the failing node's), a rank of the other node echoing dated sensor records (1970, 2099) just before
    # the failure, one rank all-reducing a metrics tensor of another shape (with TORCH_DISTRIBUTED_DEBUG=DETAIL every gloo rank
    # of torch 2.13 died of SIGSEGV at start-up here, so without it), a
    # rank killed in its validation pass, one node's local copy of the resume checkpoint truncated, a rank killed
    # half-way through writing a log line, a rank whose own output is lost aborting, and an overflowing
    # micro-batch under gradient accumulation
    ("ddp", "tz_exception", 3, 14, False, {"index": 111, "tz": "EST5"}),
    ("ddp", "stray_date", 2, 15, False, {"index": 112}),
    ("ddp", "collective_mismatch", 3, 13, False, {"index": 113}),
    ("ddp", "eval_sigkill", 2, 20, False, {"index": 114, "validate": True}),
    ("ddp", "node_corrupt_ckpt", None, None, False, {"index": 115}),
    ("ddp", "kill_midline", 2, 16, False, {"index": 116}),
    ("ddp", "silent_abort", 3, 12, False, {"index": 117}),
    ("ddp", "accum_nan", 1, 14, False, {"index": 118, "accum": 4}),
    # 114 with the first node (rank 0's, which logs the validation passes) in another time zone: the phase of the
    # other node's kill is told only by markers stamped five hours away
    ("ddp", "eval_sigkill", 2, 20, False, {"index": 119, "validate": True, "tz": "EST5"}),
    # kinds the jobs above do not cover (125-132): a rank logging only to its own file on the node (the console
    # holds the launcher alone), a restart whose second attempt fails otherwise than the first (it resumes from the
    # checkpoint the first attempt's killed save cut short), a NaN caught by Lightning's own anomaly detection, a
    # MemoryError of a checkpoint staged in memory under `ulimit -v`, one rank's model config with another hidden
    # size (DeepSpeed and plain DDP), a DataLoader worker stuck for good without a DataLoader timeout (the rank
    # prints nothing, its peers time out), and two ranks on two nodes failing on their own a moment apart
    ("ddp", "logfile_exception", 3, 14, False, {"index": 125}),
    ("ddp", "save_killed", 0, 20, False, {"index": 126, "max_restarts": 1}),
    ("lightning", "anomaly_nan", 1, 12, False, {"index": 127}),
    ("ddp", "save_memerror", 0, 20, False, {"index": 128}),
    ("deepspeed", "model_config", 2, None, False, {"index": 129}),
    ("ddp", "loader_hang", 2, 50, False, {"index": 130, "loader_workers": 2}),
    ("ddp", "two_faults", 1, 13, False, {"index": 131, "rank2": 2}),
    ("ddp", "model_config", 3, None, False, {"index": 132}),
    ("ddp", "netdrop", 2, 15, False, {"index": 133}),
    ("ddp", "exit0", 3, 14, False, {"index": 134}),
    ("ddp", "wrong_ckpt", None, None, False, {"index": 135}),
    ("ddp", "compile_nocxx", None, None, False, {"index": 136}),
    ("hf", "exit0", 2, 12, False, {"index": 137}),
    ("lightning", "netdrop", 1, 16, False, {"index": 138}),
    # kinds the jobs above do not cover (139-144): one node's /dev/shm far too small for the DataLoader workers'
    # batches (plain DDP and Accelerate), the rendezvous port on the first node already held by another process,
    # the first node's name missing from the second node's /etc/hosts, and the first node's processes in
    # America/New_York (local-time stamps, the others UTC) with the fault on that node: an exception and a hang;
    # 145: the small /dev/shm under the Hugging Face Trainer
    ("ddp", "shm_small", None, None, False, {"index": 139, "loader_workers": 2}),
    ("accelerate", "shm_small", None, None, False, {"index": 140, "loader_workers": 2}),
    ("accelerate", "port_taken", None, None, False, {"index": 141}),
    ("ddp", "no_master_host", None, None, False, {"index": 142}),
    ("ddp", "tz_exception", 1, 14, False, {"index": 143, "tz": "America/New_York"}),
    ("ddp", "hang", 0, 13, False, {"index": 144, "tz": "America/New_York"}),
    ("hf", "shm_small", None, None, False, {"index": 145, "loader_workers": 2}),
    # kinds the jobs above do not cover (146-153): one rank running a model with one more layer (an older revision
    # of the code on its node), a node-local checkpoint disk that fills at the third save (each node saves its
    # own copy), a token shard cut short on one node's local disk, a node whose process budget (pids cgroup) is
    # spent when the second epoch forks its DataLoader workers, a node missing one of the project's modules, and
    # a loss spike the run recovers from (no error anywhere); 152-153: the cut shard and the extra layer under Lightning
    ("ddp", "layer_mismatch", 1, None, False, {"index": 146}),
    ("ddp", "node_enospc", 2, 30, False, {"index": 147}),
    ("ddp", "shard_truncated", None, 15, False, {"index": 148}),
    ("ddp", "pids_limit", None, 21, False, {"index": 149, "loader_workers": 2}),
    ("ddp", "missing_module", None, None, False, {"index": 150}),
    ("ddp", "loss_spike", None, 18, False, {"index": 151}),
    ("lightning", "shard_truncated", None, 15, False, {"index": 152}),
    ("lightning", "layer_mismatch", 3, None, False, {"index": 153}),
    # kinds the jobs above do not cover on these stacks (154-160): a rank alone in a barrier while its peers
    # all-reduce (DeepSpeed, the HF Trainer), the kernel's OOM killer on one rank under Accelerate and Lightning,
    # an exception with the first node's clock 9 hours ahead of UTC (TZ=JST-9: its lines read later than the
    # failure; DeepSpeed, and Lightning with the fault on that node), and one rank all-reducing a metrics tensor of
    # another length under Accelerate
    ("deepspeed", "stray_barrier", 1, 14, False, {"index": 154}),
    ("accelerate", "host_oom", 2, 16, False, {"index": 155}),
    ("lightning", "host_oom", 3, 15, False, {"index": 156}),
    ("deepspeed", "tz_exception", 3, 14, False, {"index": 157, "tz": "JST-9"}),
    ("hf", "stray_barrier", 2, 12, False, {"index": 158}),
    ("accelerate", "collective_mismatch", 0, 13, False, {"index": 159}),
    ("lightning", "tz_exception", 0, 13, False, {"index": 160, "tz": "JST-9"}),
    # kinds the jobs above do not cover (161-167), on the stacks with few jobs: a node preempted (its launcher
    # SIGTERMed from outside, as a scheduler does) while the other trains on (Lightning, the HF Trainer); a slow
    # node (its ranks' CPU quota cut to 1 ms/s mid-run: fail-slow, it prints nothing; Accelerate, DeepSpeed); one
    # node's link degraded to 32 kbit/s (DeepSpeed); a node with an older accelerate than the HF Trainer needs
    # (its own site folder first on the path); a checkpoint disk out of inodes with space left (HF Trainer)
    ("lightning", "preempt", 2, 14, False, {"index": 161}),
    ("hf", "preempt", 1, 12, False, {"index": 162}),
    ("accelerate", "cpu_throttle", 3, 12, False, {"index": 163}),
    ("deepspeed", "cpu_throttle", 0, 14, False, {"index": 164}),
    ("deepspeed", "netslow", 2, 13, False, {"index": 165}),
    ("hf", "version_mismatch", None, None, False, {"index": 166}),
    ("hf", "inode_full", 0, 20, False, {"index": 167}),
    # 168: the preempted node under `accelerate launch` (its own launcher process), scored after the mechanism
    ("accelerate", "preempt", 3, 13, False, {"index": 168}),
    # PyTorch FSDP2 (`fully_shard` over gloo, sharded `torch.distributed.checkpoint` saves, torchtitan's log
    # layout), a stack none of the jobs above runs (169-177): the usual faults, then faults of sharded training:
    # one rank's model with one more block (its shards' all-gathers go out of step with its peers'), the first
    # node's checkpoint mount read-only while every rank writes its own shard, a rank leaving with status 0
    ("fsdp", "healthy", None, None, False, {"index": 169}),
    ("fsdp", "exception", 2, 14, False, {"index": 170}),
    ("fsdp", "sigkill", 1, 16, False, {"index": 171}),
    ("fsdp", "hang", 3, 13, False, {"index": 172}),
    ("fsdp", "nan", 1, 12, False, {"index": 173}),
    ("fsdp", "shard_mismatch", 2, None, False, {"index": 174}),
    ("fsdp", "erofs", 0, 20, False, {"index": 175}),
    ("fsdp", "exit0", 3, 15, False, {"index": 176}),
    ("fsdp", "diverge", None, 16, False, {"index": 177}),
    # Megatron-Core (tensor parallel 2 x data parallel 2 over gloo, Megatron's indexed dataset and torch_dist
    # checkpoints, Megatron-LM's progress line on the last rank), a stack none of the jobs above runs (178-187):
    # the usual faults, then faults of model-parallel training: one rank started with another tensor-parallel
    # size, one node's copy of the dataset's index file cut short, a checkpoint of one parallel layout resumed
    # by another (Megatron pads the vocabulary by the tensor-parallel size)
    ("megatron", "healthy", None, None, False, {"index": 178}),
    ("megatron", "exception", 2, 14, False, {"index": 179}),
    ("megatron", "sigkill", 1, 16, False, {"index": 180}),
    ("megatron", "hang", 3, 13, False, {"index": 181}),
    ("megatron", "nan", 1, 12, False, {"index": 182}),
    ("megatron", "tp_mismatch", 3, None, False, {"index": 183}),
    ("megatron", "idx_truncated", None, None, False, {"index": 184}),
    ("megatron", "layout_ckpt", None, None, False, {"index": 185}),
    ("megatron", "erofs", 0, 20, False, {"index": 186}),
    ("megatron", "diverge", None, 16, False, {"index": 187}),
    # what the 188 jobs above have fewest of (188-195): network faults (6 of 175 incidents) on the stacks that had
    # none (Fabric, Megatron-Core, FSDP2, AMP, Lightning, the HF Trainer), an exception in a validation pass (eval:
    # 3 jobs) under the plain DDP loop, and a node whose job environment asks for a CUDA device its torch build
    # does not have (a node set up apart: a CPU-only wheel)
    ("fabric", "netdown", 2, 14, False, {"index": 188}),
    ("megatron", "netdrop", 1, 13, False, {"index": 189}),
    ("fsdp", "netslow", 3, 12, False, {"index": 190}),
    ("amp", "netdown", 0, 15, False, {"index": 191}),
    ("lightning", "no_master_host", None, None, False, {"index": 192}),
    ("ddp", "eval_exception", 1, 20, False, {"index": 193, "validate": True}),
    ("ddp", "device_missing", None, None, False, {"index": 194}),
    ("hf", "netdrop", 2, 12, False, {"index": 195}),
    # what the 196 jobs above have fewest of (196-203), counted by category, phase, stack and layout: a full
    # checkpoint disk under Lightning Fabric, the kernel's OOM killer on one rank under the fp16 (AMP) loop and under
    # FSDP2, a corrupt record under PyTorch-Ignite, a DataLoader worker killed by the OOM killer under Lightning, a
    # node cut off under `accelerate launch` (no network job under Accelerate), a hang found only by the peers'
    # timeouts in Kubernetes pod logs, and a healthy run whose rank 0 logs a failed metrics push with its traceback
    # every 10 steps (the gateway is down; training goes on and ends normally)
    ("fabric", "enospc", 0, 20, False, {"index": 196}),
    ("amp", "host_oom", 1, 14, False, {"index": 197}),
    ("ignite", "data", None, 250, False, {"index": 198}),
    ("fsdp", "host_oom", 2, 13, False, {"index": 199}),
    ("lightning", "worker_oom", 3, 56, False, {"index": 200, "loader_workers": 2}),
    ("accelerate", "netdown", 1, 14, False, {"index": 201}),
    ("ddp", "hang", 2, 14, False, {"index": 202, "layout": "kubernetes-pods"}),
    ("ddp", "push_refused", None, None, False, {"index": 203}),
    # what the 204 jobs above have fewest of (204-210), counted by category, phase, stack, launcher and layout: a job
    # step ended by the scheduler at its time limit (Slurm: SIGTERM to every task, then SIGKILL; no node at fault),
    # a node's link dropping every packet under PyTorch-Ignite, one rank's short record under Lightning Fabric, a
    # rank killed in its validation pass under Lightning in an `srun --label` file, one node's local copy of the
    # resume checkpoint cut short in Kubernetes pod logs, a corrupt record under the fp16 (AMP) loop, and a NaN
    # weight under PyTorch-Ignite (its TerminateOnNan handler)
    ("ddp", "timelimit", None, 15, False, {"index": 204, "layout": "srun-label"}),
    ("ignite", "netdrop", 2, 14, False, {"index": 205}),
    ("fabric", "short_sample", None, 150, False, {"index": 206}),
    ("lightning", "eval_sigkill", 1, 20, False, {"index": 207, "validate": True, "layout": "srun-label"}),
    ("ddp", "node_corrupt_ckpt", None, None, False, {"index": 208, "layout": "kubernetes-pods"}),
    ("amp", "data", None, 300, False, {"index": 209}),
    ("ignite", "nan", 3, 12, False, {"index": 210}),
    # 211-212: a job that hung (one rank asleep inside its step, every other rank waiting in the next gradient
    # all-reduce, the collective timeout set past the job's limit, so no error line) and was then ended by the
    # scheduler's time limit some time later: the stuck node is the fault, the limit only ends what had stopped
    ("ddp", "stall", 2, 14, False, {"index": 211, "layout": "srun-label", "limit_after": 40}),
    ("ddp", "stall", 0, 12, False, {"index": 212, "layout": "srun-label", "limit_after": 60}),
    # what the 213 jobs above have fewest of (213-220), counted by stack, category, phase and layout: no job failed
    # in its shutdown (a rank stuck at exit after the last step, under DDP, Fabric in pod logs and accelerate
    # launch), eval 5 (an exception in Lightning's validation loop in pod logs), pods 5 and srun 9 (the OOM killer
    # under PyTorch-Ignite in an srun file, a node cut off under Lightning in an srun file), AMP 6 (a full
    # checkpoint disk), Fabric 8 (the OOM killer on one rank)
    ("ddp", "exit_hang", 1, 40, False, {"index": 213}),
    ("fabric", "exit_hang", 2, 40, False, {"index": 214, "layout": "kubernetes-pods"}),
    ("accelerate", "exit_hang", 3, 40, False, {"index": 215}),
    ("lightning", "eval_exception", 3, 20, False, {"index": 216, "validate": True, "layout": "kubernetes-pods"}),
    ("ignite", "host_oom", 2, 14, False, {"index": 217, "layout": "srun-label"}),
    ("lightning", "netdown", 1, 14, False, {"index": 218, "layout": "srun-label"}),
    ("amp", "enospc", 0, 20, False, {"index": 219}),
    ("fabric", "host_oom", 3, 15, False, {"index": 220}),
    # what the 221 jobs above have fewest of (221-228), counted by stack, phase, category and healthy kind: no job
    # of OpenMMLab's MMEngine (its Runner, LoggerHook and CheckpointHook lines): a healthy run, a corrupt record
    # (data), a cut resume checkpoint (load), an exception in its validation loop (eval), a node cut off (network),
    # a rank stuck at exit (shutdown); and two healthy runs that look alarming: one
    # with torch's C++ and distributed debug logging on (a debugging run), and a run whose every step prints a
    # UserWarning (Python warnings shown always)
    ("mmengine", "healthy", None, None, False, {"index": 221}),
    ("mmengine", "data", None, 300, False, {"index": 222}),
    ("mmengine", "corrupt_ckpt", None, None, False, {"index": 223}),
    ("mmengine", "eval_exception", 2, 20, False, {"index": 224, "validate": True}),
    ("mmengine", "netdown", 1, 14, False, {"index": 225}),
    ("mmengine", "exit_hang", 3, 40, False, {"index": 226}),
    ("mmengine", "debug_logs", None, None, False, {"index": 227}),
    ("ddp", "warn_storm", None, None, False, {"index": 228}),
    # torchrun with per-rank files (--log-dir, --tee) run as a Slurm job step: the srun file and the rank files hold
    # the same rank lines twice, one labelled by task, the other placed by folder
    ("ddp", "data", None, 411, False, {"index": 229, "layout": "srun-logdir"}),
    # what the 230 jobs above have fewest of (230-...), counted by stack, phase and category: JAX has 7 jobs and no
    # network, eval, data or checkpoint-permission fault, and no job whose coordination service itself dies: a node
    # whose link drops every packet, a read-only checkpoint disk, process 0 (the coordination service's host)
    # killed, an exception in the validation pass, a cut feature shard on one node's disk, and a healthy run whose
    # every step prints JAX's float64 UserWarning
    ("jax", "netdrop", 2, 14, False, {"index": 230}),
    ("jax", "erofs", 0, 20, False, {"index": 231}),
    ("jax", "sigkill", 0, 16, False, {"index": 232}),
    ("jax", "eval_exception", 3, 20, False, {"index": 233, "validate": True}),
    ("jax", "shard_truncated", None, 16, False, {"index": 234}),
    ("jax", "warn_storm", None, None, False, {"index": 235}),
    # no TensorFlow job: MultiWorkerMirroredStrategy (4 workers, 2 per node) in a custom loop, its healthy run (the
    # start-up warnings TensorFlow prints on a CPU machine), a worker killed, a read-only checkpoint disk on the
    # chief, a corrupt TFRecord on one node's disk
    ("tf", "healthy", None, None, False, {"index": 236}),
    ("tf", "sigkill", 3, 15, False, {"index": 237}),
    ("tf", "erofs", 0, 20, False, {"index": 238}),
    ("tf", "data", None, 18, False, {"index": 239}),
]
# runs that end normally: no incident, whatever alarming lines they print on the way
HEALTHY = ("healthy", "push_refused", "debug_logs", "warn_storm")
# faults set up per node by the generator (no rank injects them; a node may fail before any rank registers)
NODE_FAULTS = ("bad_env", "bad_env_all", "missing_file", "missing_file_all", "node_corrupt_ckpt", "compile_nocxx",
               "shm_small", "port_taken", "no_master_host", "missing_module", "version_mismatch", "idx_truncated",
               "device_missing")
# node faults where the launcher itself fails (no rank starts on the struck node, so no rank's exit code to prove)
AGENT_FAULTS = ("port_taken", "no_master_host")
# how far a job's `tz` option puts the first node's local time from UTC (for the notes)
TZ_SHIFT = {"EST5": "5 hours behind", "America/New_York": "5 hours behind", "JST-9": "9 hours ahead of"}
LAYOUT_SUFFIX = {"srun-label": "_srun", "kubernetes-pods": "_k8s", "srun-logdir": "_srunlog"}
# layouts whose per-rank files torchrun writes (--log-dir --redirects 3 --tee 3), and whose node streams a Slurm
# step collects (srun --label)
LOGDIR_LAYOUTS = ("torchelastic-logdir", "srun-logdir")
SRUN_LAYOUTS = ("srun-label", "srun-logdir")
OOM_LIMIT = 64 * 1024 * 1024  # the small cgroup's memory.limit_in_bytes (only pages charged after joining it)

PHASE = {"exception": "train", "sigkill": "train", "hang": "train", "nan": "train", "data": "train",
         "enospc": "checkpoint", "corrupt_ckpt": "load", "healthy": None, "host_oom": "train",
         "worker_oom": "train", "sigstop": "train", "diverge": "train", "erofs": "checkpoint", "netdown": "train",
         "restart": "train", "worker_segv": "train", "bad_env": "init", "rlimit_as": "train", "stray_barrier": "train",
         "bad_token": "train", "eval_exception": "eval", "bad_env_all": "init", "missing_file": "init",
         "missing_file_all": "init", "fsize": "checkpoint", "short_sample": "train", "anomaly_nan": "train",
         "missing_shard": "load", "loader_data": "train", "deadlock": "train", "overflow": "train",
         "json_exception": "train",
         "ansi_exception": "train", "fsize_signal": "checkpoint", "loader_stall": "train",
         "upload_enospc": "checkpoint", "tz_exception": "train", "stray_date": "train",
         "collective_mismatch": "train", "eval_sigkill": "eval", "node_corrupt_ckpt": "load", "kill_midline": "train",
         "silent_abort": "train", "accum_nan": "train", "logfile_exception": "train", "save_killed": "checkpoint",
         "save_memerror": "checkpoint", "model_config": "init", "loader_hang": "train", "two_faults": "train",
         "netdrop": "train", "exit0": "train", "wrong_ckpt": "load", "compile_nocxx": "train",
         "shm_small": "train", "port_taken": "init", "no_master_host": "init",
         "layer_mismatch": "init", "node_enospc": "checkpoint", "shard_truncated": "train", "pids_limit": "train",
         "missing_module": "init", "loss_spike": "train", "preempt": "train", "cpu_throttle": "train",
         "netslow": "train", "version_mismatch": "init", "inode_full": "checkpoint",
         "shard_mismatch": "train", "tp_mismatch": "init", "idx_truncated": "init", "layout_ckpt": "load", "device_missing": "init",
         "push_refused": None, "debug_logs": None, "warn_storm": None, "timelimit": "train", "stall": "train", "exit_hang": "shutdown"}
CATEGORY = {"exception": "software", "sigkill": "host", "hang": "software", "nan": "numerical",
            "enospc": "storage", "corrupt_ckpt": "storage", "data": "data", "healthy": None,
            "host_oom": "host", "worker_oom": "host", "sigstop": "software", "diverge": "numerical",
            "erofs": "storage", "netdown": "network", "restart": "software", "worker_segv": "software",
            "bad_env": "user_config", "rlimit_as": "host", "stray_barrier": "software", "bad_token": "data",
            "eval_exception": "software", "bad_env_all": "user_config", "missing_file": "user_config",
            "missing_file_all": "user_config", "fsize": "storage", "short_sample": "data",
            "anomaly_nan": "numerical", "missing_shard": "storage", "loader_data": "data", "deadlock": "software",
            "overflow": "numerical",
            "json_exception": "software", "ansi_exception": "software", "fsize_signal": "storage",
            "loader_stall": "data", "upload_enospc": "storage", "tz_exception": "software",
            "stray_date": "software", "collective_mismatch": "software", "eval_sigkill": "host",
            "node_corrupt_ckpt": "storage", "kill_midline": "host", "silent_abort": "software",
            "accum_nan": "numerical", "logfile_exception": "software", "save_killed": "host",
            "save_memerror": "host", "model_config": "user_config", "loader_hang": "data", "two_faults": "software",
            "netdrop": "network", "exit0": "software", "wrong_ckpt": "user_config", "compile_nocxx": "user_config",
            "shm_small": "user_config", "port_taken": "user_config", "no_master_host": "network",
            "layer_mismatch": "user_config", "node_enospc": "storage", "shard_truncated": "data",
            "pids_limit": "user_config", "missing_module": "user_config", "loss_spike": "numerical",
            # a preempted node is the host taken away; a throttled node is the host's fault (fail-slow); an older
            # package on one node is its environment (as a missing module); no inodes left is the disk's
            "preempt": "host", "cpu_throttle": "host", "netslow": "network", "version_mismatch": "user_config",
            "inode_full": "storage",
            # a node running an older revision of the model code (as layer_mismatch): its environment
            "shard_mismatch": "user_config",
            # a rank launched with another tensor-parallel size is its node's job script (as layer_mismatch); a
            # cut copy of the data's index file is data; a checkpoint of another layout is the job's setting
            "tp_mismatch": "user_config", "idx_truncated": "data", "layout_ckpt": "user_config",
            # a node whose environment names a device its torch build lacks: its setup (as compile_nocxx)
            "device_missing": "user_config",
            # a metrics gateway that refuses the push while training goes on: no fault of the job
            "push_refused": None,
            # torch's debug logging on, and a warning every step: noise of a run that ends normally
            "debug_logs": None, "warn_storm": None,
            # the job's own wall-clock limit ended it (the real corpus's Slurm rule files it so): no node at fault
            "timelimit": "user_config",
            # a rank stuck in its step (as hang); the time limit that ends the job later is its consequence
            "stall": "software",
            # a rank stuck at exit after the last step (as hang, in the run's closing barrier)
            "exit_hang": "software"}
FINISH = {"ddp": r"training finished: 40 steps", "hf": r"'train_runtime'|train_runtime",
          "lightning": r"`Trainer.fit` stopped: `max_steps=40` reached", "deepspeed": r"training finished: 40 steps",
          "ignite": r"Engine run (complete|finished)", "accelerate": r"training finished: 40 steps",
          "ray": r"training finished: 40 steps", "jax": r"training finished: 40 steps",
          "tf": r"training finished: 40 steps",
          "fabric": r"training finished: 40 steps", "amp": r"training finished: 40 steps",
          "fsdp": r"Training completed", "megatron": r"training finished: 40 steps",
          "mmengine": r"training finished: 40 steps"}
NAN = {"ddp": r"loss is nan at step", "hf": r"'loss': '?nan'?|'grad_norm': '?nan'?", "lightning": r"is not finite",
       "deepspeed": r"loss is nan at step", "ignite": r"contains NaN or Inf|Loss: nan",
       "accelerate": r"train_loss nan", "ray": r"loss is nan at step", "jax": r"loss is nan at step",
       "fsdp": r"loss is nan at step", "megatron": r"Unexpected result nan", "mmengine": r"loss: nan"}
# Faults of the checkpoint save, by the lines that show the failed write.
SAVE_FAULTS = {"erofs": r"Read-only file system", "enospc": r"No space left on device|file write failed|unexpected pos",
               "fsize": r"File too large|file write failed|unexpected pos"}


# Ray and JAX: the lines that prove a rank's fault on its node ({pid}, {rank}: the faulty rank's), and whether
# each must be there; then one line of the job's cascade (anywhere), if there is one.
OTHER_PROOF = {
    "ray": {"exception": [(r"RuntimeError: shape mismatch in attention block", True)],
            # the raylet of the rank's node finds its worker process gone (it cannot signal its process group)
            "sigkill": [(r"process group {pid}: No such process", True)],
            # the stuck worker is ended by its raylet at teardown
            "hang": [(r"(SIGTERM|SIGKILL) to pgid={pid}\b", False)]},
    "jax": {"exception": [(r"RuntimeError: shape mismatch in attention block", True)],
            # the process's own log just stops: its peers' coordination client names it (task id = process id)
            # (process 0 hosts the coordination service: when it dies, every other process loses the service's
            # socket instead)
            "sigkill": [(r"Task {rank} heartbeat timeout|unhealthy \(stopped sending heartbeats\)"
                         r"|grpc_message:\"Socket closed\"", True, "anywhere")],
            "sigstop": [(r"Task {rank} heartbeat timeout|unhealthy \(stopped sending heartbeats\)", True, "anywhere")],
            # the cut node's processes are named by the coordination service on the other node
            "netdrop": [(r"Connection timed out", True),
                        (r"Task {node_tasks} heartbeat timeout|unhealthy \(stopped sending heartbeats\)", True,
                         "anywhere")],
            "eval_exception": [(r"RuntimeError: shape mismatch in attention block", True)],
            "shard_truncated": [(r"Failed to read all data for array", True)]},
}
# one line of the job's end seen from the driver or the peers (anywhere), when there is one
OTHER_PROOF["tf"] = {
    # every worker reads the whole file (each keeps its quarter): the cut node's workers both meet the bad record
    "data": [(r"DataLossError|corrupted record at \d+", True)],
    # the killed worker says nothing; its peers' collectives name the lost task
    "sigkill": [(r"remote target /job:worker/replica:0/task:{rank} ", True, "anywhere")],
}
OTHER_CASCADE = {"ray": r"WorkerGroupError: Training failed|A worker died or was killed",
                 "jax": r"heartbeat timeout", "tf": r"UnavailableError|DeadlineExceeded|CancelledError"}


def _read_json(path: str) -> dict:
    with open(path) as fh:
        return json.load(fh)


def jobs():
    out = []
    for i, (stack, fault, rank, step, fr, *opts) in enumerate(JOB_SPECS):
        opt = opts[0] if opts else {}
        i = opt.get("index", i)
        layout = opt.get("layout", "torchelastic-logdir")
        name = f"{i:03d}-{stack}-{fault}" + ("_fr" if fr else "") + LAYOUT_SUFFIX.get(layout, "")
        out.append(dict(name=name, index=i, stack=stack, fault=fault, rank=rank, step=step, fr=fr,
                        hosts=list(HOST_SETS[i % len(HOST_SETS)]), layout=layout,
                        loader_workers=opt.get("loader_workers", 0), max_restarts=opt.get("max_restarts", 0),
                        validate=opt.get("validate", False), tracker=opt.get("tracker"), tz=opt.get("tz"),
                        accum=opt.get("accum", 1), rank2=opt.get("rank2"),
                        limit_after=opt.get("limit_after")))
    return out


# --------------------------------------------------------------------------- venv
def ensure_venv(venv, deepspeed):
    py = os.path.join(venv, "bin", "python")
    if not os.path.exists(py):
        subprocess.check_call([sys.executable, "-m", "venv", venv])
    pip = [py, "-m", "pip", "install", "-q"]
    # torch pinned exactly: a CPU build of torch 2.13.0 is what pip must take.
    subprocess.check_call(pip + [f"torch=={TORCH_VERSION}"])
    constraint = os.path.join(venv, "torch-constraint.txt")
    with open(constraint, "w") as f:
        f.write(f"torch=={TORCH_VERSION}\n")
    subprocess.check_call(pip + ["-c", constraint] + PACKAGES)
    ok_ds = False
    if deepspeed:
        try:
            subprocess.check_call(pip + ["-c", constraint] + DEEPSPEED_DEPS)
            # deepspeed's setup.py imports torch: no build isolation (else pip would fetch
            # another torch into the build env), no deps, and no prebuilt ops (JIT on CPU).
            env = dict(os.environ, DS_BUILD_OPS="0")
            subprocess.check_call(pip + ["--no-build-isolation", "--no-deps", DEEPSPEED], env=env)
            ok_ds = True
        except subprocess.CalledProcessError as e:
            print(f"deepspeed did not install ({e}); its jobs are skipped", flush=True)
    out = subprocess.check_output([py, "-c", "import torch;print(torch.__version__)"], text=True).strip()
    assert out.startswith(TORCH_VERSION), f"venv has torch {out}, expected {TORCH_VERSION}"
    return py, ok_ds


def ensure_other_venvs(py, jax_venv, tf_venv):
    """Ray Train beside torch (same constraint file), JAX and TensorFlow in venvs of their own (no torch)."""
    venv = os.path.dirname(os.path.dirname(py))
    subprocess.check_call([py, "-m", "pip", "install", "-q", "-c", os.path.join(venv, "torch-constraint.txt"), RAY,
                           MMENGINE])
    jpy = os.path.join(jax_venv, "bin", "python")
    if not os.path.exists(jpy):
        subprocess.check_call([sys.executable, "-m", "venv", jax_venv])
    subprocess.check_call([jpy, "-m", "pip", "install", "-q"] + JAX_PACKAGES)
    tpy = os.path.join(tf_venv, "bin", "python")
    if not os.path.exists(tpy):
        subprocess.check_call([sys.executable, "-m", "venv", tf_venv])
    subprocess.check_call([tpy, "-m", "pip", "install", "-q"] + TF_PACKAGES)


def versions(py):
    code = ("import importlib.metadata as m, json\n"
            "out={}\n"
            "for p in ['torch','transformers','accelerate','lightning','deepspeed','numpy','pytorch-ignite','ray',"
            "'jax','jaxlib','flax','optax','megatron-core','mmengine','tensorflow-cpu','keras']:\n"
            "    try: out[p]=m.version(p)\n"
            "    except Exception: pass\n"
            "print(json.dumps(out))")
    return json.loads(subprocess.check_output([py, "-c", code], text=True))


# --------------------------------------------------------------------------- running
def stack_args(job, ckpt_dir, resume):
    args = ["--steps", "40", "--save-dir", ckpt_dir]
    if job["fault"] == "upload_enospc":  # a long run: the failed upload of step 250's save, then 250 more steps
        args = ["--steps", "500", "--save-every", "250", "--save-dir", ckpt_dir]
    if job["fault"] == "node_enospc":  # a save every 10 steps, each node's copy on its own disk
        args = ["--steps", "40", "--save-every", "10", "--save-dir", ckpt_dir]
    if resume:
        args += ["--resume", resume]
    return args


def make_corrupt_checkpoint(job, work_root, resume_dir):
    """Take the step-20 checkpoint written by this stack's healthy job, truncate it."""
    src_job = [j for j in jobs() if j["stack"] == job["stack"] and j["fault"] == "healthy"][0]
    src = os.path.join(work_root, f"job-{src_job['index']:03d}", "ckpt")
    if os.path.exists(resume_dir):
        shutil.rmtree(resume_dir)
    stack = job["stack"]
    if stack == "ddp":
        f = os.path.join(src, "step_000020.pt")
        dst = os.path.join(resume_dir, "step_000020.pt")
        os.makedirs(resume_dir)
        shutil.copy(f, dst)
        victim, resume = dst, dst
    elif stack == "hf":
        d = os.path.join(src, "checkpoint-20")
        dst = os.path.join(resume_dir, "checkpoint-20")
        shutil.copytree(d, dst)
        victim, resume = os.path.join(dst, "model.safetensors"), dst
    elif stack == "lightning":
        f = sorted(glob.glob(os.path.join(src, "*step=20*.ckpt")))[0]
        dst = os.path.join(resume_dir, os.path.basename(f))
        os.makedirs(resume_dir)
        shutil.copy(f, dst)
        victim, resume = dst, dst
    elif stack == "deepspeed":
        d = os.path.join(src, "global_step20")
        dst = os.path.join(resume_dir, "global_step20")
        shutil.copytree(d, dst)
        with open(os.path.join(resume_dir, "latest"), "w") as fh:
            fh.write("global_step20")
        victim = sorted(glob.glob(os.path.join(dst, "*model_states.pt")))[0]
        resume = resume_dir
    elif stack == "mmengine":  # the Runner's CheckpointHook names its iteration-based saves iter_N.pth
        f = os.path.join(src, "iter_20.pth")
        dst = os.path.join(resume_dir, "iter_20.pth")
        os.makedirs(resume_dir)
        shutil.copy(f, dst)
        victim, resume = dst, dst
    else:
        raise ValueError(stack)
    size = os.path.getsize(victim)
    with open(victim, "r+b") as fh:  # a save cut short: only the first 40% reached disk
        fh.truncate(int(size * 0.4))
    return resume, victim


STAGE_ROOT = "/data/logs"


def run_job(job, py, out_root, work_root, port):
    name, stack, fault = job["name"], job["stack"], job["fault"]
    # The log folder, the work folder and the rendezvous id appear in what torch prints (tracebacks, run
    # folders, error_file): neutral names, so that no log line says which fault was injected. The logs are
    # written under /data/logs/job-NNN and moved into the fixtures folder afterwards.
    arch = os.path.join(STAGE_ROOT, f"job-{job['index']:03d}")
    work = os.path.join(work_root, f"job-{job['index']:03d}")
    for d in (arch, work, os.path.join(out_root, name)):
        if os.path.exists(d):
            shutil.rmtree(d)
    meta = os.path.join(work, "meta")
    ckpt = os.path.join(work, "ckpt")
    os.makedirs(meta)
    os.makedirs(ckpt)
    resume = None
    if fault == "corrupt_ckpt":
        resume, victim = make_corrupt_checkpoint(job, work_root, os.path.join(work, "resume"))
        job["corrupted_file"] = victim
    run_dir = os.path.join(work, "run")
    os.makedirs(run_dir)
    for f in list(SCRIPTS.values()) + ["faults.py", "megatron_log.py"]:
        if os.path.exists(os.path.join(HERE, f)):
            shutil.copy(os.path.join(HERE, f), run_dir)

    env = {
        "PATH": os.path.dirname(py) + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "HOME": "/root", "LANG": "C.UTF-8", "PYTHONUNBUFFERED": "1", "PYTHONHASHSEED": "0",
        "PYTHONPATH": run_dir, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "TERM": "dumb",
        "L4L_FAULT": fault, "L4L_FAULT_RANK": str(job["rank"] if job["rank"] is not None else -1),
        "L4L_FAULT_STEP": str(job["step"] if job["step"] is not None else -1),
        "L4L_META_DIR": meta, "GLOO_SOCKET_IFNAME": "lo",
    }
    if job["loader_workers"]:
        env["L4L_LOADER_WORKERS"] = str(job["loader_workers"])
    if job["validate"]:
        env["L4L_VALIDATE"] = "1"
    if job.get("tracker"):
        env["L4L_TRACKER"] = job["tracker"]
    if fault == "erofs":
        env["L4L_CKPT_DIR"] = ckpt
    if fault == "fsize":
        env["L4L_FSIZE"] = str(64 * 1024)
    if fault in ("json_exception", "ansi_exception"):
        env["L4L_LOG_STYLE"] = fault.split("_")[0]
    if fault == "fsize_signal":
        env["L4L_FSIZE"] = str(64 * 1024)
    if fault == "loader_stall":
        env["L4L_LOADER_TIMEOUT"] = "10"
    if fault == "kill_midline":
        env["L4L_LOG_ALL_RANKS"] = "1"
    if fault == "stall":  # every rank logs its steps; no collective times out before the job's limit
        env.update({"L4L_LOG_ALL_RANKS": "1", "L4L_PG_TIMEOUT": "600"})
    if fault == "debug_logs":  # a debugging run: torch's C++ logging at INFO, distributed debug checks on
        env.update({"TORCH_CPP_LOG_LEVEL": "INFO", "TORCH_DISTRIBUTED_DEBUG": "INFO"})
    if fault == "push_refused":  # rank 0 pushes its metrics to a gateway on the first node; none is running
        env["L4L_METRICS_PUSH"] = f"http://{job['hosts'][0]}:9091/metrics/job/train"
    if job.get("accum", 1) > 1:
        env["L4L_ACCUM"] = str(job["accum"])
    if fault == "logfile_exception":  # each rank logs to a file of its own; the console has the launcher only
        env["L4L_LOG_STYLE"] = "file"
    if fault == "save_killed":  # each attempt resumes from the last checkpoint in the save folder
        env["L4L_RESUME_LATEST"] = "1"
    if fault == "save_memerror":  # the checkpoint is staged in memory before it is written
        env["L4L_SAVE_BUFFERED"] = "1"
    if job.get("rank2") is not None:
        env["L4L_FAULT_RANK2"] = str(job["rank2"])
    if fault == "anomaly_nan" and stack == "lightning":  # Trainer(detect_anomaly=True)
        env["L4L_DETECT_ANOMALY"] = "1"
    if fault == "wrong_ckpt":  # every rank resumes from a checkpoint another model (hidden size 96) wrote
        resume = make_node_checkpoints(py, run_dir_of(work), work, dim=96)
    if fault == "compile_nocxx":  # torch.compile; the second node's job environment names a C++ compiler
        env["L4L_COMPILE"] = "1"  # that is not installed there (see the node loop)
    if fault == "node_corrupt_ckpt":  # each node resumes from its own local copy; node 2's copy is cut short
        resume = make_node_checkpoints(py, run_dir_of(work), work)
        job["corrupted_file"] = os.path.join(work, "resume_bad", "step_000020.pt")
    upload = os.path.join(work, "upload")
    if fault == "upload_enospc":  # every rank logs its steps; rank 0 copies each checkpoint to a small disk
        os.makedirs(upload)
        env.update({"L4L_UPLOAD_DIR": upload, "L4L_LOG_ALL_RANKS": "1"})
    if fault == "missing_shard":
        env["L4L_SHARD_DIR"] = os.path.join(ckpt, "sharded", "step_000020")
    data_dir = os.path.join(work, "data")
    if fault in ("missing_file", "missing_file_all"):  # each node's local copy of the dataset's seed file
        os.makedirs(data_dir)
        env["L4L_DATA_FILE"] = os.path.join(data_dir, "shard-seed.json")
        if fault == "missing_file":  # staged on the disk; node 2's copy is missing (see the mount below)
            with open(env["L4L_DATA_FILE"], "w") as f:
                json.dump({"seed": 0}, f)
    if fault == "shard_truncated" and stack != "jax":  # each node's local copy of the token shards; node 2's
        make_token_shards(py, run_dir, work)  # shard 7 is cut short (JAX's shards: run_other)
        env["L4L_TOKEN_SHARDS"] = os.path.join(work, "shards")
    if fault == "node_enospc":
        env.update({"L4L_SAVE_EACH_NODE": "1", "L4L_CKPT_DIR": ckpt})
    mdata = os.path.join(work, "megatron-data")
    if stack == "megatron":  # each node's local copy of the indexed dataset (.bin/.idx); idx_truncated: the
        make_indexed_dataset(py, run_dir, work, fault == "idx_truncated")  # second node's .idx cut short
        env["L4L_MEGATRON_DATA"] = os.path.join(mdata, MEGATRON_PREFIX)
        if fault == "layout_ckpt":  # every rank (tensor parallel 1) resumes the healthy job's (tensor parallel 2)
            resume = copy_layout_checkpoint(job, work_root, os.path.join(work, "resume"))
            env["L4L_TP"] = "1"
    ext_dir = os.path.join(work, "ext")
    if fault == "missing_module":  # the project's helper module, installed on each node beside the script
        os.makedirs(ext_dir)
        with open(os.path.join(ext_dir, "packing_utils.py"), "w") as f:
            f.write(PACKING_UTILS)
        env.update({"L4L_EXT_DIR": ext_dir, "PYTHONPATH": run_dir + ":" + ext_dir})
    cgroup = kernel = None
    if fault == "cpu_throttle":  # the slow node's ranks join this cpu cgroup at the fault step
        cgroup = make_cpu_cgroup(f"l4l-job-{job['index']:03d}")
        job["cgroup"] = "cpu:/" + os.path.basename(cgroup)
        env["L4L_CPU_CGROUP"] = cgroup
    old_site = os.path.join(work, "site")
    if fault == "version_mismatch":  # the second node's own site folder, first on its path, holds an older
        install_old_accelerate(py, old_site)  # accelerate than the HF Trainer needs
    if fault == "pids_limit":  # the second node's ranks join a pids cgroup (v1) under the generator's own
        cgroup = make_pids_cgroup(f"l4l-job-{job['index']:03d}")
        job["cgroup"] = "pids:/" + os.path.basename(cgroup)
        env["L4L_PIDS_CGROUP"] = cgroup
    if fault in ("host_oom", "worker_oom"):
        cgroup, job["cgroup"] = capture.make_memory_cgroup(f"l4l-job-{job['index']:03d}", OOM_LIMIT)
        env["L4L_CGROUP"] = cgroup
        kernel = capture.KernelLog()
    layout = job["layout"]
    streams = {}
    # the cluster's /etc/hosts: every node name resolves (all on loopback here, or each node in its own
    # network namespace joined to the other's by a veth pair, for a fault that cuts one node off)
    netns = make_network(job) if fault in ("netdown", "netdrop", "netslow") else None
    addr = [f"10.77.{job['index']}.{i + 1}" if netns else f"127.0.1.{i + 1}" for i in range(len(job["hosts"]))]
    # no_master_host: the rendezvous endpoint is the first node's name (as `--rdzv-endpoint $MASTER_ADDR:port`)
    endpoint = job["hosts"][0] if netns or fault == "no_master_host" else "127.0.0.1"
    hosts_file = os.path.join(work, "hosts")
    with open(hosts_file, "w") as f:
        f.write("127.0.0.1 localhost\n" + "".join(f"{a} {h}\n" for a, h in zip(addr, job["hosts"], strict=True)))
    if fault == "no_master_host":  # the second node's /etc/hosts was written without the first node's entry
        with open(hosts_file + ".short", "w") as f:
            f.write("127.0.0.1 localhost\n" + "".join(f"{a} {h}\n" for a, h in zip(addr, job["hosts"], strict=True)
                                                      if h != job["hosts"][0]))
    squatter = None
    if fault == "port_taken":  # a process left on the first node still listens on the rendezvous port
        squatter = subprocess.Popen([py, "-c", SQUATTER, str(port)], stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL, start_new_session=True)
        time.sleep(1.0)
        with open(os.path.join(meta, "injection-node0.json"), "w") as f:
            json.dump({"fault": fault, "host": job["hosts"][0], "rank": None, "step": None,
                       "time": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()), "port": port,
                       "pid": squatter.pid}, f)
    if stack in ("ray", "jax", "tf"):
        return run_other(job, py, arch, work, ckpt, run_dir, env, hosts_file, addr, port, netns)
    procs = []
    for i, host in enumerate(job["hosts"]):
        hdir = os.path.join(arch, host)
        os.makedirs(hdir)
        nenv = dict(env)
        if job["fr"]:
            prefix = os.path.join(hdir, "fr_trace_")
            nenv.update({"TORCH_NCCL_TRACE_BUFFER_SIZE": "2000", "TORCH_FR_BUFFER_SIZE": "2000",
                         "TORCH_NCCL_DUMP_ON_TIMEOUT": "1", "TORCH_NCCL_DEBUG_INFO_TEMP_FILE": prefix,
                         "TORCH_FR_DUMP_TEMP_FILE": prefix})
        # Under Slurm or Kubernetes torchrun usually runs without --log-dir: the ranks write to the
        # launcher's own stdout/stderr, which srun or the container runtime collects.
        logdir = (["--log-dir", os.path.join(hdir, "torchelastic"), "--redirects", "3", "--tee", "3"]
                  if layout in LOGDIR_LAYOUTS else [])
        torchrun = [os.path.join(os.path.dirname(py), "torchrun"), "--nnodes", "2", "--nproc-per-node", "2",
                    "--rdzv-backend", "c10d", "--rdzv-endpoint", f"{endpoint}:{port}",
                    "--rdzv-id", f"run-{job['index']:03d}", "--max-restarts", str(job["max_restarts"])] + logdir + [
                    os.path.join(run_dir, SCRIPTS[stack])] + stack_args(job, ckpt, resume)
        if stack == "accelerate":  # Accelerate's launcher runs torch's elastic agent in its own process
            torchrun = accelerate_launch(py, i, endpoint, port, hdir if layout == "torchelastic-logdir" else None) + [
                os.path.join(run_dir, SCRIPTS[stack])] + stack_args(job, ckpt, resume)
        short = fault == "no_master_host" and i == 1
        shell = f"hostname {host} && mount --bind {hosts_file + ('.short' if short else '')} /etc/hosts"
        if short or fault == "shm_small" and i == 1:
            with open(os.path.join(meta, f"injection-node{i}.json"), "w") as f:
                json.dump({"fault": fault, "host": host, "rank": None, "step": None,
                           "time": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())}, f)
        if fault == "shm_small" and i == 1:  # the node's /dev/shm is far smaller than the workers' batches need
            shell += f" && mount -t tmpfs -o size={SHM_SIZE} tmpfs /dev/shm"
        if fault == "enospc":  # node-local checkpoint disk that is nearly full
            shell += f" && mount -t tmpfs -o size=64k tmpfs {ckpt}"
        if fault == "erofs":  # the checkpoint folder as its own mount, so it can turn read-only on one node
            shell += f" && mount --bind {ckpt} {ckpt}"
        if fault == "upload_enospc":  # the upload target: a disk far smaller than a checkpoint
            shell += f" && mount -t tmpfs -o size=64k tmpfs {upload}"
        if fault == "missing_file" and i == 1:  # this node's local data disk was never staged: an empty one
            shell += f" && mount -t tmpfs -o size=64k tmpfs {data_dir}"
        if fault == "node_corrupt_ckpt" and i == 1:  # this node's local copy of the checkpoint is the cut one
            shell += f" && mount --bind {os.path.join(work, 'resume_bad')} {os.path.join(work, 'resume')}"
            with open(os.path.join(meta, f"injection-node{i}.json"), "w") as f:
                json.dump({"fault": fault, "host": host, "rank": None, "step": None,
                           "time": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()),
                           "path": job["corrupted_file"]}, f)
        if fault == "logfile_exception":
            nenv["L4L_LOG_DIR"] = os.path.join(hdir, "logs")
        if fault == "node_enospc" and i == 1:  # this node's local checkpoint disk has room for two saves
            shell += f" && mount -t tmpfs -o size={NODE_CKPT_DISK} tmpfs {ckpt}"
        if fault == "idx_truncated" and i == 1:  # this node's copy of the dataset holds the cut index file
            shell += f" && mount --bind {mdata + '_bad'} {mdata}"
            with open(os.path.join(meta, f"injection-node{i}.json"), "w") as f:
                json.dump({"fault": fault, "host": host, "rank": None, "step": None,
                           "time": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()),
                           "path": os.path.join(mdata, MEGATRON_PREFIX + ".idx")}, f)
        if fault == "shard_truncated" and i == 1:  # this node's copy of the shards holds the cut one
            shell += f" && mount --bind {os.path.join(work, 'shards_bad')} {os.path.join(work, 'shards')}"
        if fault == "missing_module" and i == 1:  # the module was never installed on this node: an empty folder
            shell += f" && mount -t tmpfs -o size=64k tmpfs {ext_dir}"
            with open(os.path.join(meta, f"injection-node{i}.json"), "w") as f:
                json.dump({"fault": fault, "host": host, "rank": None, "step": None,
                           "time": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()),
                           "missing": os.path.join(ext_dir, "packing_utils.py")}, f)
        if fault == "inode_full" and i == 0:  # rank 0's checkpoint disk: space to spare, inodes for 3 entries
            shell += f" && mount -t tmpfs -o size=64m,nr_inodes={INODES} tmpfs {ckpt}"
        if fault == "version_mismatch" and i == 1:  # a node set up apart: its packages come first on the path
            nenv["PYTHONPATH"] = old_site + ":" + run_dir
            with open(os.path.join(meta, f"injection-node{i}.json"), "w") as f:
                json.dump({"fault": fault, "host": host, "rank": None, "step": None,
                           "time": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()),
                           "package": OLD_ACCELERATE, "site": old_site}, f)
        if job.get("tz") and i == 0:  # this node's processes run in another time zone (a node set up apart)
            nenv["TZ"] = job["tz"]
        shell += f" && cd {run_dir} && exec " + " ".join(torchrun)
        cmd = ["unshare", "--uts", "--mount", "--", "sh", "-c", shell]
        if netns:
            cmd = ["ip", "netns", "exec", netns[i][0]] + cmd
            nenv.update({"GLOO_SOCKET_IFNAME": netns[i][1], "L4L_NET_DEV": netns[i][1]})
        if fault == "bad_env" and i == 1 or fault == "bad_env_all":  # the job environment names an interface
            nenv["GLOO_SOCKET_IFNAME"] = "ib0"  # the node does not have
            os.makedirs(meta, exist_ok=True)
            with open(os.path.join(meta, f"injection-node{i}.json"), "w") as f:
                json.dump({"fault": fault, "host": host, "rank": None, "step": None,
                           "time": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()),
                           "env": {"GLOO_SOCKET_IFNAME": "ib0"}}, f)
        if fault == "compile_nocxx" and i == 1:  # a compiler toolset the node was never given
            nenv["CXX"] = MISSING_CXX
            with open(os.path.join(meta, f"injection-node{i}.json"), "w") as f:
                json.dump({"fault": fault, "host": host, "rank": None, "step": 1,
                           "time": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()),
                           "env": {"CXX": MISSING_CXX}}, f)
        if fault == "device_missing" and i == 1:  # the job environment asks for CUDA, the node's torch is CPU-only
            nenv["L4L_DEVICE"] = "cuda"
            with open(os.path.join(meta, f"injection-node{i}.json"), "w") as f:
                json.dump({"fault": fault, "host": host, "rank": None, "step": None,
                           "time": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()),
                           "env": {"L4L_DEVICE": "cuda"}}, f)
        if fault == "missing_file" and i == 1 or fault == "missing_file_all":
            with open(os.path.join(meta, f"injection-node{i}.json"), "w") as f:
                json.dump({"fault": fault, "host": host, "rank": None, "step": None,
                           "time": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()),
                           "missing": env["L4L_DATA_FILE"]}, f)
        job.setdefault("commands", {})[host] = shell
        if layout == "torchelastic-logdir":
            console = open(os.path.join(hdir, "console.log"), "wb")  # noqa: SIM115 - closed when the node exits
            procs.append((host, subprocess.Popen(cmd, stdout=console, stderr=subprocess.STDOUT, env=nenv,
                                                 cwd=run_dir, start_new_session=True), console))
        else:
            if layout not in LOGDIR_LAYOUTS:
                os.rmdir(hdir)
            p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=nenv, cwd=run_dir,
                                 start_new_session=True)
            sink = streams.setdefault(host, [])
            readers = [capture.StreamCapture(p.stdout, "stdout", sink),
                       capture.StreamCapture(p.stderr, "stderr", sink)]
            procs.append((host, p, readers))
        if i == 0:
            time.sleep(2.0)  # node 0 hosts the rendezvous store first
    # a node cut off from the network never ends by itself (its agent waits on the rendezvous store): it is
    # killed, as a scheduler's time limit would, after 150 s
    deadline = time.time() + (150 if fault in ("netdown", "netdrop", "netslow", "port_taken", "no_master_host",
                                               "cpu_throttle") else 300)
    if fault == "timelimit" or job.get("limit_after"):
        slurm_time_limit(job, procs, meta, deadline)
    rcs = {}
    for host, p, console in procs:
        try:
            rcs[host] = p.wait(timeout=max(1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            rcs[host] = p.wait()
        if isinstance(console, list):
            for reader in console:
                reader.join()
        else:
            console.close()
    job["exit_codes"] = rcs
    job["meta_dir"] = meta
    if fault == "timelimit" or job.get("limit_after"):  # srun reports each task's end once the step is over
        for i, (host, _, _) in enumerate(procs):
            rc = rcs[host]
            end = f"task {i}: Terminated" if rc == -signal.SIGTERM else \
                f"task {i}: Killed" if rc < 0 else f"task {i}: Exited with exit code {rc}"
            job["step_lines"].append((time.time_ns(), "stderr", f"srun: error: {host}: {end}\n".encode()))
    if squatter:
        os.killpg(squatter.pid, signal.SIGKILL)
        squatter.wait()
    if cgroup and fault == "cpu_throttle":  # lift the quota so that what is left in the group can die, then end it
        with open(os.path.join(cgroup, "cpu.cfs_quota_us"), "w") as f:
            f.write("-1")
        with open(os.path.join(cgroup, "cgroup.procs")) as f:
            for pid in f.read().split():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(pid), signal.SIGKILL)
    if cgroup:
        for child in glob.glob(os.path.join(cgroup, "rank*")) if fault == "pids_limit" else ():
            capture.remove_memory_cgroup(child)  # the same rmdir with retries, for the ranks' pids groups
        capture.remove_memory_cgroup(cgroup)
    for ns, _ in netns or []:
        subprocess.run(["ip", "netns", "del", ns], check=False)
    write_layout(job, arch, streams)
    if kernel:
        write_kernel_logs(job, arch, kernel.records())
    elif layout in SRUN_LAYOUTS:  # a Slurm job's logs come with each node's kern.log, empty where it said nothing
        for h in job["hosts"]:
            os.makedirs(os.path.join(arch, h), exist_ok=True)
            open(os.path.join(arch, h, "kern.log"), "w").close()
    return arch


KILL_WAIT = 10  # s from the scheduler's SIGTERM to its SIGKILL (Slurm's KillWait; 30 s by default)


def slurm_time_limit(job, procs, meta, deadline):
    """timelimit: the job step reaches its wall-clock limit when rank 0 records step N (a stand-in for the clock,
    so that the limit falls mid-training whatever the start-up took). As slurmstepd does then: srun's and
    slurmstepd's lines in the step's output, SIGTERM to every task's processes (each node's launcher and its
    ranks), SIGKILL to what is left KILL_WAIT s later. With the job's `limit_after` option the limit comes that
    many seconds after the fault's injection (a job that had stopped before its limit)."""
    after = job.get("limit_after")
    mark = os.path.join(meta, f"injection-{job['rank'] if after else 0}.json")
    while not os.path.exists(mark) and time.time() < deadline:
        time.sleep(0.2)
    if not os.path.exists(mark):
        return
    if after:
        time.sleep(after)
    lines = job.setdefault("step_lines", [])
    step = f"{4100 + job['index']}.0"
    lines.append((time.time_ns(), "stderr",
                  b"srun: Job step aborted: Waiting up to 32 seconds for job step to finish.\n"))
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime())
    for host, p, _ in procs:
        lines.append((time.time_ns(), "stderr",
                      f"slurmstepd: error: *** STEP {step} ON {host} CANCELLED AT {stamp} DUE TO TIME LIMIT ***\n"
                      .encode()))
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.pid, signal.SIGTERM)
    end = time.time() + KILL_WAIT
    for _, p, _ in procs:
        try:
            p.wait(timeout=max(0.1, end - time.time()))
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)


def run_other(job, py, arch, work, ckpt, run_dir, env, hosts_file, addr, port, netns=None):
    """A Ray or JAX job (launchers.py): same namespaces, hosts file and checkpoint mounts as a torchrun job."""
    fault = job["fault"]
    shards = os.path.join(work, "shards")
    if fault == "shard_truncated":  # each node's local copy of the feature shards; node 2's shard 3 cut short
        code = ("import sys, train_jax; train_jax.write_shards(sys.argv[1]); "
                "train_jax.write_shards(sys.argv[2], cut_shard=(int(sys.argv[3]) - 1) // train_jax.SHARD_STEPS)")
        subprocess.check_call([py, "-c", code, shards, shards + "_bad", str(job["step"])], cwd=run_dir,
                              env={"PYTHONPATH": run_dir, "PATH": "/usr/bin:/bin", "L4L_FAULT": "none",
                                   "JAX_PLATFORMS": "cpu"})
        env = dict(env, L4L_TOKEN_SHARDS=shards)

    def node_shell(host, index):
        shell = f"hostname {host} && mount --bind {hosts_file} /etc/hosts"
        if fault == "enospc":
            shell += f" && mount -t tmpfs -o size=64k tmpfs {ckpt}"
        if fault == "erofs":
            shell += f" && mount --bind {ckpt} {ckpt}"
        if fault == "shard_truncated" and index == 1:  # this node's copy of the shards holds the cut one
            shell += f" && mount --bind {shards}_bad {shards}"
        return shell + f" && cd {run_dir}"

    if job["stack"] == "ray":
        # on a loaded 2-core machine Ray Train's 60 s for starting the 4 workers was not always enough
        env = dict(env, RAY_USAGE_STATS_ENABLED="0", RAY_TRAIN_WORKER_GROUP_START_TIMEOUT_S="600")
        args = ["--steps", "40", "--save-dir", ckpt, "--storage", os.path.join(work, "results"), "--name", "tinylm"]
        rcs = launchers.run_ray(job, py, node_shell, addr, port, arch, work, env, args, time.time() + 300)
    elif job["stack"] == "tf":
        record = os.path.join(work, "data", "train.tfrecord")
        code = ("import sys, train_tf; train_tf.write_records(sys.argv[1]); "
                "train_tf.write_records(sys.argv[2], cut=float(sys.argv[3]))")
        if fault == "data":  # each node's local copy of the TFRecord file; node 2's holds bad bytes from step N on
            cut = (job["step"] - 0.5) * 64 / (4 * 16 * 45)
            subprocess.check_call([py, "-c", code, record, record + ".bad", str(cut)], cwd=run_dir,
                                  env={"PYTHONPATH": run_dir, "PATH": "/usr/bin:/bin", "L4L_FAULT": "none"})
            node_shell_base = node_shell

            def node_shell(host, index):
                shell = node_shell_base(host, index)
                return shell + (f" && mount --bind {record}.bad {record}" if index == 1 else "")
        else:
            subprocess.check_call([py, "-c", "import sys, train_tf; train_tf.write_records(sys.argv[1])", record],
                                  cwd=run_dir, env={"PYTHONPATH": run_dir, "PATH": "/usr/bin:/bin", "L4L_FAULT": "none"})
        env = dict(env, L4L_TFRECORD=record, TF_CPP_MIN_LOG_LEVEL="0")
        args = ["--steps=40", f"--save_dir={ckpt}"]
        rcs = launchers.run_tf(job, py, node_shell, addr, port, arch, work, env, args, time.time() + 240)
    else:
        env = dict(env, JAX_PLATFORMS="cpu", L4L_JAX_CACHE=os.path.join(os.path.dirname(work), "jax-cache"), PATH=os.path.dirname(py) + ":" + env["PATH"].split(":", 1)[1])
        args = ["--steps=40", f"--save_dir={ckpt}"]
        rcs = launchers.run_jax(job, py, node_shell, addr, port, arch, work, env, args, time.time() + 180,
                                netns=netns)
    for ns, _ in netns or []:
        subprocess.run(["ip", "netns", "del", ns], check=False)
    job["exit_codes"] = rcs
    job["meta_dir"] = os.path.join(work, "meta")
    return arch


def accelerate_launch(py, machine_rank, endpoint, port, hdir):
    """`accelerate launch` for node `machine_rank` of 2 (2 processes each) without a config file; its default
    rendezvous is static (node 0 hosts the store). With a log folder its ranks tee into
    <host>/torchelastic as torchrun's --log-dir/--tee 3 do."""
    cmd = [os.path.join(os.path.dirname(py), "accelerate"), "launch", "--multi_gpu", "--num_machines", "2",
           "--num_processes", "4", "--machine_rank", str(machine_rank), "--main_process_ip", endpoint,
           "--main_process_port", str(port), "--max_restarts", "0", "--mixed_precision", "no",
           "--dynamo_backend", "no"]
    if hdir:
        cmd += ["--log_dir", os.path.join(hdir, "torchelastic"), "--tee", "3"]
    return cmd


def run_dir_of(work):
    return os.path.join(work, "run")


MISSING_CXX = "/opt/rh/gcc-toolset-13/root/usr/bin/g++"  # compile_nocxx: the CXX of the second node
SHM_SIZE = "120k"  # shm_small: room for both ranks' DataLoader queue semaphores (56 KiB each), not for their batches
# port_taken: a process holding the port (it accepts connections and never answers, as a stale service would)
SQUATTER = """
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", int(sys.argv[1])))
s.listen(64)
held = []
while True:
    held.append(s.accept()[0])
"""
NODE_CKPT = """
import sys, torch, train_ddp
m = train_ddp.TinyLM(dim=int(sys.argv[2]))
opt = torch.optim.AdamW(m.parameters(), lr=3e-3, weight_decay=0.01)
m(torch.zeros(2, 8, dtype=torch.long)).sum().backward()
opt.step()
torch.save({"model": m.state_dict(), "optimizer": opt.state_dict(), "step": 20}, sys.argv[1])
"""


def make_node_checkpoints(py, run_dir, work, dim=64):
    """A step-20 checkpoint of the ddp script's model (hidden size `dim`; 96: another model's) in `work/resume`
    (what every node resumes from) and a copy truncated to 40% in `work/resume_bad` (the copy the second node's
    local disk holds)."""
    good, bad = os.path.join(work, "resume"), os.path.join(work, "resume_bad")
    os.makedirs(good, exist_ok=True)
    os.makedirs(bad, exist_ok=True)
    path = os.path.join(good, "step_000020.pt")
    subprocess.check_call([py, "-c", NODE_CKPT, path, str(dim)], cwd=run_dir, env={"PYTHONPATH": run_dir, "PATH": "/usr/bin:/bin"})
    shutil.copy(path, os.path.join(bad, "step_000020.pt"))
    with open(os.path.join(bad, "step_000020.pt"), "r+b") as fh:
        fh.truncate(int(os.path.getsize(path) * 0.4))
    return path


NODE_CKPT_DISK = "4m"  # node_enospc: room for two of the ddp script's checkpoints (1.65 MB each), not three
PACKING_UTILS = '''"""Sequence packing helpers of the training project."""


def pack(sequences, length):
    out, cur = [], []
    for s in sequences:
        cur.extend(s)
        while len(cur) >= length:
            out.append(cur[:length])
            cur = cur[length:]
    return out
'''
TOKEN_SHARDS = """
import sys, faults
faults.write_token_shards(sys.argv[1])
faults.write_token_shards(sys.argv[2], cut_shard=faults.FAULT_SHARD)
"""


def make_token_shards(py, run_dir, work):
    """The training set as token shards in `work/shards` (what every node holds) and a copy whose shard
    faults.FAULT_SHARD is cut to 40% in `work/shards_bad` (the second node's local copy)."""
    subprocess.check_call([py, "-c", TOKEN_SHARDS, os.path.join(work, "shards"), os.path.join(work, "shards_bad")],
                          cwd=run_dir, env={"PYTHONPATH": run_dir, "PATH": "/usr/bin:/bin", "L4L_FAULT": "none"})


MEGATRON_PREFIX = "corpus_text_document"  # as Megatron's preprocess_data.py names its output
INDEXED_DATASET = """
import sys, faults
faults.write_indexed_dataset(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None)
"""


def make_indexed_dataset(py, run_dir, work, cut):
    """The training set as a Megatron indexed dataset in `work/megatron-data` (what every node holds) and, with
    `cut`, a copy whose `.idx` is cut to 40% in `work/megatron-data_bad` (the second node's local copy)."""
    prefix = os.path.join(work, "megatron-data", MEGATRON_PREFIX)
    args = [prefix] + ([os.path.join(work, "megatron-data_bad", MEGATRON_PREFIX)] if cut else [])
    subprocess.check_call([py, "-c", INDEXED_DATASET] + args, cwd=run_dir, stderr=subprocess.DEVNULL,
                          env={"PYTHONPATH": run_dir, "PATH": "/usr/bin:/bin", "L4L_FAULT": "none"})


def copy_layout_checkpoint(job, work_root, resume_dir):
    """The step-20 checkpoint the stack's healthy job wrote (tensor parallel 2), copied to `resume_dir`."""
    src_job = [j for j in jobs() if j["stack"] == job["stack"] and j["fault"] == "healthy"][0]
    src = os.path.join(work_root, f"job-{src_job['index']:03d}", "ckpt", "iter_0000020")
    if os.path.exists(resume_dir):
        shutil.rmtree(resume_dir)
    dst = os.path.join(resume_dir, "iter_0000020")
    shutil.copytree(src, dst)
    return dst


OLD_ACCELERATE = "accelerate==1.0.1"  # version_mismatch: transformers 5.24's Trainer needs accelerate>=1.1.0
INODES = 3  # inode_full: the tmpfs root, the step's checkpoint folder and one file


def install_old_accelerate(py, site):
    """The older accelerate, alone (no dependencies), in a folder of its own (pip install --target)."""
    if not os.path.exists(os.path.join(site, "accelerate")):
        subprocess.check_call([py, "-m", "pip", "install", "-q", "--no-deps", "--target", site, OLD_ACCELERATE])


def make_cpu_cgroup(name):
    """A cpu cgroup (v1) under the generator's own with a CFS quota of 1 ms of CPU per 1 s period."""
    with open("/proc/self/cgroup") as f:
        own = next((line.split(":", 2)[2].strip() for line in f if ":cpu," in line or ":cpu:" in line), "/")
    path = os.path.join("/sys/fs/cgroup/cpu", own.lstrip("/"), name)
    os.makedirs(path, exist_ok=True)
    for knob, value in (("cpu.cfs_period_us", 1000000), ("cpu.cfs_quota_us", 1000)):
        with open(os.path.join(path, knob), "w") as f:
            f.write(str(value))
    return path


def make_pids_cgroup(name):
    """A pids cgroup (v1) under the generator's own: the folder (its per-rank children set their pids.max)."""
    with open("/proc/self/cgroup") as f:
        own = next((line.split(":", 2)[2].strip() for line in f if ":pids:" in line), "/")
    path = os.path.join("/sys/fs/cgroup/pids", own.lstrip("/"), name)
    os.makedirs(path, exist_ok=True)
    return path


def make_network(job):
    """Two network namespaces joined by a veth pair (10.77.<job>.1 and .2): [(namespace, interface)]."""
    i = job["index"]
    nets = [(f"l4l-j{i}-n0", f"l4lv{i}a"), (f"l4l-j{i}-n1", f"l4lv{i}b")]
    for ns, _ in nets:
        subprocess.run(["ip", "netns", "del", ns], check=False, stderr=subprocess.DEVNULL)
        subprocess.check_call(["ip", "netns", "add", ns])
        subprocess.check_call(["ip", "-n", ns, "link", "set", "lo", "up"])
    subprocess.check_call(["ip", "link", "add", nets[0][1], "netns", nets[0][0], "type", "veth", "peer", "name",
                           nets[1][1], "netns", nets[1][0]])
    for k, (ns, dev) in enumerate(nets):
        subprocess.check_call(["ip", "-n", ns, "addr", "add", f"10.77.{i}.{k + 1}/24", "dev", dev])
        subprocess.check_call(["ip", "-n", ns, "link", "set", dev, "up"])
    job["network"] = {ns: {"interface": dev, "address": f"10.77.{i}.{k + 1}"} for k, (ns, dev) in enumerate(nets)}
    return nets


def write_layout(job, arch, streams):
    """Files the captured lines as a Slurm or Kubernetes job leaves them (see capture.py)."""
    if job["layout"] in SRUN_LAYOUTS:  # srun --ntasks-per-node=1 --label torchrun ...: task i = node i
        n = capture.write_srun_label(os.path.join(arch, f"slurm-{4100 + job['index']}.out"),
                                     {i: streams[h] for i, h in enumerate(job["hosts"])}
                                     | ({None: job["step_lines"]} if job.get("step_lines") else {}))
        job["layout_note"] = f"{n} lines of both nodes' stdout and stderr in arrival order, task id first"
    elif job["layout"] == "kubernetes-pods":  # /var/log/pods/<namespace>_<pod>_<uid>/<container>/0.log
        for h in job["hosts"]:
            d = os.path.join(arch, f"training_{h}_{uuid.uuid4()}", "pytorch")
            os.makedirs(d)
            with open(os.path.join(d, "0.log"), "wb") as f:
                f.writelines(capture.cri_lines(streams[h]))


def write_kernel_logs(job, arch, records):
    """The kernel's OOM reports during the job go to the kern.log of the node whose process they killed
    (the injection record names it); every node gets its kern.log, empty where its kernel said nothing."""
    _, inj = load_meta(job["meta_dir"])
    victim = inj[0]["host"] if inj else None
    kept = capture.oom_reports(records)
    job["kernel_records"] = {"window": len(records), "oom_report": len(kept)}
    # the generator's own cgroup path names the machine's session, not the job: a neutral name instead
    replace = [(capture.own_memory_cgroup().rstrip("/"), "/l4lite-realjobs")]
    for h in job["hosts"]:
        os.makedirs(os.path.join(arch, h), exist_ok=True)
        with open(os.path.join(arch, h, "kern.log"), "w") as f:
            f.writelines(capture.kern_log_lines(kept if h == victim else [], h, replace))


# --------------------------------------------------------------------------- ground truth
def log_files(arch):
    out = []
    for root, dirs, files in os.walk(arch):
        dirs[:] = sorted(d for d in dirs if d != "_meta")
        for f in sorted(files):
            if f == "ground_truth.json" or f.startswith("fr_trace_"):
                continue
            out.append(os.path.join(root, f))
    return out


K8S_POD = re.compile(r"^[a-z0-9-]+_(?P<pod>[a-z0-9-]+)_[0-9a-f-]{36}$")
SRUN_LABEL = re.compile(r"^(\d+): ")


def line_host(rel, line, names):
    """The node that wrote a line: its folder (a host, or a pod's `<namespace>_<pod>_<uid>`), else its
    `srun --label` task id (task i ran on the i-th node)."""
    top = rel.split(os.sep)[0]
    if top in names:
        return top
    m = K8S_POD.match(top)
    if m and m["pod"] in names:
        return m["pod"]
    m = SRUN_LABEL.match(line)
    return names[int(m[1])] if m and int(m[1]) < len(names) else None


def find(arch, hosts, pattern, limit=1, prefer=None, names=()):
    """(relpath, line) of lines matching pattern in the hosts' logs; first `limit` per file. `names` are the
    job's nodes in order (for folders and srun task ids)."""
    rx = re.compile(pattern)
    hits = []
    for path in log_files(arch):
        rel = os.path.relpath(path, arch)
        if prefer and not re.search(prefer, rel):
            continue
        n = 0
        with open(path, "rb") as f:  # lines end at \n only (a tqdm bar's \r stays inside its line)
            for i, raw in enumerate(f, 1):
                line = raw.decode("utf-8", "replace")
                if hosts and line_host(rel, line, names or hosts) not in hosts:
                    continue
                if rx.search(line):
                    hits.append({"file": rel.replace(os.sep, "/"), "line": i})
                    n += 1
                    if n >= limit:
                        break
    return hits


LOSS = {"ddp": re.compile(r"step (?P<step>\d+)/\d+ \| epoch \d+ \| loss (?P<loss>\S+) "),
        "hf": re.compile(r"'loss': '?(?P<loss>[^',}]+)'?.*'epoch': '?([^',}]+)'?"),
        "ignite": re.compile(r"Iter\[(?P<step>\d+)\] Loss: (?P<loss>\S+)"),
        "accelerate": re.compile(r"step (?P<step>\d+)/\d+: train_loss (?P<loss>\S+)"),
        "amp": re.compile(r"iteration\s+(?P<step>\d+)/\s*\d+ ?\|.*\| lm loss: (?P<loss>[^|\s]+) ?\|"),
        "fsdp": re.compile(r"step:\s*(?P<step>\d+)\s+loss:\s*(?P<loss>\S+)"),
        "megatron": re.compile(r"iteration\s+(?P<step>\d+)/\s*\d+ ?\|.*\| lm loss: (?P<loss>[^|\s]+) ?\|")}


def first_divergent_line(arch, stack, step, names):
    """The first progress line from `step` on whose loss is non-finite or more than twice the lowest loss
    logged before the fault (the loss blowing up): (relpath, line)."""
    rx = LOSS[stack]
    for path in log_files(arch):
        rel = os.path.relpath(path, arch)
        if not (rel.endswith("console.log") or rel.endswith(".out") or rel.endswith("0.log")):
            continue
        best, idx = None, 0
        with open(path, "rb") as f:
            for i, raw in enumerate(f, 1):
                m = rx.search(raw.decode("utf-8", "replace"))
                if not m:
                    continue
                idx += 1
                # HF logs every 2 steps (logging_steps=2) without the step number
                at = int(m["step"]) if "step" in rx.groupindex else idx * 2
                loss = float(m["loss"])
                if at < step:
                    best = loss if best is None else min(best, loss)
                elif best is not None and not (loss < 2 * best):
                    return {"file": rel.replace(os.sep, "/"), "line": i}
    return None


def load_meta(meta):
    ranks, inj = {}, []
    for f in glob.glob(os.path.join(meta, "rank-*.json")):
        r = _read_json(f)
        ranks[r["rank"]] = r
    for f in sorted(glob.glob(os.path.join(meta, "injection-*.json"))):
        inj.append(_read_json(f))
    return ranks, inj


def build_truth(job, arch):
    stack, fault = job["stack"], job["fault"]
    ranks, inj = load_meta(job["meta_dir"])
    problems = []
    if fault not in NODE_FAULTS and len(ranks) != 4:  # a node's setup may stop every rank before it registers
        problems.append(f"only {len(ranks)} ranks registered")
    hosts = job["hosts"]
    rank_host = {r: m["host"] for r, m in ranks.items()}
    first = inj[0] if inj else None
    evidence, faulty_nodes, faulty_rank, iteration = [], [], None, None

    def need(pattern, where, limit=1, prefer=None, required=True):
        if job["layout"] != "torchelastic-logdir":  # no console.log nor per-rank files: every file counts
            prefer = None
        hits = find(arch, where, pattern, limit, prefer, job.get("task_hosts") or hosts)
        if not hits and required:
            problems.append(f"proof line /{pattern}/ not found in {where or 'any host'}")
        evidence.extend(h for h in hits if h not in evidence)
        return hits

    if fault not in HEALTHY and fault != "corrupt_ckpt" and not inj:
        problems.append("fault was never injected")
    if fault == "push_refused" and not find(arch, [hosts[0]], r"ConnectionRefusedError|Connection refused"):
        problems.append("no refused metrics push in the logs")
    if fault == "debug_logs" and not find(arch, None, r"^\[I\d{4} "):
        problems.append("no C++ INFO line in the logs")
    if fault == "warn_storm" and not find(arch, None, r"UserWarning: (To copy construct from a tensor|Explicitly "
                                                       r"requested dtype)"):
        problems.append("no warning in the logs")
    if fault in HEALTHY:
        for h, rc in job["exit_codes"].items():
            if rc != 0 and h not in job.get("stopped_nodes", ()):
                problems.append(f"{h} exited {rc}")
        if not find(arch, None, FINISH[stack]):
            problems.append("no end-of-training line")
    elif stack in OTHER_PROOF and fault in OTHER_PROOF[stack] and first:
        faulty_rank = first["rank"]
        fh = rank_host.get(faulty_rank)
        faulty_nodes = [fh]
        iteration = first["step"]
        pid = ranks[faulty_rank]["pid"]
        # in a pod layout a Ray worker's lines reach only the driver's (head) pod: search every node there
        where = None if (stack == "ray" and job["layout"] == "kubernetes-pods") else [fh]
        for pattern, required, *anywhere in OTHER_PROOF[stack][fault]:
            tasks = "(" + "|".join(str(r) for r, h in sorted(rank_host.items()) if h == fh) + ")"
            need(pattern.format(pid=pid, rank=faulty_rank, node_tasks=tasks), None if anywhere else where,
                 required=required, limit=2)
        need(OTHER_CASCADE[stack], None, required=False)
    elif fault in ("restart", "worker_segv", "rlimit_as", "stray_barrier", "bad_token", "eval_exception",
                   "short_sample", "anomaly_nan", "missing_shard", "json_exception", "ansi_exception",
                   "loader_stall", "tz_exception", "stray_date", "collective_mismatch") and first:
        faulty_rank = first["rank"]
        fh = rank_host.get(faulty_rank)
        faulty_nodes = [fh]
        lr = ranks[faulty_rank]["local_rank"]
        # with restarts the process the fault was injected in (the first attempt's; each attempt registers
        # again); a DataLoader worker's record holds the worker's pid, so the rank's own from its registration
        pid = first["pid"] if fault == "restart" else ranks[faulty_rank]["pid"]
        iteration = first["step"] if fault != "loader_stall" else None  # a worker reads batches ahead
        attempt = job["max_restarts"]
        # with restarts the error is raised in attempt_0; a later attempt may fail otherwise (its peers are
        # still being torn down when it connects), which is the restart's cascade, not the fault
        own = rf"attempt_\d+/{lr}/stderr\.log"
        root = {"restart": r"RuntimeError: shape mismatch in attention block",
                "eval_exception": r"RuntimeError: shape mismatch in attention block",
                "rlimit_as": r"DefaultCPUAllocator|MemoryError|Cannot allocate memory",
                "stray_barrier": r"Timed out waiting \d+ms for recv operation",
                "bad_token": r"IndexError: index out of range in self",
                "short_sample": r"stack expects each tensor to be equal size",
                "anomaly_nan": r"returned nan values in its \d+th output",
                "missing_shard": r"No such file or directory: .*model_rank\d+\.pt",
                "json_exception": r"RuntimeError: shape mismatch in attention block",
                "ansi_exception": r"RuntimeError: shape mismatch in attention block",
                "loader_stall": r"DataLoader timed out after [\d.]+ seconds",
                "tz_exception": r"RuntimeError: shape mismatch in attention block",
                "stray_date": r"RuntimeError: shape mismatch in attention block",
                "collective_mismatch": r"Timed out waiting \d+ms for (recv|send) operation"}
        if fault == "worker_segv":
            wpid = first["worker_pid"]
            pattern = rf"DataLoader worker \(pid\(?s?\)? ?{wpid}\)? (is killed by signal|exited unexpectedly)"
            need(pattern, [fh], prefer=own)
            need(pattern, [fh], prefer=r"console\.log")
            # the worker's own report from torch's SIGSEGV handler, before it dies
            need(r"Unexpected segmentation fault encountered in worker", [fh], prefer=own)
            need(r"Unexpected segmentation fault encountered in worker", [fh], prefer=r"console\.log")
        else:
            need(root[fault], [fh], prefer=own)
            need(root[fault], [fh], prefer=r"console\.log", limit=attempt + 1)
        # the agent's line names the first of its ranks to exit; a rank that exits after its node-mate (both time
        # out in the same collective) has its exit code in the agent's failure summary alone, or is torn down by the
        # agent (SIGTERM) before its own timeout ends it
        need(rf"failed \(exitcode: 1\) local_rank: {lr} \(pid: {pid}\)|exitcode\s+: 1 \(pid: {pid}\)"
             rf"|Sending process {pid} closing signal SIGTERM", [fh])
    elif fault in NEW_125 and first:
        faulty_rank, faulty_nodes, iteration = new_kinds_truth(job, first, ranks, need, problems, inj)
    elif fault == "fsize_signal" and first:
        faulty_rank = first["rank"]
        fh = rank_host.get(faulty_rank)
        faulty_nodes = [fh]
        lr, pid = ranks[faulty_rank]["local_rank"], ranks[faulty_rank]["pid"]
        iteration = first["step"]
        need(rf"failed \(exitcode: -25\) local_rank: {lr} \(pid: {pid}\)", [fh])
        need(rf"Signal 25 \(SIGXFSZ\) received by PID {pid}", [fh])
    elif fault in ("eval_sigkill", "kill_midline", "silent_abort") and first:
        faulty_rank = first["rank"]
        fh = rank_host.get(faulty_rank)
        faulty_nodes = [fh]
        lr, pid = ranks[faulty_rank]["local_rank"], ranks[faulty_rank]["pid"]
        iteration = first["step"]
        sig, name = (6, "SIGABRT") if fault == "silent_abort" else (9, "SIGKILL")
        need(rf"failed \(exitcode: -{sig}\) local_rank: {lr} \(pid: {pid}\)", [fh])
        need(rf"Signal {sig} \({name}\) received by PID {pid}", [fh])
    elif fault == "accum_nan" and first:
        iteration = first["step"]
        faulty_nodes = []  # DDP averages the overflowed gradient into every replica: no node stands out
        need(r"\| loss (nan|inf) \|", None, limit=1, prefer=r"console\.log")  # the step's progress line
        need(r"loss is (nan|inf) at step", None, limit=1)  # every rank's stop, as for `nan`
    elif fault == "upload_enospc" and first:
        faulty_rank = first["rank"]
        fh = rank_host.get(faulty_rank)
        faulty_nodes = [fh]
        lr, pid = ranks[faulty_rank]["local_rank"], ranks[faulty_rank]["pid"]
        iteration = first["step"]
        own = rf"attempt_0/{lr}/stderr\.log"
        need(r"No space left on device", [fh], prefer=own)
        need(r"No space left on device", [fh], prefer=r"console\.log")
        need(rf"Sending process {pid} closing signal SIGTERM", [fh])
    elif fault in NEW_161 and first:
        faulty_rank, faulty_nodes, iteration = new161_truth(job, first, ranks, need)
    elif fault in NEW_146 and first:
        # a node's own fault (its shards, its pids budget) may strike both its ranks: the first in time is the rank
        first = min(inj, key=lambda i: i["time"])
        faulty_rank, faulty_nodes, iteration = new146_truth(job, arch, first, ranks, need, problems, evidence)
    elif fault in NODE_FAULTS and first:
        hit = {"bad_env": r"Unable to find address for: ib0", "bad_env_all": r"Unable to find address for: ib0",
               "node_corrupt_ckpt": r"PytorchStreamReader failed|central directory|UnpicklingError|EOFError",
               "compile_nocxx": r"InvalidCxxCompiler|No working C\+\+ compiler",
               "shm_small": r"unable to allocate shared memory|No space left on device|Bus error",
               "port_taken": r"EADDRINUSE|Address already in use|failed to listen|another process is utilizing it",
               "no_master_host": r"Name or service not known|gai error|Temporary failure in name resolution",
               "missing_file": r"FileNotFoundError: ", "missing_file_all": r"FileNotFoundError: ",
               "version_mismatch": r"requires `accelerate>=",
               "idx_truncated": r"buffer is smaller than requested size",
               "device_missing": r"Torch not compiled with CUDA enabled"}[fault]
        struck = [i["host"] for i in inj]
        # every node's setup alike: no node to blame; a port taken is the job's MASTER_PORT to change (the public
        # threads of the real corpus label it job-wide), whichever host's leftover process holds it
        faulty_nodes = [] if fault.endswith("_all") or fault == "port_taken" else struck
        for fh in struck:
            if fault not in AGENT_FAULTS:  # the launcher failed before starting a rank: its console alone
                need(hit, [fh], prefer=r"attempt_0/\d/stderr\.log", limit=1)
            need(hit, [fh], prefer=r"console\.log", limit=1)
            if fault not in AGENT_FAULTS:  # a worker whose batch never leaves it (its queue's feeder thread
                # failed, as under the HF Trainer) leaves its rank waiting: no exit of its own, its peers time out
                need(r"failed \(exitcode: 1\) local_rank: \d \(pid: \d+\)", [fh], required=fault != "shm_small")
    elif fault in ("exception", "sigkill", "hang", "data", "loader_data", "deadlock", "exit_hang") and first:
        faulty_rank = first["rank"]
        fh = rank_host.get(faulty_rank)
        faulty_nodes = [fh]
        lr = ranks[faulty_rank]["local_rank"]
        pid = ranks[faulty_rank]["pid"]
        iteration = first["step"] if fault != "loader_data" else None  # a worker reads batches ahead
        if fault == "exception":
            need(r"RuntimeError: shape mismatch in attention block", [fh], prefer=rf"attempt_0/{lr}/stderr\.log")
            need(r"RuntimeError: shape mismatch in attention block", [fh], prefer=r"console\.log")
            need(rf"failed \(exitcode: 1\) local_rank: {lr} \(pid: {pid}\)", [fh])
        elif fault == "sigkill":
            need(rf"failed \(exitcode: -9\) local_rank: {lr} \(pid: {pid}\)", [fh])
            need(rf"Signal 9 \(SIGKILL\) received by PID {pid}", [fh])
        elif fault in ("hang", "deadlock", "exit_hang"):
            need(rf"Sending process {pid} closing signal SIGTERM", [fh])
            need(r"[Tt]imed out|[Tt]imeout", [fh], required=False)
        elif fault in ("data", "loader_data"):
            need(r"JSONDecodeError: ", [fh], prefer=rf"attempt_0/{lr}/stderr\.log")
            need(r"JSONDecodeError: ", [fh], prefer=r"console\.log")
            need(rf"failed \(exitcode: 1\) local_rank: {lr} \(pid: {pid}\)", [fh])
    elif fault in ("host_oom", "worker_oom", "sigstop") and first:
        faulty_rank = first["rank"]
        fh = rank_host.get(faulty_rank)
        faulty_nodes = [fh]
        lr = ranks[faulty_rank]["local_rank"]
        pid = ranks[faulty_rank]["pid"]
        iteration = first["step"]  # None for worker_oom: the worker decodes batches ahead of the step
        if fault == "host_oom":
            need(r"invoked oom-killer", [fh], prefer=r"kern\.log")
            need(rf"Killed process {pid} ", [fh], prefer=r"kern\.log")
            need(rf"failed \(exitcode: -9\) local_rank: {lr} \(pid: {pid}\)", [fh])
            need(rf"Signal 9 \(SIGKILL\) received by PID {pid}", [fh])
        elif fault == "worker_oom":
            wpid = first["worker_pid"]
            need(r"invoked oom-killer", [fh], prefer=r"kern\.log")
            need(rf"Killed process {wpid} ", [fh], prefer=r"kern\.log")
            need(rf"DataLoader worker \(pid\(?s?\)? ?{wpid}\)? (is killed by signal|exited unexpectedly)", [fh],
                 prefer=rf"attempt_0/{lr}/stderr\.log")
            need(rf"DataLoader worker \(pid\(?s?\)? ?{wpid}\)? (is killed by signal|exited unexpectedly)", [fh],
                 prefer=r"console\.log")
            need(rf"failed \(exitcode: 1\) local_rank: {lr} \(pid: {pid}\)", [fh])
        else:  # a stopped process ignores SIGTERM until the agent escalates to SIGKILL
            need(rf"Sending process {pid} closing signal SIGTERM", [fh])
            need(rf"Unable to shutdown process {pid} via", [fh], required=False)
    elif fault == "diverge" and first:
        iteration = first["step"]
        faulty_nodes = []  # the schedule is the same on every rank: the job diverges, no node stands out
        hit = first_divergent_line(arch, stack, first["step"], hosts)
        if hit:
            evidence.append(hit)
        else:
            problems.append("no progress line shows the loss blowing up")
    elif fault == "timelimit" and first:
        iteration = first["step"]
        faulty_nodes = []  # the job's own wall-clock limit: every node is stopped alike
        need(r"DUE TO TIME LIMIT", None, limit=1)
        need(r"Received (?:Signals\.)?\w+ death signal|got signal: 15", None, limit=2, required=False)
    elif fault == "stall" and first:
        faulty_rank = first["rank"]
        fh = rank_host.get(faulty_rank)
        faulty_nodes = [fh]
        iteration = first["step"]
        # the stuck rank's last progress line (the step before), a peer's line of the step it never logged, the limit
        need(rf"\[rank{faulty_rank}\].*step {first['step'] - 1}/", [fh], limit=1)
        need(rf"step {first['step']}/", [h for h in hosts if h != fh] or None, limit=1)
        need(r"DUE TO TIME LIMIT", None, limit=1)
    elif fault == "overflow" and first:
        iteration = first["step"]
        faulty_nodes = []  # the same activations overflow on every rank: the job's numbers, no node
        need(rf"iteration\s+{first['step']}/.*number of skipped iterations:\s+1 ?\|", None, limit=1)
    elif fault in NEW_133 and first:
        faulty_rank, faulty_nodes, iteration = new133_truth(job, first, ranks, need)
    elif (fault in ("tp_mismatch", "layout_ckpt") or stack == "megatron" and fault == "nan") and first:
        faulty_rank, faulty_nodes, iteration = megatron_truth(job, first, ranks, need)
    elif fault == "netdown" and first:
        faulty_rank = first["rank"]
        fh = rank_host.get(faulty_rank)
        faulty_nodes = [fh]
        iteration = first["step"]
        need(r"timed out after|Timed out waiting", [fh], limit=3, prefer=r"console\.log")
    elif fault in SAVE_FAULTS:  # rank 0 writes the checkpoint, so its node holds the failed write
        faulty_rank = 0
        fh = rank_host.get(0)
        faulty_nodes = [fh]
        iteration = first["step"] if first else 20
        need(SAVE_FAULTS[fault], [fh], limit=2)
    elif fault == "nan" and first:
        iteration = first["step"]
        need(NAN[stack], None, limit=1)
        faulty_nodes = []  # DDP averages the bad gradient into every replica: no node stands out
    elif fault == "corrupt_ckpt":
        faulty_nodes = []  # every rank reads the same truncated file
        iteration = None
        need(r"PytorchStreamReader failed|central directory|[Dd]eserializ|SafetensorError|UnpicklingError"
             r"|EOFError|incomplete metadata|Ran out of input|MetadataIncompleteBuffer", None, limit=1)
    evidence = evidence[:8]
    fault_time = first["time"] if first else None
    if fault == "corrupt_ckpt" and not first:
        problems.append("resume was never attempted")

    notes = describe(job, first, rank_host)
    truth = {
        "schema": "l4lite.ground_truth/1",
        "scenario": f"{stack}-{fault}",
        "status": "healthy" if fault in HEALTHY else "incident",
        "faulty_nodes": faulty_nodes,
        "phase": PHASE[fault],
        "iteration": iteration,
        "category": CATEGORY[fault],
        "fault_time": fault_time,
        "evidence": evidence,
        "format": FORMATS[stack],
        "layout": job["layout"],
        "node_names": hosts,
        "nodes": 2,
        "gpus_per_node": 2,
        "world_size": 4,
        "faulty_rank": faulty_rank,
        "notes": notes,
        "flight_recorder": bool(job["fr"]),
        "rank_hosts": {str(r): h for r, h in sorted(rank_host.items())},
        "exit_codes": job["exit_codes"],
    }
    return truth, problems


NEW_125 = ("logfile_exception", "save_killed", "save_memerror", "model_config", "loader_hang", "two_faults")


def new_kinds_truth(job, first, ranks, need, problems, inj):
    """Proof lines of the kinds of jobs 125-132; returns the faulty rank, nodes and iteration."""
    fault, r = job["fault"], first["rank"]
    fh = first["host"]
    # a restarted rank registers again: the pid the fault struck is the injection record's
    pid = first["pid"]
    lr = ranks[r]["local_rank"] if r in ranks else r % 2
    own = rf"attempt_0/{lr}/stderr\.log"
    iteration = first["step"]
    if fault == "logfile_exception":
        need(r"RuntimeError: shape mismatch in attention block", [fh], prefer=rf"logs/train-rank{r}\.log")
        need(rf"failed \(exitcode: 1\) local_rank: {lr} \(pid: {pid}\)", [fh])
    elif fault == "save_killed":
        # torchrun's summary names the last attempt's failures only: the agent's line of the first is the proof
        need(rf"failed \(exitcode: -9\) local_rank: {lr} \(pid: {pid}\)", [fh])
    elif fault == "save_memerror":
        for where in (own, r"console\.log"):
            need(r"MemoryError|DefaultCPUAllocator|Cannot allocate memory", [fh], prefer=where)
        need(rf"failed \(exitcode: 1\) local_rank: {lr} \(pid: {pid}\)", [fh])
    elif fault == "model_config":
        iteration = None
        # DDP's own check names the rank whose parameters differ; DeepSpeed's broadcast of the parameters meets
        # the other size in whichever rank receives it (gloo: "Received data size doesn't match expected size"),
        # which may be a rank of the other node: the line that shows the mismatch is the proof wherever it is
        pattern = r"appears not to match sizes|Received data size doesn't match expected size"
        need(pattern, [fh], prefer=own, required=False)
        if not need(pattern, [fh], prefer=r"console\.log", required=False):
            need(pattern, None, prefer=r"console\.log", limit=2)
        need(rf"failed \(exitcode: 1\) local_rank: {lr} \(pid: {pid}\)", [fh], required=False)
    elif fault == "loader_hang":
        iteration = None  # a worker reads batches ahead of the step
        pid = ranks[r]["pid"]
        need(rf"Sending process {pid} closing signal SIGTERM", [fh])
        need(r"[Tt]imed out|[Tt]imeout", [fh], required=False)  # as for `hang`: the timeout on the stuck node
    elif fault == "two_faults":
        if len(inj) < 2:
            problems.append("the second rank's fault did not happen")
        need(r"RuntimeError: shape mismatch in attention block", [fh], prefer=own)
        need(r"RuntimeError: shape mismatch in attention block", [fh], prefer=r"console\.log")
        need(rf"failed \(exitcode: 1\) local_rank: {lr} \(pid: {pid}\)", [fh])
    return r, [fh], iteration


NEW_133 = ("netdrop", "exit0", "wrong_ckpt")


def new133_truth(job, first, ranks, need):
    """Proof lines of the kinds of jobs 133-138; returns the faulty rank, nodes and iteration."""
    fault, r = job["fault"], first["rank"]
    if fault == "wrong_ckpt":  # every rank loads the same file: the job's setting, no node to blame
        need(r"size mismatch for |Error\(s\) in loading state_dict", None, limit=1)
        return None, [], None
    fh = first["host"]
    if fault == "netdrop":  # as netdown: the cut-off node's ranks and agent time out
        need(r"timed out after|Timed out waiting|Connection timed out|[Tt]imeout", [fh], limit=3, prefer=r"console\.log")
    elif fault == "exit0":  # the rank says nothing: its peers' lost connections and the agents' teardown show it
        need(r"Connection closed by peer|Connection reset by peer|Broken pipe|[Tt]imed out", None, limit=2,
             prefer=r"console\.log")
    return r, [fh], first["step"]


def megatron_truth(job, first, ranks, need):
    """Proof lines of the Megatron faults that no other stack has (and of its NaN, which stays on the tensor-parallel
    group that computed it); returns the faulty rank, nodes and iteration."""
    fault, r = job["fault"], first["rank"]
    if fault == "layout_ckpt":  # every rank loads the same checkpoint: the job's setting, no node to blame
        need(r"Global shape mismatch for loaded", None, limit=1)
        return None, [], None
    fh = first["host"]
    own = rf"attempt_0/{ranks[r]['local_rank']}/stderr\.log"
    if fault == "nan":  # Megatron's check of the loss stops the group's ranks before the gradient all-reduce,
        need(NAN["megatron"], [fh], prefer=own)  # so the other node's ranks only lose their peers
        need(NAN["megatron"], [fh], prefer=r"console\.log")
        need(r"failed \(exitcode: 1\) local_rank: \d \(pid: \d+\)", [fh])
        return r, [fh], first["step"]
    # tp_mismatch: the rank builds other groups than its peers, every rank waits in the store for a group that
    # never completes (Megatron's --distributed-timeout-minutes); the odd rank's own wait is the proof
    need(r"wait timeout after \d+ms", [fh], prefer=own)
    need(r"wait timeout after \d+ms", [fh], prefer=r"console\.log")
    return r, [fh], None


NEW_146 = ("layer_mismatch", "node_enospc", "shard_truncated", "pids_limit", "missing_module", "loss_spike",
           "shard_mismatch")


def new146_truth(job, arch, first, ranks, need, problems, evidence):
    """Proof lines of the kinds of jobs 146-153; returns the faulty rank, nodes and iteration."""
    fault, r, fh = job["fault"], first["rank"], first["host"]
    if fault == "loss_spike":  # the same schedule on every rank: the job's numbers, no node
        hit = first_divergent_line(arch, job["stack"], first["step"], job["hosts"])
        if hit:
            evidence.append(hit)
        else:
            problems.append("no progress line shows the loss spike")
        need(r"training finished: 40 steps", None, limit=1)  # and the run went on to its end
        return None, [], first["step"]
    if fault == "missing_module":  # the node's ranks fail importing it, before any registers
        for where in (r"attempt_0/\d/stderr\.log", r"console\.log"):
            need(r"No module named 'packing_utils'", [fh], prefer=where, limit=1)
        need(r"failed \(exitcode: 1\) local_rank: \d \(pid: \d+\)", [fh])
        return None, [fh], None
    lr, pid = ranks[r]["local_rank"], ranks[r]["pid"]
    own = rf"attempt_0/{lr}/stderr\.log"
    root = {"layer_mismatch": r"inconsistent \d+ params|appears not to match|[Ss]ize mismatch|expects same model",
            "node_enospc": r"No space left on device|file write failed|unexpected pos",
            "shard_truncated": r"Failed to read all data for array",
            "pids_limit": r"Resource temporarily unavailable|can't start new thread",
            # FSDP checks nothing as it shards: the extra block's all-gathers meet their peers' other ones
            "shard_mismatch": r"Timed out waiting \d+ms for (send|recv) operation"}[fault]
    if not need(root, [fh], prefer=own, required=False):  # a check that fails on every rank (DDP's model check)
        need(root, None, prefer=r"console\.log", limit=2)  # may raise first on another rank
    need(root, [fh], prefer=r"console\.log", required=fault not in ("layer_mismatch", "shard_mismatch"))
    if fault in ("shard_truncated", "pids_limit"):  # either rank of the node may be the first to fail
        lr, pid = r"\d", r"\d+"
    need(rf"failed \(exitcode: 1\) local_rank: {lr} \(pid: {pid}\)", [fh],
         required=fault not in ("layer_mismatch", "shard_mismatch"))
    return r, [fh], 1 if fault == "shard_mismatch" else first["step"]  # it breaks in the first forward


NEW_161 = ("preempt", "cpu_throttle", "netslow", "inode_full")


def new161_truth(job, first, ranks, need):
    """Proof lines of the kinds of jobs 161-167 (version_mismatch is a node fault); returns the faulty rank,
    nodes and iteration."""
    fault, r, fh = job["fault"], first["rank"], first["host"]
    if fault == "preempt":  # the node's launcher says it was signalled; the other node's ranks lose their peers
        need(r"Received (?:Signals\.)?\w+ death signal|SignalException: Process \d+ got signal: 15", [fh],
             prefer=r"console\.log")
        need(r"Connection closed by peer|Connection reset by peer|[Tt]imed out|Broken pipe", None, limit=2,
             prefer=r"console\.log", required=False)
    elif fault == "cpu_throttle":  # the slow node says nothing of it: its peers' timeouts are what shows
        need(r"Timed out waiting \d+ms|[Tt]imed out|Connection closed by peer|Connection reset by peer", None,
             limit=3, prefer=r"console\.log")
    elif fault == "netslow":  # as netdrop: the collectives over the slow link time out
        need(r"Timed out waiting \d+ms|[Tt]imed out|Connection timed out|[Tt]imeout", None, limit=3,
             prefer=r"console\.log")
    elif fault == "inode_full":  # rank 0's save: no inode left, while the disk has room
        need(r"No space left on device", [fh], prefer=r"attempt_0/0/stderr\.log")
        need(r"No space left on device", [fh], prefer=r"console\.log")
    return r, [fh], first["step"]


def describe_161(job, first, h):
    """Notes of the jobs 161-167."""
    f, r, step = job["fault"], first["rank"] if first else job["rank"], job["step"]
    h1 = job["hosts"][1]
    launcher = "accelerate launch" if job["stack"] == "accelerate" else "torchrun"
    return {
        "preempt": f"At step {step} the node of global rank {r} ({h}) is preempted: its {launcher} gets SIGTERM from "
                   "outside (as a scheduler or Kubernetes sends it to reclaim the node), passes it on to its ranks "
                   "and stops; the other node's ranks, still training, fail in the next collective and their agent "
                   "reports their failures. The root is the preempted node, whose lines hold no error of its own.",
        "cpu_throttle": f"At step {step} both ranks of {h} (global rank {r}'s node) join a cpu cgroup whose CFS quota "
                        "is 1 ms of CPU per second, shared with 6 runaway busy-loop processes (a node throttled hard: "
                        "fail-slow); they go on thousands of times slower and print nothing about it, the other "
                        "node's ranks time out waiting for them in the step's collectives (30 s gloo); the slow "
                        "node, still computing, is killed by the generator after 150 s (as a scheduler's time limit "
                        "would). The slow node is the root.",
        "netslow": f"Each node in its own network namespace, joined by a veth pair; at step {step} the link of {h} "
                   f"(global rank {r}'s node) degrades to 32 kbit/s (`tc qdisc add dev <veth> root tbf rate 32kbit`: "
                   "the link stays up and slow, netem is not in this kernel); the gradient all-reduce cannot finish "
                   "within the 30 s gloo timeout.",
        "version_mismatch": f"{h1} was set up apart: its own site folder, first on the Python path, holds "
                            f"{OLD_ACCELERATE} (the others have the venv's 1.16.0); transformers' Trainer needs "
                            "accelerate>=1.1.0, so both its ranks fail building TrainingArguments (ImportError) "
                            "right after joining the process group, and the other node's ranks lose them.",
        "inode_full": f"Rank 0's checkpoint disk on {h} is a tmpfs with room to spare (64 MiB) but {INODES} inodes: "
                      f"the step-{step} save creates the checkpoint folder and its first file, the next file fails "
                      "(No space left on device, with the disk nearly empty), the others lose rank 0.",
    }[f]


def describe_146(job, first, h):
    """Notes of the jobs 146-153."""
    f, r, step = job["fault"], first["rank"] if first else job["rank"], job["step"]
    h1 = job["hosts"][1]
    after = (step or 0) + 1
    return {
        "layer_mismatch": f"Global rank {r} on {h} builds the model with 3 transformer blocks, the others with 2 (its "
                          "node still runs an older revision of the model code); DDP's check of the parameters "
                          "across ranks fails as the model is wrapped, before training.",
        "node_enospc": f"Each node's local rank 0 saves its own copy of the checkpoint every 10 steps to the node's "
                       f"local disk; {h1}'s checkpoint disk has room for two saves (a {NODE_CKPT_DISK} tmpfs): "
                       f"global rank {r}'s save at step {step} fails (No space left on device), the others wait "
                       "in the barrier after the save and lose it.",
        "shard_truncated": f"Every node reads the token shards (part-NNNNN.npy, 64 samples each) from its local disk; "
                           f"{h1}'s copy of shard 7 was cut short (40%): the first of its ranks to reach it (global "
                           f"rank {r}, at step {first['step'] if first else step}) fails in np.load (Failed to read all data), the others lose "
                           "it.",
        "pids_limit": f"2 DataLoader workers per rank, forked at each epoch's start; from the second epoch (step "
                      f"{step}) {h1}'s ranks run under a pids limit they have reached (a pids cgroup whose pids.max is "
                      "what it holds, as a container or pod started with too small a pids limit): forking the "
                      f"epoch's workers fails (BlockingIOError: Resource temporarily unavailable) in global rank {r} "
                      "first, the others lose it. The limit is the node's container setting (user_config, as a "
                      "small /dev/shm or open-files limit is).",
        "missing_module": f"The training script imports a helper module of the project (packing_utils), installed on "
                          f"each node beside the script; it was never installed on {h1}: both its ranks fail "
                          "importing it (ModuleNotFoundError) before the process group, the other node's ranks "
                          "time out waiting for them.",
        "loss_spike": f"A warm-restart learning-rate schedule whose peak is off by 10^2 for 2 steps (steps {step}-"
                      f"{after}, every rank): the loss and the gradient norm jump, then come back down, and the "
                      "run goes on to its end (40 steps) without an error; a training-health incident, no node.",
    }[f]


FSDP_RUN = ("FSDP2 run: `fully_shard` on each transformer block and the root, a 4-rank device mesh over gloo, "
            "sharded checkpoints (torch.distributed.checkpoint: every rank writes its own shard) at steps 20 and 40, "
            "torchtitan's log layout. ")


def describe_fsdp(job, first, h):
    """Notes of the FSDP jobs (169-177)."""
    f, r, step = job["fault"], job["rank"], job["step"]
    return FSDP_RUN + {
        "healthy": "40 steps on 2 nodes x 2 ranks, no fault.",
        "exception": f"Global rank {r} on {h} raises RuntimeError from user code at step {step}; torchrun reports "
                     "exitcode 1 for it, the other ranks fail in the next all-gather (peer gone).",
        "sigkill": f"Global rank {r} on {h} is SIGKILLed at step {step} (as the kernel OOM killer would); its agent "
                   "reports exitcode -9 / Signal 9 (SIGKILL), the peers lose their gloo connection.",
        "hang": f"Global rank {r} on {h} stops before its step-{step} forward (sleeps forever); the other ranks block "
                "in the forward's all-gather until the 30 s gloo timeout, then fail; the agent on its node sends "
                "SIGTERM to the stuck rank.",
        "nan": f"At step {step} one element of global rank {r}'s shard of the output weight is set to NaN; the "
               "all-gather puts it into every rank's forward, the loss is not finite on all ranks and the script "
               "stops (FloatingPointError).",
        "shard_mismatch": f"Global rank {r} on {h} builds the model with 3 transformer blocks, the others with 2 (its "
                          "node still runs an older revision of the model code); FSDP checks nothing as it shards, so "
                          "in the first forward its all-gathers go out of step with its peers' (other sizes, one "
                          "more) and every rank times out in one (30 s gloo).",
        "erofs": f"The checkpoint folder of {h} (global ranks 0 and 1) is remounted read-only right before the "
                 "step-20 save (as a file system does after an I/O error); both its ranks' shard writes fail with "
                 "EROFS, and torch.distributed.checkpoint reports the failed ranks to every rank.",
        "exit0": f"Global rank {r} on {h} leaves the training loop at step {step} with `sys.exit(0)` (a "
                 "rank-conditional early exit) and prints nothing; its peers fail in the next all-gather, torchrun "
                 "sees the rank end with status 0.",
        "diverge": f"The learning-rate schedule multiplies the rate by 1000 from step {step} on every rank (a schedule "
                   "bug); the loss blows up in the step lines (from 3.5 to hundreds, then thousands) and stays "
                   "finite, so the run goes on to its end (40 steps) without an error.",
    }[f]


MEGATRON_RUN = ("Megatron-Core run: tensor parallel 2 (the two ranks of a node) x data parallel 2 (across the nodes) "
                "over gloo, Megatron's tensor-parallel layers, its indexed dataset (.bin/.idx) read from each node's "
                "disk, torch_dist checkpoints (megatron.core.dist_checkpointing) at iterations 20 and 40, "
                "Megatron-LM's progress line on the last rank. ")


def describe_megatron(job, first, h):
    """Notes of the Megatron jobs (178-187)."""
    f, r, step = job["fault"], job["rank"], job["step"]
    return MEGATRON_RUN + {
        "healthy": "40 iterations on 2 nodes x 2 ranks, no fault.",
        "exception": f"Global rank {r} on {h} raises RuntimeError from user code at iteration {step}; torchrun "
                     "reports exitcode 1 for it, its tensor-parallel peer and the other node's ranks fail in the next "
                     "collective (peer gone).",
        "sigkill": f"Global rank {r} on {h} is SIGKILLed at iteration {step} (as the kernel OOM killer would); its "
                   "agent reports exitcode -9 / Signal 9 (SIGKILL), the peers lose their gloo connection.",
        "hang": f"Global rank {r} on {h} stops before its iteration-{step} forward (sleeps forever); its "
                "tensor-parallel peer blocks in the forward's all-reduce, the other ranks in the gradient all-reduce, "
                "until the 30 s gloo timeout; the agent on its node sends SIGTERM to the stuck rank.",
        "nan": f"At iteration {step} one element of global rank {r}'s shard of the output layer is set to NaN; the "
               "vocab-parallel cross entropy puts it into the loss of both ranks of its tensor-parallel group (its "
               "node), and Megatron's check of the loss (rerun state machine, `found NaN in local forward loss "
               "calculation`) stops them before the gradient all-reduce; the other node's ranks lose their peers.",
        "tp_mismatch": f"Global rank {r} on {h} starts with tensor-model-parallel size 1, the others with 2 (its node's "
                       "job script was not updated when the layout changed); `initialize_model_parallel` then builds "
                       "other process groups on it than on its peers, and every rank waits in the store for a group "
                       "that never completes until Megatron's distributed timeout (1 minute).",
        "idx_truncated": f"Every node reads the indexed dataset from its local disk; {h}'s copy of the `.idx` file was "
                         "cut to 40% (a copy that stopped half-way): its ranks fail opening it "
                         "(`buffer is smaller than requested size`) before training, the first node's ranks lose "
                         "their peers in the first gradient all-reduce.",
        "layout_ckpt": "Every rank runs with tensor-model-parallel size 1 and resumes the step-20 checkpoint that the "
                       "healthy run (tensor parallel 2) saved: Megatron pads the vocabulary to a multiple of 128 x "
                       "the tensor-parallel size (512 rows saved, 384 expected), so dist_checkpointing refuses the "
                       "output layer (`Global shape mismatch`) on every rank (job-wide: the job's setting).",
        "erofs": f"The checkpoint folder of {h} (global ranks 0 and 1) is remounted read-only right before the "
                 "iteration-20 save; both its ranks' shard writes fail with EROFS and torch.distributed.checkpoint, "
                 "under dist_checkpointing, reports the failed ranks to every rank.",
        "diverge": f"The learning-rate schedule multiplies the rate by 1000 from iteration {step} on every rank (a "
                   "schedule bug); the loss blows up in Megatron's progress lines and the run goes on to its end.",
    }[f]


def describe_133(job, first, h):
    """Notes of the jobs 133-138."""
    f, r, step = job["fault"], job["rank"], job["step"]
    launcher = "accelerate launch" if job["stack"] == "accelerate" else "torchrun"
    return {
        "netdrop": f"Each node in its own network namespace, joined by a veth pair; at step {step} the link of {h} "
                   f"(global rank {r}'s node) starts dropping every packet (`tc qdisc add dev <veth> root pfifo limit 0`: the link "
                   "stays up, as with a dead switch port or a firewall rule); the gloo connections and the "
                   "rendezvous store stall until their timeouts, the cut-off node is killed after 150 s.",
        "exit0": f"Global rank {r} on {h} leaves the training loop at step {step} with `sys.exit(0)` (a "
                 "rank-conditional early exit) and prints nothing; its peers fail in the next collective, "
                 f"{launcher} sees the rank end with status 0.",
        "wrong_ckpt": "Every rank resumes from a checkpoint written by another model (hidden size 96, the run's "
                      "64: the resume path points at another run's folder); `load_state_dict` fails with size "
                      "mismatches on every rank, before training.",
        "compile_nocxx": f"The model is wrapped in `torch.compile` (inductor); the job environment of {h} sets "
                         f"CXX={MISSING_CXX}, a compiler toolset that node was never given: both its ranks fail "
                         "compiling the first forward (InvalidCxxCompiler), the other node's lose their peers.",
        "device_missing": f"The job environment of {h} sets L4L_DEVICE=cuda (the script places the model on "
                          "`cuda:<local rank>`), while that node's torch is a CPU-only build: both its ranks fail "
                          "moving the model (`Torch not compiled with CUDA enabled`) right after joining the process "
                          "group, the other node's ranks lose them.",
    }[f]


def describe_139(job):
    """Notes of the node faults of jobs 139-142."""
    h0, h1 = job["hosts"]
    launcher = "accelerate launch" if job["stack"] == "accelerate" else "torchrun"
    return {
        "shm_small": f"Each rank reads batches through 2 DataLoader worker processes (batches reach the rank in "
                     f"shared memory); {h1}'s /dev/shm is a {SHM_SIZE} tmpfs (as a container started without a "
                     "larger --shm-size): its ranks' workers fail to allocate a batch's shared memory (No space "
                     "left on device) in the first steps, the other node's ranks lose them.",
        "port_taken": f"A process left on {h0} still listens on the rendezvous port (it accepts connections and never "
                      f"answers); {launcher} on {h0} finds the port taken before it starts its store (Accelerate: "
                      "ConnectionError, another process is utilizing it) and fails; the port is the job's "
                      f"MASTER_PORT to change (job-wide, as the public threads label it); {h1}'s agent, connected to "
                      "the stale listener, waits and is killed by the generator after 150 s (as a scheduler's time "
                      "limit would).",
        "no_master_host": f"The rendezvous endpoint is {h0}'s name (`--rdzv-endpoint {h0}:PORT`); {h1}'s /etc/hosts "
                          f"was written without {h0}'s entry, so its torchrun cannot resolve the endpoint and fails "
                          f"before any rank starts; {h0}'s agent waits for the second node and is killed by the "
                          "generator after 150 s (as a scheduler's time limit would).",
    }[job["fault"]]


def describe_new(job, first, h):
    """Notes of the jobs 125-132."""
    f, r, step = job["fault"], job["rank"], job["step"]
    return {
        "logfile_exception": f"Every rank logs through Python logging to a file of its own on its node "
                             f"(<host>/logs/train-rankN.log), nothing to stdout or stderr; global rank {r} on {h} "
                             f"raises RuntimeError from user code at step {step}, logs it (logger.exception) and "
                             "exits 1; the console holds the launcher's lines only, the others lose their peer.",
        "save_killed": f"torchrun runs with --max-restarts 1 and each attempt resumes from the last checkpoint in the "
                       f"save folder; in attempt_0 rank 0 on {h} is SIGKILLed (as the OOM killer would) while it "
                       f"writes the step-{step} checkpoint, which is left at 40% of its size; attempt_1 resumes "
                       "from that cut file and fails otherwise (the restart's consequence, not the cause).",
        "save_memerror": f"Rank 0 on {h} stages the step-{step} checkpoint in memory (a BytesIO) before writing it, "
                         "under an address-space limit (RLIMIT_AS, `ulimit -v`) 256 KiB above what it maps: the "
                         "save fails with MemoryError, the others lose their peer.",
        "model_config": f"Global rank {r} on {h} builds the model from a config of its own with another hidden size "
                        "(96, the others 64: a node whose config file was not updated); the job fails as the model "
                        "is set up, before training.",
        "loader_hang": f"DataLoader worker 0 of global rank {r} on {h} (2 workers per rank, no DataLoader timeout) "
                       f"blocks for good in a read after {step} samples; the rank waits for the batch and prints "
                       "nothing, the others time out in the gradient all-reduce (30 s gloo) and the agent SIGTERMs "
                       "the stuck rank.",
        "two_faults": f"Two unrelated faults a moment apart on the two nodes: global rank {r} on {h} raises "
                      f"RuntimeError from user code at step {step}, and 0.1 s later global rank {job['rank2']} on the "
                      "other node raises a ValueError of its own (a bad metrics value) before it could lose its "
                      "peer; the first is the root.",
    }[f]


def layout_note(job):
    launcher = "accelerate launch ran without --log_dir" if job["stack"] == "accelerate" else \
        "torchrun ran without --log-dir"
    if job["layout"] == "srun-label":
        return (" Layout: one `srun --label` file (slurm-NNNN.out; task 0 ran on the first node, task 1 on the "
                f"second) and each node's kern.log; {launcher}.")
    if job["layout"] == "srun-logdir":
        return (" Layout: a Slurm job step (`srun --ntasks-per-node=1 --label torchrun ... --log-dir <host>/torchelastic "
                "--redirects 3 --tee 3`): one `srun --label` file (slurm-NNNN.out) with both nodes' consoles, the ranks' "
                "lines tee'd into them, task 0 the first node, task 1 the second; each node's per-rank files under "
                "<host>/torchelastic/ and its kern.log.")
    if job["layout"] == "kubernetes-pods":
        return (" Layout: one CRI log per pod (<namespace>_<pod>_<uid>/pytorch/0.log, the pod name is the "
                f"hostname); {launcher}.")
    return ""


NAN_END = {"ddp": "the script stops with FloatingPointError", "deepspeed": "the script stops with FloatingPointError",
           "hf": "HF keeps logging nan loss to the end", "lightning": "EarlyStopping(check_finite) stops the run",
           "accelerate": "the loop keeps logging a nan loss to the end",
           "ignite": "TerminateOnNan stops the run"}


OTHER_RUN = {
    "ray": ("Ray Train run: a 2-node Ray cluster (`ray start --head` on {h0}, `ray start --address` on {h1}, 2 CPUs "
            "each), the driver on {h0} runs `TorchTrainer` with `ScalingConfig(num_workers=4, use_gpu=False)` "
            "(SPREAD placement, 2 workers per node, gloo, 30 s timeout), `FailureConfig(max_failures=0)`"),
    "jax": ("JAX multi-process run: 4 processes (2 per node) call `jax.distributed.initialize` with the coordination "
            "service on {h0} (process 0), gloo CPU collectives, a Flax MLP with optax AdamW, absl logging"),
    "tf": ("TensorFlow run: 4 workers (2 per node, worker 0 the chief on {h0}) of "
           "`tf.distribute.MultiWorkerMirroredStrategy` (gRPC, ring collectives, 30 s collective timeout), each "
           "with its own TF_CONFIG, a custom loop of a Keras MLP (`strategy.run`), the data from the node's local "
           "TFRecord file through tf.data (each worker keeps its quarter), `tf.train.CheckpointManager` every 20 "
           "steps, absl logging"),
}
OTHER_FAULT = {
    "healthy": "40 steps, checkpoints at steps 20 and 40.",
    "exception": "global rank {r} on {h} raises RuntimeError from user code at step {step}.",
    "sigkill": "global rank {r} on {h} is SIGKILLed at step {step} (as the kernel OOM killer would).",
    "hang": "global rank {r} on {h} stops before its step-{step} forward (sleeps forever); its peers block in the "
            "gradient all-reduce until the 30 s gloo timeout.",
    "sigstop": "process {r} on {h} stops itself with SIGSTOP at step {step} and is never continued; its peers block "
               "in the step's all-reduce and the coordination service misses its heartbeats (20 s timeout).",
    "nan": "at step {step} global rank {r} corrupts its part of the step (a NaN weight for Ray, a NaN input sample "
           "for JAX); the all-reduce spreads it and every rank stops at the non-finite loss (FloatingPointError).",
    "erofs": "the checkpoint folder of {h} (global rank 0) is remounted read-only right before the step-20 save; "
             "rank 0's save fails with EROFS (Read-only file system).",
    "enospc": "each node's checkpoint folder is a 64 KiB tmpfs; process 0's step-20 save fails with ENOSPC (No "
              "space left on device) on {h}.",
    "netdrop": "each node in its own network namespace (a veth pair); at step {step} process {r}'s node {h} gets "
               "`tc qdisc add dev <veth> root pfifo limit 0` (every packet it sends dropped, the link stays up): the "
               "coordination service on the other node misses its processes' heartbeats and the collectives stall.",
    "eval_exception": "a validation pass every 10 steps; process {r} on {h} raises RuntimeError in it from step "
                      "{step} on.",
    "shard_truncated": "each process reads its batches from feature shards on its node's disk (part-NNNNN.npy, 5 "
                       "steps each); {h}'s copy of the shard of steps 16-20 is cut to 40% (a bind mount over the "
                       "data folder), so its first process to read it fails in `np.load` at step {step}.",
    "data": "{h}'s local copy of the TFRecord file holds 64 bad bytes inside a record read at step {step}; both its "
            "workers stop with DataLossError (every worker reads the whole file and keeps its quarter).",
    "warn_storm": "40 steps, checkpoints at steps 20 and 40; every step's metrics code asks for a float64 array "
                  "with x64 off and JAX warns each time (Python warnings shown always); the run ends normally. No "
                  "incident.",
}
OTHER_LAYOUT = {
    "ray": {"kubernetes-pods": " Layout: one CRI pod log per node (<namespace>_<pod>_<uid>/ray-head|ray-worker/0.log), "
                               "what each node's `ray start` and, on the head pod, the driver printed; no session "
                               "logs (as `kubectl logs` of a KubeRay job).",
            "": " Layout: each node's Ray session logs (<host>/ray/session_*/logs) and the driver's output "
                "(<head>/driver.log). After the driver ends the generator stops the worker node (SIGTERM, then "
                "SIGKILL after 20 s)."},
    "tf": {"": " Layout: each worker's stdout+stderr as <host>/worker_<index>.log."},
    "jax": {"srun-label": " Layout: one `srun --ntasks 4 --ntasks-per-node 2 --label` file (slurm-NNNN.out; task "
                          "id = process id, tasks 0-1 on the first node) and each node's (empty) kern.log.",
            "": " Layout: each process's stdout+stderr as <host>/process_<id>.log."},
}


def describe_other(job, first, rank_host):
    s, h0, h1 = job["stack"], job["hosts"][0], job["hosts"][1]
    r = first["rank"] if first else job["rank"]
    h = rank_host.get(r) if r is not None else None
    text = OTHER_RUN[s].format(h0=h0, h1=h1) + "; " + OTHER_FAULT[job["fault"]].format(r=r, h=h, step=job["step"])
    layouts = OTHER_LAYOUT[s]
    return text + layouts.get(job["layout"], layouts[""])


MMENGINE_RUN = ("MMEngine run: OpenMMLab's `Runner` (iteration-based, 40 iterations, `LoggerHook` every 2, "
                "`CheckpointHook` at 20 and 40, `launcher=\"pytorch\"`) trains TinyLM over gloo under torchrun. ")


def describe(job, first, rank_host):
    s, f, r = job["stack"], job["fault"], job["rank"]
    if s in OTHER_RUN:
        return describe_other(job, first, rank_host)
    if s == "mmengine" and f == "exit_hang":
        h = rank_host.get(first["rank"]) if first else None
        return (MMENGINE_RUN + f"After the last iteration every rank enters a closing barrier (a hook's `after_train`). "
                f"Global rank {r} on {h} never reaches it (sleeps forever at exit, as a rank joining a stuck "
                "non-daemon thread does): the other ranks time out in the barrier (30 s gloo timeout) and fail; the "
                f"agent on {h} sends SIGTERM to the stuck rank. The fault is in the run's shutdown, on that rank's "
                "node.")
    if s == "mmengine" and f == "debug_logs":
        return (MMENGINE_RUN + "A debugging run: the job environment sets TORCH_CPP_LOG_LEVEL=INFO and "
                "TORCH_DISTRIBUTED_DEBUG=INFO, so torch's C++ side logs at INFO what it does quietly otherwise: its "
                "store's server failing to bind the IPv6 address and falling back to IPv4 (EADDRINUSE, printed with "
                "the word Error), each client socket's connection, the process groups and DDP's reducer; the run "
                "ends normally. No incident. (TORCH_DISTRIBUTED_DEBUG=DETAIL was tried first: with gloo on CPU every "
                "rank died of SIGSEGV in torch 2.13, so it is not a healthy run.)")
    if s == "mmengine" and f == "healthy":
        return MMENGINE_RUN + "Healthy: 2 nodes x 2 ranks, 40 iterations, checkpoints at 20 and 40; the run ends normally."
    if s == "mmengine":
        job = dict(job, stack="ddp")
        return MMENGINE_RUN + describe(job, first, rank_host)
    if f == "warn_storm":
        return ("Healthy ddp run: 40 steps of DDP over gloo on 2 nodes x 2 ranks, checkpoints at steps 20 and 40. "
                "Python warnings are shown always (as `python -W always` does) and the step's metrics code "
                "copy-constructs a tensor (`torch.tensor(t)`): every rank prints torch's UserWarning with its source "
                "line at every step; the run ends normally. No incident.")
    if s in ("megatron", "fsdp") and f in ("netdown", "netdrop", "netslow", "host_oom"):  # the stack's run, then the link's fault
        job = dict(job, stack="ddp")
        return (MEGATRON_RUN if s == "megatron" else FSDP_RUN) + describe(job, first, rank_host)
    if s == "megatron":
        return describe_megatron(job, first, rank_host.get(first["rank"]) if first and first["rank"] is not None
                                 else (first or {}).get("host"))
    if s == "fsdp":
        return describe_fsdp(job, first, rank_host.get(first["rank"]) if first else None)
    if f in NEW_125:
        return describe_new(job, first, first["host"] if first else None)
    if f in NEW_133 or f in ("compile_nocxx", "device_missing"):
        return describe_133(job, first, first["host"] if first else None)
    if f in ("shm_small", "port_taken", "no_master_host"):
        return describe_139(job)
    if f in NEW_161 or f == "version_mismatch":
        return describe_161(job, first, first["host"] if first else None)
    if f in NEW_146:
        return describe_146(job, first, first["host"] if first else None)
    h = rank_host.get(first["rank"]) if first else None
    if f == "push_refused":
        return ("Healthy ddp run: 40 steps of DDP over gloo on 2 nodes x 2 ranks, checkpoints at steps 20 and 40. "
                f"Every 10 steps rank 0 pushes its metrics to a Prometheus push gateway at {job['hosts'][0]}:9091 "
                "that is not running: each push fails (urllib's URLError, Connection refused) and the script logs "
                "a warning with the traceback and trains on; the run ends normally. No incident.")
    if f == "timelimit":
        return (f"40 steps of DDP over gloo on 2 nodes x 2 ranks, run as a Slurm job step (`srun --label torchrun`); "
                f"the step reaches its wall-clock limit while rank 0 is at step {job['step']}: as slurmstepd does, "
                "the generator writes srun's `Job step aborted` and slurmstepd's `CANCELLED AT ... DUE TO TIME LIMIT` "
                f"lines, sends SIGTERM to every task's processes (both torchrun agents and their ranks) and SIGKILL "
                f"to what is left {KILL_WAIT} s later; srun then reports each task's end. No node is at fault: the "
                "job's time limit is its own setting." + layout_note(job))
    if f == "stall":
        return (f"40 steps of DDP over gloo on 2 nodes x 2 ranks, every rank logging its steps, run as a Slurm job "
                f"step (`srun --label torchrun`) with a 600 s collective timeout. Global rank {r} on {h} stops "
                f"inside its step {job['step']}, after the step's all-reduces and before its progress line (sleeps "
                f"forever); the other ranks log step {job['step']} and wait in the next step's gradient all-reduce, "
                "printing nothing. "
                f"{job['limit_after']} s later the step reaches its wall-clock limit: as slurmstepd does, the "
                "generator writes srun's `Job step aborted` and slurmstepd's `CANCELLED AT ... DUE TO TIME LIMIT` "
                f"lines, sends SIGTERM to every task's processes and SIGKILL to what is left {KILL_WAIT} s later. "
                f"The fault is the stuck rank's node; the time limit only ended a job that had stopped."
                + layout_note(job))
    if f == "healthy":
        extra = {"amp": " The fp16 loss scaler starts at 2^32 and halves on the overflows of the first 13 steps "
                        "until the scale fits (the loss-scale search), then grows and halves now and then."}.get(s, "")
        if job.get("tracker"):
            extra += " Rank 0 also logs its metrics through a JSON-lines Accelerate tracker on stdout."
        return (f"Healthy {s} run: 40 steps of DDP over gloo on 2 nodes x 2 ranks, checkpoints at steps 20 and 40."
                + extra)
    if f == "exception":
        return (f"Global rank {r} on {h} raises RuntimeError from user code at step {job['step']}; "
                f"{'accelerate launch' if s == 'accelerate' else 'torchrun'} reports exitcode 1 for it, the other ranks fail in the next collective (peer gone) "
                "and their agents tear the job down." + layout_note(job))
    if f == "sigkill":
        return (f"Global rank {r} on {h} is SIGKILLed at step {job['step']} (as the kernel OOM killer would); "
                "its agent reports exitcode -9 / Signal 9 (SIGKILL), the peers lose their gloo connection."
                + layout_note(job))
    if f == "hang":
        extra = (" Flight recorder on (TORCH_FR_BUFFER_SIZE=2000); gloo does not dump on timeout in torch 2.13, "
                 "so each rank writes torch's own _dump_fr_trace() pickle to <host>/fr_trace_<rank> from its "
                 "failure handler (the stuck rank on SIGTERM); torch's fr_trace analysis is in "
                 "_meta/fr_trace_analysis.txt.") if job["fr"] else ""
        if job["fr"] and s == "deepspeed":
            extra += (" DeepSpeed all-reduces on a second gloo group (pg 1); the analyser cannot resolve "
                      "its members from the gloo dumps (expected ranks: set()), so its output here does "
                      "not name the stuck rank.")
        if job.get("tz"):
            extra += (f" The processes of {job['hosts'][0]} run with TZ={job['tz']}: their log times are local "
                      "(5 hours behind UTC), the other node's UTC.")
        return (f"Global rank {r} on {h} stops before its step-{job['step']} forward (sleeps forever); the "
                "other ranks block in the gradient all-reduce until the 30 s gloo timeout, then fail; the "
                f"agent on {h} sends SIGTERM to the stuck rank." + extra)
    if f == "exit_hang":
        closing = {"ddp": "rank 0 logs `training finished` and every rank enters the closing barrier before "
                          "`destroy_process_group`",
                   "fabric": "every rank enters `fabric.barrier()` before `training finished` is printed",
                   "accelerate": "every rank enters `accelerator.wait_for_everyone()` before `training finished` is "
                                 "logged"}[s]
        return (f"40 steps on 2 nodes x 2 ranks, checkpoints at steps 20 and 40; after the last step {closing}. "
                f"Global rank {r} on {h} never reaches it (sleeps forever at exit, as a rank joining a stuck "
                "non-daemon thread does): the other ranks time out in the barrier (30 s gloo timeout) and fail; the "
                f"agent on {h} sends SIGTERM to the stuck rank. The fault is in the run's shutdown, on that rank's "
                "node." + layout_note(job))
    if f == "nan":
        return (f"At step {job['step']} one weight on global rank {r} is set to NaN; DDP averages the NaN gradient "
                "into every replica, so the loss is non-finite on all ranks from then on "
                f"({NAN_END[s]}).")
    if f == "enospc":
        return ("The checkpoint folder of each node is a 64 KiB tmpfs; rank 0's checkpoint save at step 20 "
                f"fails with ENOSPC (No space left on device) on {h}.")
    if f == "corrupt_ckpt":
        return (f"The job resumes from a checkpoint truncated to 40% of its size ({os.path.basename(job.get('corrupted_file', ''))}); "
                "every rank fails while loading it, before training starts.")
    if f == "host_oom":
        return (f"At step {job['step']} global rank {r} on {h} moves into a memory cgroup limited to "
                f"{OOM_LIMIT >> 20} MiB and keeps allocating host memory; the kernel's OOM killer kills it "
                f"(its report is in {h}/kern.log), its agent reports exitcode -9 / Signal 9 (SIGKILL), "
                "the peers lose their gloo connection." + layout_note(job))
    if f == "worker_oom":
        return (f"DataLoader worker 0 of global rank {r} on {h} (2 workers per rank) moves into a memory cgroup "
                f"limited to {OOM_LIMIT >> 20} MiB after {job['step']} samples and keeps allocating; the kernel's "
                "OOM killer kills the worker (report in kern.log), the rank raises 'DataLoader worker ... is "
                "killed by signal: Killed', the others lose their peer.")
    if f == "sigstop":
        return (f"Global rank {r} on {h} stops itself with SIGSTOP before its step-{job['step']} forward and is "
                "never continued; the other ranks time out in the gradient all-reduce (30 s gloo timeout); the "
                f"agent on {h} sends SIGTERM to the stopped rank, which cannot act on it, and escalates to SIGKILL.")
    if f == "diverge":
        return (f"The learning-rate schedule multiplies the rate by 1000 from step {job['step']} on every rank "
                "(a schedule bug); the loss blows up in the framework's own progress lines"
                f"{' and the script stops at a non-finite loss' if s in ('ddp', 'amp') else ''}.")
    if f == "overflow":
        return (f"From step {job['step']} on, the gradient of the fp16 logits is multiplied out of fp16's range on "
                "every rank (activations whose gradients need more range than fp16 has): every step overflows, "
                "the loss scaler skips it and halves the scale, from its level down past 1, while the loss stays "
                "finite; the run ends normally with no step taken since.")
    if f == "netdown" and s == "accelerate":  # a static rendezvous: no store traffic once the ranks have started
        return (f"Each node is its own network namespace, joined to the other by a veth pair (10.77.x.1/.2); at "
                f"step {job['step']} global rank {r} sets {h}'s interface down (`ip link set DEV down`), cutting "
                "off both its ranks and its `accelerate launch` agent; the ranks on both nodes time out in the "
                "gradient all-reduce (30 s gloo timeout) and both agents, which talk to no store while their "
                "ranks train (Accelerate's static rendezvous), report their failed ranks and exit.")
    if f == "netdown":
        return (f"Each node is its own network namespace, joined to the other by a veth pair (10.77.x.1/.2); at "
                f"step {job['step']} global rank {r} sets {h}'s interface down (`ip link set DEV down`), cutting "
                "off both its ranks and its torchrun agent; the ranks on both nodes time out in the gradient "
                "all-reduce (30 s gloo timeout); the cut-off node's torchrun, still waiting on the rendezvous store, is "
                "killed by the generator after 150 s (as a scheduler's time limit would).")
    if f == "erofs":
        return (f"The checkpoint folder of {h} (global rank 0) is remounted read-only right before the step-20 "
                "save (as a file system does after an I/O error); the save fails with EROFS "
                "(Read-only file system).")
    if f == "restart":
        return (f"torchrun runs with --max-restarts {job['max_restarts']}: global rank {r} on {h} raises RuntimeError "
                f"from user code at step {job['step']} in every attempt; both agents restart their workers once "
                "(a new rendezvous round, attempt_1), the error comes back and the job fails.")
    if f == "worker_segv":
        return (f"DataLoader worker 0 of global rank {r} on {h} (2 workers per rank) crashes with SIGSEGV after "
                f"{job['step']} samples (as a native decoder would); the rank raises 'DataLoader worker ... is killed "
                "by signal: Segmentation fault', the others lose their peer.")
    if f == "bad_env":
        return (f"The job environment of {job['hosts'][1]} sets GLOO_SOCKET_IFNAME=ib0, an interface that node does "
                "not have; both its ranks fail in init_process_group ('Unable to find address for: ib0') and the "
                "ranks of the other node never complete the process group.")
    if f == "bad_env_all":
        return ("The job environment of every node sets GLOO_SOCKET_IFNAME=ib0, an interface no node has; every "
                "rank fails in init_process_group ('Unable to find address for: ib0').")
    if f == "missing_file":
        return (f"Each rank reads the dataset's seed file from its node's local disk; {job['hosts'][1]}'s disk was "
                "never staged (an empty file system over the data folder), so both its ranks raise "
                "FileNotFoundError before training, and the ranks of the other node lose them.")
    if f == "missing_file_all":
        return ("Each rank reads the dataset's seed file from its node's local disk; no node's disk was staged, "
                "so every rank raises FileNotFoundError before training.")
    if f == "fsize":
        return (f"Rank 0 on {h} saves the step-20 checkpoint under a 64 KiB file-size limit (RLIMIT_FSIZE, as "
                "`ulimit -f` in the node's job script); the write fails with EFBIG (File too large).")
    if f == "short_sample":
        return (f"Sample {job['step']} of the synthetic dataset is one token short; the rank whose shard holds it "
                f"(global rank {first['rank'] if first else '?'} on {h}) fails to collate its batch (RuntimeError: "
                "stack expects each tensor to be equal size), the others lose their peer.")
    if f == "rlimit_as":
        return (f"At step {job['step']} global rank {r} on {h} runs under an address-space limit (RLIMIT_AS, as "
                "`ulimit -v`) 256 MiB above what it maps and keeps allocating; the allocation fails in the rank "
                "(DefaultCPUAllocator / MemoryError), the others lose their peer.")
    if f == "stray_barrier":
        return (f"At step {job['step']} global rank {r} on {h} enters a dist.barrier() no other rank enters (a "
                "rank-conditional collective); it waits in the barrier while the others wait in the gradient "
                "all-reduce, and all four time out after 30 s (gloo).")
    if f == "bad_token":
        return (f"Sample {job['step']} of the synthetic dataset holds a token id past the vocabulary (50257 of 256); "
                f"the rank whose shard holds it (global rank {first['rank'] if first else '?'} on {h}) raises "
                "IndexError in the embedding, the others lose their peer.")
    if f == "eval_exception":
        who = ("Lightning runs a validation loop", "validation_step") if s == "lightning" else (
            "The training loop runs a validation pass", "the validation pass")
        return (f"{who[0]} every 10 steps; in the validation run after step {job['step']} "
                f"global rank {r} on {h} raises RuntimeError from user code ({who[1]}), the others lose "
                "their peer.")
    if f == "anomaly_nan":
        return (f"A debugging run with autograd's anomaly detection on every rank; at step {job['step']} one weight "
                f"on global rank {r} on {h} is set to NaN, its backward pass raises (a function 'returned nan "
                "values'), the others lose their peer in the gradient all-reduce.")
    if f == "missing_shard":
        return (f"Each rank resumes from its own file of a sharded checkpoint on its node's local disk; global rank "
                f"{r}'s file on {h} was never written, so it raises FileNotFoundError before training while the "
                "others, resumed, lose their peer in the first gradient all-reduce.")
    if f == "loader_data":
        return (f"Sample {job['step']} of the synthetic dataset is a truncated JSON record, read by a DataLoader "
                f"worker process (2 per rank); the rank whose shard holds it (global rank "
                f"{first['rank'] if first else '?'} on {h}) re-raises the worker's JSONDecodeError, the others "
                "lose their peer.")
    if f == "deadlock":
        return (f"Global rank {r} on {h} takes a lock it already holds before its step-{job['step']} forward "
                "(stuck for good); the other ranks block in the gradient all-reduce until the 30 s gloo timeout, "
                f"then fail; the agent on {h} sends SIGTERM to the stuck rank.")
    if f in ("json_exception", "ansi_exception"):
        how = "one JSON object per line" if f == "json_exception" else "ANSI colour codes around levels and times"
        return (f"Every rank logs through Python logging with {how}; global rank {r} on {h} raises RuntimeError "
                f"from user code at step {job['step']}, its script logs the failure (logger.exception, the traceback "
                "inside the record) and exits 1; the other ranks lose their peer.")
    if f == "fsize_signal":
        return (f"Rank 0 on {h} saves the step-20 checkpoint under a 64 KiB file-size limit (RLIMIT_FSIZE) with "
                "SIGXFSZ at its default action: the write past the limit kills the process (exitcode -25, SIGXFSZ); "
                "the others lose their peer.")
    if f == "loader_stall":
        return (f"DataLoader worker 0 of global rank {r} on {h} (2 workers per rank, DataLoader timeout=10 s) "
                f"blocks for good in a read after {job['step']} samples; the rank raises 'DataLoader timed out "
                "after 10 seconds', the others lose their peer.")
    if f == "upload_enospc":
        return (f"Every rank logs each step; rank 0 on {h} copies each checkpoint to an upload disk in a background "
                "thread; the disk is 64 KiB, so the upload of the step-250 checkpoint fails (No space left on "
                "device) in the thread while training goes on; at the step-500 save rank 0 waits for that upload "
                "for good, the others time out in the barrier after it (gloo, 30 s) and the agent SIGTERMs rank 0.")
    if f == "tz_exception":
        shift = TZ_SHIFT.get(job["tz"], "5 hours behind")
        return (f"The processes of {job['hosts'][0]} run with TZ={job['tz']} (its clock {shift} UTC, the other "
                f"node's zone), so its log times read {shift.replace('behind', 'earlier').replace('ahead of', 'later')}; global rank {r} on {h} raises RuntimeError "
                f"from user code at step {job['step']}, the other ranks lose their peer.")
    if f == "stray_date":
        return (f"Global rank 0 on {job['hosts'][0]} echoes two raw records of its shard, dated 1970 and 2099 and "
                f"reading ERROR, to stdout at steps {job['step'] - 2} and {job['step'] - 1}; global rank {r} on {h} "
                f"raises RuntimeError from user code at step {job['step']}, the other ranks lose their peer.")
    if f == "collective_mismatch":
        return (f"At step {job['step']} every rank all-reduces a metrics tensor, global rank {r} on {h} one of 5 "
                "values, the others one of 4; gloo fails the mismatched all-reduce.")
    if f == "eval_sigkill":
        zone = (f" The processes of {job['hosts'][0]} (rank 0, which logs the validation passes) run with "
                f"TZ={job['tz']}, their lines stamped 5 hours behind the other node's.") if job.get("tz") else ""
        return (f"A validation pass every 10 steps; in the one after step {job['step']} global rank {r} on {h} is "
                "SIGKILLed (as the kernel OOM killer would); its agent reports exitcode -9, the others lose their "
                "peer." + zone)
    if f == "node_corrupt_ckpt":
        return (f"Each node resumes from its own local copy of the step-20 checkpoint; {job['hosts'][1]}'s copy is "
                "truncated to 40%, so both its ranks fail loading it and the other node's ranks, resumed, lose them.")
    if f == "kill_midline":
        return (f"Every rank logs each step; global rank {r} on {h} is SIGKILLed at step {job['step']} half-way "
                "through writing its step line (its log ends in a cut line); exitcode -9, the peers lose it.")
    if f == "silent_abort":
        return (f"Global rank {r} on {h} writes nothing to its own stdout/stderr (its output went elsewhere) and "
                f"aborts at step {job['step']} (SIGABRT, as a native library does); only its agent reports it "
                "(exitcode -6), the others lose their peer.")
    if f == "accum_nan":
        return (f"Gradient accumulation over {job['accum']} micro-batches; at step {job['step']} micro-batch 2 of "
                f"global rank {r} overflows its loss (inf); DDP averages the gradient into every replica, the step's "
                "loss is not finite and the script stops (FloatingPointError).")
    if f == "data":
        return (f"Sample {job['step']} of the synthetic dataset is a truncated JSON record; the rank whose "
                f"shard holds it (global rank {first['rank'] if first else '?'} on {h}) raises JSONDecodeError "
                "in its data loader, the others lose their peer." + layout_note(job))
    return ""


NORMALIZE_FR = """
import glob, pickle, sys
for f in glob.glob(sys.argv[1] + "/fr_trace_*"):
    d = pickle.load(open(f, "rb"))
    pc = d.get("pg_config", {})
    if "" in pc:  # gloo records its groups before they are named, all under ""
        ranks = pc.pop("")["ranks"]
        for e in d.get("entries", []):  # every group seen here spans all ranks (world / DP group)
            name, desc = e["process_group"]
            pc.setdefault(name, {"name": name, "desc": desc, "ranks": ranks})
        pc.setdefault("0", {"name": "0", "desc": "default_pg", "ranks": ranks})
    pickle.dump(d, open(f, "wb"))
"""


def flight_recorder_analysis(job, arch, py):
    """Run torch's analyser on the dumps as written; torch 2.13 gloo dumps carry the default
    group's pg_config under an empty name, which the analyser cannot match (KeyError), so it is
    also run on copies where that one key is renamed to the group's name ("0"/default_pg)."""
    raw = os.path.join(job["meta_dir"], "fr")
    fixed = os.path.join(job["meta_dir"], "fr_named")
    for d in (raw, fixed):
        if os.path.exists(d):
            shutil.rmtree(d)
        os.makedirs(d)
    dumps = []
    for h in job["hosts"]:
        for f in sorted(glob.glob(os.path.join(arch, h, "fr_trace_*"))):
            shutil.copy(f, raw)
            shutil.copy(f, fixed)
            dumps.append(os.path.relpath(f, arch))
    subprocess.run([py, "-c", NORMALIZE_FR, fixed], check=True)
    flags = ["--allow-incomplete-ranks"] if len(dumps) < 4 else []
    text = ""
    rcs = []
    for title, d in (("dumps as written", raw),
                     ("copies whose unnamed gloo pg_config entry is filed under each group name seen in the entries", fixed)):
        cmd = [py, "-m", "torch.distributed.flight_recorder.fr_trace", d, "--prefix", "fr_trace_"] + flags
        p = subprocess.run(cmd, capture_output=True, text=True, cwd=d)
        rcs.append(p.returncode)
        text += (f"##### {title}\n$ python -m torch.distributed.flight_recorder.fr_trace <dir with "
                 f"{', '.join(sorted(dumps))}> --prefix fr_trace_ {' '.join(flags)}\n# exit code {p.returncode}\n"
                 + p.stdout + (("\n# stderr\n" + p.stderr) if p.stderr.strip() else "") + "\n")
    os.makedirs(os.path.join(arch, "_meta"), exist_ok=True)
    with open(os.path.join(arch, "_meta", "fr_trace_analysis.txt"), "w") as f:
        f.write(text.replace(raw, "<dumps>").replace(fixed, "<dumps-named>"))
    return dumps, rcs


def count_lines(arch):
    n = 0
    for p in log_files(arch):
        with open(p, "rb") as f:
            n += sum(1 for _ in f)
    return n


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--venv", default=os.environ.get("L4L_REALJOBS_VENV", "/tmp/l4lite-realjobs-venv"))
    ap.add_argument("--out", default=os.path.join(REPO, "fixtures", "real_jobs"))
    ap.add_argument("--jax-venv", default=os.environ.get("L4L_REALJOBS_JAX_VENV", "/tmp/l4lite-realjobs-jax-venv"))
    ap.add_argument("--tf-venv", default=os.environ.get("L4L_REALJOBS_TF_VENV", "/tmp/l4lite-realjobs-tf-venv"))
    ap.add_argument("--work", default="/tmp/l4lite-realjobs/work", help="checkpoints, scripts, side records")
    ap.add_argument("--only", default=None, help="regex on job names")
    ap.add_argument("--skip-install", action="store_true")
    ap.add_argument("--no-deepspeed", action="store_true")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--retruth", action="store_true",
                    help="rewrite ground_truth.json of the selected jobs already in --out from their logs and the "
                         "side records still in --work (no run)")
    ap.add_argument("--port", type=int, default=29400)
    args = ap.parse_args()

    if args.list:
        for j in jobs():
            print(j["name"], j["hosts"], "rank", j["rank"], "step", j["step"])
        return 0
    if args.retruth:
        return retruth(args)
    if os.geteuid() != 0:
        sys.exit("generate.py needs root (unshare --uts --mount, tmpfs mounts)")
    if args.skip_install:
        py, ok_ds = os.path.join(args.venv, "bin", "python"), not args.no_deepspeed
    else:
        py, ok_ds = ensure_venv(args.venv, not args.no_deepspeed)
    jax_py = os.path.join(args.jax_venv, "bin", "python")
    if not args.skip_install:
        ensure_other_venvs(py, args.jax_venv, args.tf_venv)
    vers = versions(py)
    for other in (jax_py, os.path.join(args.tf_venv, "bin", "python")):
        if os.path.exists(other):
            vers.update({k: v for k, v in versions(other).items() if k not in vers})
    ok_ds = ok_ds and "deepspeed" in vers
    print("versions:", vers, flush=True)
    os.makedirs(args.out, exist_ok=True)
    os.makedirs(args.work, exist_ok=True)

    selected = [j for j in jobs() if (not args.only or re.search(args.only, j["name"]))]
    results = []
    for j in selected:
        if j["stack"] == "deepspeed" and not ok_ds:
            print(f"SKIP {j['name']}: deepspeed unavailable", flush=True)
            continue
        if not os.path.exists(os.path.join(HERE, SCRIPTS[j["stack"]])):
            print(f"SKIP {j['name']}: no {SCRIPTS[j['stack']]}", flush=True)
            continue
        t0 = time.time()
        if j["stack"] == "jax" and not os.path.exists(jax_py):
            print(f"SKIP {j['name']}: no JAX venv at {args.jax_venv}", flush=True)
            continue
        tf_py = os.path.join(args.tf_venv, "bin", "python")
        if j["stack"] == "tf" and not os.path.exists(tf_py):
            print(f"SKIP {j['name']}: no TensorFlow venv at {args.tf_venv}", flush=True)
            continue
        job_py = {"jax": jax_py, "tf": tf_py}.get(j["stack"], py)
        arch = run_job(j, job_py, args.out, args.work, args.port + 2 * j["index"])
        truth, problems = build_truth(j, arch)
        if j["fr"]:
            dumps, rcs = flight_recorder_analysis(j, arch, py)
            if rcs[-1] != 0:
                problems.append("torch's fr_trace analyser failed on the dumps")
            truth["flight_recorder_dumps"] = sorted(dumps)
            if len(dumps) < 3:
                problems.append(f"only {len(dumps)} flight recorder dumps")
        dt = time.time() - t0
        if problems:
            print(f"INVALID {j['name']} ({dt:.0f}s): " + "; ".join(problems), flush=True)
            bad = arch + ".invalid"
            if os.path.exists(bad):
                shutil.rmtree(bad)
            shutil.move(arch, os.path.join(args.work, f"job-{j['index']:03d}", "archive.invalid"))
            results.append((j, None))
            continue
        truth["lines"] = count_lines(arch)
        os.makedirs(os.path.join(arch, "_meta"), exist_ok=True)
        with open(os.path.join(arch, "_meta", "run.json"), "w") as f:
            json.dump({"commands": j["commands"], "versions": vers, "layout": j["layout"],
                       **{k: j[k] for k in ("cgroup", "kernel_records", "layout_note", "network") if k in j},
                       "ranks": load_meta(j["meta_dir"])[0], "injections": load_meta(j["meta_dir"])[1]},
                      f, indent=1, sort_keys=True)
        with open(os.path.join(arch, "ground_truth.json"), "w") as f:
            json.dump(truth, f, indent=2)
            f.write("\n")
        final = os.path.join(args.out, j["name"])
        if os.path.exists(final):
            shutil.rmtree(final)
        shutil.move(arch, final)
        print(f"OK {j['name']} ({dt:.0f}s) hosts={j['hosts']} faulty={truth['faulty_nodes']} "
              f"rank={truth['faulty_rank']} evidence={len(truth['evidence'])} exits={j['exit_codes']}", flush=True)
        results.append((j, truth))

    write_suite(args.out)
    write_readme(args.out, vers)
    bad = [j["name"] for j, t in results if t is None]
    print(f"{len(results) - len(bad)} jobs written, {len(bad)} invalid {bad}", flush=True)
    return 1 if bad else 0


def retruth(args):
    """Ground truth again for jobs already written (the proof patterns changed, not the runs)."""
    bad = 0
    for j in jobs():
        arch = os.path.join(args.out, j["name"])
        if (args.only and not re.search(args.only, j["name"])) or not os.path.exists(os.path.join(arch, "ground_truth.json")):
            continue
        old = _read_json(os.path.join(arch, "ground_truth.json"))
        j["exit_codes"] = old["exit_codes"]
        j["meta_dir"] = os.path.join(args.work, f"job-{j['index']:03d}", "meta")
        if j["stack"] == "ray":
            j["stopped_nodes"] = j["hosts"][1:]
        if j["stack"] == "jax" and j["layout"] == "srun-label":
            j["task_hosts"] = [j["hosts"][t // 2] for t in range(4)]
        truth, problems = build_truth(j, arch)
        for k in ("lines", "flight_recorder_dumps"):
            if k in old:
                truth[k] = old[k]
        truth.setdefault("lines", count_lines(arch))
        run = os.path.join(arch, "_meta", "run.json")
        if not os.path.exists(run):  # a job moved here by hand from archive.invalid (its proof pattern was wrong)
            os.makedirs(os.path.dirname(run), exist_ok=True)
            ranks, inj = load_meta(j["meta_dir"])
            with open(run, "w") as f:
                json.dump({"layout": j["layout"], "ranks": ranks, "injections": inj}, f, indent=1, sort_keys=True)
        print(("INVALID " if problems else "OK ") + j["name"] + ": " + "; ".join(problems), flush=True)
        bad += bool(problems)
        with open(os.path.join(arch, "ground_truth.json"), "w") as f:
            json.dump(truth, f, indent=2)
            f.write("\n")
    write_suite(args.out)
    write_readme(args.out, {})
    return 1 if bad else 0


def write_suite(out):
    rows = []
    for gt in sorted(glob.glob(os.path.join(out, "*", "ground_truth.json"))):
        t = _read_json(gt)
        rows.append({"job": os.path.basename(os.path.dirname(gt)), "scenario": t["scenario"],
                     "status": t["status"], "category": t["category"], "phase": t["phase"],
                     "faulty_nodes": t["faulty_nodes"], "format": t["format"], "layout": t["layout"],
                     "lines": t.get("lines")})
    with open(os.path.join(out, "suite.json"), "w") as f:
        json.dump({"jobs": rows}, f, indent=2)
        f.write("\n")


README_HEAD = """# Real jobs: failed (and healthy) multi-node training runs, for real

Every job here is a real run on CPUs: 2 simulated nodes x 2 ranks (world size 4), DDP over
gloo. Each node is its own UTS + mount namespace with its own hostname
(`unshare --uts --mount`), launched with
`torchrun --nnodes 2 --nproc-per-node 2 --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:PORT
--max-restarts 0 --log-dir <host>/torchelastic --redirects 3 --tee 3`; the nodes meet in the
c10d rendezvous on 127.0.0.1 (node names resolve through a per-job /etc/hosts bound into the
namespaces, 127.0.1.x). Faults are injected by `benchmarks/real_jobs/faults.py`, which prints
nothing: every log line was written by torchrun, torch, the training stack or the training
script's ordinary logging.

Layout of a job (`layout: torchelastic-logdir`):

    <NNN-stack-fault>/
      ground_truth.json          l4lite.ground_truth/1 (+ faulty_rank, rank_hosts, exit_codes)
      <host>/console.log         what torchrun printed on that node (stdout+stderr, --tee 3)
      <host>/torchelastic/<rdzv-id>_<random>/attempt_0/<local_rank>/{stdout,stderr}.log, error.json
      <host>/fr_trace_<rank>     flight-recorder dumps (pickle), *_fr jobs only
      _meta/run.json             commands per node, versions, rank->host/pid map, injection record
      _meta/fr_trace_analysis.txt  torch's own fr_trace analyser output (*_fr jobs only)
      <host>/kern.log            the kernel's lines during the job (*_oom jobs only, see below)

`_meta/` is not a log: it is the generator's side record.

The `accelerate` jobs are launched by `accelerate launch --multi_gpu --num_machines 2 --num_processes 4
--machine_rank N --main_process_ip 127.0.0.1 --main_process_port PORT --max_restarts 0 --log_dir
<host>/torchelastic --tee 3` instead of torchrun: Accelerate's launcher runs torch's elastic agent in its own
process, with its default static rendezvous (node 0 hosts the store; rendezvous id `none`, the default), so the
same per-rank files appear under `<host>/torchelastic/none_<random>/`.

Two more layouts, for jobs whose names end in `_srun` and `_k8s`: torchrun runs without `--log-dir`
(the ranks write to torchrun's own stdout and stderr, as under Slurm or in a pod), and the generator reads
each node's two streams line by line, keeping the moment each line arrived. It files them as

- `_srun` (`layout: srun-label`): `slurm-NNNN.out`, what `srun --ntasks-per-node=1 --label torchrun ...`
  writes: both nodes' stdout and stderr lines in arrival order, each prefixed with its task id (`0: ` for the
  first node, `1: ` for the second); host names appear only inside the lines; plus `<host>/kern.log`;
- `_k8s` (`layout: kubernetes-pods`): `<namespace>_<pod>_<uid>/pytorch/0.log` per node, in the CRI format
  containerd writes (`<RFC3339Nano time of arrival> <stdout|stderr> F <line>`); the pod name is the
  hostname.

Jobs whose names end in `_srunlog` (`layout: srun-logdir`) are both: torchrun runs with `--log-dir <host>/torchelastic
--redirects 3 --tee 3` as a Slurm job step, so each node keeps its per-rank files and `slurm-NNNN.out` holds both
nodes' consoles (the ranks' lines tee'd into them) labelled by task id, as `srun --label` writes them; plus
`<host>/kern.log`.

Two stacks start without torchrun (`benchmarks/real_jobs/launchers.py`):

- `ray` (format `ray`): a 2-node Ray cluster, `ray start --head` in the first node's namespace and `ray start
  --address` in the second's (each node also its own PID namespace, with its own `/tmp/ray`), then the driver on
  the head node: Ray Train's `TorchTrainer` with 4 CPU workers spread over both nodes (gloo, 30 s timeout, no
  retries). Archived as an engineer collects it: `<host>/ray/session_*/logs/` (raylet, GCS, core-worker, Ray
  Train's JSON worker logs, `worker-*.out|err`) per node and `<head>/driver.log` (the driver's output, each worker
  line prefixed `(RayTrainWorker pid=N, ip=IP)` in ANSI colour; IP 127.0.1.x is the node's address in the job's
  hosts file). `_k8s`: one CRI pod log per node, what `ray start` and the driver printed, as a KubeRay job's
  `kubectl logs` show it.
- `jax` (format `jax`): 4 processes, 2 per node, each `jax.distributed.initialize(coordinator, 4, id)` (process
  0 hosts the coordination service), gloo CPU collectives, a Flax MLP trained with optax; absl logging on every
  process. Archived as `<host>/process_<id>.log`; `_srun`: one `srun --label` file whose task id is the process
  id (tasks 0-1 on the first node). JAX runs from its own venv (no torch); a shared persistent compilation cache
  under the work folder keeps compiles short.
- `tf` (format `tensorflow`): 4 workers, 2 per node, of `tf.distribute.MultiWorkerMirroredStrategy`, each with its
  own `TF_CONFIG` (worker 0 is the chief and hosts the coordination service), a custom loop of a Keras MLP, the
  data from the node's local TFRecord file through `tf.data`, `tf.train.CheckpointManager` every 20 steps; absl
  logging on every worker (TensorFlow's C++ lines and Python's). Archived as `<host>/worker_<index>.log`.
  TensorFlow (`tensorflow-cpu`) runs from its own venv (no torch).

Host memory faults (`*_oom`): the generator makes a memory cgroup (v1, `memory.limit_in_bytes` = 64 MiB)
under its own; the faulty rank (or one DataLoader worker) joins it and keeps allocating until the kernel's
OOM killer kills it. The kernel's records during the job are read from `/dev/kmsg` and the OOM report (from
`invoked oom-killer` to `Killed process`) is written to the killed process's node as `<host>/kern.log`, in
rsyslog's traditional format (`Mmm dd HH:MM:SS host kernel: [uptime] message`; wall time = uptime + the
wall-minus-monotonic offset, as `dmesg -T`); the other node's `kern.log` is empty (its kernel said
nothing). Both nodes share this machine's kernel, so kernel lines that are not part of an OOM report
(other processes of the machine) are left out. In those lines the generator's own cgroup path is replaced
by `/l4lite-realjobs`.

## Regenerate

As root, from the repository root (about 30-40 minutes on 2 cores):

    python3 benchmarks/real_jobs/generate.py            # creates /tmp/l4lite-realjobs-venv, runs every job
    python3 benchmarks/real_jobs/generate.py --only 'hf-' --skip-install   # a subset

See `benchmarks/real_jobs/README.md`. Runs are deterministic in what happens (which rank fails,
at which step, with which error); timestamps, pids, ports and torchrun's random log-dir
suffix change from run to run.
"""


README_TAIL = """
After generation of jobs 000-036, the job folders' and rendezvous ids' names (which named the injected fault)
were replaced in the logs, the run folders and the Flight Recorder dumps by neutral ones (`/data/logs/job-NNN`,
`/tmp/l4lite-realjobs/work/job-NNN`, `run-NNN`); the generator now uses those names itself (jobs 037 on were
written under `/data/logs/job-NNN` and moved here). Nothing else in what torch and the frameworks printed was
changed.
"""


def job_versions(out, vers):
    """The versions of every job in `out` (each job's _meta/run.json) with `vers`: a package run at more than one
    version lists each."""
    seen = {k: {v} for k, v in vers.items()}
    for run in glob.glob(os.path.join(out, "*", "_meta", "run.json")):
        for k, v in _read_json(run).get("versions", {}).items():
            seen.setdefault(k, set()).add(v)
    return {k: ", ".join(sorted(v)) for k, v in seen.items()}


def write_readme(out, vers):
    vers = job_versions(out, vers)
    rows = []
    for gt in sorted(glob.glob(os.path.join(out, "*", "ground_truth.json"))):
        t = _read_json(gt)
        rows.append(f"| {os.path.basename(os.path.dirname(gt))} | {t['format']} | {t['scenario'].split('-', 1)[1]} "
                    f"| {', '.join(t['node_names'])} | {', '.join(t['faulty_nodes']) or '-'} "
                    f"| {'-' if t['faulty_rank'] is None else t['faulty_rank']} | {t['category'] or '-'} "
                    f"| {t['phase'] or '-'} | {'-' if t['iteration'] is None else t['iteration']} | {t['notes']} |")
    text = README_HEAD + "\n## Versions\n\n" + "".join(f"- {k} {v}\n" for k, v in sorted(vers.items()))
    text += ("- Python " + sys.version.split()[0] + "\n\n## Jobs\n\n"
             "| job | stack | fault | hosts | faulty node | faulty rank | category | phase | iteration | what happened |\n"
             "|---|---|---|---|---|---|---|---|---|---|\n" + "\n".join(rows) + "\n" + README_TAIL)
    with open(os.path.join(out, "README.md"), "w") as f:
        f.write(text)


if __name__ == "__main__":
    sys.exit(main())
