"""Hugging Face Accelerate: a plain training loop (`accelerator.backward`) of a tiny causal LM on synthetic
tokens, on CPU over gloo, launched by `accelerate launch` (which runs torch's elastic agent itself).

Logging as Accelerate's own no-trainer examples set it up: `logging.basicConfig` at INFO and
`accelerate.logging.get_logger`, the state on every process, the loss on the main process only.
"""
import argparse
import logging
import os
from datetime import timedelta

import faults
import torch
import torch.nn.functional as F
from accelerate import Accelerator
from accelerate.logging import get_logger
from accelerate.utils import InitProcessGroupKwargs, set_seed
from torch.distributed.elastic.multiprocessing.errors import record
from train_ddp import TinyLM

logger = get_logger(__name__)


Tokens = faults.TokenDataset


@record
def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--save-dir", default="checkpoints")
    ap.add_argument("--lr", type=float, default=3e-3)
    args = ap.parse_args()

    logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s",
                        datefmt="%m/%d/%Y %H:%M:%S", level=logging.INFO)
    accelerator = Accelerator(cpu=True, kwargs_handlers=[
        InitProcessGroupKwargs(backend="gloo", timeout=timedelta(seconds=30))])
    logger.info(accelerator.state, main_process_only=False)
    faults.register()
    set_seed(42)

    model = TinyLM()
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    loader = torch.utils.data.DataLoader(Tokens(), batch_size=8, shuffle=False, drop_last=True,
                                         num_workers=int(os.environ.get("L4L_LOADER_WORKERS", "0")),
                                         timeout=float(os.environ.get("L4L_LOADER_TIMEOUT", "0")))
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    logger.info("***** Running training *****")
    logger.info(f"  Num examples = {len(loader.dataset)}")
    logger.info(f"  Total train batch size = {8 * accelerator.num_processes}")
    logger.info(f"  Total optimization steps = {args.steps}")

    step = 0
    while step < args.steps:
        for batch in loader:
            step += 1
            if step > args.steps:
                break
            faults.at_step(step, accelerator.unwrap_model(model))
            logits = model(batch[:, :-1])
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), batch[:, 1:].reshape(-1))
            accelerator.backward(loss)
            accelerator.clip_grad_norm_(model.parameters(), 1.0)
            for group in optimizer.param_groups:  # constant schedule (see faults.lr_scale)
                group["lr"] = args.lr * faults.lr_scale(step)
            optimizer.step()
            optimizer.zero_grad()
            avg = accelerator.gather(loss.detach()).mean().item()
            if step % 2 == 0:
                logger.info(f"step {step}/{args.steps}: train_loss {avg:.4f} lr {optimizer.param_groups[0]['lr']:.2e}")
            if step % 20 == 0:
                out = os.path.join(args.save_dir, f"step_{step}")
                faults.before_checkpoint(step)
                accelerator.save_state(out)
                logger.info(f"Saved state to {out}")
    accelerator.wait_for_everyone()
    logger.info(f"training finished: {args.steps} steps")
    accelerator.end_training()


if __name__ == "__main__":
    faults.run(main)
