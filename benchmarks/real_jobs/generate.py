#!/usr/bin/env python3
"""Generate l4lite's "real jobs" fixtures: real 2-node x 2-rank CPU training jobs.

Each simulated node is its own UTS + mount namespace (`unshare --uts --mount`, root
needed) with its own hostname; the nodes meet in a c10d rendezvous on 127.0.0.1 and
train with DDP over gloo. Faults are injected by benchmarks/real_jobs/faults.py, which
prints nothing: the logs are what torchrun and the training stacks print by themselves.

    python3 benchmarks/real_jobs/generate.py                 # venv + all jobs
    python3 benchmarks/real_jobs/generate.py --only hf-      # jobs whose name matches
    python3 benchmarks/real_jobs/generate.py --list

Writes fixtures/real_jobs/<NNN-stack-fault>/{<host>/..., ground_truth.json, _meta/}
and fixtures/real_jobs/suite.json. A job whose expected proof lines are not found in
its logs is reported INVALID and not written.
"""
import argparse
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

TORCH_VERSION = "2.13.0"
# Versions known to work with torch 2.13.0 on CPU (installed with torch pinned).
PACKAGES = ["transformers==5.24.0", "accelerate==1.16.0", "lightning==2.6.6", "tabulate"]
DEEPSPEED = "deepspeed==0.19.8"
DEEPSPEED_DEPS = ["hjson", "ninja", "psutil", "py-cpuinfo", "pydantic", "msgpack", "einops", "packaging", "tqdm"]

SCRIPTS = {"ddp": "train_ddp.py", "hf": "train_hf.py", "lightning": "train_lightning.py",
           "deepspeed": "train_deepspeed.py"}
FORMATS = {"ddp": "pytorch", "hf": "hf", "lightning": "lightning", "deepspeed": "deepspeed"}

HOST_SETS = [
    ("gpu-node-07", "gpu-node-12"),
    ("a100-rack2-14", "a100-rack2-15"),
    ("cpu-node-a", "cpu-node-b"),
    ("llm-pretrain-7f9c4-worker-0", "llm-pretrain-7f9c4-worker-1"),
    ("h100-sxm-031", "h100-sxm-044"),
    ("dgx-b200-03", "dgx-b200-11"),
    ("compute-alpha", "compute-beta"),
    ("node0421", "node0422"),
    ("trn-sjc2-r08-n3", "trn-sjc2-r08-n4"),
]

# (stack, fault, fault_rank, fault_step, flight_recorder)
# fault_step is the bad sample index for `data`.
JOB_SPECS = [
    ("ddp", "healthy", None, None, False),
    ("ddp", "exception", 3, 17, False),
    ("ddp", "sigkill", 1, 23, False),
    ("ddp", "hang", 2, 15, False),
    ("ddp", "nan", 1, 12, False),
    ("ddp", "enospc", 0, 20, False),
    ("ddp", "corrupt_ckpt", None, None, False),
    ("ddp", "data", None, 300, False),
    ("hf", "healthy", None, None, False),
    ("hf", "exception", 2, 14, False),
    ("hf", "sigkill", 3, 21, False),
    ("hf", "hang", 1, 12, False),
    ("hf", "nan", 0, 16, False),
    ("hf", "enospc", 0, 20, False),
    ("hf", "corrupt_ckpt", None, None, False),
    ("hf", "data", None, 333, False),
    ("lightning", "healthy", None, None, False),
    ("lightning", "exception", 1, 19, False),
    ("lightning", "sigkill", 2, 13, False),
    ("lightning", "hang", 3, 18, False),
    ("lightning", "nan", 2, 13, False),
    ("lightning", "enospc", 0, 20, False),
    ("lightning", "corrupt_ckpt", None, None, False),
    ("lightning", "data", None, 411, False),
    ("ddp", "hang", 0, 25, False),
    ("hf", "hang", 3, 22, False),
    ("ddp", "hang", 3, 11, True),
    ("hf", "hang", 2, 17, True),
    ("lightning", "hang", 1, 14, True),
    ("deepspeed", "healthy", None, None, False),
    ("deepspeed", "exception", 2, 15, False),
    ("deepspeed", "sigkill", 0, 19, False),
    ("deepspeed", "hang", 1, 16, False),
    ("deepspeed", "nan", 3, 12, False),
    ("deepspeed", "enospc", 0, 20, False),
    ("deepspeed", "corrupt_ckpt", None, None, False),
    ("deepspeed", "hang", 2, 13, True),
]

PHASE = {"exception": "train", "sigkill": "train", "hang": "train", "nan": "train", "data": "train",
         "enospc": "checkpoint", "corrupt_ckpt": "load", "healthy": None}
CATEGORY = {"exception": "software", "sigkill": "host", "hang": "software", "nan": "numerical",
            "enospc": "storage", "corrupt_ckpt": "storage", "data": "data", "healthy": None}
FINISH = {"ddp": r"training finished: 40 steps", "hf": r"'train_runtime'|train_runtime",
          "lightning": r"`Trainer.fit` stopped: `max_steps=40` reached", "deepspeed": r"training finished: 40 steps"}
NAN = {"ddp": r"loss is nan at step", "hf": r"'loss': '?nan'?|'grad_norm': '?nan'?", "lightning": r"is not finite",
       "deepspeed": r"loss is nan at step"}


def _read_json(path: str) -> dict:
    with open(path) as fh:
        return json.load(fh)


def jobs():
    out = []
    for i, (stack, fault, rank, step, fr) in enumerate(JOB_SPECS):
        name = f"{i:03d}-{stack}-{fault}" + ("_fr" if fr else "")
        out.append(dict(name=name, index=i, stack=stack, fault=fault, rank=rank, step=step, fr=fr,
                        hosts=list(HOST_SETS[i % len(HOST_SETS)])))
    return out


# --------------------------------------------------------------------------- venv
def ensure_venv(venv, deepspeed):
    py = os.path.join(venv, "bin", "python")
    if not os.path.exists(py):
        subprocess.check_call([sys.executable, "-m", "venv", venv])
    pip = [py, "-m", "pip", "install", "-q"]
    # torch pinned exactly: a CPU build of torch 2.13.0 is what pip must take.
    subprocess.check_call(pip + [f"torch=={TORCH_VERSION}"])
    constraint = os.path.join(venv, "torch-constraint.txt")
    with open(constraint, "w") as f:
        f.write(f"torch=={TORCH_VERSION}\n")
    subprocess.check_call(pip + ["-c", constraint] + PACKAGES)
    ok_ds = False
    if deepspeed:
        try:
            subprocess.check_call(pip + ["-c", constraint] + DEEPSPEED_DEPS)
            # deepspeed's setup.py imports torch: no build isolation (else pip would fetch
            # another torch into the build env), no deps, and no prebuilt ops (JIT on CPU).
            env = dict(os.environ, DS_BUILD_OPS="0")
            subprocess.check_call(pip + ["--no-build-isolation", "--no-deps", DEEPSPEED], env=env)
            ok_ds = True
        except subprocess.CalledProcessError as e:
            print(f"deepspeed did not install ({e}); its jobs are skipped", flush=True)
    out = subprocess.check_output([py, "-c", "import torch;print(torch.__version__)"], text=True).strip()
    assert out.startswith(TORCH_VERSION), f"venv has torch {out}, expected {TORCH_VERSION}"
    return py, ok_ds


def versions(py):
    code = ("import importlib.metadata as m, json\n"
            "out={}\n"
            "for p in ['torch','transformers','accelerate','lightning','deepspeed','numpy']:\n"
            "    try: out[p]=m.version(p)\n"
            "    except Exception: pass\n"
            "print(json.dumps(out))")
    return json.loads(subprocess.check_output([py, "-c", code], text=True))


# --------------------------------------------------------------------------- running
def stack_args(job, ckpt_dir, resume):
    args = ["--steps", "40", "--save-dir", ckpt_dir]
    if resume:
        args += ["--resume", resume]
    return args


def make_corrupt_checkpoint(job, work_root, resume_dir):
    """Take the step-20 checkpoint written by this stack's healthy job, truncate it."""
    src_job = [j for j in jobs() if j["stack"] == job["stack"] and j["fault"] == "healthy"][0]
    src = os.path.join(work_root, f"job-{src_job['index']:03d}", "ckpt")
    if os.path.exists(resume_dir):
        shutil.rmtree(resume_dir)
    stack = job["stack"]
    if stack == "ddp":
        f = os.path.join(src, "step_000020.pt")
        dst = os.path.join(resume_dir, "step_000020.pt")
        os.makedirs(resume_dir)
        shutil.copy(f, dst)
        victim, resume = dst, dst
    elif stack == "hf":
        d = os.path.join(src, "checkpoint-20")
        dst = os.path.join(resume_dir, "checkpoint-20")
        shutil.copytree(d, dst)
        victim, resume = os.path.join(dst, "model.safetensors"), dst
    elif stack == "lightning":
        f = sorted(glob.glob(os.path.join(src, "*step=20*.ckpt")))[0]
        dst = os.path.join(resume_dir, os.path.basename(f))
        os.makedirs(resume_dir)
        shutil.copy(f, dst)
        victim, resume = dst, dst
    elif stack == "deepspeed":
        d = os.path.join(src, "global_step20")
        dst = os.path.join(resume_dir, "global_step20")
        shutil.copytree(d, dst)
        with open(os.path.join(resume_dir, "latest"), "w") as fh:
            fh.write("global_step20")
        victim = sorted(glob.glob(os.path.join(dst, "*model_states.pt")))[0]
        resume = resume_dir
    else:
        raise ValueError(stack)
    size = os.path.getsize(victim)
    with open(victim, "r+b") as fh:  # a save cut short: only the first 40% reached disk
        fh.truncate(int(size * 0.4))
    return resume, victim


def run_job(job, py, out_root, work_root, port):
    name, stack, fault = job["name"], job["stack"], job["fault"]
    arch = os.path.join(out_root, name)
    # The work folder and the rendezvous id appear in what torch prints (tracebacks, run folders): neutral
    # names, so that no log line says which fault was injected.
    work = os.path.join(work_root, f"job-{job['index']:03d}")
    for d in (arch, work):
        if os.path.exists(d):
            shutil.rmtree(d)
    meta = os.path.join(work, "meta")
    ckpt = os.path.join(work, "ckpt")
    os.makedirs(meta)
    os.makedirs(ckpt)
    resume = None
    if fault == "corrupt_ckpt":
        resume, victim = make_corrupt_checkpoint(job, work_root, os.path.join(work, "resume"))
        job["corrupted_file"] = victim
    run_dir = os.path.join(work, "run")
    os.makedirs(run_dir)
    for f in list(SCRIPTS.values()) + ["faults.py"]:
        if os.path.exists(os.path.join(HERE, f)):
            shutil.copy(os.path.join(HERE, f), run_dir)

    env = {
        "PATH": os.path.dirname(py) + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "HOME": "/root", "LANG": "C.UTF-8", "PYTHONUNBUFFERED": "1", "PYTHONHASHSEED": "0",
        "PYTHONPATH": run_dir, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "TERM": "dumb",
        "L4L_FAULT": fault, "L4L_FAULT_RANK": str(job["rank"] if job["rank"] is not None else -1),
        "L4L_FAULT_STEP": str(job["step"] if job["step"] is not None else -1),
        "L4L_META_DIR": meta, "GLOO_SOCKET_IFNAME": "lo",
    }
    # the cluster's /etc/hosts: every node name resolves (all on loopback here)
    hosts_file = os.path.join(work, "hosts")
    with open(hosts_file, "w") as f:
        f.write("127.0.0.1 localhost\n" + "".join(f"127.0.1.{i + 1} {h}\n" for i, h in enumerate(job["hosts"])))
    procs = []
    for i, host in enumerate(job["hosts"]):
        hdir = os.path.join(arch, host)
        os.makedirs(hdir)
        nenv = dict(env)
        if job["fr"]:
            prefix = os.path.join(hdir, "fr_trace_")
            nenv.update({"TORCH_NCCL_TRACE_BUFFER_SIZE": "2000", "TORCH_FR_BUFFER_SIZE": "2000",
                         "TORCH_NCCL_DUMP_ON_TIMEOUT": "1", "TORCH_NCCL_DEBUG_INFO_TEMP_FILE": prefix,
                         "TORCH_FR_DUMP_TEMP_FILE": prefix})
        torchrun = [os.path.join(os.path.dirname(py), "torchrun"), "--nnodes", "2", "--nproc-per-node", "2",
                    "--rdzv-backend", "c10d", "--rdzv-endpoint", f"127.0.0.1:{port}",
                    "--rdzv-id", f"run-{job['index']:03d}", "--max-restarts", "0",
                    "--log-dir", os.path.join(hdir, "torchelastic"), "--redirects", "3", "--tee", "3",
                    os.path.join(run_dir, SCRIPTS[stack])] + stack_args(job, ckpt, resume)
        shell = f"hostname {host} && mount --bind {hosts_file} /etc/hosts"
        if fault == "enospc":  # node-local checkpoint disk that is nearly full
            shell += f" && mount -t tmpfs -o size=64k tmpfs {ckpt}"
        shell += f" && cd {run_dir} && exec " + " ".join(torchrun)
        cmd = ["unshare", "--uts", "--mount", "--", "sh", "-c", shell]
        job.setdefault("commands", {})[host] = shell
        console = open(os.path.join(hdir, "console.log"), "wb")  # noqa: SIM115 - closed when the node exits
        procs.append((host, subprocess.Popen(cmd, stdout=console, stderr=subprocess.STDOUT, env=nenv,
                                             cwd=run_dir, start_new_session=True), console))
        if i == 0:
            time.sleep(2.0)  # node 0 hosts the rendezvous store first
    deadline = time.time() + 300
    rcs = {}
    for host, p, console in procs:
        try:
            rcs[host] = p.wait(timeout=max(1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            rcs[host] = p.wait()
        console.close()
    job["exit_codes"] = rcs
    job["meta_dir"] = meta
    return arch


# --------------------------------------------------------------------------- ground truth
def log_files(arch):
    out = []
    for root, dirs, files in os.walk(arch):
        dirs[:] = sorted(d for d in dirs if d != "_meta")
        for f in sorted(files):
            if f == "ground_truth.json" or f.startswith("fr_trace_"):
                continue
            out.append(os.path.join(root, f))
    return out


def find(arch, hosts, pattern, limit=1, prefer=None):
    """(relpath, line) of lines matching pattern in the hosts' logs; first `limit` per file."""
    rx = re.compile(pattern)
    hits = []
    for path in log_files(arch):
        rel = os.path.relpath(path, arch)
        if hosts and rel.split(os.sep)[0] not in hosts:
            continue
        if prefer and not re.search(prefer, rel):
            continue
        n = 0
        with open(path, errors="replace") as f:
            for i, line in enumerate(f, 1):
                if rx.search(line):
                    hits.append({"file": rel.replace(os.sep, "/"), "line": i})
                    n += 1
                    if n >= limit:
                        break
    return hits


def load_meta(meta):
    ranks, inj = {}, []
    for f in glob.glob(os.path.join(meta, "rank-*.json")):
        r = _read_json(f)
        ranks[r["rank"]] = r
    for f in sorted(glob.glob(os.path.join(meta, "injection-*.json"))):
        inj.append(_read_json(f))
    return ranks, inj


def build_truth(job, arch):
    stack, fault = job["stack"], job["fault"]
    ranks, inj = load_meta(job["meta_dir"])
    problems = []
    if len(ranks) != 4:
        problems.append(f"only {len(ranks)} ranks registered")
    hosts = job["hosts"]
    rank_host = {r: m["host"] for r, m in ranks.items()}
    first = inj[0] if inj else None
    evidence, faulty_nodes, faulty_rank, iteration = [], [], None, None

    def need(pattern, where, limit=1, prefer=None, required=True):
        hits = find(arch, where, pattern, limit, prefer)
        if not hits and required:
            problems.append(f"proof line /{pattern}/ not found in {where or 'any host'}")
        evidence.extend(h for h in hits if h not in evidence)
        return hits

    if fault != "healthy" and fault != "corrupt_ckpt" and not inj:
        problems.append("fault was never injected")
    if fault == "healthy":
        for h, rc in job["exit_codes"].items():
            if rc != 0:
                problems.append(f"{h} exited {rc}")
        if not find(arch, None, FINISH[stack]):
            problems.append("no end-of-training line")
    elif fault in ("exception", "sigkill", "hang", "data") and first:
        faulty_rank = first["rank"]
        fh = rank_host.get(faulty_rank)
        faulty_nodes = [fh]
        lr = ranks[faulty_rank]["local_rank"]
        pid = ranks[faulty_rank]["pid"]
        iteration = first["step"]
        if fault == "exception":
            need(r"RuntimeError: shape mismatch in attention block", [fh], prefer=rf"attempt_0/{lr}/stderr\.log")
            need(r"RuntimeError: shape mismatch in attention block", [fh], prefer=r"console\.log")
            need(rf"failed \(exitcode: 1\) local_rank: {lr} \(pid: {pid}\)", [fh])
        elif fault == "sigkill":
            need(rf"failed \(exitcode: -9\) local_rank: {lr} \(pid: {pid}\)", [fh])
            need(rf"Signal 9 \(SIGKILL\) received by PID {pid}", [fh])
        elif fault == "hang":
            need(rf"Sending process {pid} closing signal SIGTERM", [fh])
            need(r"[Tt]imed out|[Tt]imeout", [fh], required=False)
        elif fault == "data":
            need(r"JSONDecodeError: ", [fh], prefer=rf"attempt_0/{lr}/stderr\.log")
            need(r"JSONDecodeError: ", [fh], prefer=r"console\.log")
            need(rf"failed \(exitcode: 1\) local_rank: {lr} \(pid: {pid}\)", [fh])
    elif fault == "nan" and first:
        iteration = first["step"]
        need(NAN[stack], None, limit=1)
        faulty_nodes = []  # DDP averages the bad gradient into every replica: no node stands out
    elif fault == "enospc":
        faulty_rank = 0
        fh = rank_host.get(0)
        faulty_nodes = [fh]
        iteration = first["step"] if first else 20
        need(r"No space left on device|file write failed|unexpected pos", [fh], limit=2)
    elif fault == "corrupt_ckpt":
        faulty_nodes = []  # every rank reads the same truncated file
        iteration = None
        need(r"PytorchStreamReader failed|central directory|[Dd]eserializ|SafetensorError|UnpicklingError"
             r"|EOFError|incomplete metadata|Ran out of input|MetadataIncompleteBuffer", None, limit=1)
    evidence = evidence[:8]
    fault_time = first["time"] if first else None
    if fault == "corrupt_ckpt" and not first:
        problems.append("resume was never attempted")

    notes = describe(job, first, rank_host)
    truth = {
        "schema": "l4lite.ground_truth/1",
        "scenario": f"{stack}-{fault}",
        "status": "healthy" if fault == "healthy" else "incident",
        "faulty_nodes": faulty_nodes,
        "phase": PHASE[fault],
        "iteration": iteration,
        "category": CATEGORY[fault],
        "fault_time": fault_time,
        "evidence": evidence,
        "format": FORMATS[stack],
        "layout": "torchelastic-logdir",
        "node_names": hosts,
        "nodes": 2,
        "gpus_per_node": 2,
        "world_size": 4,
        "faulty_rank": faulty_rank,
        "notes": notes,
        "flight_recorder": bool(job["fr"]),
        "rank_hosts": {str(r): h for r, h in sorted(rank_host.items())},
        "exit_codes": job["exit_codes"],
    }
    return truth, problems


def describe(job, first, rank_host):
    s, f, r = job["stack"], job["fault"], job["rank"]
    h = rank_host.get(first["rank"]) if first else None
    if f == "healthy":
        return f"Healthy {s} run: 40 steps of DDP over gloo on 2 nodes x 2 ranks, checkpoints at steps 20 and 40."
    if f == "exception":
        return (f"Global rank {r} on {h} raises RuntimeError from user code at step {job['step']}; "
                "torchrun reports exitcode 1 for it, the other ranks fail in the next collective (peer gone) "
                "and their agents tear the job down.")
    if f == "sigkill":
        return (f"Global rank {r} on {h} is SIGKILLed at step {job['step']} (as the kernel OOM killer would); "
                "its agent reports exitcode -9 / Signal 9 (SIGKILL), the peers lose their gloo connection.")
    if f == "hang":
        extra = (" Flight recorder on (TORCH_FR_BUFFER_SIZE=2000); gloo does not dump on timeout in torch 2.13, "
                 "so each rank writes torch's own _dump_fr_trace() pickle to <host>/fr_trace_<rank> from its "
                 "failure handler (the stuck rank on SIGTERM); torch's fr_trace analysis is in "
                 "_meta/fr_trace_analysis.txt.") if job["fr"] else ""
        if job["fr"] and s == "deepspeed":
            extra += (" DeepSpeed all-reduces on a second gloo group (pg 1); the analyser cannot resolve "
                      "its members from the gloo dumps (expected ranks: set()), so its output here does "
                      "not name the stuck rank.")
        return (f"Global rank {r} on {h} stops before its step-{job['step']} forward (sleeps forever); the "
                "other ranks block in the gradient all-reduce until the 30 s gloo timeout, then fail; the "
                f"agent on {h} sends SIGTERM to the stuck rank." + extra)
    if f == "nan":
        return (f"At step {job['step']} one weight on global rank {r} is set to NaN; DDP averages the NaN gradient "
                "into every replica, so the loss is non-finite on all ranks from then on "
                f"({'the script stops with FloatingPointError' if s in ('ddp', 'deepspeed') else 'HF keeps logging nan loss to the end' if s == 'hf' else 'EarlyStopping(check_finite) stops the run'}).")
    if f == "enospc":
        return ("The checkpoint folder of each node is a 64 KiB tmpfs; rank 0's checkpoint save at step 20 "
                f"fails with ENOSPC (No space left on device) on {h}.")
    if f == "corrupt_ckpt":
        return (f"The job resumes from a checkpoint truncated to 40% of its size ({os.path.basename(job.get('corrupted_file', ''))}); "
                "every rank fails while loading it, before training starts.")
    if f == "data":
        return (f"Sample {job['step']} of the synthetic dataset is a truncated JSON record; the rank whose "
                f"shard holds it (global rank {first['rank'] if first else '?'} on {h}) raises JSONDecodeError "
                "in its data loader, the others lose their peer.")
    return ""


NORMALIZE_FR = """
import glob, pickle, sys
for f in glob.glob(sys.argv[1] + "/fr_trace_*"):
    d = pickle.load(open(f, "rb"))
    pc = d.get("pg_config", {})
    if "" in pc:  # gloo records its groups before they are named, all under ""
        ranks = pc.pop("")["ranks"]
        for e in d.get("entries", []):  # every group seen here spans all ranks (world / DP group)
            name, desc = e["process_group"]
            pc.setdefault(name, {"name": name, "desc": desc, "ranks": ranks})
        pc.setdefault("0", {"name": "0", "desc": "default_pg", "ranks": ranks})
    pickle.dump(d, open(f, "wb"))
"""


def flight_recorder_analysis(job, arch, py):
    """Run torch's analyser on the dumps as written; torch 2.13 gloo dumps carry the default
    group's pg_config under an empty name, which the analyser cannot match (KeyError), so it is
    also run on copies where that one key is renamed to the group's name ("0"/default_pg)."""
    raw = os.path.join(job["meta_dir"], "fr")
    fixed = os.path.join(job["meta_dir"], "fr_named")
    for d in (raw, fixed):
        if os.path.exists(d):
            shutil.rmtree(d)
        os.makedirs(d)
    dumps = []
    for h in job["hosts"]:
        for f in sorted(glob.glob(os.path.join(arch, h, "fr_trace_*"))):
            shutil.copy(f, raw)
            shutil.copy(f, fixed)
            dumps.append(os.path.relpath(f, arch))
    subprocess.run([py, "-c", NORMALIZE_FR, fixed], check=True)
    flags = ["--allow-incomplete-ranks"] if len(dumps) < 4 else []
    text = ""
    rcs = []
    for title, d in (("dumps as written", raw),
                     ("copies whose unnamed gloo pg_config entry is filed under each group name seen in the entries", fixed)):
        cmd = [py, "-m", "torch.distributed.flight_recorder.fr_trace", d, "--prefix", "fr_trace_"] + flags
        p = subprocess.run(cmd, capture_output=True, text=True, cwd=d)
        rcs.append(p.returncode)
        text += (f"##### {title}\n$ python -m torch.distributed.flight_recorder.fr_trace <dir with "
                 f"{', '.join(sorted(dumps))}> --prefix fr_trace_ {' '.join(flags)}\n# exit code {p.returncode}\n"
                 + p.stdout + (("\n# stderr\n" + p.stderr) if p.stderr.strip() else "") + "\n")
    os.makedirs(os.path.join(arch, "_meta"), exist_ok=True)
    with open(os.path.join(arch, "_meta", "fr_trace_analysis.txt"), "w") as f:
        f.write(text.replace(raw, "<dumps>").replace(fixed, "<dumps-named>"))
    return dumps, rcs


def count_lines(arch):
    n = 0
    for p in log_files(arch):
        with open(p, "rb") as f:
            n += sum(1 for _ in f)
    return n


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--venv", default=os.environ.get("L4L_REALJOBS_VENV", "/tmp/l4lite-realjobs-venv"))
    ap.add_argument("--out", default=os.path.join(REPO, "fixtures", "real_jobs"))
    ap.add_argument("--work", default="/tmp/l4lite-realjobs/work", help="checkpoints, scripts, side records")
    ap.add_argument("--only", default=None, help="regex on job names")
    ap.add_argument("--skip-install", action="store_true")
    ap.add_argument("--no-deepspeed", action="store_true")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--port", type=int, default=29400)
    args = ap.parse_args()

    if args.list:
        for j in jobs():
            print(j["name"], j["hosts"], "rank", j["rank"], "step", j["step"])
        return 0
    if os.geteuid() != 0:
        sys.exit("generate.py needs root (unshare --uts --mount, tmpfs mounts)")
    if args.skip_install:
        py, ok_ds = os.path.join(args.venv, "bin", "python"), not args.no_deepspeed
    else:
        py, ok_ds = ensure_venv(args.venv, not args.no_deepspeed)
    vers = versions(py)
    ok_ds = ok_ds and "deepspeed" in vers
    print("versions:", vers, flush=True)
    os.makedirs(args.out, exist_ok=True)
    os.makedirs(args.work, exist_ok=True)

    selected = [j for j in jobs() if (not args.only or re.search(args.only, j["name"]))]
    results = []
    for j in selected:
        if j["stack"] == "deepspeed" and not ok_ds:
            print(f"SKIP {j['name']}: deepspeed unavailable", flush=True)
            continue
        if not os.path.exists(os.path.join(HERE, SCRIPTS[j["stack"]])):
            print(f"SKIP {j['name']}: no {SCRIPTS[j['stack']]}", flush=True)
            continue
        t0 = time.time()
        arch = run_job(j, py, args.out, args.work, args.port + 2 * j["index"])
        truth, problems = build_truth(j, arch)
        if j["fr"]:
            dumps, rcs = flight_recorder_analysis(j, arch, py)
            if rcs[-1] != 0:
                problems.append("torch's fr_trace analyser failed on the dumps")
            truth["flight_recorder_dumps"] = sorted(dumps)
            if len(dumps) < 3:
                problems.append(f"only {len(dumps)} flight recorder dumps")
        dt = time.time() - t0
        if problems:
            print(f"INVALID {j['name']} ({dt:.0f}s): " + "; ".join(problems), flush=True)
            bad = arch + ".invalid"
            if os.path.exists(bad):
                shutil.rmtree(bad)
            shutil.move(arch, os.path.join(args.work, f"job-{j['index']:03d}", "archive.invalid"))
            results.append((j, None))
            continue
        truth["lines"] = count_lines(arch)
        os.makedirs(os.path.join(arch, "_meta"), exist_ok=True)
        with open(os.path.join(arch, "_meta", "run.json"), "w") as f:
            json.dump({"commands": j["commands"], "versions": vers,
                       "ranks": load_meta(j["meta_dir"])[0], "injections": load_meta(j["meta_dir"])[1]},
                      f, indent=1, sort_keys=True)
        with open(os.path.join(arch, "ground_truth.json"), "w") as f:
            json.dump(truth, f, indent=2)
            f.write("\n")
        print(f"OK {j['name']} ({dt:.0f}s) hosts={j['hosts']} faulty={truth['faulty_nodes']} "
              f"rank={truth['faulty_rank']} evidence={len(truth['evidence'])} exits={j['exit_codes']}", flush=True)
        results.append((j, truth))

    write_suite(args.out)
    write_readme(args.out, vers)
    bad = [j["name"] for j, t in results if t is None]
    print(f"{len(results) - len(bad)} jobs written, {len(bad)} invalid {bad}", flush=True)
    return 1 if bad else 0


def write_suite(out):
    rows = []
    for gt in sorted(glob.glob(os.path.join(out, "*", "ground_truth.json"))):
        t = _read_json(gt)
        rows.append({"job": os.path.basename(os.path.dirname(gt)), "scenario": t["scenario"],
                     "status": t["status"], "category": t["category"], "phase": t["phase"],
                     "faulty_nodes": t["faulty_nodes"], "format": t["format"], "layout": t["layout"],
                     "lines": t.get("lines")})
    with open(os.path.join(out, "suite.json"), "w") as f:
        json.dump({"jobs": rows}, f, indent=2)
        f.write("\n")


README_HEAD = """# Real jobs: failed (and healthy) multi-node training runs, for real

Every job here is a real run on CPUs: 2 simulated nodes x 2 ranks (world size 4), DDP over
gloo. Each node is its own UTS + mount namespace with its own hostname
(`unshare --uts --mount`), launched with
`torchrun --nnodes 2 --nproc-per-node 2 --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:PORT
--max-restarts 0 --log-dir <host>/torchelastic --redirects 3 --tee 3`; the nodes meet in the
c10d rendezvous on 127.0.0.1 (node names resolve through a per-job /etc/hosts bound into the
namespaces, 127.0.1.x). Faults are injected by `benchmarks/real_jobs/faults.py`, which prints
nothing: every log line was written by torchrun, torch, the training stack or the training
script's ordinary logging.

Layout of a job (`layout: torchelastic-logdir`):

    <NNN-stack-fault>/
      ground_truth.json          l4lite.ground_truth/1 (+ faulty_rank, rank_hosts, exit_codes)
      <host>/console.log         what torchrun printed on that node (stdout+stderr, --tee 3)
      <host>/torchelastic/<rdzv-id>_<random>/attempt_0/<local_rank>/{stdout,stderr}.log, error.json
      <host>/fr_trace_<rank>     flight-recorder dumps (pickle), *_fr jobs only
      _meta/run.json             commands per node, versions, rank->host/pid map, injection record
      _meta/fr_trace_analysis.txt  torch's own fr_trace analyser output (*_fr jobs only)

`_meta/` is not a log: it is the generator's side record.

## Regenerate

As root, from the repository root (about 30-40 minutes on 2 cores):

    python3 benchmarks/real_jobs/generate.py            # creates /tmp/l4lite-realjobs-venv, runs every job
    python3 benchmarks/real_jobs/generate.py --only 'hf-' --skip-install   # a subset

See `benchmarks/real_jobs/README.md`. Runs are deterministic in what happens (which rank fails,
at which step, with which error); timestamps, pids, ports and torchrun's random log-dir
suffix change from run to run.
"""


def write_readme(out, vers):
    rows = []
    for gt in sorted(glob.glob(os.path.join(out, "*", "ground_truth.json"))):
        t = _read_json(gt)
        rows.append(f"| {os.path.basename(os.path.dirname(gt))} | {t['format']} | {t['scenario'].split('-', 1)[1]} "
                    f"| {', '.join(t['node_names'])} | {', '.join(t['faulty_nodes']) or '-'} "
                    f"| {'-' if t['faulty_rank'] is None else t['faulty_rank']} | {t['category'] or '-'} "
                    f"| {t['phase'] or '-'} | {'-' if t['iteration'] is None else t['iteration']} | {t['notes']} |")
    text = README_HEAD + "\n## Versions\n\n" + "".join(f"- {k} {v}\n" for k, v in sorted(vers.items()))
    text += ("- Python " + sys.version.split()[0] + "\n\n## Jobs\n\n"
             "| job | stack | fault | hosts | faulty node | faulty rank | category | phase | iteration | what happened |\n"
             "|---|---|---|---|---|---|---|---|---|---|\n" + "\n".join(rows) + "\n")
    with open(os.path.join(out, "README.md"), "w") as f:
        f.write(text)


if __name__ == "__main__":
    sys.exit(main())
