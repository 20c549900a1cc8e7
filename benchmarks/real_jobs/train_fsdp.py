"""PyTorch FSDP2: `fully_shard` on each transformer block and on the root of a tiny causal LM, a 1-D device mesh
over gloo on CPU, sharded checkpoints through `torch.distributed.checkpoint` (every rank writes its own shard file),
launched by torchrun.

Logged the way torchtitan (PyTorch's FSDP2 reference trainer) logs, without its colours: a `[titan]` prefix,
`Training starts at step N.`, one `step: N  loss: L  memory: ...  tps: ...  tflops: ...  mfu: ...%` line per step on
rank 0, `Saving the checkpoint ...` / `Finished saving the checkpoint ...` around each save and `Training completed`.
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
import torch.distributed.checkpoint as dcp
import torch.nn.functional as F
from torch.distributed.checkpoint.state_dict import get_state_dict
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.elastic.multiprocessing.errors import record
from torch.distributed.fsdp import fully_shard
from torch.utils.data import DataLoader, DistributedSampler
from train_ddp import TinyLM

log = logging.getLogger("root")


class LocalShards:
    """What faults.at_step corrupts: each parameter's local shard (a DTensor's own storage), not the whole."""

    def __init__(self, model):
        self.model = model

    def parameters(self):
        return (p.to_local() for p in self.model.parameters())


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

    logging.basicConfig(format="[titan] %(asctime)s - %(name)s - %(levelname)s - %(message)s", level=logging.INFO)
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    faults.register()
    rank, world = dist.get_rank(), dist.get_world_size()
    mesh = init_device_mesh("cpu", (world,), mesh_dim_names=("dp_shard",))
    log.info("Building 1-D device mesh with ['dp_shard'], [%d]", world)
    torch.manual_seed(1234)
    model = TinyLM(**faults.model_kwargs())
    nparams = sum(p.numel() for p in model.parameters())
    for block in model.blocks.layers:
        fully_shard(block, mesh=mesh)
    fully_shard(model, mesh=mesh)
    log.info("Applied FSDP to the model")
    log.info("Model tinylm size: %s total parameters", f"{nparams:,}")
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)

    step = 0
    if args.resume:
        faults.before_resume(args.resume)
        log.info("Loading the checkpoint from %s.", args.resume)
        msd, osd = get_state_dict(model, opt)
        state = {"model": msd, "optim": osd, "step": 0}
        dcp.load(state, checkpoint_id=args.resume)
        step = int(state["step"])
        log.info("Finished loading the checkpoint in %.2f seconds.", 0.0)

    ds = faults.TokenDataset()
    sampler = DistributedSampler(ds, shuffle=False)
    loader = DataLoader(ds, batch_size=args.batch_size, sampler=sampler, drop_last=True,
                        num_workers=int(os.environ.get("L4L_LOADER_WORKERS", "0")))
    log.info("Training starts at step %d.", step + 1)
    tokens = args.batch_size * 31
    t0 = time.time()
    epoch = 0
    while step < args.steps:
        sampler.set_epoch(epoch)
        for batch in loader:
            step += 1
            if step > args.steps:
                break
            faults.at_step(step, LocalShards(model))
            opt.zero_grad(set_to_none=True)
            logits = model(batch[:, :-1])
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), batch[:, 1:].reshape(-1))
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            for group in opt.param_groups:  # constant schedule (see faults.lr_scale)
                group["lr"] = args.lr * faults.lr_scale(step)
            opt.step()
            avg = loss.detach().clone()
            dist.all_reduce(avg)
            avg /= world
            if rank == 0:
                dt = max(time.time() - t0, 1e-6)
                t0 = time.time()
                tps = tokens / dt
                log.info("step: %2d  loss: %7.4f  memory:  0.00GiB(0.00%%)  tps: %s  tflops: %.2f  mfu: %.2f%%",
                         step, avg.item(), f"{round(tps):,}", 6 * nparams * tps / 1e12, 0.0)
            if not math.isfinite(avg.item()):
                raise FloatingPointError(f"loss is {avg.item()} at step {step}")
            if step % args.save_every == 0:
                path = os.path.join(args.save_dir, f"step-{step}")
                log.info("Saving the checkpoint (or staging if async is enabled).")
                faults.before_checkpoint(step)
                begin = time.time()
                msd, osd = get_state_dict(model, opt)
                dcp.save({"model": msd, "optim": osd, "step": step}, checkpoint_id=path)
                log.info("Finished saving the checkpoint (or staging if async is enabled)in %.2f seconds.",
                         time.time() - begin)
        epoch += 1
    dist.barrier()
    log.info("Training completed")
    if rank == 0:
        log.info("training finished: %d steps", min(step, args.steps))
    dist.destroy_process_group()


if __name__ == "__main__":
    faults.run(main)
