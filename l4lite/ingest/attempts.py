"""Attempts of a job: the runs a restarted job leaves side by side, each in its own files.

Kubernetes keeps a container's logs per restart, so a pod that crashed and came back leaves one file per run:

- the kubelet's ``/var/log/pods/<namespace>_<pod>_<uid>/<container>/<restart>.log`` (``0.log``, ``1.log``; a
  rotated piece ``0.log.20241203-144221`` belongs to its restart; a pod created again has a new uid folder);
- ``/var/log/containers/<pod>_<namespace>_<container>-<id>.log``, a link to the current restart's file (a copy of
  it when a collector copied the tree: the same lines twice, so it is dropped beside the pod's folder);
- ``kubectl logs --previous`` saved next to the current one: ``<pod>.previous.log`` (or ``-previous``,
  ``_previous``) beside ``<pod>.log``.

As torchelastic's ``attempt_N`` folders, these names are layout: the restart number is never a node, the pod
is (or the host its lines name, as the job context decides). ``job_attempts`` numbers a job's attempts: each
pod's runs in order (restart number, a newer pod's uid folder after an older one by the time of their first
lines, the previous file before the current), and attempt ``N`` is every pod's ``N``-th run, so a job whose pods
are restarted together (a static rendezvous: one crash fails them all) has attempts that match its restarts.
Files of no attempt (a node's dmesg) go with the last attempt.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

# <namespace>_<pod>_<uid>: DNS-1123 names and the pod's UID
POD_DIR = re.compile(r"([a-z0-9](?:[-a-z0-9]*[a-z0-9])?)_([a-z0-9](?:[-.a-z0-9]*[a-z0-9])?)_"
                     r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$")
_RESTART_FILE = re.compile(r"(\d+)\.log(?:\.\d{8}-\d{6}(?:\.gz)?)?$")
# <pod>_<namespace>_<container>-<64 hex container id>.log
_CONTAINER_LINK = re.compile(r"([a-z0-9](?:[-.a-z0-9]*[a-z0-9])?)_([a-z0-9](?:[-a-z0-9]*[a-z0-9])?)_"
                             r"([a-z0-9](?:[-a-z0-9]*[a-z0-9])?)-([0-9a-f]{64})\.log$")
_PREVIOUS = re.compile(r"(.+?)[._-]previous(\.(?:log|txt|out))?$")


@dataclass(frozen=True)
class AttemptFile:
    """Where a file sits in a restart layout: the pod it belongs to, the run (``uid`` folder, restart number;
    ``restart`` -1 for a ``--previous`` file, None for the current file) and the layout that says so."""

    pod: str
    container: str
    uid: str
    restart: int | None
    kind: str  # "kubelet", "container-link", "kubectl-previous", "kubectl-current"


@dataclass
class Attempt:
    """One attempt of the job: its number (0 first), the files of its runs, and the pods that ran in it."""

    number: int
    files: list[str] = field(default_factory=list)
    pods: list[str] = field(default_factory=list)


def attempt_file(rel: str) -> AttemptFile | None:
    """A file's place in a Kubernetes restart layout, or None."""
    parts = rel.replace("\\", "/").split("/")
    name = parts[-1]
    if len(parts) >= 3:
        m, pod_dir = _RESTART_FILE.fullmatch(name), POD_DIR.fullmatch(parts[-3])
        if m and pod_dir:
            return AttemptFile(pod_dir[2], parts[-2], pod_dir[3], int(m[1]), "kubelet")
    m = _CONTAINER_LINK.fullmatch(name)
    if m:
        return AttemptFile(m[1], m[3], "", None, "container-link")
    m = _PREVIOUS.fullmatch(name)
    if m:
        return AttemptFile(m[1], "", "", -1, "kubectl-previous")
    return None


def pod_of_dir(name: str) -> str | None:
    """The pod of a kubelet folder name ``<namespace>_<pod>_<uid>``: that is the node level's name for it."""
    m = POD_DIR.fullmatch(name)
    return m[2] if m else None


def pod_of_file(name: str) -> str | None:
    """The pod a file name of a restart layout names (``<pod>_<ns>_<ctr>-<id>.log``, ``<pod>.previous.log``);
    a kubelet restart file (``0.log``) names none: its folder does."""
    found = attempt_file(name)
    return found.pod if found is not None and found.kind != "kubelet" else None


def job_attempts(rels: Sequence[str], first_time: Callable[[str], float | None],
                 same_run: Callable[[str, str], bool] = lambda a, b: True) -> list[Attempt]:
    """The job's attempts in order (see the module docstring), or one attempt of every file when no pod
    restarted. ``first_time``: the time of a file's first line, to order a pod's uid folders; ``same_run``:
    whether two files hold the same run (a container link and the newest restart file, compared by their
    first bytes). A link whose file was read under its other name is the pod's current run."""
    placed = {r: a for r in rels if (a := attempt_file(r)) is not None}
    # a kubectl-saved file with its --previous beside it is the pod's current run
    previous = {(r.rsplit("/", 1)[0] if "/" in r else "", a.pod) for r, a in placed.items()
                if a.kind == "kubectl-previous"}
    for r in rels:
        if r in placed:
            continue
        head, _, name = r.rpartition("/")
        stem = re.sub(r"\.(?:log|txt|out)$", "", name)
        if (head, stem) in previous:
            placed[r] = AttemptFile(stem, "", "", None, "kubectl-current")
    newest: dict[tuple[str, str], tuple[int, str]] = {}
    for r, a in placed.items():
        if a.kind == "kubelet" and a.restart is not None:
            newest[(a.pod, a.container)] = max(newest.get((a.pod, a.container), (-1, "")), (a.restart, r))
    dropped = {r for r, a in placed.items() if a.kind == "container-link" and (a.pod, a.container) in newest
               and same_run(r, newest[(a.pod, a.container)][1])}
    links: dict[tuple[str, str], str] = {}
    for r, a in sorted(placed.items()):  # a link and a collector's copy of it: one run, read once
        if a.kind == "container-link" and r not in dropped:
            first = links.setdefault((a.pod, a.container), r)
            if first != r and same_run(first, r):
                dropped.add(r)
    runs: dict[tuple[str, str], list[tuple[float, str, int, str]]] = defaultdict(list)
    for r, a in placed.items():
        if r not in dropped:
            # a link is the pod's current run: after every restart file of the pod that was read
            t = first_time(r) if a.kind == "kubelet" else (math.inf if a.kind == "container-link" else None)
            runs[(a.pod, a.container)].append((t if t is not None else 0.0, a.uid,
                                               a.restart if a.restart is not None else 1 << 30, r))
    sequences: dict[str, list[list[str]]] = {}
    for (pod, container), entries in sorted(runs.items()):
        uid_start: dict[str, float] = {}
        for t, uid, _, _ in entries:
            uid_start[uid] = min(uid_start.get(uid, t), t)
        seq: list[list[str]] = []  # rotated pieces of one restart share its number: one run
        last: tuple[str, int] | None = None
        for _, uid, restart, r in sorted(entries, key=lambda e: (uid_start[e[1]], e[1], e[2], e[3])):
            if (uid, restart) != last:
                seq.append([])
                last = (uid, restart)
            seq[-1].append(r)
        sequences[f"{pod}/{container}"] = seq
    kept = [r for r in rels if r not in dropped]
    if max((len(s) for s in sequences.values()), default=0) <= 1:
        return [Attempt(0, kept, sorted({k.split("/")[0] for k in sequences}))]
    attempts: list[Attempt] = []
    for key, seq in sequences.items():
        for i, files in enumerate(seq):
            while len(attempts) <= i:
                attempts.append(Attempt(len(attempts)))
            attempts[i].files.extend(files)
            if key.split("/")[0] not in attempts[i].pods:
                attempts[i].pods.append(key.split("/")[0])
    taken = {r for a in attempts for r in a.files}
    attempts[-1].files.extend(r for r in kept if r not in taken)
    for a in attempts:
        a.files.sort()
        a.pods.sort()
    return attempts


_CRI_TIME = re.compile(rb"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d) (?:stdout|stderr) ")


def first_cri_time(path: str) -> float | None:
    """The container runtime's time on a file's first line (``2026-12-03T14:42:21.886123456Z stderr F ...``),
    which orders the runs of a pod; None when the file is unreadable or has no such prefix."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(256)
    except OSError:
        return None
    m = _CRI_TIME.match(head)
    if m is None:
        return None
    from datetime import datetime

    frac = (m[2] or b"0")[:6].decode()
    zone = "+00:00" if m[3] == b"Z" else m[3].decode()
    try:
        return datetime.fromisoformat(f"{m[1].decode()}.{frac}{zone}").timestamp()
    except ValueError:
        return None
