"""OpenMMLab MMEngine: a `Runner` training the tiny causal LM on synthetic tokens, iteration-based
(`train_cfg=dict(by_epoch=False, max_iters=40)`), `LoggerHook` every 2 iterations, `CheckpointHook` every 20,
a validation loop every 10 when L4L_VALIDATE is set; `launcher="pytorch"` under torchrun.

On CPU: the process group (gloo, 30 s timeout) is made here before the Runner, as a CPU user of MMEngine
does, because MMEngine's own `init_dist` for the pytorch launcher calls `torch.cuda.set_device` first; and the
DDP wrapper gets `device_ids=None` (MMEngine passes the local rank, which only a GPU module accepts).
Everything printed is MMEngine's own logging (MMLogger) and torch's.
"""
import argparse
import os
from datetime import timedelta

import faults
import torch
import torch.distributed as dist
import torch.nn.functional as F
from mmengine.evaluator import BaseMetric
from mmengine.hooks import Hook
from mmengine.model import BaseModel
from mmengine.runner import Runner
from torch.distributed.elastic.multiprocessing.errors import record
from train_ddp import TinyLM


class TokenLM(BaseModel):
    """TinyLM in MMEngine's model interface: `loss` mode returns the loss dict the optimizer wrapper sums."""

    def __init__(self):
        super().__init__()
        self.lm = TinyLM()

    def forward(self, batch, mode="tensor"):
        logits = self.lm(batch[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), batch[:, 1:].reshape(-1))
        if mode == "loss":
            return {"loss": loss}
        return [loss.detach()]


def collate(samples):
    """The batch as MMEngine's models take it: a dict of the forward's keyword arguments."""
    return {"batch": torch.stack(samples)}


class Perplexity(BaseMetric):
    """Mean validation loss and its perplexity, gathered over the ranks by MMEngine's evaluator."""

    default_prefix = "val"

    def process(self, data_batch, data_samples):
        self.results.extend(float(x) for x in data_samples)

    def compute_metrics(self, results):
        loss = sum(results) / max(1, len(results))
        return {"loss": loss, "ppl": float(torch.tensor(loss).exp())}


class FaultHook(Hook):
    """Where the shared fault injection runs in MMEngine's loop."""

    priority = "LOW"  # before the CheckpointHook (VERY_LOW) in each iteration

    def before_train_iter(self, runner, batch_idx, data_batch=None):
        faults.at_step(runner.iter + 1, runner.model.module)

    def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None):
        for group in runner.optim_wrapper.optimizer.param_groups:  # constant schedule (see faults.lr_scale)
            group["lr"] = 3e-3 * faults.lr_scale(runner.iter + 2)
        if (runner.iter + 1) % 20 == 0:
            faults.before_checkpoint(runner.iter + 1)

    def before_val_iter(self, runner, batch_idx, data_batch=None):
        faults.at_eval(runner.iter)

    def after_train(self, runner):
        faults.before_shutdown()
        dist.barrier()


@record
def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--save-dir", default="work_dirs")
    ap.add_argument("--resume", default=None)
    args = ap.parse_args()

    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    faults.register()
    validate = bool(os.environ.get("L4L_VALIDATE"))
    loader = dict(dataset=faults.TokenDataset(), batch_size=8, num_workers=int(os.environ.get("L4L_LOADER_WORKERS", "0")),
                  sampler=dict(type="DefaultSampler", shuffle=False), collate_fn=collate)
    val = dict(dataset=faults.TokenDataset(n=64, seed=1), batch_size=8, num_workers=0,
               sampler=dict(type="DefaultSampler", shuffle=False), collate_fn=collate)
    if args.resume:
        faults.before_resume(args.resume)
    runner = Runner(
        model=TokenLM(), work_dir=args.save_dir, experiment_name="tinylm_40it",
        train_dataloader=loader,
        train_cfg=dict(by_epoch=False, max_iters=args.steps, val_interval=10 if validate else args.steps + 1),
        val_dataloader=val if validate else None, val_cfg=dict() if validate else None,
        val_evaluator=[Perplexity()] if validate else None,
        optim_wrapper=dict(optimizer=dict(type="AdamW", lr=3e-3, weight_decay=0.01), clip_grad=dict(max_norm=1.0)),
        default_hooks=dict(logger=dict(type="LoggerHook", interval=2),
                           checkpoint=dict(type="CheckpointHook", interval=20, by_epoch=False)),
        custom_hooks=[FaultHook()],
        launcher="pytorch", env_cfg=dict(dist_cfg=dict(backend="gloo")),
        cfg=dict(model_wrapper_cfg=dict(type="MMDistributedDataParallel", device_ids=None, broadcast_buffers=False)),
        randomness=dict(seed=42), load_from=args.resume, resume=bool(args.resume),
        log_processor=dict(by_epoch=False),
    )
    runner.train()
    runner.logger.info(f"training finished: {runner.iter} steps")


if __name__ == "__main__":
    faults.run(main)
