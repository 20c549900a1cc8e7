"""More archive and clock shapes an SRE meets, as transforms of a job (``benchmarks/archive_variants.py``): every
node's files under one folder named after the submit host or the job id, trainer files named by rank only, one
line of the failing node from a clock hours ahead in the middle of its failure, logrotate's dated pieces written
at their own last lines' times, and one ``kubectl logs --prefix`` file whose pods write two time zones.

No path of the first two names a node; the node is the host the lines name. The clock shapes keep every other
line of the job as written.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from archive_transforms import Job, Out, Src, Variant, copy_of, edit_file, largest, texts
from stream_transforms import kubectl_prefix

SUBMIT_HOST = "login-node-01"  # a host-like name: the machine ``sbatch`` ran on, no node of the job
JOB_FOLDER = "slurm-4821937"

# an ISO date and time with a fraction, as the jobs' headers write it (``2026-12-03 14:38:23,219``, ``...T..Z``)
_ISO = re.compile(rb"(?<![\dT])(\d{4}-\d\d-\d\d)([ T])(\d\d:\d\d:\d\d)([,.]\d{1,9})?(Z|[+-]\d\d:?\d\d(?!:))?")
GLOG = re.compile(rb"(?<![\w.])([IWEF])(\d\d)(\d\d) (\d\d:\d\d:\d\d)(?=\.\d{6} )")
_RANK_DIR = re.compile(r"attempt_\d+/(\d+)/")


def _numbered(job: Job, folder: str) -> Variant:
    """Every file of the job in one folder, numbered, its own name kept: only the lines name the nodes."""
    return Variant([copy_of(s, f"{folder}/{i:03d}-{s.rel.rsplit('/', 1)[-1]}") for i, s in enumerate(job.srcs)])


def submit_host_folder(job: Job) -> Variant:
    """Every node's files copied into one folder named after the submit host (``login-node-01/``): a host-like
    folder that is no node of the job, holding all of them."""
    return _numbered(job, SUBMIT_HOST)


def job_id_folder(job: Job) -> Variant:
    """Every node's files in one folder named after the job id (``slurm-4821937/``) under the submit host's
    folder, as a shared file system's home folder keeps them."""
    return _numbered(job, f"{SUBMIT_HOST}/{JOB_FOLDER}")


def rank_named_files(job: Job) -> Variant:
    """The trainer's files named by global rank only (``logs/rank3.log``), every other file numbered in the same
    folder: which host a rank ran on is told by its lines, not its path."""
    from l4lite.ingest.attribution import rank_from_path

    hosts = job.truth.get("rank_hosts") or {}
    outs, used = [], set()
    for i, s in enumerate(job.srcs):
        rank = rank_from_path(s.rel)
        if rank is None and (m := _RANK_DIR.search(s.rel)):
            ranks = sorted(int(r) for r, h in hosts.items() if h == s.node)
            rank = ranks[int(m[1])] if int(m[1]) < len(ranks) else None
        base = s.rel.rsplit("/", 1)[-1]
        stem = base.rsplit(".", 1)[0]
        name = f"rank{rank}.{stem}.log" if rank is not None and s.lines is not None else f"{i:03d}-{base}"
        while name in used:
            name = "x-" + name
        used.add(name)
        outs.append(copy_of(s, "logs/" + name))
    return Variant(outs)


def _shift_all(delta: timedelta) -> Callable[[re.Match[bytes]], bytes]:
    """An ISO time moved by ``delta`` in its own form; one that spells its zone out (a runtime's ``...Z``) is a
    clock's own statement and stays."""
    def move(m: re.Match[bytes]) -> bytes:
        if m[5]:
            return m[0]
        t = datetime.fromisoformat(f"{m[1].decode()}T{m[3].decode()}") + delta
        return t.strftime("%Y-%m-%d").encode() + m[2] + t.strftime("%H:%M:%S").encode() + (m[4] or b"")
    return move


def _stamped(o: Out) -> list[int]:
    return [i for i, ln in enumerate(o.lines) if _ISO.search(ln[:80])]


def _moved(line: bytes, delta: timedelta) -> bytes:
    """The line with its first ISO time moved by ``delta``, written in its own form."""
    return _ISO.sub(_shift_all(delta), line, count=1)


def _stamped_count(lines: list[bytes] | None) -> int:
    return sum(1 for ln in lines or () if _ISO.search(ln[:80]))


def _root_log(job: Job) -> Src:
    """The root evidence's first file with a few timed lines, else the root node's file with most, else the
    job's largest file."""
    found = {s.rel: s for s in texts(job)}
    for f in job.root_files:
        if f in found and not f.endswith(".json") and _stamped_count(found[f].lines) >= 2:
            return found[f]
    node = next((f.split("/", 1)[0] for f in job.root_files if "/" in f), "")
    mine = [s for s in texts(job) if node and s.node == node and _stamped_count(s.lines) >= 2]
    return max(mine, key=lambda s: _stamped_count(s.lines)) if mine else largest(job)


def root_line_hours_ahead(job: Job) -> Variant:
    """One line of the failing node's file, among its last timed lines (where its failure is), stamped three
    hours ahead: a clock stepped and stepped back by a broken time source for one line, a good date of the same
    day, the line's text its own."""
    def edit(o: Out) -> None:
        stamped = _stamped(o)
        if len(stamped) >= 2:
            i = stamped[-2]  # the last but one timed line: inside the failure, not the file's last word
            o.lines[i] = _moved(o.lines[i], timedelta(hours=3))
    return edit_file(job, _root_log(job), edit)


def _last_time(lines: list[bytes]) -> float | None:
    for ln in reversed(lines):
        if m := _ISO.search(ln[:80]):
            t = datetime.fromisoformat(f"{m[1].decode()}T{m[3].decode()}").replace(tzinfo=UTC)
            return t.timestamp()
    return None


def rotated_dated(job: Job) -> Variant:
    """The largest file rotated by logrotate with ``dateext`` and ``dateformat -%Y%m%d-%s``: the oldest third in
    ``file-YYYYMMDD-EPOCH.gz``, the middle in ``file-YYYYMMDD-EPOCH``, the newest in the file; each piece written
    last at its own last line's time (an older piece carries an older write time than the live file)."""
    big = largest(job)
    outs = [copy_of(s) for s in job.srcs if s is not big]
    assert big.lines is not None
    n = len(big.lines)
    cuts = [0, n // 3, 2 * n // 3, n]
    for k in range(3):
        lo, hi = cuts[k], cuts[k + 1]
        part = big.lines[lo:hi]
        when = _last_time(big.lines[:hi]) if k < 2 else None  # a piece without a time: the last line's before it
        stamp = datetime.fromtimestamp(when, UTC) if when is not None else datetime.fromtimestamp(big.mtime, UTC)
        suffix = f"-{stamp:%Y%m%d}-{int(stamp.timestamp()) + 1}" if k < 2 else ""
        o = Out(big.rel + suffix + (".gz" if k == 0 else ""), mtime=(when + 1 if when else big.mtime), gz=k == 0)
        o.lines = part
        o.origin = [(big.rel, i) for i in range(lo + 1, hi + 1)]
        o.final_newline = big.final_newline or k < 2
        outs.append(o)
    return Variant(outs)


_ZONE = timedelta(hours=8)


def glog_moved(m: re.Match[bytes]) -> bytes:
    """A glog header (``W1203 14:38:14.757000``, no year) in the zone's local time."""
    t = datetime.fromisoformat(f"2024-{m[2].decode()}-{m[3].decode()}T{m[4].decode()}") + _ZONE
    return m[1] + t.strftime("%m%d %H:%M:%S").encode()


def kubectl_zoned_pod(job: Job) -> Variant:
    """``kubectl logs --prefix`` of every pod in one file, one pod without root evidence logging naive local time
    eight hours ahead of UTC (its container's ``TZ``), its glog lines too: two zones among the writers of one file."""
    v = kubectl_prefix(job)
    roots = {r.split("/", 1)[0] for r in job.root_files if "/" in r}
    peers = sorted({s.node for s in job.srcs if s.node and s.node not in roots})
    if not peers:
        return v
    move_node_lines(v, peers[0], lambda line: GLOG.sub(glog_moved, _ISO.sub(_shift_all(_ZONE), line)))
    return v


def move_node_lines(v: Variant, node: str, move: Callable[[bytes], bytes]) -> None:
    """Rewrite, in place, the lines of ``v``'s written outputs that came from ``node``'s files (a zone given to one
    writer of a merged file)."""
    for o in v.outs:
        if o.raw is not None:
            continue
        for i, origin in enumerate(o.origin):
            if origin is not None and origin[0].split("/", 1)[0] == node:
                o.lines[i] = move(o.lines[i])


JOB_TRANSFORMS: dict[str, Callable[[Job], Variant]] = {
    "submit-host-folder": submit_host_folder,
    "job-id-folder": job_id_folder,
    "rank-named-files": rank_named_files,
    "root-line-hours-ahead": root_line_hours_ahead,
    "rotated-dated": rotated_dated,
    "kubectl-zoned-pod": kubectl_zoned_pod,
}
