"""DeepSpeed (CPU accelerator, gloo backend, ZeRO stage 0): tiny causal LM on synthetic tokens, launched by torchrun."""
import argparse
import logging
import math
import os
import sys
from datetime import timedelta

import deepspeed
import deepspeed.comm.torch  # noqa: F401  (module; deepspeed.comm.torch is shadowed by torch)
import faults
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.distributed.elastic.multiprocessing.errors import record
from torch.utils.data import DataLoader, DistributedSampler
from train_ddp import TinyLM, Tokens

log = logging.getLogger("train")


@record
def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--save-dir", default="checkpoints")
    ap.add_argument("--save-every", type=int, default=20)
    ap.add_argument("--resume", default=None)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    deepspeed.utils.logging.set_log_level_from_string("info")  # DeepSpeed >= 0.17 defaults to WARNING

    # On the CPU accelerator DeepSpeed JIT-compiles a shared-memory all-reduce op in every
    # process (minutes of C++ on 2 cores); go without it: collectives use torch's gloo group.
    sys.modules["deepspeed.comm.torch"].build_shm_op = lambda: None
    # DeepSpeed's engine all-reduces on groups it creates with new_group() and torch's default
    # timeout (30 min), whatever init_distributed(timeout=...) says: lower that default so a
    # hang ends in ~1 min, and create the world group first (DeepSpeed adopts it).
    torch.distributed.distributed_c10d.default_pg_timeout = timedelta(seconds=30)
    if not dist.is_initialized():
        dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    deepspeed.init_distributed(dist_backend="gloo", timeout=timedelta(seconds=30))
    faults.register()
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(1234)
    model = TinyLM(**faults.model_kwargs())
    ds_config = {
        "train_micro_batch_size_per_gpu": 8,
        "gradient_accumulation_steps": 1,
        "gradient_clipping": 1.0,
        "steps_per_print": 5,
        "zero_optimization": {"stage": 0},
        "wall_clock_breakdown": False,
    }
    if os.environ.get("L4L_DS_TRAIN_BATCH"):  # the node's own copy of the job's DeepSpeed config sets it
        ds_config["train_batch_size"] = int(os.environ["L4L_DS_TRAIN_BATCH"])
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    engine, optimizer, _, _ = deepspeed.initialize(model=model, optimizer=optimizer, config=ds_config)

    if args.resume:
        faults.before_resume(args.resume)
        log.info("loading checkpoint from %s", args.resume)
        path, client = engine.load_checkpoint(args.resume)
        log.info("resumed from %s at global step %d", path, engine.global_steps)

    ds = Tokens()
    sampler = DistributedSampler(ds, shuffle=False)
    loader = DataLoader(ds, batch_size=8, sampler=sampler, drop_last=True)
    epoch = 0
    while engine.global_steps < args.steps:
        sampler.set_epoch(epoch)
        for batch in loader:
            step = engine.global_steps + 1
            if step > args.steps:
                break
            faults.at_step(step, engine.module)
            logits = engine(batch[:, :-1])
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), batch[:, 1:].reshape(-1))
            engine.backward(loss)
            engine.step()
            avg = loss.detach().clone()
            dist.all_reduce(avg)
            avg /= world
            if rank == 0:
                log.info("step %d/%d loss %.4f", step, args.steps, avg.item())
            if not math.isfinite(avg.item()):
                raise FloatingPointError(f"loss is {avg.item()} at step {step}; stopping training")
            if step % args.save_every == 0:
                faults.before_checkpoint(step)
                engine.save_checkpoint(args.save_dir, tag=f"global_step{step}")
        epoch += 1
    if rank == 0:
        log.info("training finished: %d steps", engine.global_steps)
    dist.barrier()


if __name__ == "__main__":
    faults.run(main)
