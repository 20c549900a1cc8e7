"""Hugging Face Trainer: tiny GPT-2 (built from a config) on synthetic tokens, DDP over gloo on CPU."""
import argparse
import os
from datetime import timedelta

import faults
import torch
from torch.distributed.elastic.multiprocessing.errors import record
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainerCallback, TrainingArguments, set_seed


class Tokens(torch.utils.data.Dataset):
    def __init__(self):
        self.src = faults.SyntheticTokens()

    def __len__(self):
        return len(self.src)

    def __getitem__(self, i):
        ids = self.src.decode(i)
        return {"input_ids": ids, "labels": ids.clone()}


class FaultCallback(TrainerCallback):
    """Test harness hook (prints nothing): see faults.py."""

    def on_step_begin(self, args, state, control, model=None, **kw):
        faults.at_step(state.global_step + 1, model)

    def on_save(self, args, state, control, **kw):
        pass


class SaveProbe(TrainerCallback):
    def on_step_end(self, args, state, control, **kw):
        if control.should_save:
            faults.before_checkpoint(state.global_step)


@record
def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--save-dir", default="checkpoints")
    ap.add_argument("--resume", default=None)
    args = ap.parse_args()

    set_seed(42)
    # With use_cpu=True transformers 5.24 does not pass ddp_timeout on to the process group
    # (gloo would wait 30 min), so create the group first; accelerate reuses it.
    if "RANK" in os.environ and not torch.distributed.is_initialized():
        torch.distributed.init_process_group("gloo", timeout=timedelta(seconds=30))
    training_args = TrainingArguments(
        output_dir=args.save_dir,
        max_steps=args.steps,
        per_device_train_batch_size=8,
        learning_rate=3e-3,
        warmup_steps=4,
        weight_decay=0.01,
        logging_steps=2,
        save_strategy="steps",
        save_steps=20,
        report_to="none",
        use_cpu=True,
        ddp_backend="gloo",
        ddp_timeout=30,
        dataloader_num_workers=int(os.environ.get("L4L_LOADER_WORKERS", "0")),
        seed=42,
        ddp_find_unused_parameters=False,
    )
    config = GPT2Config(vocab_size=256, n_positions=32, n_embd=64, n_layer=2, n_head=2,
                        bos_token_id=0, eos_token_id=0)
    model = GPT2LMHeadModel(config)
    faults.register()
    optimizers = (None, None)
    if faults.FAULT == "diverge":  # the same warmup + linear decay, times the schedule's faulty multiplier
        opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
        warm, total = 4, args.steps

        def factor(s):
            base = s / warm if s < warm else max(0.0, (total - s) / (total - warm))
            return base * faults.lr_scale(s + 1)
        optimizers = (opt, torch.optim.lr_scheduler.LambdaLR(opt, factor))
    trainer = Trainer(model=model, args=training_args, train_dataset=Tokens(),
                      callbacks=[FaultCallback(), SaveProbe()], optimizers=optimizers)
    if args.resume:
        faults.before_resume(args.resume)
    trainer.train(resume_from_checkpoint=args.resume)


if __name__ == "__main__":
    faults.run(main)
