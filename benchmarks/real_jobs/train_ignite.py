"""PyTorch-Ignite: tiny causal LM on synthetic tokens, `ignite.distributed` over gloo, launched by torchrun.

Set up as Ignite's own distributed examples do: `idist.auto_model/auto_optim/auto_dataloader`, an `Engine`
with `setup_common_training_handlers` (TerminateOnNan, a `Checkpoint` with a `DiskSaver`, `ProgressBar`s on
rank 0), `setup_logger` loggers (rank 0 only) and the quick-start's loss line every 2 iterations.
"""
import argparse
from datetime import timedelta

import faults
import ignite.distributed as idist
import torch
import torch.nn.functional as F
from ignite.contrib.engines import common
from ignite.engine import Engine, Events
from ignite.utils import manual_seed, setup_logger
from torch.distributed.elastic.multiprocessing.errors import record
from train_ddp import TinyLM

Tokens = faults.TokenDataset


def training(args):
    rank = idist.get_rank()
    logger = setup_logger(name="TinyLM-Training")
    manual_seed(1234)
    faults.register()
    logger.info(f"Train TinyLM on synthetic tokens, backend={idist.backend()}, world size={idist.get_world_size()}")
    idist.show_config()

    loader = idist.auto_dataloader(Tokens(), batch_size=8 * idist.get_world_size(), num_workers=0,
                                   shuffle=False, drop_last=True)
    model = idist.auto_model(TinyLM())
    optimizer = idist.auto_optim(torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01))

    def train_step(engine, batch):
        step = engine.state.iteration
        faults.at_step(step, model)
        model.train()
        logits = model(batch[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), batch[:, 1:].reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        for group in optimizer.param_groups:  # constant schedule (see faults.lr_scale)
            group["lr"] = args.lr * faults.lr_scale(step)
        optimizer.step()
        return loss.item()

    trainer = Engine(train_step)
    trainer.logger = setup_logger("Trainer", distributed_rank=rank)

    @trainer.on(Events.ITERATION_COMPLETED(every=20))
    def _before_save(engine):
        faults.before_checkpoint(engine.state.iteration)

    to_save = {"trainer": trainer, "model": model, "optimizer": optimizer}
    common.setup_common_training_handlers(
        trainer, train_sampler=loader.sampler, to_save=to_save, save_every_iters=20, output_path=args.save_dir,
        output_names=["batch loss"], with_pbars=True, with_pbar_on_iters=True, log_every_iters=2,
    )

    @trainer.on(Events.ITERATION_COMPLETED(every=2))
    def log_training_loss(engine):
        logger.info(f"Epoch[{engine.state.epoch}], Iter[{engine.state.iteration}] Loss: {engine.state.output:.4f}")

    trainer.run(loader, max_epochs=args.steps // len(loader))


@record
def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--save-dir", default="checkpoints")
    ap.add_argument("--lr", type=float, default=3e-3)
    args = ap.parse_args()
    # idist.Parallel does not pass a timeout on under torchrun: initialize first (the 30 s gloo timeout)
    idist.initialize("gloo", timeout=timedelta(seconds=30))
    try:
        training(args)
    finally:
        idist.finalize()


if __name__ == "__main__":
    faults.run(main)
