"""Plain PyTorch DDP training of a tiny causal LM on synthetic tokens (gloo, CPU)."""
import argparse
import logging
import math
import os
import time
from datetime import timedelta

import faults
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.elastic.multiprocessing.errors import record
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler

log = logging.getLogger("train")


class TinyLM(nn.Module):
    def __init__(self, vocab=256, dim=64, layers=2, heads=2, seq=32):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(seq, dim)
        layer = nn.TransformerEncoderLayer(dim, heads, 4 * dim, dropout=0.0, batch_first=True)
        self.blocks = nn.TransformerEncoder(layer, layers)
        self.head = nn.Linear(dim, vocab)
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(seq), persistent=False)

    def forward(self, x):
        h = self.tok(x) + self.pos(torch.arange(x.size(1)))
        h = self.blocks(h, mask=self.mask[: x.size(1), : x.size(1)], is_causal=True)
        return self.head(h)


Tokens = faults.TokenDataset


def save_checkpoint(path, model, opt, step):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    torch.save({"model": model.module.state_dict(), "optimizer": opt.state_dict(), "step": step}, path)


@record
def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--save-dir", default="checkpoints")
    ap.add_argument("--save-every", type=int, default=20)
    ap.add_argument("--resume", default=None)
    ap.add_argument("--log-every", type=int, default=1)
    args = ap.parse_args()

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s [rank%(rank)s] %(message)s")
    rank_filter = logging.Filter()
    rank = int(os.environ["RANK"])
    old_factory = logging.getLogRecordFactory()

    def factory(*a, **k):
        rec = old_factory(*a, **k)
        rec.rank = rank
        return rec
    logging.setLogRecordFactory(factory)
    del rank_filter

    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    faults.register()
    world = dist.get_world_size()
    torch.manual_seed(1234)
    log.info("initialized process group: backend=gloo world_size=%d local_rank=%s host=%s",
             world, os.environ["LOCAL_RANK"], os.uname().nodename)

    model = DDP(TinyLM())
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    nparams = sum(p.numel() for p in model.parameters())
    if rank == 0:
        log.info("model: TinyLM params=%d (%.2f M)", nparams, nparams / 1e6)

    start_step = 0
    if args.resume:
        faults.before_resume(args.resume)
        log.info("resuming from checkpoint %s", args.resume)
        ckpt = torch.load(args.resume, map_location="cpu")
        model.module.load_state_dict(ckpt["model"])
        opt.load_state_dict(ckpt["optimizer"])
        start_step = ckpt["step"]
        log.info("resumed at step %d", start_step)
    shard_dir = os.environ.get("L4L_SHARD_DIR")
    if shard_dir:  # resume each rank from its own file of a sharded checkpoint on the node's local disk
        path = faults.write_shards(shard_dir)
        log.info("resuming from sharded checkpoint %s", shard_dir)
        start_step = torch.load(path, map_location="cpu")["step"]
        log.info("resumed at step %d", start_step)

    ds = Tokens()
    sampler = DistributedSampler(ds, shuffle=False)
    loader = DataLoader(ds, batch_size=args.batch_size, sampler=sampler, drop_last=True,
                        num_workers=int(os.environ.get("L4L_LOADER_WORKERS", "0")))
    step, epoch = start_step, 0
    t0 = time.time()
    while step < args.steps:
        sampler.set_epoch(epoch)
        for batch in loader:
            step += 1
            if step > args.steps:
                break
            faults.at_step(step, model.module)
            logits = model(batch[:, :-1])
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), batch[:, 1:].reshape(-1))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            gnorm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            for group in opt.param_groups:  # constant schedule (see faults.lr_scale)
                group["lr"] = args.lr * faults.lr_scale(step)
            opt.step()
            avg = loss.detach().clone()
            dist.all_reduce(avg)
            avg /= world
            if rank == 0 and step % args.log_every == 0:
                dt = time.time() - t0
                t0 = time.time()
                log.info("step %d/%d | epoch %d | loss %.4f | grad_norm %.3f | lr %.2e | %.1f samples/s",
                         step, args.steps, epoch, avg.item(), gnorm.item(), opt.param_groups[0]["lr"],
                         args.batch_size * world / max(dt, 1e-6))
            if not math.isfinite(avg.item()):
                raise FloatingPointError(f"loss is {avg.item()} at step {step}; stopping training")
            if args.save_every and step % args.save_every == 0:
                path = os.path.join(args.save_dir, f"step_{step:06d}.pt")
                if rank == 0:
                    faults.before_checkpoint(step)
                    log.info("saving checkpoint to %s", path)
                    save_checkpoint(path, model, opt, step)
                    log.info("saved checkpoint %s", path)
                dist.barrier()
        epoch += 1
    if rank == 0:
        log.info("training finished: %d steps", step)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    faults.run(main)
