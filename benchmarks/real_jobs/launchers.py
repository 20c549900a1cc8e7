"""Launchers of the stacks that do not start under torchrun: a 2-node Ray cluster with a Ray Train driver, and
JAX multi-process (2 processes per node, `jax.distributed.initialize`).

Each node is still its own `unshare --uts --mount` namespace with its own hostname (generate.py's `node_shell`
prefix). What is archived is what an engineer collects from such a job:

- Ray: each node's session logs folder (`/tmp/ray/session_*/logs`, made per node by binding a node folder over
  `/tmp/ray` in its namespace) as `<host>/ray/session_*/logs/...`, and the driver's stdout+stderr as
  `<head host>/driver.log`; or, in the `kubernetes-pods` layout, one CRI pod log per node holding what the
  node's `ray start --block` and (on the head pod) the driver printed, as `kubectl logs` shows a KubeRay job.
- JAX: each process's stdout+stderr as `<host>/process_<id>.log`; or, in the `srun-label` layout, one
  `slurm-NNNN.out` as `srun --ntasks 4 --ntasks-per-node 2 --label` writes it (task id = process id).
"""
import contextlib
import glob
import json
import os
import shutil
import signal
import subprocess
import time
import uuid

import capture

RAY_RESOURCES = ["--num-cpus", "2", "--object-store-memory", str(80 * 1024 * 1024), "--disable-usage-stats"]


def _spawn(cmd, env, cwd, out=None, sink=None):
    """Start `cmd` in its own session: output to the open file `out`, or line by line into `sink`."""
    if out is not None:
        return subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=cwd,
                                start_new_session=True), None
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=cwd,
                         start_new_session=True)
    return p, [capture.StreamCapture(p.stdout, "stdout", sink), capture.StreamCapture(p.stderr, "stderr", sink)]


def _wait(p, deadline):
    try:
        return p.wait(timeout=max(1, deadline - time.time()))
    except subprocess.TimeoutExpired:  # a scheduler's time limit: SIGTERM, then SIGKILL
        os.killpg(p.pid, signal.SIGTERM)
        try:
            return p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            return p.wait()


def run_ray(job, py, node_shell, addr, port, arch, work, env, script_args, deadline):
    """Head node: `ray start --head`, the driver, `ray stop`; worker node: `ray start --address --block`. Each
    node is also its own PID namespace, so that ending it ends every Ray process it started. Returns
    {host: exit code} (the driver's for the head node) and fills `arch`."""
    bindir = os.path.dirname(py)
    ray = os.path.join(bindir, "ray")
    hosts = job["hosts"]
    k8s = job["layout"] == "kubernetes-pods"
    roots = {h: os.path.join(work, f"ray-{h}") for h in hosts}
    sinks = {h: [] for h in hosts}
    procs, files = [], []
    env = dict(env, RAY_ADDRESS=f"{addr[0]}:{port}")
    for i, h in enumerate(hosts):
        os.makedirs(roots[h])
        os.makedirs(os.path.join(arch, h), exist_ok=True)
        common = ["--node-ip-address", addr[i], "--dashboard-agent-listen-port", str(port + 20000 + i)] + RAY_RESOURCES
        shell = node_shell(h, i) + f" && mkdir -p /tmp/ray && mount --bind {roots[h]} /tmp/ray"
        if i == 0:
            driver = " ".join([py, os.path.join(work, "run", "train_ray.py")] + script_args)
            if not k8s:
                driver += f" > {os.path.join(arch, h, 'driver.log')} 2>&1"
            shell += (f" && {ray} start --head --port {port} --include-dashboard=false " + " ".join(common)
                      + f" && {{ {driver}; rc=$?; sleep 2; {ray} stop; exit $rc; }}")
        else:
            shell += f" && exec {ray} start --block --address {addr[0]}:{port} " + " ".join(common)
        job.setdefault("commands", {})[h] = shell
        cmd = ["unshare", "--uts", "--mount", "--pid", "--fork", "--kill-child=SIGTERM", "--mount-proc", "--",
               "sh", "-c", shell]
        if k8s:
            p, readers = _spawn(cmd, env, work, sink=sinks[h])
        else:
            f = open(os.path.join(work, f"ray-start-{h}.log"), "wb")  # noqa: SIM115 - closed below
            files.append(f)
            p, readers = _spawn(cmd, env, work, out=f)
        procs.append((h, p, readers))
        if i == 0:
            time.sleep(6.0)  # the head's GCS first, then the worker node registers
    rcs = {hosts[0]: _wait(procs[0][1], deadline)}
    time.sleep(2.0)  # the worker node's raylet writes its last lines
    for h, p, _ in procs[1:]:
        with contextlib.suppress(ProcessLookupError):  # unshare passes it to `ray start --block`: its node stops
            p.send_signal(signal.SIGTERM)
        rcs[h] = _wait(p, time.time() + 20)
        job.setdefault("stopped_nodes", []).append(h)  # stopped once the driver ended: its code says nothing
    for _, _, readers in procs:
        for r in readers or []:
            r.join()
    for f in files:
        f.close()
    if k8s:
        for h in hosts:
            d = os.path.join(arch, f"training_{h}_{uuid.uuid4()}", "ray-head" if h == hosts[0] else "ray-worker")
            os.makedirs(d)
            with open(os.path.join(d, "0.log"), "wb") as f:
                f.writelines(capture.cri_lines(sinks[h]))
            shutil.rmtree(os.path.join(arch, h), ignore_errors=True)
    else:
        for h in hosts:
            for s in sorted(glob.glob(os.path.join(roots[h], "session_2*"))):
                shutil.copytree(os.path.join(s, "logs"), os.path.join(arch, h, "ray", os.path.basename(s), "logs"),
                                ignore=shutil.ignore_patterns("*.pid", "*.sock"), symlinks=False)
            prune_empty(os.path.join(arch, h))
    return rcs


def prune_empty(root):
    """Drop empty files and folders: an engineer's tarball of a session folder carries them, but they say
    nothing and only lengthen the listing."""
    for d, _, files in os.walk(root, topdown=False):
        for f in files:
            p = os.path.join(d, f)
            if os.path.getsize(p) == 0:
                os.remove(p)
        if not os.listdir(d):
            os.rmdir(d)


def run_jax(job, py, node_shell, addr, port, arch, work, env, script_args, deadline, per_node=2, netns=None):
    """`per_node` processes on each node, process id = node index * per_node + local index; process 0 hosts
    the coordination service; `netns`: [(network namespace, interface)] per node, when each node has its own.
    Returns {host: worst exit code of its processes}."""
    hosts = job["hosts"]
    n = per_node * len(hosts)
    srun = job["layout"] == "srun-label"
    procs, files, sinks = [], [], {}
    for i, h in enumerate(hosts):
        os.makedirs(os.path.join(arch, h), exist_ok=True)
        for k in range(per_node):
            pid = i * per_node + k
            prog = [py, os.path.join(work, "run", "train_jax.py"), f"--coordinator={addr[0]}:{port}",
                    f"--num_processes={n}", f"--process_id={pid}"] + script_args
            shell = node_shell(h, i) + " && exec " + " ".join(prog)
            job.setdefault("commands", {})[f"{h}/{pid}"] = shell
            cmd = ["unshare", "--uts", "--mount", "--", "sh", "-c", shell]
            nenv = env
            if netns:
                cmd = ["ip", "netns", "exec", netns[i][0]] + cmd
                nenv = dict(env, GLOO_SOCKET_IFNAME=netns[i][1], L4L_NET_DEV=netns[i][1])
            if srun:
                sinks[pid] = []
                p, readers = _spawn(cmd, nenv, work, sink=sinks[pid])
            else:
                f = open(os.path.join(arch, h, f"process_{pid}.log"), "wb")  # noqa: SIM115 - closed below
                files.append(f)
                p, readers = _spawn(cmd, nenv, work, out=f)
            procs.append((h, p, readers))
    rcs = {}
    for h, p, readers in procs:
        rc = _wait(p, deadline)
        rcs[h] = rc if rcs.get(h, 0) == 0 else rcs[h]
        for r in readers or []:
            r.join()
    for f in files:
        f.close()
    if srun:
        nlines = capture.write_srun_label(os.path.join(arch, f"slurm-{4100 + job['index']}.out"), sinks)
        job["layout_note"] = f"{nlines} lines of the 4 tasks' stdout and stderr in arrival order, task id first"
        job["task_hosts"] = [hosts[t // per_node] for t in range(n)]
        for h in hosts:
            open(os.path.join(arch, h, "kern.log"), "w").close()
    return rcs


def run_tf(job, py, node_shell, addr, port, arch, work, env, script_args, deadline, per_node=2):
    """TensorFlow `MultiWorkerMirroredStrategy`: `per_node` workers on each node, each with its own `TF_CONFIG`
    (the 4 workers' host:port, its index; worker 0 is the chief). Archived as each worker's stdout+stderr,
    `<host>/worker_<index>.log`. Returns {host: worst exit code of its workers}."""
    hosts = job["hosts"]
    cluster = [f"{hosts[i]}:{port + 10000 + i * per_node + k}" for i in range(len(hosts)) for k in range(per_node)]
    procs, files = [], []
    for i, h in enumerate(hosts):
        os.makedirs(os.path.join(arch, h), exist_ok=True)
        for k in range(per_node):
            index = i * per_node + k
            tf_config = json.dumps({"cluster": {"worker": cluster}, "task": {"type": "worker", "index": index}})
            prog = [py, os.path.join(work, "run", "train_tf.py")] + script_args
            shell = node_shell(h, i) + " && exec " + " ".join(prog)
            job.setdefault("commands", {})[f"{h}/{index}"] = f"TF_CONFIG='{tf_config}' " + shell
            cmd = ["unshare", "--uts", "--mount", "--", "sh", "-c", shell]
            f = open(os.path.join(arch, h, f"worker_{index}.log"), "wb")  # noqa: SIM115 - closed below
            files.append(f)
            p, readers = _spawn(cmd, dict(env, TF_CONFIG=tf_config), work, out=f)
            procs.append((h, p, readers))
    rcs = {}
    for h, p, _ in procs:
        rc = _wait(p, deadline)
        rcs[h] = rc if rcs.get(h, 0) == 0 else rcs[h]
    for f in files:
        f.close()
    return rcs
