"""Ray Train: `ray.train.torch.TorchTrainer` with 4 CPU workers (gloo) over a 2-node Ray cluster.

The driver runs on the head node; generate.py starts `ray start --head` in the first node's namespace and
`ray start --address` in the second one, so the workers spread over both nodes (SPREAD placement, 2 CPUs per
node). The train loop is the tiny causal LM of train_ddp.py; Ray's own logging (its driver prefixes
`(RayTrainWorker pid=..., ip=...)`, the session logs of each node) is what the logs show.
"""
import argparse
import logging
import math
import os
import socket
import tempfile
import time

import faults
import ray
import ray.train
import ray.train.torch
import torch
import torch.nn.functional as F
from ray.train import Checkpoint, FailureConfig, RunConfig, ScalingConfig
from ray.train.torch import TorchConfig, TorchTrainer
from torch.utils.data import DataLoader, DistributedSampler
from train_ddp import TinyLM

log = logging.getLogger("train")


def train_loop(config):
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    ctx = ray.train.get_context()
    rank, world = ctx.get_world_rank(), ctx.get_world_size()
    # faults.py reads the launcher's rank variables; Ray Train sets its own context instead
    os.environ["RANK"], os.environ["LOCAL_RANK"] = str(rank), str(ctx.get_local_rank())
    faults.register()
    log.info("worker %d/%d up on %s (local rank %d)", rank, world, socket.gethostname(), ctx.get_local_rank())
    torch.manual_seed(1234)
    model = ray.train.torch.prepare_model(TinyLM())
    opt = torch.optim.AdamW(model.parameters(), lr=config["lr"], weight_decay=0.01)
    ds = faults.TokenDataset()
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=False)
    loader = DataLoader(ds, batch_size=config["batch_size"], sampler=sampler, drop_last=True)
    step, epoch, t0 = 0, 0, time.time()
    while step < config["steps"]:
        sampler.set_epoch(epoch)
        for batch in loader:
            step += 1
            if step > config["steps"]:
                break
            faults.at_step(step, model.module)
            logits = model(batch[:, :-1])
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), batch[:, 1:].reshape(-1))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            gnorm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            avg = loss.detach().clone()
            torch.distributed.all_reduce(avg)
            avg /= world
            metrics = {"step": step, "epoch": epoch, "loss": avg.item(), "grad_norm": gnorm.item()}
            if rank == 0:
                dt, t0 = time.time() - t0, time.time()
                log.info("step %d/%d | loss %.4f | grad_norm %.3f | %.1f samples/s", step, config["steps"],
                         avg.item(), gnorm.item(), config["batch_size"] * world / max(dt, 1e-6))
            if not math.isfinite(avg.item()):
                raise FloatingPointError(f"loss is {avg.item()} at step {step}; stopping training")
            if step % config["save_every"] == 0:
                # rank 0 writes the checkpoint on its node's disk, then hands it to Ray Train (copied to storage)
                ckpt = None
                if rank == 0:
                    faults.before_checkpoint(step)
                    d = os.path.join(config["save_dir"], f"step_{step:06d}")
                    os.makedirs(d, exist_ok=True)
                    torch.save({"model": model.module.state_dict(), "optimizer": opt.state_dict(), "step": step},
                               os.path.join(d, "model.pt"))
                    log.info("saved checkpoint %s", d)
                    ckpt = Checkpoint.from_directory(d)
                ray.train.report(metrics, checkpoint=ckpt)
            elif step % 5 == 0:
                ray.train.report(metrics)
        epoch += 1
    if rank == 0:
        log.info("training finished: %d steps", step)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--save-dir", default=os.path.join(tempfile.gettempdir(), "ckpt"))
    ap.add_argument("--save-every", type=int, default=20)
    ap.add_argument("--storage", default=os.path.join(tempfile.gettempdir(), "ray_results"))
    ap.add_argument("--name", default="tinylm")
    ap.add_argument("--resume", default=None)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    ray.init(address="auto")
    trainer = TorchTrainer(
        train_loop,
        train_loop_config={"steps": args.steps, "batch_size": args.batch_size, "lr": args.lr,
                           "save_dir": args.save_dir, "save_every": args.save_every},
        torch_config=TorchConfig(backend="gloo", timeout_s=30),
        scaling_config=ScalingConfig(num_workers=4, use_gpu=False, resources_per_worker={"CPU": 1},
                                     placement_strategy="SPREAD"),
        run_config=RunConfig(name=args.name, storage_path=args.storage, failure_config=FailureConfig(max_failures=0)),
    )
    result = trainer.fit()
    log.info("result: %s", result.metrics)


if __name__ == "__main__":
    main()
