"""Hugging Face Accelerate: a plain training loop (`accelerator.backward`) of a tiny causal LM on synthetic
tokens, on CPU over gloo, launched by `accelerate launch` (which runs torch's elastic agent itself).

Logging as Accelerate's own no-trainer examples set it up: `logging.basicConfig` at INFO and
`accelerate.logging.get_logger`, the state on every process, the loss on the main process only.
"""
import argparse
import json
import logging
import os
import sys
import time
from datetime import timedelta

import faults
import torch
import torch.nn.functional as F
from accelerate import Accelerator
from accelerate.logging import get_logger
from accelerate.tracking import GeneralTracker
from accelerate.utils import InitProcessGroupKwargs, set_seed
from torch.distributed.elastic.multiprocessing.errors import record
from train_ddp import TinyLM

logger = get_logger(__name__)


Tokens = faults.TokenDataset


class JSONLinesTracker(GeneralTracker):
    """An Accelerate tracker that writes one JSON object per `accelerator.log` call to stdout, as console
    trackers of experiment managers do (L4L_TRACKER=jsonl)."""

    name = "jsonl"
    requires_logging_directory = False

    def __init__(self, run_name):
        super().__init__()
        self.run_name = run_name

    @property
    def tracker(self):
        return sys.stdout

    def store_init_configuration(self, values):
        print(json.dumps({"run": self.run_name, "config": values}), flush=True)

    def log(self, values, step=None, **kwargs):
        print(json.dumps({"step": step, "_timestamp": round(time.time(), 3), **values}), flush=True)


@record
def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--save-dir", default="checkpoints")
    ap.add_argument("--lr", type=float, default=3e-3)
    args = ap.parse_args()

    logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s",
                        datefmt="%m/%d/%Y %H:%M:%S", level=logging.INFO)
    tracked = os.environ.get("L4L_TRACKER") == "jsonl"
    accelerator = Accelerator(cpu=True, log_with=[JSONLinesTracker("tinylm")] if tracked else None, kwargs_handlers=[
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
    if tracked:
        accelerator.init_trackers("tinylm", config={"lr": args.lr, "steps": args.steps, "batch_size": 8})

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
            gnorm = accelerator.clip_grad_norm_(model.parameters(), 1.0)
            for group in optimizer.param_groups:  # constant schedule (see faults.lr_scale)
                group["lr"] = args.lr * faults.lr_scale(step)
            optimizer.step()
            optimizer.zero_grad()
            avg = accelerator.gather(loss.detach()).mean().item()
            if tracked:
                accelerator.log({"train_loss": avg, "grad_norm": float(gnorm),
                                 "lr": optimizer.param_groups[0]["lr"]}, step=step)
            if step % 2 == 0:
                logger.info(f"step {step}/{args.steps}: train_loss {avg:.4f} lr {optimizer.param_groups[0]['lr']:.2e}")
            if step % 20 == 0:
                out = os.path.join(args.save_dir, f"step_{step}")
                faults.before_checkpoint(step)
                accelerator.save_state(out)
                logger.info(f"Saved state to {out}")
    faults.before_shutdown()
    accelerator.wait_for_everyone()
    logger.info(f"training finished: {args.steps} steps")
    accelerator.end_training()


if __name__ == "__main__":
    faults.run(main)
