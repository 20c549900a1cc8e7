"""Mixed-precision DDP training of a tiny causal LM on CPU: fp16 autocast and a dynamic loss scaler
(`torch.amp.GradScaler("cpu")`), printed the way Megatron-LM prints its progress (`| key: value |` fields,
`lm loss`, `loss scale`, `grad norm` left out on a skipped step, skipped and NaN iteration counts) and its
checkpoint saves.

The scaler starts at 2^32 as Megatron's `--initial-loss-scale` does, so the first iterations overflow and halve
the scale until it fits: the loss-scale search of every fp16 run. `growth_interval=10` lets it grow again later.
With L4L_FAULT=overflow the fp16 gradients overflow on every step from L4L_FAULT_STEP on (faults.overflow_hook:
an activation gradient multiplied out of fp16's range), so the scaler skips every step and halves the scale
towards nothing while the loss itself stays finite.
"""
import argparse
import logging
import math
import os
import time
from datetime import timedelta

import faults
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.distributed.elastic.multiprocessing.errors import record
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler
from train_ddp import TinyLM

log = logging.getLogger("megatron")


@record
def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--save-dir", default="checkpoints")
    ap.add_argument("--save-every", type=int, default=20)
    ap.add_argument("--resume", default=None)
    args = ap.parse_args()

    logging.basicConfig(level=logging.INFO, format="[%(asctime)s] %(message)s")
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    faults.register()
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(1234)
    if rank == 0:
        log.info("using world size: %d, data-parallel size: %d, tensor-model-parallel size: 1, "
                 "pipeline-model-parallel size: 1", world, world)
        log.info("> initializing torch distributed ...")
    model = DDP(TinyLM())
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 32, growth_interval=10)
    hook = faults.overflow_hook()

    ds = faults.TokenDataset()
    sampler = DistributedSampler(ds, shuffle=False)
    loader = DataLoader(ds, batch_size=args.batch_size, sampler=sampler, drop_last=True)
    step, epoch, samples = 0, 0, 0
    skipped_total = 0
    t0 = time.time()
    if rank == 0:
        log.info("training ...")
    while step < args.steps:
        sampler.set_epoch(epoch)
        for batch in loader:
            step += 1
            if step > args.steps:
                break
            faults.at_step(step, model.module)
            with torch.autocast("cpu", dtype=torch.float16):
                logits = model(batch[:, :-1])
                if hook is not None:
                    logits.register_hook(lambda g, s=step: hook(g, s))
            loss = F.cross_entropy(logits.float().reshape(-1, logits.size(-1)), batch[:, 1:].reshape(-1))
            opt.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.unscale_(opt)
            gnorm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0).item()
            for group in opt.param_groups:
                group["lr"] = args.lr * faults.lr_scale(step)
            scale = scaler.get_scale()
            scaler.step(opt)
            scaler.update()
            skipped = int(scaler.get_scale() < scale)  # the scaler cut the scale: this step was skipped
            skipped_total += skipped
            samples += args.batch_size * world
            avg = loss.detach().clone()
            dist.all_reduce(avg)
            avg /= world
            if rank == 0:
                dt = (time.time() - t0) * 1000.0
                t0 = time.time()
                fields = [f" iteration {step:8d}/{args.steps:8d}", f" consumed samples: {samples:12d}",
                          f" elapsed time per iteration (ms): {dt:.1f}",
                          f" learning rate: {opt.param_groups[0]['lr']:.3E}",
                          f" global batch size: {args.batch_size * world:5d}", f" lm loss: {avg.item():.6E}",
                          f" loss scale: {scale:.1f}"]
                if not skipped:
                    fields.append(f" grad norm: {gnorm:.3f}")
                fields += [f" number of skipped iterations: {skipped:3d}",
                           f" number of nan iterations: {int(not math.isfinite(avg.item())):3d}"]
                log.info("|".join(fields) + " |")
            if not math.isfinite(avg.item()):
                raise FloatingPointError(f"loss is {avg.item()} at step {step}; stopping training")
            if args.save_every and step % args.save_every == 0:
                path = os.path.join(args.save_dir, f"iter_{step:07d}")
                if rank == 0:
                    faults.before_checkpoint(step)
                    log.info("saving checkpoint at iteration %7d to %s", step, args.save_dir)
                    os.makedirs(path, exist_ok=True)
                    torch.save({"model": model.module.state_dict(), "optimizer": opt.state_dict(),
                                "scaler": scaler.state_dict(), "iteration": step},
                               os.path.join(path, "model_optim_rng.pt"))
                    log.info("  successfully saved checkpoint at iteration %7d to %s", step, args.save_dir)
                dist.barrier()
        epoch += 1
    if rank == 0:
        log.info("training finished: %d steps (%d skipped by the loss scaler)", step, skipped_total)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    faults.run(main)
