"""Archive shapes a real site's collection produces, as transforms of a job (``benchmarks/archive_variants.py``):
the kubelet's per-container log files under ``/var/log/pods/``, a Ray driver's console relaying every worker's
lines behind ``(RayTrainWorker pid=N, ip=A)``, and a pdsh merge whose one host logs naive local time hours ahead.

No path of these names a host: a pod's folder names the pod, a relayed line's address the node it ran on, a pdsh
prefix the host. The verdict must be the plain copy's, the suspect the node a pod, an address or a prefix stands
for.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from archive_transforms import LOG_DIR, Job, Out, Src, Variant, copy_of, merged_pdsh, texts
from job_transforms import GLOG, glog_moved, move_node_lines
from stream_transforms import JOB_NAME, node_name

NAMESPACE = "ml-train"
CONTAINER = "pytorch"
# an ISO date and time as the jobs' headers write it (``2026-12-03 14:38:23,219``, ``...T14:38:23.219Z``)
_ISO = re.compile(rb"(?<![\dT])(\d{4}-\d\d-\d\d)[ T](\d\d:\d\d:\d\d)(?:[,.](\d{1,9}))?(Z|[+-]\d\d:?\d\d(?!:))?")
# a line that already carries the kubelet's CRI prefix (a job collected from a kubelet's folder)
_CRI = re.compile(rb"^\d{4}-\d\d-\d\dT[\d:.]+(?:Z|[+-]\d\d:\d\d) std(?:out|err) [FP] ")
_ZONE = timedelta(hours=8)


def _nodes(job: Job) -> list[str]:
    return sorted({s.node for s in job.srcs if s.node})


def _stamp(line: bytes, year: int) -> datetime | None:
    """The line's own ISO time near its start, read as UTC (an offset spelled out is honoured), else its glog
    header's (``W1203 14:38:14.757000``) in ``year``."""
    m = _ISO.search(line[:120])
    if m is None:
        g = GLOG.search(line[:40])
        try:
            return datetime.strptime(f"{year}{g[2].decode()}{g[3].decode()} {g[4].decode()}",
                                     "%Y%m%d %H:%M:%S").replace(tzinfo=UTC) if g else None
        except ValueError:
            return None
    frac = (m[3] or b"0").decode()[:6].ljust(6, "0")
    zone = (m[4] or b"Z").decode().replace("Z", "+00:00")
    if len(zone) == 5:  # ``+0530``
        zone = zone[:3] + ":" + zone[3:]
    try:
        return datetime.fromisoformat(f"{m[1].decode()}T{m[2].decode()}.{frac}{zone}").astimezone(UTC)
    except ValueError:
        return None


def _cri_lines(lines: list[bytes], rel: str, fallback: datetime) -> list[bytes]:
    """A file's lines as a container runtime writes them to the kubelet's file: ``<RFC 3339 UTC> stdout F <line>``,
    the time the runtime received the line (the line's own time, else the last one before it, else the first after
    it, else ``fallback``: the node's or the job's first time); a line that already has the prefix is copied."""
    year = next((int(m[1][:4]) for ln in lines if (m := _ISO.search(ln[:120]))), fallback.year)
    own = [_stamp(ln, year) for ln in lines]
    last = next((t for t in own if t is not None), fallback)
    stream = b"stderr" if "err" in rel.rsplit("/", 1)[-1] else b"stdout"
    out = []
    for ln, t in zip(lines, own, strict=True):
        if _CRI.match(ln):
            out.append(ln)
            continue
        last = t or last
        out.append(last.strftime("%Y-%m-%dT%H:%M:%S.%f").encode() + b"000Z " + stream + b" F " + ln)
    return out


def _first_time(srcs: list[Src]) -> datetime | None:
    """The first ISO time of the files, in file order."""
    for s in srcs:
        for ln in s.lines or ():
            if (m := _ISO.search(ln[:120])) is not None and (t := _stamp(ln, int(m[1][:4]))) is not None:
                return t
    return None


_SYSTEM = re.compile(r"(?:^|[/_.-])(?:kern|dmesg|syslog|messages|journal)[^/]*$")


def _pod_names(job: Job) -> dict[str, str]:
    """Node folder -> a PyTorchJob's pod: ``train-master-0`` for the first node, ``train-worker-N`` for the rest."""
    return {n: f"{JOB_NAME}-master-0" if i == 0 else f"{JOB_NAME}-worker-{i - 1}" for i, n in enumerate(_nodes(job))}


def kubelet_pod_logs(job: Job) -> Variant:
    """The kubelet's files of a PyTorchJob's pods as a node's log collector ships them:
    ``var/log/pods/<namespace>_<pod>_<uid>/pytorch/0.log``, each node's output one container stream with the
    runtime's CRI prefix. The pod's folder names the pod, no host. What is no container output stays a file: the log
    folder torchelastic's agents write to shared storage (``logs/``), a Ray session's tree copied out of its pod
    (``ray-logs/<pod>/session_.../``), the kernel's and the journal's logs collected per node under the node's
    name, a launcher's files outside the nodes, the dumps."""
    pods = _pod_names(job)
    job_first = _first_time(texts(job)) or datetime.fromtimestamp(max(s.mtime for s in job.srcs), UTC)
    firsts = {n: _first_time([s for s in texts(job) if s.node == n]) or job_first for n in pods}
    streams: dict[str, Out] = {}
    kept: list[Out] = []
    for s in texts(job):
        if not s.node:
            kept.append(copy_of(s, "launcher/" + s.rel))
        elif m := LOG_DIR.search(s.rel):
            kept.append(copy_of(s, "logs/" + m[1]))
        elif "/session_" in s.rel:
            kept.append(copy_of(s, f"ray-logs/{pods[s.node]}/" + s.rel[s.rel.index("/session_") + 1:]))
        elif _SYSTEM.search(s.rel):
            kept.append(copy_of(s, "node-logs/" + s.rel))
        else:
            uid = uuid.uuid5(uuid.NAMESPACE_DNS, f"{job.name}/{s.node}")
            rel = f"var/log/pods/{NAMESPACE}_{pods[s.node]}_{uid}/{CONTAINER}/0.log"
            o = streams.setdefault(rel, Out(rel))
            o.add(s)
            if s.lines:
                o.lines[len(o.lines) - len(s.lines):] = _cri_lines(s.lines, s.rel, firsts[s.node])
    dumps = [copy_of(s, "dumps/" + s.rel.replace("/", "_")) for s in job.srcs if s.lines is None]
    return Variant([*streams.values(), *kept, *dumps], {p: node_name(job, n) for n, p in pods.items()})


def ray_driver_relay(job: Job) -> Variant:
    """A Ray Train driver's console (``ray job submit``'s output): every worker's lines relayed behind
    ``(RayTrainWorker pid=N, ip=A) ``, ``A`` the address of the node the worker ran on, one pid per file; the
    driver's own files (outside the nodes) unprefixed at the top. No path names a node; an address is one, and a
    line that names its host beside the address ties them. Torchelastic's log folder and dumps stay files."""
    nodes = _nodes(job)
    ips = {n: f"10.0.{i // 200}.{i % 200 + 2}" for i, n in enumerate(nodes)}
    out = Out("driver.log")
    kept: list[Out] = []
    for k, s in enumerate(texts(job)):
        if not s.node:
            out.add(s)
            continue
        if m := LOG_DIR.search(s.rel):
            kept.append(copy_of(s, "logs/" + m[1]))
            continue
        out.add(s, f"(RayTrainWorker pid={4000 + 7 * k}, ip={ips[s.node]}) ".encode())
    out.mtime = None
    dumps = [copy_of(s, "dumps/" + s.rel.replace("/", "_")) for s in job.srcs if s.lines is None]
    return Variant([out, *kept, *dumps], {ip: node_name(job, n) for n, ip in ips.items()})


def _shift(m: re.Match[bytes]) -> bytes:
    """A naive ISO time eight hours ahead in its own form; one that spells its zone out stays."""
    if m[4]:
        return m[0]
    t = datetime.fromisoformat(f"{m[1].decode()}T{m[2].decode()}") + _ZONE
    sep = m[0][10:11]
    return t.strftime("%Y-%m-%d").encode() + sep + t.strftime("%H:%M:%S").encode() + m[0][19:len(m[0])]


def pdsh_zoned_host(job: Job) -> Variant:
    """``pdsh -w`` of every node in one file, one host without root evidence logging naive local time eight hours
    ahead of UTC (its ``TZ``), in its lines of the merge and in the files its agent wrote to the shared log folder:
    two zones among the writers of one file, told apart by the ``host: `` prefix."""
    v = merged_pdsh(job)
    roots = {r.split("/", 1)[0] for r in job.root_files if "/" in r}
    peers = [n for n in _nodes(job) if n not in roots]
    if not peers:
        return v
    move_node_lines(v, peers[0], lambda line: GLOG.sub(glog_moved, _ISO.sub(_shift, line)))
    return v


SITE_SHAPES: dict[str, Callable[[Job], Variant]] = {
    "kubelet-pod-logs": kubelet_pod_logs,
    "ray-driver-relay": ray_driver_relay,
    "pdsh-zoned-host": pdsh_zoned_host,
}
