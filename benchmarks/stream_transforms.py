"""Archive shapes of collected logs as transforms of a job (``benchmarks/archive_variants.py``): what ``kubectl
logs --prefix`` prints for a job's pods, Slurm's ``--output`` files named by host (``%N``) or by task id (``%t``)
in one folder. No path of these names a node folder; the node is the host a prefix, a file name or the lines
name.
"""

from __future__ import annotations

import re

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


# a kubelet's pod log folder: ``<namespace>_<pod>_<uid>``
_POD_DIR = re.compile(r"[^_/]+_([a-z0-9][a-z0-9.-]*)_[0-9a-f]{8}-[0-9a-f-]{27}")


def _pods(job: Job) -> dict[str, str]:
    """Node folder -> its pod's name: the pod of a kubelet's folder, else the pod a training operator names
    (``train-worker-N``)."""
    return {n: m[1] if (m := _POD_DIR.fullmatch(n)) else f"{JOB_NAME}-worker-{i}" for i, n in enumerate(_nodes(job))}


def node_name(job: Job, folder: str) -> str:
    """The node a folder stands for: the job's node name it spells (a kubelet's folder names its pod's)."""
    names = [n for n in job.truth.get("node_names") or () if n in folder]
    return max(names, key=len) if names else folder


# the kubelet's CRI prefix of a container's log file: kubectl prints the line without it (``--timestamps``: its time)
_CRI = re.compile(rb"^(\d{4}-\d\d-\d\dT[\d:.]+(?:Z|[+-]\d\d:\d\d)) std(?:out|err) F ")


def _uncri(line: bytes) -> bytes:
    """A prefixed line as kubectl prints it: a container log file's CRI prefix read as its time alone."""
    cut = line.index(b"] ") + 2
    return line[:cut] + _CRI.sub(rb"\1 ", line[cut:], count=1)


def kubectl_prefix(job: Job) -> Variant:
    """``kubectl logs -l job-name=train --prefix --all-containers --timestamps``: every pod's log in turn, each
    line after ``[pod/<pod>/<container>] `` and the time the runtime received it; the pod stands for its node (a
    pod named as the suspect is the node's). A launcher's files outside the node folders are saved beside."""
    pods = _pods(job)
    out = Out("kubectl-logs.txt")
    for s in texts(job):
        if s.node:
            out.add(s, f"[pod/{pods[s.node]}/{JOB_NAME}] ".encode())
    top = [copy_of(s) for s in texts(job) if not s.node]  # the launcher's own files, saved beside
    out.lines = [_uncri(ln) for ln in out.lines]
    out.mtime = None
    dumps = [copy_of(s, "dumps/" + s.rel.replace("/", "_")) for s in job.srcs if s.lines is None]
    return Variant([out, *top, *dumps], {p: node_name(job, n) for n, p in pods.items()})


STREAM_TRANSFORMS = {
    "slurm-output-host": slurm_by_host,
    "slurm-output-task": slurm_by_task,
    "kubectl-prefix": kubectl_prefix,
}

