"""Fault injection shared by the l4lite real-job training scripts.

Driven by environment variables set by generate.py; prints NOTHING itself, so
whatever the logs show is what the training stack (torch, torchrun, HF,
Lightning, DeepSpeed) printed on its own. Side records (rank map, the moment
of injection) go to L4L_META_DIR, which lies outside the archived log tree.

  L4L_FAULT       none|exception|sigkill|hang|nan|enospc|corrupt_ckpt|data
  L4L_FAULT_RANK  global rank that misbehaves (exception, sigkill, hang, nan)
  L4L_FAULT_STEP  1-based optimizer step at which it happens
"""
import datetime
import json
import os
import signal
import socket
import time

FAULT = os.environ.get("L4L_FAULT", "none")
FAULT_RANK = int(os.environ.get("L4L_FAULT_RANK", "-1"))
FAULT_STEP = int(os.environ.get("L4L_FAULT_STEP", "-1"))
META = os.environ.get("L4L_META_DIR")

EXCEPTION_MESSAGE = ("shape mismatch in attention block: expected key length "
                     "{want}, got {got} (sequence packing bug)")


def rank():
    return int(os.environ.get("RANK", "0"))


def _now():
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _write(name, obj):
    if not META:
        return
    os.makedirs(META, exist_ok=True)
    tmp = os.path.join(META, name + ".tmp")
    with open(tmp, "w") as f:
        json.dump(obj, f)
    os.replace(tmp, os.path.join(META, name))


def register():
    """Record which host/pid runs which rank (read back by generate.py)."""
    _write(f"rank-{rank()}.json", {
        "rank": rank(), "local_rank": int(os.environ.get("LOCAL_RANK", "0")),
        "host": socket.gethostname(), "pid": os.getpid(), "time": _now()})


def record(kind, step, **extra):
    _write(f"injection-{rank()}.json", dict(
        {"fault": kind, "rank": rank(), "step": step, "time": _now(),
         "host": socket.gethostname(), "pid": os.getpid()}, **extra))


def run(main):
    """Run a training script's main; on any failure dump the flight recorder first, then fail as it would."""
    try:
        main()
    except BaseException:
        fr_dump("exception")
        raise


def fr_dump(reason=""):
    """Write this rank's flight-recorder buffer the way torch's NCCL
    DebugInfoWriter does (pickle of _dump_fr_trace, file <prefix><rank>).
    Gloo process groups record into the flight recorder in torch 2.13 but do
    not dump on timeout by themselves, so the scripts call this on failure."""
    prefix = os.environ.get("TORCH_FR_DUMP_TEMP_FILE") or os.environ.get("TORCH_NCCL_DEBUG_INFO_TEMP_FILE")
    if not prefix or int(os.environ.get("TORCH_FR_BUFFER_SIZE", os.environ.get("TORCH_NCCL_TRACE_BUFFER_SIZE", "0"))) <= 0:
        return
    try:
        import torch._C._distributed_c10d as c10d
        data = c10d._dump_fr_trace(includeCollectives=True, includeStackTraces=True, onlyActive=False)
        path = f"{prefix}{rank()}"
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path + ".tmp", "wb") as f:
            f.write(data)
        os.replace(path + ".tmp", path)
    except Exception:  # never let the dump change how the job fails
        pass


def _hang_forever(step):
    record("hang", step)

    def on_term(signum, frame):
        fr_dump("sigterm")
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)

    if os.environ.get("TORCH_FR_BUFFER_SIZE"):
        signal.signal(signal.SIGTERM, on_term)
    while True:  # stuck before the next collective, like a rank spinning in a bad kernel
        time.sleep(3600)


LAST_STEP = 0


def at_step(step, model=None):
    """Call at the start of optimizer step `step` (1-based), on every rank."""
    global LAST_STEP
    LAST_STEP = step
    if step != FAULT_STEP or rank() != FAULT_RANK:
        return
    if FAULT == "exception":
        record("exception", step)
        raise RuntimeError(EXCEPTION_MESSAGE.format(want=64, got=63))
    if FAULT == "sigkill":
        record("sigkill", step)
        os.kill(os.getpid(), signal.SIGKILL)
    if FAULT == "hang":
        _hang_forever(step)
    if FAULT == "nan" and model is not None:
        import torch
        record("nan", step)
        with torch.no_grad():  # one corrupted weight on one rank; DDP spreads it
            p = [p for p in model.parameters() if p.dim() == 2][-1]
            p.view(-1)[0] = float("nan")


def before_checkpoint(step):
    if FAULT == "enospc" and rank() == 0:
        record("enospc", step)


def before_resume(path):
    if FAULT == "corrupt_ckpt":
        record("corrupt_ckpt", None, path=path)


class SyntheticTokens:
    """Deterministic token sequences (a noisy repeating pattern) so the loss falls.
    With L4L_FAULT=data, sample L4L_FAULT_STEP (an index) is a corrupt record."""

    def __init__(self, n=640, seq=32, vocab=256, seed=0):
        import torch
        g = torch.Generator().manual_seed(seed)
        base = torch.randint(0, vocab, (16, seq), generator=g)
        noise = torch.randint(0, vocab, (n, seq), generator=g)
        mask = torch.rand((n, seq), generator=g) < 0.1
        self.data = torch.where(mask, noise, base[torch.arange(n) % 16])
        self.bad = FAULT_STEP if FAULT == "data" else -1

    def __len__(self):
        return len(self.data)

    def raw(self, i):
        if i == self.bad:
            record("data", LAST_STEP + 1, index=i)
            return b'{"input_ids": [17, 204, 9\x00\x00'  # truncated shard record
        return self.data[i]

    def decode(self, i):
        item = self.raw(i)
        if isinstance(item, bytes):
            json.loads(item.decode("utf-8", "replace"))
        return item
