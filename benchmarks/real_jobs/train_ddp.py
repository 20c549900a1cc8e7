"""Plain PyTorch DDP training of a tiny causal LM on synthetic tokens (gloo, CPU)."""
import argparse
import contextlib
import glob
import io
import json
import logging
import math
import os
import shutil
import sys
import threading
import time
import traceback
import urllib.request
from datetime import timedelta

import faults
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.elastic.multiprocessing.errors import record
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler

if os.environ.get("L4L_EXT_DIR"):  # the project's own helpers, installed on each node beside the script
    import packing_utils  # noqa: F401  (PYTHONPATH holds L4L_EXT_DIR)

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


class JsonFormatter(logging.Formatter):
    """One JSON object per record (as python-json-logger writes them), the traceback in ``exc_info``."""

    def format(self, record):
        out = {"time": self.formatTime(record), "level": record.levelname, "logger": record.name,
               "rank": getattr(record, "rank", None), "message": record.getMessage()}
        if record.exc_info:
            out["exc_info"] = "".join(traceback.format_exception(*record.exc_info))
        return json.dumps(out)


class ColourFormatter(logging.Formatter):
    """Levels and times in ANSI colours (as colorlog or rich write them to a terminal)."""

    COLOURS = {"DEBUG": "36", "INFO": "32", "WARNING": "33", "ERROR": "1;31", "CRITICAL": "1;41"}

    def format(self, record):
        text = super().format(record)
        colour = self.COLOURS.get(record.levelname, "0")
        return text.replace(record.levelname, f"\x1b[{colour}m{record.levelname}\x1b[0m", 1).replace(
            self.formatTime(record), f"\x1b[2m{self.formatTime(record)}\x1b[0m", 1)


def setup_logging():
    """The script's logging: plain text, or JSON lines / ANSI colours (L4L_LOG_STYLE=json|ansi)."""
    fmt = "%(asctime)s %(levelname)s [rank%(rank)s] %(message)s"
    style = os.environ.get("L4L_LOG_STYLE", "")
    if style == "file":  # each rank logs to its own file on the node (L4L_LOG_DIR), nothing to stdout/stderr
        os.makedirs(os.environ["L4L_LOG_DIR"], exist_ok=True)
        handler = logging.FileHandler(os.path.join(os.environ["L4L_LOG_DIR"], f"train-rank{os.environ['RANK']}.log"))
        handler.setFormatter(logging.Formatter(fmt))
        logging.basicConfig(level=logging.INFO, handlers=[handler])
        return
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter() if style == "json" else ColourFormatter(fmt) if style == "ansi"
                         else logging.Formatter(fmt))
    logging.basicConfig(level=logging.INFO, handlers=[handler])


class Uploader:
    """Copies each saved checkpoint to L4L_UPLOAD_DIR in a background thread (an object store's sync), so the
    loop goes on; the next save waits for the previous upload to be done."""

    def __init__(self, target):
        self.target, self.done, self.thread = target, threading.Event(), None
        self.done.set()

    def start(self, path, step):
        self.done.clear()

        def copy():
            try:
                shutil.copy(path, os.path.join(self.target, os.path.basename(path)))
            except OSError:
                faults.upload_failed(step, path)
                raise
            self.done.set()
            log.info("uploaded checkpoint %s", path)
        self.thread = threading.Thread(target=copy, name="ckpt-upload", daemon=True)
        self.thread.start()

    def wait(self):
        log.info("waiting for the previous checkpoint upload")
        self.done.wait()


def push_metrics(url, step, loss):
    """Rank 0's push of its numbers to a Prometheus push gateway (L4L_METRICS_PUSH) every 10 steps; a failed push
    is logged with its traceback and training goes on, as monitoring must never stop a run."""
    body = f"train_loss {loss}\ntrain_step {step}\n".encode()
    try:
        urllib.request.urlopen(urllib.request.Request(url, data=body, method="POST"), timeout=5).close()
    except OSError:
        log.warning("could not push metrics for step %d to %s; training continues", step, url, exc_info=True)


def evaluate(model, loader, step, world, rank):
    """A validation pass every 10 steps (L4L_VALIDATE): the mean loss over the held-out shard."""
    if rank == 0:
        log.info("running validation at step %d", step)
    model.eval()
    total, n = torch.zeros(1), 0
    with torch.no_grad():
        for batch in loader:
            faults.at_eval(step)
            logits = model(batch[:, :-1])
            total += F.cross_entropy(logits.reshape(-1, logits.size(-1)), batch[:, 1:].reshape(-1))
            n += 1
    dist.all_reduce(total)
    model.train()
    if rank == 0:
        log.info("validation at step %d | val_loss %.4f", step, total.item() / max(n, 1) / world)


def save_checkpoint(path, model, opt, step):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    state = {"model": model.module.state_dict(), "optimizer": opt.state_dict(), "step": step}
    if os.environ.get("L4L_SAVE_BUFFERED"):  # staged in memory, then written in one go (L4L_SAVE_BUFFERED)
        buf = io.BytesIO()
        torch.save(state, buf)
        with open(path, "wb") as f:
            f.write(buf.getbuffer())
    else:
        torch.save(state, path)
    faults.after_checkpoint(path, step)


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

    faults.silence()
    setup_logging()
    rank_filter = logging.Filter()
    rank = int(os.environ["RANK"])
    old_factory = logging.getLogRecordFactory()

    def factory(*a, **k):
        rec = old_factory(*a, **k)
        rec.rank = rank
        return rec
    logging.setLogRecordFactory(factory)
    del rank_filter

    early = None
    if not args.resume and os.environ.get("L4L_RESUME_LATEST"):  # a restarted run resumes from its last save,
        saved = sorted(glob.glob(os.path.join(args.save_dir, "step_*.pt")))  # read before the process group
        if saved:
            log.info("resuming from checkpoint %s", saved[-1])
            early = torch.load(saved[-1], map_location="cpu")
    # L4L_PG_TIMEOUT: a collective timeout past the job's time limit (the stall job: nothing times out first)
    dist.init_process_group("gloo", timeout=timedelta(seconds=float(os.environ.get("L4L_PG_TIMEOUT", "30"))))
    faults.register()
    world = dist.get_world_size()
    torch.manual_seed(1234)
    log.info("initialized process group: backend=gloo world_size=%d local_rank=%s host=%s",
             world, os.environ["LOCAL_RANK"], os.uname().nodename)

    net = TinyLM(**faults.model_kwargs())
    if os.environ.get("L4L_DEVICE"):  # the job environment's device for this node (one per local rank)
        net = net.to(torch.device(os.environ["L4L_DEVICE"], int(os.environ["LOCAL_RANK"])))
    model = DDP(net)
    if os.environ.get("L4L_COMPILE"):  # torch.compile (inductor): the first forward compiles C++ kernels
        model = torch.compile(model)
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
    if early is not None:
        model.module.load_state_dict(early["model"])
        opt.load_state_dict(early["optimizer"])
        start_step = early["step"]
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
                        num_workers=int(os.environ.get("L4L_LOADER_WORKERS", "0")),
                        timeout=float(os.environ.get("L4L_LOADER_TIMEOUT", "0")))
    every_rank = bool(os.environ.get("L4L_LOG_ALL_RANKS"))
    accum = int(os.environ.get("L4L_ACCUM", "1"))
    validate = bool(os.environ.get("L4L_VALIDATE"))
    push = os.environ.get("L4L_METRICS_PUSH")
    val_ds = faults.TokenDataset(n=64, seed=7)
    val_loader = DataLoader(val_ds, batch_size=args.batch_size, sampler=DistributedSampler(val_ds, shuffle=False))
    uploader = Uploader(os.environ["L4L_UPLOAD_DIR"]) if os.environ.get("L4L_UPLOAD_DIR") and rank == 0 else None
    step, epoch = start_step, 0
    t0 = time.time()
    each_node = bool(os.environ.get("L4L_SAVE_EACH_NODE"))  # each node's local rank 0 saves to its local disk
    saver = int(os.environ["LOCAL_RANK"]) == 0 if each_node else rank == 0
    while step < args.steps:
        sampler.set_epoch(epoch)
        faults.at_epoch(epoch, step)
        for batch in loader:
            step += 1
            if step > args.steps:
                break
            faults.at_step(step, model.module)
            opt.zero_grad(set_to_none=True)
            if accum > 1:  # gradient accumulation: DDP syncs on the last micro-batch only
                total = 0.0
                for k, micro in enumerate(batch.chunk(accum), 1):
                    ctx = model.no_sync() if k < accum else contextlib.nullcontext()
                    with ctx:
                        logits = model(micro[:, :-1])
                        part = F.cross_entropy(logits.reshape(-1, logits.size(-1)), micro[:, 1:].reshape(-1))
                        part = part * faults.micro_loss_scale(step, k) / accum
                        part.backward()
                    total = total + part.detach()
                loss = total
            else:
                logits = model(batch[:, :-1])
                loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), batch[:, 1:].reshape(-1))
                loss.backward()
            gnorm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            for group in opt.param_groups:  # constant schedule (see faults.lr_scale)
                group["lr"] = args.lr * faults.lr_scale(step)
            opt.step()
            avg = loss.detach().clone()
            dist.all_reduce(avg)
            avg /= world
            faults.before_log(step)
            if (rank == 0 or every_rank) and step % args.log_every == 0:
                dt = time.time() - t0
                t0 = time.time()
                log.info("step %d/%d | epoch %d | loss %.4f | grad_norm %.3f | lr %.2e | %.1f samples/s",
                         step, args.steps, epoch, avg.item(), gnorm.item(), opt.param_groups[0]["lr"],
                         args.batch_size * world / max(dt, 1e-6))
            if not math.isfinite(avg.item()):
                raise FloatingPointError(f"loss is {avg.item()} at step {step}; stopping training")
            if push and rank == 0 and step % 10 == 0:
                push_metrics(push, step, avg.item())
            if validate and step % 10 == 0:
                evaluate(model, val_loader, step, world, rank)
            if args.save_every and step % args.save_every == 0:
                path = os.path.join(args.save_dir, f"step_{step:06d}.pt")
                if saver:
                    faults.before_checkpoint(step)
                    if uploader is not None:
                        uploader.wait()
                    log.info("saving checkpoint to %s", path)
                    save_checkpoint(path, model, opt, step)
                    log.info("saved checkpoint %s", path)
                    if uploader is not None:
                        uploader.start(path, step)
                dist.barrier()
        epoch += 1
    if rank == 0:
        log.info("training finished: %d steps", step)
    faults.before_shutdown()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    try:
        faults.run(main)
    except Exception:
        if not os.environ.get("L4L_LOG_STYLE"):
            raise
        log.exception("training failed")  # a script that logs its failure and exits, as many do
        sys.exit(1)
