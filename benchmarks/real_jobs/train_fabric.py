"""Lightning Fabric: a hand-written loop of a tiny causal LM on synthetic tokens (`fabric.setup`,
`fabric.backward`, `fabric.save`), DDPStrategy over gloo on CPU, launched by torchrun.

Logging as Fabric's own examples do it: `fabric.print` of the loss on rank 0 and python logging at INFO.
"""
import argparse
import logging
import os
from datetime import timedelta

import faults
import lightning as L
import torch
import torch.nn.functional as F
from lightning.fabric.strategies import DDPStrategy
from torch.distributed.elastic.multiprocessing.errors import record
from train_ddp import TinyLM

log = logging.getLogger("fabric_train")


@record
def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--save-dir", default="checkpoints")
    ap.add_argument("--lr", type=float, default=3e-3)
    args = ap.parse_args()

    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)
    fabric = L.Fabric(accelerator="cpu", devices=2, num_nodes=2,
                      strategy=DDPStrategy(process_group_backend="gloo", timeout=timedelta(seconds=30)))
    fabric.launch()
    faults.register()
    fabric.seed_everything(42)
    model = TinyLM()
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    model, optimizer = fabric.setup(model, optimizer)
    loader = fabric.setup_dataloaders(torch.utils.data.DataLoader(
        faults.TokenDataset(), batch_size=8, drop_last=True,
        num_workers=int(os.environ.get("L4L_LOADER_WORKERS", "0"))))
    log.info("rank %d/%d on %s: %d batches per epoch", fabric.global_rank, fabric.world_size,
             os.uname().nodename, len(loader))

    step = 0
    while step < args.steps:
        for batch in loader:
            step += 1
            if step > args.steps:
                break
            faults.at_step(step, model.module)
            logits = model(batch[:, :-1])
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), batch[:, 1:].reshape(-1))
            optimizer.zero_grad()
            fabric.backward(loss)
            fabric.clip_gradients(model, optimizer, max_norm=1.0)
            for group in optimizer.param_groups:  # constant schedule (see faults.lr_scale)
                group["lr"] = args.lr * faults.lr_scale(step)
            optimizer.step()
            avg = fabric.all_reduce(loss.detach(), reduce_op="mean")
            if step % 2 == 0:
                fabric.print(f"step {step}/{args.steps} | loss {avg.item():.4f}")
            if step % 20 == 0:
                path = os.path.join(args.save_dir, f"step_{step:06d}.ckpt")
                faults.before_checkpoint(step)
                fabric.save(path, {"model": model, "optimizer": optimizer, "step": step})
                fabric.print(f"saved checkpoint {path}")
    faults.before_shutdown()
    fabric.barrier()
    fabric.print(f"training finished: {step} steps")


if __name__ == "__main__":
    faults.run(main)
