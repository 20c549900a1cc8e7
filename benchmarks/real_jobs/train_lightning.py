"""PyTorch Lightning: tiny causal LM on synthetic tokens, DDPStrategy over gloo on CPU, launched by torchrun."""
import argparse
import os
from datetime import timedelta

import faults
import lightning as L
import torch
import torch.nn.functional as F
from lightning.pytorch.callbacks import EarlyStopping, ModelCheckpoint, TQDMProgressBar
from lightning.pytorch.strategies import DDPStrategy
from torch.distributed.elastic.multiprocessing.errors import record
from train_ddp import TinyLM

Tokens = faults.TokenDataset


class LitLM(L.LightningModule):
    def __init__(self, lr=3e-3):
        super().__init__()
        self.save_hyperparameters()
        self.model = TinyLM(**faults.model_kwargs())

    def on_train_batch_start(self, batch, batch_idx):
        step = self.global_step + 1
        faults.at_step(step, self.model)  # test harness hook, prints nothing

    def training_step(self, batch, batch_idx):
        logits = self.model(batch[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), batch[:, 1:].reshape(-1))
        self.log("train_loss", loss, on_step=True, prog_bar=True, sync_dist=True)
        return loss

    def validation_step(self, batch, batch_idx):
        faults.at_eval(self.global_step)  # test harness hook, prints nothing
        logits = self.model(batch[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), batch[:, 1:].reshape(-1))
        self.log("val_loss", loss, prog_bar=True, sync_dist=True)
        return loss

    def on_save_checkpoint(self, checkpoint):
        faults.before_checkpoint(self.global_step)

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=self.hparams.lr, weight_decay=0.01)


@record
def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--save-dir", default="checkpoints")
    ap.add_argument("--resume", default=None)
    args = ap.parse_args()

    L.seed_everything(42)
    trainer = L.Trainer(
        accelerator="cpu", devices=2, num_nodes=2,
        strategy=DDPStrategy(process_group_backend="gloo", timeout=timedelta(seconds=30)),
        max_steps=args.steps, log_every_n_steps=2, logger=False,
        callbacks=[ModelCheckpoint(dirpath=args.save_dir, every_n_train_steps=20, save_top_k=-1,
                                   filename="{epoch}-{step}"),
                   EarlyStopping(monitor="train_loss", check_finite=True, patience=1000, verbose=True,
                                 check_on_train_epoch_end=True),
                   TQDMProgressBar(refresh_rate=1)],
        gradient_clip_val=1.0, enable_model_summary=True,
        detect_anomaly=bool(os.environ.get("L4L_DETECT_ANOMALY")),  # a debugging run (the anomaly_nan job)
        # L4L_VALIDATE: a validation run every 10 steps on 4 batches (the eval-phase jobs)
        **({"val_check_interval": 10, "limit_val_batches": 4} if os.environ.get("L4L_VALIDATE") else
           {"limit_val_batches": 0}),
    )
    model = LitLM()
    loader = torch.utils.data.DataLoader(Tokens(), batch_size=8, drop_last=True,
                                         num_workers=int(os.environ.get("L4L_LOADER_WORKERS", "0")))
    if os.environ.get("RANK"):
        faults.register()
    if args.resume:
        faults.before_resume(args.resume)
    val = (torch.utils.data.DataLoader(Tokens(n=64, seed=1), batch_size=8, drop_last=True)
           if os.environ.get("L4L_VALIDATE") else None)
    trainer.fit(model, loader, val, ckpt_path=args.resume)


if __name__ == "__main__":
    faults.run(main)
