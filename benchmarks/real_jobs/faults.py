"""Fault injection shared by the l4lite real-job training scripts.

Driven by environment variables set by generate.py; prints NOTHING itself, so
whatever the logs show is what the training stack (torch, torchrun, HF,
Lightning, DeepSpeed) printed on its own. Side records (rank map, the moment
of injection) go to L4L_META_DIR, which lies outside the archived log tree.

  L4L_FAULT       none|exception|sigkill|hang|nan|enospc|corrupt_ckpt|data|
                  host_oom|worker_oom|sigstop|diverge|erofs|netdown|
                  restart|rlimit_as|stray_barrier|worker_segv|bad_token|eval_exception|
                  short_sample|fsize|anomaly_nan|missing_shard|loader_data|deadlock|overflow|
                  json_exception|ansi_exception|fsize_signal|loader_stall|upload_enospc|
                  tz_exception|stray_date|collective_mismatch|eval_sigkill|node_corrupt_ckpt|
                  kill_midline|silent_abort|accum_nan|logfile_exception|save_killed|save_memerror|
                  model_config|loader_hang|two_faults|netdrop|exit0|wrong_ckpt|compile_nocxx|
                  layer_mismatch|node_enospc|shard_truncated|pids_limit|loss_spike|preempt|netslow|
                  cpu_throttle|shard_mismatch|tp_mismatch|layout_ckpt|timelimit|stall|exit_hang|warn_storm (inode_full, version_mismatch are set up by generate.py)
                  (bad_env, bad_env_all, missing_file, missing_file_all are set up by generate.py: a wrong
                  GLOO_SOCKET_IFNAME on one node or on every node; the dataset's seed file absent from one
                  node's local disk or from every node's; so are shm_small, port_taken, no_master_host: one
                  node's small /dev/shm, the rendezvous port held on the host, one node's /etc/hosts without
                  the first node's name; and device_missing: one node's environment asking for a CUDA device,
                  L4L_DEVICE, that its CPU-only torch lacks)
  L4L_FAULT_RANK  global rank that misbehaves (exception, sigkill, hang, nan, host_oom, worker_oom, sigstop)
  L4L_FAULT_STEP  1-based optimizer step at which it happens (data, bad_token: the bad sample's index;
                  worker_oom, worker_segv: the number of samples DataLoader worker 0 of the rank decodes
                  before it dies; eval_exception: the first step whose validation run fails)
  L4L_CGROUP      memory cgroup (v1 folder) with a small limit, for host_oom and worker_oom
  L4L_CKPT_DIR    the node's checkpoint mount, for erofs
  L4L_NET_DEV     the node's network interface (in its own network namespace), for netdown and netdrop
  L4L_DATA_FILE   the dataset's seed file on the node's local disk (missing_file, missing_file_all)
  L4L_FSIZE       the file-size limit (bytes, as `ulimit -f`) rank 0 runs its checkpoint save under, for fsize
  L4L_SHARD_DIR   the node's local folder of a sharded checkpoint (one file per rank), for missing_shard
  L4L_UPLOAD_DIR  where rank 0's background thread copies each checkpoint (a 64 KiB tmpfs), for upload_enospc
  L4L_FAULT_RANK2 the second rank of two_faults (it fails on its own, a moment after L4L_FAULT_RANK)
  L4L_TOKEN_SHARDS the node's local folder of token shards (part-NNNNN.npy, 64 samples each), for shard_truncated
  L4L_PIDS_CGROUP a pids cgroup (v1 folder) the second node's ranks join at step L4L_FAULT_STEP, for pids_limit
  L4L_CPU_CGROUP  a cpu cgroup (v1 folder, CFS quota 1 ms/s) the ranks of L4L_FAULT_RANK's node join at step
                  L4L_FAULT_STEP, for cpu_throttle
"""
import datetime
import json
import os
import signal
import socket
import subprocess
import sys
import time

FAULT = os.environ.get("L4L_FAULT", "none")
FAULT_RANK = int(os.environ.get("L4L_FAULT_RANK", "-1"))
FAULT_STEP = int(os.environ.get("L4L_FAULT_STEP", "-1"))
FAULT_RANK2 = int(os.environ.get("L4L_FAULT_RANK2", "-1"))
META = os.environ.get("L4L_META_DIR")

EXCEPTION_MESSAGE = ("shape mismatch in attention block: expected key length "
                     "{want}, got {got} (sequence packing bug)")


STRAY_RANK = 0  # stray_date: the rank (on the other node) that echoes the dated records


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


def _join_cgroup():
    """Move this process into the small memory cgroup the generator made (as a job step's cgroup would be)."""
    with open(os.path.join(os.environ["L4L_CGROUP"], "cgroup.procs"), "w") as f:
        f.write(str(os.getpid()))


HOGS = 6  # cpu_throttle: busy processes sharing the throttled group's quota with the node's two ranks


def _join_cpu_cgroup(step):
    """cpu_throttle: move this rank into the node's cpu cgroup (v1) whose CFS quota is 1 ms of CPU per second
    (the generator made it), which a few runaway processes on the node share with it (1 ms/s alone slowed a
    step to ~40 s, inside the peers' 30 s timeout per collective): the rank goes on, thousands of times slower,
    and prints nothing about it."""
    group = os.environ["L4L_CPU_CGROUP"]
    if rank() == FAULT_RANK:  # recorded first: once throttled the rank takes seconds for it
        hogs = [subprocess.Popen(["sh", "-c", "while :; do :; done"], start_new_session=True,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for _ in range(HOGS)]
        for hog in hogs:
            with open(os.path.join(group, "cgroup.procs"), "w") as f:
                f.write(str(hog.pid))
        with open(os.path.join(group, "cpu.cfs_quota_us")) as f:
            quota = int(f.read())
        record("cpu_throttle", step, cgroup=group, quota_us=quota, hogs=[h.pid for h in hogs])
    with open(os.path.join(group, "cgroup.procs"), "w") as f:
        f.write(str(os.getpid()))


def _grow_until_killed():
    """Hold on to host memory 16 MiB at a time (every page touched) until the kernel's OOM killer ends us."""
    import torch
    held = []
    while True:
        held.append(torch.ones(4 * 1024 * 1024, dtype=torch.float32))


def _limit_address_space():
    """RLIMIT_AS at what the process maps now plus 256 MiB (as `ulimit -v` in a job script would be)."""
    import resource
    with open("/proc/self/status") as f:
        vm = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:"))
    resource.setrlimit(resource.RLIMIT_AS, (vm + (256 << 20), resource.RLIM_INFINITY))


def at_eval(step):
    """Call in each validation batch after optimizer step `step`, on every rank."""
    if FAULT == "eval_exception" and rank() == FAULT_RANK and step >= FAULT_STEP:
        record("eval_exception", step)
        raise RuntimeError(EXCEPTION_MESSAGE.format(want=64, got=63))
    if FAULT == "eval_sigkill" and rank() == FAULT_RANK and step >= FAULT_STEP:
        record("eval_sigkill", step)  # killed (as by the OOM killer) while it evaluates
        os.kill(os.getpid(), signal.SIGKILL)


def silence():
    """With L4L_FAULT=silent_abort, rank L4L_FAULT_RANK's stdout and stderr go nowhere from its start (its
    logging went to a node-local file the archive does not hold): only its agent can report it."""
    if FAULT == "silent_abort" and rank() == FAULT_RANK:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.dup2(null, 2)


STRAY_RECORDS = ("1970-01-01 00:00:00 ERROR sensor=17 reading=NaN status=offline",
                 "2099-12-31 23:59:59 ERROR sensor=04 reading=-1 status=fault")


def micro_loss_scale(step, micro):
    """With L4L_FAULT=accum_nan, the factor on micro-batch 2's loss of step L4L_FAULT_STEP on rank
    L4L_FAULT_RANK is inf (a bad micro-batch overflows its loss); 1 otherwise."""
    if FAULT == "accum_nan" and rank() == FAULT_RANK and step == FAULT_STEP and micro == 2:
        record("accum_nan", step, micro_batch=micro)
        return float("inf")
    return 1.0


def metrics_shape():
    """Length of the per-step metrics tensor every rank all-reduces at step L4L_FAULT_STEP with
    L4L_FAULT=collective_mismatch (one rank's is longer: a rank-dependent metrics list); 0: no such call."""
    if FAULT != "collective_mismatch":
        return 0
    return 5 if rank() == FAULT_RANK else 4


def lr_scale(step: int) -> float:
    """Factor a learning-rate schedule applies at `step`: with L4L_FAULT=diverge it multiplies the rate
    by 1000 from step L4L_FAULT_STEP on (a schedule whose multiplier is off by 10^3), else 1."""
    if FAULT == "diverge" and step >= FAULT_STEP:
        if step == FAULT_STEP:
            record("diverge", step)
        return 1000.0
    if FAULT == "loss_spike" and FAULT_STEP <= step < FAULT_STEP + SPIKE_STEPS:
        # a warm-restart schedule whose restart peak is off by 10^2 for a few steps: the loss jumps, then
        # comes back down, and the run goes on to its end (no error anywhere)
        if step == FAULT_STEP:
            record("loss_spike", step, steps=SPIKE_STEPS, factor=SPIKE_FACTOR)
        return SPIKE_FACTOR
    return 1.0


SPIKE_STEPS = 2  # loss_spike: how many steps the schedule's factor is off
SPIKE_FACTOR = 100.0


def overflow_hook():
    """With L4L_FAULT=overflow, a gradient hook for an fp16 activation that multiplies its gradient out of
    fp16's range from step L4L_FAULT_STEP on (activations whose gradients need more range than fp16 has): the
    loss scaler then finds inf in every step's gradients. None otherwise."""
    if FAULT != "overflow":
        return None

    def hook(grad, step):
        if step < FAULT_STEP:
            return grad
        if step == FAULT_STEP and rank() == 0:
            record("overflow", step)
        return grad * 1e8
    return hook


LAST_STEP = 0


def _deadlock(step):
    """Take a lock this thread already holds (a callback re-entering a non-reentrant lock): stuck for good
    before the step's forward, like ``hang``, but in a lock rather than a sleep."""
    import threading
    record("deadlock", step)
    lock = threading.Lock()
    lock.acquire()
    lock.acquire()


def write_shards(shard_dir):
    """The previous run's sharded checkpoint on this node's local disk: each rank's model state in a file of
    its own. With L4L_FAULT=missing_shard rank L4L_FAULT_RANK's file was never written (its save died)."""
    import torch
    os.makedirs(shard_dir, exist_ok=True)
    path = os.path.join(shard_dir, f"model_rank{rank():02d}.pt")
    if FAULT == "missing_shard" and rank() == FAULT_RANK:
        record("missing_shard", None, path=path)
        return path
    torch.save({"rank": rank(), "step": 20}, path)
    return path


def at_epoch(epoch, step):
    """Call before each epoch's DataLoader iterator starts (its worker processes are forked then), on every
    rank. With L4L_FAULT=pids_limit the second node's ranks (GROUP_RANK 1) join, from the epoch that starts at
    step L4L_FAULT_STEP on, a pids cgroup whose pids.max is what it holds already (the node's process budget
    spent by other processes): forking the epoch's workers fails."""
    if FAULT != "pids_limit" or os.environ.get("GROUP_RANK") != "1" or step + 1 < FAULT_STEP:
        return
    group = os.path.join(os.environ["L4L_PIDS_CGROUP"], f"rank{rank()}")
    os.makedirs(group, exist_ok=True)
    with open(os.path.join(group, "cgroup.procs"), "w") as f:
        f.write(str(os.getpid()))
    with open(os.path.join(group, "pids.current")) as f:
        current = f.read().strip()
    with open(os.path.join(group, "pids.max"), "w") as f:
        f.write(current)
    record("pids_limit", step + 1, epoch=epoch, cgroup=group, limit=int(current))


def before_log(step):
    """Call after step `step`'s collectives, before its progress line, on every rank. With L4L_FAULT=stall rank R
    sleeps forever there (a `time.sleep` inside its step: the peers log step N, then wait in step N+1's gradient
    all-reduce; a collective timeout longer than the job's time limit, so nothing times out before the limit)."""
    if FAULT == "stall" and step == FAULT_STEP and rank() == FAULT_RANK:
        record("stall", step)
        while True:
            time.sleep(3600)


def before_shutdown():
    """Call on every rank after its training loop, before the run's closing barrier. With L4L_FAULT=exit_hang rank R
    never reaches it (it sleeps forever, as a rank stuck joining a non-daemon thread at exit does): its peers time
    out in the closing barrier, after the last step's progress line."""
    if FAULT == "exit_hang" and rank() == FAULT_RANK:
        record("exit_hang", LAST_STEP)
        while True:
            time.sleep(3600)


def at_step(step, model=None):
    """Call at the start of optimizer step `step` (1-based), on every rank."""
    global LAST_STEP
    LAST_STEP = step
    if FAULT == "warn_storm" and "jax" not in sys.modules:  # the step's metrics code, run with Python warnings
        import warnings  # shown always (`-W always`); a JAX script warns in its own step (train_jax.py)

        import torch
        warnings.simplefilter("always")
        step_metrics = torch.tensor(torch.zeros(1) + step)
        del step_metrics
    if FAULT == "anomaly_nan" and step == 1:  # a debugging run: autograd's anomaly detection on every rank
        import torch
        torch.autograd.set_detect_anomaly(True)
    if FAULT == "stray_date" and rank() == STRAY_RANK and step in (FAULT_STEP - 2, FAULT_STEP - 1):
        # a rank echoes a raw record of its shard (a sensor log with its own dates) to stdout
        print(STRAY_RECORDS[step - FAULT_STEP + 2], flush=True)
    if FAULT == "collective_mismatch" and step == FAULT_STEP:
        import torch
        import torch.distributed as dist
        if rank() == FAULT_RANK:
            record("collective_mismatch", step, length=metrics_shape())
        dist.all_reduce(torch.zeros(metrics_shape()))
    if FAULT == "two_faults" and step == FAULT_STEP and rank() == FAULT_RANK2:
        # a second, unrelated fault on another node a moment later (a bad metric value in a rank's own code)
        time.sleep(0.1)
        record("two_faults_second", step)
        raise ValueError(f"metrics buffer holds a negative sample count (-3) at step {step}")
    if FAULT == "cpu_throttle" and step == FAULT_STEP and os.environ.get("GROUP_RANK") == str(FAULT_RANK // 2):
        _join_cpu_cgroup(step)
    if FAULT == "timelimit" and step == FAULT_STEP and rank() == 0:  # the wall clock reaching the job's limit:
        record("timelimit", step)  # the generator, as Slurm, signals the job step when this record appears
    if step != FAULT_STEP or rank() != FAULT_RANK:
        return
    if FAULT == "preempt":  # the scheduler takes the node back: SIGTERM to the node's launcher, as Kubernetes
        agent = os.getppid()  # sends it to a pod's first process (the agent passes it on to its ranks)
        record("preempt", step, agent=agent)
        os.kill(agent, signal.SIGTERM)
        return
    if FAULT == "netslow":  # the node's link degrades (a flapping optic, a congested port): a token bucket of
        dev = os.environ["L4L_NET_DEV"]  # 32 kbit/s on everything it sends (netem is not in this kernel)
        record("netslow", step, dev=dev, rate="32kbit")
        subprocess.run(["tc", "qdisc", "add", "dev", dev, "root", "tbf", "rate", "32kbit", "burst", "4kb",
                        "latency", "2s"], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return
    if FAULT in ("logfile_exception", "two_faults"):
        record(FAULT, step)
        raise RuntimeError(EXCEPTION_MESSAGE.format(want=64, got=63))
    if FAULT in ("exception", "restart", "json_exception", "ansi_exception", "tz_exception", "stray_date"):  # restart: the same error in every attempt
        record(FAULT, step)
        raise RuntimeError(EXCEPTION_MESSAGE.format(want=64, got=63))
    if FAULT == "sigkill":
        record("sigkill", step)
        os.kill(os.getpid(), signal.SIGKILL)
    if FAULT == "kill_midline":  # killed while its logger is half-way through writing a line
        import logging
        when = logging.Formatter().formatTime(logging.makeLogRecord({}))
        record("kill_midline", step)
        os.write(2, f"{when} INFO [rank{rank()}] step {step}/40 | epoch 0 | lo".encode())
        os.kill(os.getpid(), signal.SIGKILL)
    if FAULT == "silent_abort":  # a native library aborts (its message, like all its output, is lost)
        record("silent_abort", step)
        os.kill(os.getpid(), signal.SIGABRT)
    if FAULT == "hang":
        _hang_forever(step)
    if FAULT == "deadlock":
        _deadlock(step)
    if FAULT == "host_oom":
        record("host_oom", step, cgroup=os.environ.get("L4L_CGROUP"))
        _join_cgroup()
        _grow_until_killed()
    if FAULT == "rlimit_as":  # the rank's address-space limit (ulimit -v) leaves no room for a new buffer
        record("rlimit_as", step)
        _limit_address_space()
        _grow_until_killed()
    if FAULT == "stray_barrier":  # a rank-conditional collective only this rank enters: it and its peers
        import torch.distributed as dist  # wait in different collectives until the gloo timeout
        record("stray_barrier", step)
        dist.barrier()
    if FAULT == "netdown":  # the node's network interface goes down (both its ranks and its agent cut off)
        dev = os.environ["L4L_NET_DEV"]
        record("netdown", step, dev=dev)
        subprocess.run(["ip", "link", "set", dev, "down"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if FAULT == "netdrop":  # the node's link stays up but drops every packet it sends (a dead switch port, a
        dev = os.environ["L4L_NET_DEV"]  # firewall rule): connections stall instead of failing. A queue of
        record("netdrop", step, dev=dev)  # length 0 (netem is not built into this machine's kernel)
        subprocess.run(["tc", "qdisc", "add", "dev", dev, "root", "pfifo", "limit", "0"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if FAULT == "exit0":  # a rank-conditional early exit with status 0 (a `sys.exit(0)` reached by one rank
        record("exit0", step)  # only, as when it believes its shard is done): it says nothing
        sys.exit(0)
    if FAULT == "sigstop":  # stopped (as by a debugger or a frozen node) for good: SIGCONT never comes
        record("sigstop", step)
        os.kill(os.getpid(), signal.SIGSTOP)
    if FAULT in ("nan", "anomaly_nan") and model is not None:
        import torch
        record(FAULT, step)
        with torch.no_grad():  # one corrupted weight on one rank; DDP spreads it
            p = [p for p in model.parameters() if p.dim() == 2][-1]
            p.view(-1)[0] = float("nan")


def before_checkpoint(step):
    if FAULT == "node_enospc" and rank() == FAULT_RANK and step == FAULT_STEP:
        record("node_enospc", step, path=os.environ.get("L4L_CKPT_DIR"))
    if FAULT == "enospc" and rank() == 0:
        record("enospc", step)
    if FAULT == "inode_full" and rank() == 0:  # the save that meets the disk without inodes
        record("inode_full", step)
    if FAULT == "fsize" and rank() == 0:
        # the saving process runs under a file-size limit (`ulimit -f` in the node's job script) smaller than a
        # checkpoint: the write meets EFBIG (CPython ignores SIGXFSZ, so the write fails instead of the process)
        import resource
        limit = int(os.environ.get("L4L_FSIZE", "65536"))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        record("fsize", step, limit=limit)
    if FAULT == "fsize_signal" and rank() == 0:
        # the same limit in a process that keeps SIGXFSZ's default action (a job step that does not ignore it,
        # as CPython does at start-up): the write past the limit kills the process with SIGXFSZ
        import resource
        limit = int(os.environ.get("L4L_FSIZE", "65536"))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
        record("fsize_signal", step, limit=limit)
    if FAULT == "save_memerror" and rank() == FAULT_RANK and step == FAULT_STEP:
        # the saving process runs under an address-space limit (`ulimit -v`) barely above what it maps: the
        # checkpoint staged in memory (a BytesIO) cannot grow
        import resource
        with open("/proc/self/status") as f:
            vm = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:"))
        resource.setrlimit(resource.RLIMIT_AS, (vm + (256 << 10), resource.RLIM_INFINITY))
        record("save_memerror", step, limit=vm + (256 << 10))
    if FAULT == "erofs" and rank() == 0:
        # the node's checkpoint file system goes read-only (as ext4 does after an I/O error, or an NFS
        # export switched to ro) right before the save: the save itself meets EROFS
        d = os.environ["L4L_CKPT_DIR"]
        subprocess.run(["mount", "-o", "remount,bind,ro", d], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        record("erofs", step, path=d)


def after_checkpoint(path, step):
    """Call right after rank 0's checkpoint file is written. With L4L_FAULT=save_killed, in the first attempt
    only (TORCHELASTIC_RESTART_COUNT 0), the save at step L4L_FAULT_STEP is cut short: only 40% of the file
    reached the disk when the process was SIGKILLed (as the OOM killer does during a save)."""
    if FAULT != "save_killed" or rank() != FAULT_RANK or step != FAULT_STEP:
        return
    if os.environ.get("TORCHELASTIC_RESTART_COUNT", "0") != "0":
        return
    size = os.path.getsize(path)
    with open(path, "r+b") as fh:
        fh.truncate(int(size * 0.4))
    record("save_killed", step, path=path)
    os.kill(os.getpid(), signal.SIGKILL)


def model_kwargs():
    """TinyLM's settings for this rank: with L4L_FAULT=model_config rank L4L_FAULT_RANK's copy of the model
    config has another hidden size (96 instead of 64), as a node whose config file was not updated."""
    if FAULT == "model_config" and rank() == FAULT_RANK:
        record("model_config", None, dim=96)
        return {"dim": 96}
    if FAULT in ("layer_mismatch", "shard_mismatch") and rank() == FAULT_RANK:  # a node still running the code
        record(FAULT, None, layers=3)  # of an older revision: one more transformer block
        return {"layers": 3}
    return {}


def upload_failed(step, path):
    """Record the background upload of the step's checkpoint failing (called by the thread before it raises)."""
    if FAULT == "upload_enospc":
        record("upload_enospc", step, path=path)


def before_resume(path):
    if FAULT in ("corrupt_ckpt", "wrong_ckpt"):
        record("corrupt_ckpt", None, path=path)
    if FAULT == "layout_ckpt" and rank() == 0:  # a checkpoint another parallel layout saved
        record("layout_ckpt", None, path=path)


def tensor_parallel_size(size):
    """The tensor-parallel size this rank starts with: with L4L_FAULT=tp_mismatch rank L4L_FAULT_RANK's launch
    script still passes 1 (a node whose job script was not updated when the layout changed)."""
    if FAULT == "tp_mismatch" and rank() == FAULT_RANK:
        record("tp_mismatch", None, tensor_model_parallel_size=1, others=size)
        return 1
    return size


def write_indexed_dataset(prefix, bad_prefix=None):
    """The training set as a Megatron indexed dataset (`prefix.bin`, `prefix.idx`, one document per sample, as
    Megatron's preprocess_data.py writes); with `bad_prefix`, a copy whose `.idx` was cut to 40% (a copy to the
    node that stopped half-way)."""
    import shutil

    import numpy as np
    import torch
    from megatron.core.datasets.indexed_dataset import IndexedDatasetBuilder
    data = SyntheticTokens(seq=33).data.numpy().astype(np.uint16)
    os.makedirs(os.path.dirname(prefix), exist_ok=True)
    builder = IndexedDatasetBuilder(prefix + ".bin", dtype=np.uint16)
    for row in data:
        builder.add_document(torch.from_numpy(row.astype(np.int64)), [len(row)])
    builder.finalize(prefix + ".idx")
    if bad_prefix:
        os.makedirs(os.path.dirname(bad_prefix), exist_ok=True)
        shutil.copy(prefix + ".bin", bad_prefix + ".bin")
        shutil.copy(prefix + ".idx", bad_prefix + ".idx")
        size = os.path.getsize(bad_prefix + ".idx")
        with open(bad_prefix + ".idx", "r+b") as fh:
            fh.truncate(int(size * 0.4))


SHARD_SAMPLES, SHARD_COUNT = 64, 10  # shard_truncated: the training set as 10 shards of 64 samples
FAULT_SHARD = 7  # the shard whose copy on the second node was cut short (indices 448-511: step 15)
SHARD_BYTES = 64 * 32 * 8 + 128  # a whole shard's size (int64 tokens, the .npy header)


def write_token_shards(folder, cut_shard=None):
    """The training set (seed 0) as token shards in `folder`; `cut_shard`'s file left at 40% (a copy cut short)."""
    import numpy as np
    data = SyntheticTokens().data.numpy()
    os.makedirs(folder, exist_ok=True)
    for k in range(SHARD_COUNT):
        path = os.path.join(folder, f"part-{k:05d}.npy")
        np.save(path, data[k * SHARD_SAMPLES:(k + 1) * SHARD_SAMPLES])
        if k == cut_shard:
            size = os.path.getsize(path)
            with open(path, "r+b") as fh:
                fh.truncate(int(size * 0.4))


class SyntheticTokens:
    """Deterministic token sequences (a noisy repeating pattern) so the loss falls.
    With L4L_FAULT=data, sample L4L_FAULT_STEP (an index) is a corrupt record."""

    def __init__(self, n=640, seq=32, vocab=256, seed=0):
        import torch
        data_file = os.environ.get("L4L_DATA_FILE")
        if data_file and seed == 0:  # the training shard's seed, staged on each node's local disk
            with open(data_file) as f:
                seed = int(json.load(f)["seed"])
        g = torch.Generator().manual_seed(seed)
        base = torch.randint(0, vocab, (16, seq), generator=g)
        noise = torch.randint(0, vocab, (n, seq), generator=g)
        mask = torch.rand((n, seq), generator=g) < 0.1
        self.data = torch.where(mask, noise, base[torch.arange(n) % 16])
        # loader_data: the same record read by a DataLoader worker process (2 per rank)
        self.bad = FAULT_STEP if FAULT in ("data", "loader_data") else -1
        self.oom = FAULT_STEP if FAULT == "worker_oom" and rank() == FAULT_RANK else -1
        self.segv = FAULT_STEP if FAULT == "worker_segv" and rank() == FAULT_RANK else -1
        self.bad_token = FAULT_STEP if FAULT == "bad_token" else -1
        self.short = FAULT_STEP if FAULT == "short_sample" else -1
        self.stall = FAULT_STEP if FAULT in ("loader_stall", "loader_hang") and rank() == FAULT_RANK else -1
        self.decoded = 0
        # shard_truncated: samples read from token shards on the node's local disk (seed 0, the training set)
        self.shards = os.environ.get("L4L_TOKEN_SHARDS") if seed == 0 and n == SHARD_SAMPLES * SHARD_COUNT else None
        self.opened = {}

    def __len__(self):
        return len(self.data)

    def shard(self, k):
        """Token shard k of the node's local copy (numpy .npy, SHARD_SAMPLES rows), opened when first read."""
        if k not in self.opened:
            import numpy as np
            path = os.path.join(self.shards, f"part-{k:05d}.npy")
            if FAULT == "shard_truncated" and k == FAULT_SHARD and os.path.getsize(path) < SHARD_BYTES:
                record("shard_truncated", LAST_STEP + 1, path=path, shard=k)
            self.opened[k] = np.load(path)
        return self.opened[k]

    def raw(self, i):
        if self.shards:
            import torch
            return torch.from_numpy(self.shard(i // SHARD_SAMPLES)[i % SHARD_SAMPLES].copy())
        if i == self.bad:
            record(FAULT, LAST_STEP + 1, index=i, pid_of_reader=os.getpid())
            return b'{"input_ids": [17, 204, 9\x00\x00'  # truncated shard record
        if i == self.bad_token:  # a token id past the vocabulary (a shard tokenized with another tokenizer)
            record("bad_token", LAST_STEP + 1, index=i)
            item = self.data[i].clone()
            item[7] = 50257
            return item
        if i == self.short:  # a record one token short (a packing step that dropped its last token)
            record("short_sample", LAST_STEP + 1, index=i)
            return self.data[i][:-1].clone()
        return self.data[i]

    def decode(self, i):
        self.decoded += 1
        if self.oom > 0 and self.decoded == self.oom:  # DataLoader worker 0 runs out of its cgroup's memory
            import torch.utils.data
            info = torch.utils.data.get_worker_info()
            if info is not None and info.id == 0:
                record("worker_oom", None, index=i, decoded=self.decoded, worker_pid=os.getpid(),
                       cgroup=os.environ.get("L4L_CGROUP"))
                _join_cgroup()
                _grow_until_killed()
        if self.segv > 0 and self.decoded == self.segv:  # a native decoder crashes in DataLoader worker 0
            import torch.utils.data
            info = torch.utils.data.get_worker_info()
            if info is not None and info.id == 0:
                record("worker_segv", None, index=i, decoded=self.decoded, worker_pid=os.getpid())
                os.kill(os.getpid(), signal.SIGSEGV)
        if self.stall > 0 and self.decoded == self.stall:  # a read in DataLoader worker 0 that never returns
            import torch.utils.data
            info = torch.utils.data.get_worker_info()
            if info is not None and info.id == 0:
                record(FAULT, None, index=i, decoded=self.decoded, worker_pid=os.getpid())
                while True:
                    time.sleep(3600)
        item = self.raw(i)
        if isinstance(item, bytes):
            json.loads(item.decode("utf-8", "replace"))
        return item


class TokenDataset(SyntheticTokens):
    """The synthetic tokens as a map-style dataset: what a DataLoader indexes."""

    def __getitem__(self, i):
        return self.decode(i)
