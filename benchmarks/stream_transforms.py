"""Archive shapes of collected logs as transforms of a job (``benchmarks/archive_variants.py``): what ``kubectl
logs --prefix`` prints for a job's pods, Slurm's ``--output`` files named by host (``%N``) or by task id (``%t``)
in one folder. No path of these names a node folder; the node is the host a prefix, a file name or the lines
name.
"""

from __future__ import annotations

from archive_transforms import LOG_DIR, Job, Out, Variant, copy_of, texts

JOB_NAME, JOB_ID = "train", 4242


def _nodes(job: Job) -> list[str]:
    return sorted({s.node for s in job.srcs if s.node})


def _per_node(job: Job, name: str) -> tuple[dict[str, Out], list[Out]]:
    """Each node's text files in one stream (the task's stdout as Slurm writes it), named by ``name`` with the
    node's folder and index; torchelastic's ``--log-dir`` files stay files in a shared log folder (the agent writes
    them to disk, not to the task's stdout), dumps stay files; a top-level file is the batch script's own."""
    nodes = _nodes(job)
    streams: dict[str, Out] = {}
    kept: list[Out] = []
    for s in texts(job):
        if s.node and (m := LOG_DIR.search(s.rel)):
            kept.append(copy_of(s, "logs/" + m[1]))
            continue
        rel = name.format(host=s.node, task=nodes.index(s.node)) if s.node else f"{JOB_NAME}-{JOB_ID}.out"
        streams.setdefault(rel, Out(rel)).add(s)
    dumps = [copy_of(s, "dumps/" + s.rel.replace("/", "_")) for s in job.srcs if s.lines is None]
    return streams, [*kept, *dumps]


def slurm_by_host(job: Job) -> Variant:
    """``sbatch --output=%x-%j-%N.out``: one file per node named by its host, all in the submit folder."""
    streams, kept = _per_node(job, f"{JOB_NAME}-{JOB_ID}-{{host}}.out")
    return Variant([*streams.values(), *kept])


def slurm_by_task(job: Job) -> Variant:
    """``srun --output=%x-%j-%t.out``: one file per task (one task per node), named by the task id: no path names
    a host, the suspect must be the host the lines name."""
    streams, kept = _per_node(job, f"{JOB_NAME}-{JOB_ID}-{{task}}.out")
    return Variant([*streams.values(), *kept])


def _pod(i: int) -> str:
    return f"{JOB_NAME}-worker-{i}"


def kubectl_prefix(job: Job) -> Variant:
    """``kubectl logs -l job-name=train --prefix --all-containers``: every pod's log in turn, each line after
    ``[pod/<pod>/<container>] ``; the pod stands for its node (a pod named as the suspect is the node's)."""
    nodes = _nodes(job)
    out = Out("kubectl-logs.txt")
    for s in texts(job):
        pod = _pod(nodes.index(s.node)) if s.node else f"{JOB_NAME}-launcher"
        out.add(s, f"[pod/{pod}/{JOB_NAME}] ".encode())
    out.mtime = None
    dumps = [copy_of(s, "dumps/" + s.rel.replace("/", "_")) for s in job.srcs if s.lines is None]
    return Variant([out, *dumps], {_pod(i): n for i, n in enumerate(nodes)})


STREAM_TRANSFORMS = {
    "slurm-output-host": slurm_by_host,
    "slurm-output-task": slurm_by_task,
    "kubectl-prefix": kubectl_prefix,
}

