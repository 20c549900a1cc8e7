"""How a job is archived another way: the model of a job's files and the transforms over it
(``benchmarks/archive_variants.py`` analyses each variant and compares its verdict with the plain copy's).

Every transform writes what a real system writes: a folder renamed, levels added, files merged into one stream as
``cat`` or ``srun --label`` make them, compressed, rotated, re-encoded, damaged, or a clock off. Lines keep their
origin (the original file and line) through every transform.
"""

from __future__ import annotations

import gzip
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

GROUND_TRUTH = "ground_truth.json"
Origin = tuple[str, int]

# ------------------------------------------------------------------------------------------------ the model
@dataclass
class Src:
    """One file of the job as found: its lines (bytes, without newlines) or, for a binary file, its bytes."""

    rel: str
    lines: list[bytes] | None
    data: bytes
    mtime: float
    final_newline: bool = True

    @property
    def node(self) -> str:
        """The top folder (the node folder of the job's own layout), or "" for a file at the top."""
        return self.rel.split("/", 1)[0] if "/" in self.rel else ""


@dataclass
class Out:
    """One file of a variant: its lines with their origins, and how it is written."""

    rel: str
    lines: list[bytes] = field(default_factory=list)
    origin: list[Origin | None] = field(default_factory=list)
    raw: bytes | None = None  # a binary file copied as is
    gz: bool = False
    eol: bytes = b"\n"
    bom: bool = False
    final_newline: bool = True
    mtime: float | None = None

    def add(self, src: Src, prefix: bytes = b"") -> None:
        assert src.lines is not None
        self.lines.extend(prefix + ln for ln in src.lines)
        self.origin.extend((src.rel, i) for i in range(1, len(src.lines) + 1))
        self.mtime = max(self.mtime or 0.0, src.mtime)

    def content(self) -> bytes:
        if self.raw is not None:
            return self.raw
        body = self.eol.join(self.lines) + (self.eol if self.final_newline and self.lines else b"")
        return (b"\xef\xbb\xbf" if self.bom else b"") + body


def copy_of(src: Src, rel: str | None = None) -> Out:
    out = Out(rel or src.rel, final_newline=src.final_newline, mtime=src.mtime)
    if src.lines is None:
        out.raw = src.data
        out.origin = [(src.rel, 0)]  # a dump is evidence as a whole
    else:
        out.add(src)
    return out


@dataclass
class Variant:
    """A job archived one way: its files, what to hand the analyser, and folder names that stand for nodes."""

    outs: list[Out]
    renamed: dict[str, str] = field(default_factory=dict)  # new folder name -> the node folder it replaced
    target: str = "."  # what to analyse, relative to the variant's folder
    stdin: str | None = None  # a file fed on stdin (``l4lite analyze -``)
    shift: float = 0.0  # seconds every time of the job was moved by (the failure time moves as much)
    kinds: bool = False  # its renamed folders name a kind or an id (``part-0001``, a date): never a node by itself


@dataclass
class Job:
    name: str
    path: Path
    srcs: list[Src]
    truth: dict[str, Any]
    root_files: list[str]  # files of the plain copy's root evidence, first first
    neighbour: Src | None = None  # a file of another job, for the stale-file transform

    @property
    def lines(self) -> dict[str, list[bytes]]:
        return {s.rel: s.lines for s in self.srcs if s.lines is not None}


def load_job(path: Path) -> list[Src]:
    from l4lite.ingest.files import SNIFF_BYTES, sniff

    srcs = []
    for p in sorted(path.rglob("*")):
        rel = p.relative_to(path).as_posix()
        if not p.is_file() or rel == GROUND_TRUTH or rel.startswith("_meta/"):
            continue
        data = p.read_bytes()
        text = sniff(data[:SNIFF_BYTES])[0] == "utf-8" and not data.startswith(b"\x1f\x8b")
        if not text or data.startswith(b"\x80"):
            srcs.append(Src(rel, None, data, p.stat().st_mtime))
            continue
        final = data.endswith(b"\n")
        lines = data.split(b"\n") if data else []
        if final:
            lines.pop()
        srcs.append(Src(rel, lines, data, p.stat().st_mtime, final))
    return srcs


def write_variant(v: Variant, dest: Path) -> None:
    for out in v.outs:
        p = dest / out.rel
        p.parent.mkdir(parents=True, exist_ok=True)
        data = out.content()
        if out.gz:
            data = gzip.compress(data, mtime=int(out.mtime or 0)) if data else b""
        p.write_bytes(data)
        if out.mtime:
            os.utime(p, (out.mtime, out.mtime))


# ------------------------------------------------------------------------------------------------ transforms
def texts(job: Job) -> list[Src]:
    return [s for s in job.srcs if s.lines is not None]


def _rename_top(job: Job, names: Callable[[int], str]) -> Variant:
    tops = sorted({s.node for s in job.srcs if s.node})
    new = {t: names(i) for i, t in enumerate(tops)}
    outs = [copy_of(s, new[s.node] + s.rel[len(s.node):] if s.node else s.rel) for s in job.srcs]
    return Variant(outs, {v: k for k, v in new.items()})


def identity(job: Job) -> Variant:
    return Variant([copy_of(s) for s in job.srcs])


def folders_letters(job: Job) -> Variant:
    return _rename_top(job, lambda i: chr(ord("a") + i))


def folders_parts(job: Job) -> Variant:
    return replace(_rename_top(job, lambda i: f"part-{i + 1:04d}"), kinds=True)


def folders_dated(job: Job) -> Variant:
    return replace(_rename_top(job, lambda i: f"logs-2026-12-{i + 1:02d}"), kinds=True)


def folders_job_ids(job: Job) -> Variant:
    return replace(_rename_top(job, lambda i: f"job-{12345 + i}"), kinds=True)


def named_in_lines(job: Job, host: str) -> bool:
    """Whether any line of the job spells out ``host`` (as a whole name): a host only its folder names can be
    told by nothing else once the folder is renamed."""
    word = re.compile(rb"(?<![A-Za-z0-9.-])" + re.escape(host.encode()) + rb"(?![A-Za-z0-9-])", re.I)
    return any(word.search(ln) for s in texts(job) for ln in s.lines or ())


def _unnamed(v: Variant, job: Job) -> Variant:
    """Folder names that are not the hosts: the suspect must be the host the lines name, not the folder; a host
    that no line names is told by its folder only, so the folder's new name (a role, a pod) stands for it."""
    return replace(v, renamed={k: h for k, h in v.renamed.items() if not named_in_lines(job, h)})


def folders_workers(job: Job) -> Variant:
    """``worker-N``: the launcher's name for a node, not the host its lines name."""
    return _unnamed(_rename_top(job, lambda i: f"worker-{i}"), job)


def _suffix(i: int, n: int = 5) -> str:
    """A pod name's random-looking suffix (the same on every run)."""
    alphabet = "bcdfghjklmnpqrstvwxz2456789"
    x = 2654435761 * (i + 7) % 4294967291
    return "".join(alphabet[(x >> (5 * k)) % len(alphabet)] for k in range(n))


def folders_pods(job: Job) -> Variant:
    """Kubernetes pod names: a deployment's hash and a random suffix (``trainer-7c9d8b4f6d-x2k9p``)."""
    return _unnamed(_rename_top(job, lambda i: f"trainer-{_suffix(99, 10)}-{_suffix(i)}"), job)


def folders_attempts(job: Job) -> Variant:
    """``attempt_N``: a launcher's run folder per node, an id and never a node."""
    return replace(_rename_top(job, lambda i: f"attempt_{i}"), renamed={}, kinds=True)


def hosts_in_lines(job: Job) -> Variant:
    """Every file in one folder under a number: no path names a node, only the lines do."""
    return Variant([copy_of(s, f"logs/{i:03d}-{s.rel.rsplit('/', 1)[-1]}") for i, s in enumerate(job.srcs)])


def wrapped(job: Job) -> Variant:
    """Launcher, date and output folders above the node folders."""
    return Variant([copy_of(s, "job-12345/attempt_0/2026-12-01/output/" + s.rel) for s in job.srcs])


def under_node(job: Job) -> Variant:
    """Host-like folders under each node folder (``node/v100/output/...``)."""
    return Variant([copy_of(s, f"{s.node}/v100/output/{s.rel[len(s.node) + 1:]}" if s.node else s.rel)
                    for s in job.srcs])


_LOCAL_RANK = re.compile(r"attempt_\d+/(\d+)/")


def deeper(job: Job) -> Variant:
    """``run/<host>/rank<N>/<file>``: the torchelastic tree folded into one folder per global rank."""
    from l4lite.ingest.attribution import rank_from_path

    hosts = job.truth.get("rank_hosts") or {}
    outs, used = [], set()
    for s in job.srcs:
        node = s.node or "launcher"
        name = s.rel.rsplit("/", 1)[-1]
        rank = rank_from_path(s.rel)
        m = _LOCAL_RANK.search(s.rel)
        if rank is None and m:
            ranks = sorted(int(r) for r, h in hosts.items() if h == s.node)
            lr = int(m[1])
            rank = ranks[lr] if lr < len(ranks) else None
            name = name if rank is not None else f"local{lr}-{name}"
        rel = f"run/{node}/rank{rank}/{name}" if rank is not None else f"run/{node}/{name}"
        while rel in used:
            rel = rel.replace(name, "x-" + name)
        used.add(rel)
        outs.append(copy_of(s, rel))
    return Variant(outs)


def flatten(job: Job) -> Variant:
    return Variant([copy_of(s, "flat/" + s.rel.replace("/", "_")) for s in job.srcs])


# torchelastic's ``--log-dir``: ``<run_id>_<random>/attempt_N/<local_rank>/{stdout.log,stderr.log,error.json}``,
# written by each node's agent to disk (the console gets the ``--tee`` copies), never to the task's stdout
LOG_DIR = re.compile(r"(?:^|/)([^/]+/attempt_\d+/\d+/[^/]+)$")


def _merged(job: Job, label: bool) -> Variant:
    """All nodes' logs in one file. ``cat`` (no label) takes every file; ``srun --label`` holds what each node's
    task writes to its stdout and stderr, so the files torchelastic's agent writes into its ``--log-dir`` stay
    files, in one shared log folder as a job whose log dir is on shared storage leaves them (each agent's run
    folder carries its own random suffix, so no node folder is needed to keep them apart)."""
    tops = sorted({s.node for s in job.srcs if s.node})
    out = Out("job.out")
    kept: list[Out] = []
    for s in texts(job):
        if label and (m := LOG_DIR.search(s.rel)) and s.node:
            kept.append(copy_of(s, "logs/" + m[1]))
            continue
        out.add(s, f"{tops.index(s.node)}: ".encode() if label and s.node else b"")
    out.mtime = None  # ``cat`` writes a new file
    dumps = [copy_of(s, "dumps/" + s.rel.replace("/", "_")) for s in job.srcs if s.lines is None]
    # a node that no line names is told by its task's label only: ``rank:N`` is the honest answer for it
    labels = {f"rank:{i}": t for i, t in enumerate(tops) if label and not named_in_lines(job, t)}
    return Variant([out, *kept, *dumps], labels)


def merged_labelled(job: Job) -> Variant:
    return _merged(job, True)


def merged_plain(job: Job) -> Variant:
    return _merged(job, False)


def merged_pdsh(job: Job) -> Variant:
    """All nodes' output in one file as ``pdsh -w host1,host2`` prints it (DeepSpeed's and accelerate's multi-node
    launchers): every line after the host that wrote it, ``host: ``. What pdsh does not carry stays a file: the
    log folder torchelastic's agents write, the files of no node, the dumps."""
    from l4lite.ingest.attribution import host_from_dirs

    out = Out("job.out")
    kept: list[Out] = []
    for s in texts(job):
        if not s.node or (m := LOG_DIR.search(s.rel)):  # the log folder on shared storage, as in ``_merged``
            kept.append(copy_of(s, "logs/" + (m[1] if s.node else s.rel)))
            continue
        out.add(s, f"{host_from_dirs(s.node + '/_') or s.node}: ".encode())  # the machine a pod's folder names
    out.mtime = None
    dumps = [copy_of(s, "dumps/" + s.rel.replace("/", "_")) for s in job.srcs if s.lines is None]
    return Variant([out, *kept, *dumps])


def gzipped(job: Job) -> Variant:
    outs = [copy_of(s, s.rel + ".gz") for s in job.srcs]
    for o in outs:
        o.gz = True
    return Variant(outs)


def largest(job: Job, avoid: Sequence[str] = ()) -> Src:
    found = sorted(texts(job), key=lambda s: (-len(s.lines or ()), s.rel))
    return next((s for s in found if s.rel not in avoid), found[0])


def rotated(job: Job) -> Variant:
    """The largest file rotated by logrotate: oldest third in ``.2.gz``, then ``.1``, the newest in the file."""
    big = largest(job)
    outs = [copy_of(s) for s in job.srcs if s is not big]
    assert big.lines is not None
    n = len(big.lines)
    cuts = [0, n // 3, 2 * n // 3, n]
    for k, rel in enumerate((big.rel + ".2.gz", big.rel + ".1", big.rel)):
        part = Out(rel, mtime=big.mtime, gz=rel.endswith(".gz"))
        lo, hi = cuts[k], cuts[k + 1]
        part.lines = big.lines[lo:hi]
        part.origin = [(big.rel, i) for i in range(lo + 1, hi + 1)]
        part.final_newline = big.final_newline or k < 2
        outs.append(part)
    return Variant(outs)


def crlf(job: Job) -> Variant:
    outs = [copy_of(s) for s in job.srcs]
    for o in outs:
        o.eol = b"\r\n"
    return Variant(outs)


def bom(job: Job) -> Variant:
    outs = [copy_of(s) for s in job.srcs]
    for o in outs:
        o.bom = o.raw is None
    return Variant(outs)


def edit_file(job: Job, target: Src, edit: Callable[[Out], None]) -> Variant:
    outs = []
    for s in job.srcs:
        o = copy_of(s)
        if s is target:
            edit(o)
        outs.append(o)
    return Variant(outs)


def garbage(job: Job) -> Variant:
    """A few bytes of binary garbage on a line of their own in the middle of the largest file."""
    def edit(o: Out) -> None:
        mid = len(o.lines) // 2
        o.lines.insert(mid, b"\x00\x9c\xff\x13\x88\x01\xfe\x07\x1b\x80\xc3\x02")
        o.origin.insert(mid, None)
    return edit_file(job, largest(job), edit)


def nul_run(job: Job) -> Variant:
    """A run of NUL bytes in the middle of the largest file, before a line (a crash's hole in the file)."""
    def edit(o: Out) -> None:
        mid = len(o.lines) // 2
        o.lines[mid] = b"\x00" * 4096 + o.lines[mid]
    return edit_file(job, largest(job), edit)


def truncated(job: Job) -> Variant:
    """The last line of the largest file cut in half, without its newline (the writer died mid-line); not a
    file whose root evidence is its last line."""
    def edit(o: Out) -> None:
        if o.lines:
            o.lines[-1] = o.lines[-1][: max(1, len(o.lines[-1]) // 2)]
            o.origin[-1] = None
        o.final_newline = False
    return edit_file(job, largest(job, job.root_files), edit)


def empty_files(job: Job) -> Variant:
    node = sorted({s.node for s in job.srcs if s.node} or {""})[0]
    where = f"{node}/" if node else ""
    return Variant([*(copy_of(s) for s in job.srcs), Out(where + "empty.log"), Out(where + "old.log.gz", raw=b"")])


def stdin(job: Job) -> Variant:
    """``srun --label`` output piped to ``l4lite analyze - side/``: the stream on stdin, its dumps and log folder
    as the folder beside it."""
    v = _merged(job, True)
    for o in v.outs[1:]:
        o.rel = "side/" + o.rel
    return replace(v, stdin="job.out", target="side" if len(v.outs) > 1 else "")


TRANSFORMS: dict[str, Callable[[Job], Variant]] = {
    "identity": identity,
    "folders-letters": folders_letters,
    "folders-part-N": folders_parts,
    "folders-dated": folders_dated,
    "folders-job-ids": folders_job_ids,
    "folders-workers": folders_workers,
    "folders-pods": folders_pods,
    "folders-attempts": folders_attempts,
    "hosts-in-lines": hosts_in_lines,
    "wrapped-levels": wrapped,
    "levels-under-node": under_node,
    "deeper-run-host-rank": deeper,
    "flattened": flatten,
    "merged-labelled": merged_labelled,
    "merged-plain": merged_plain,
    "merged-pdsh": merged_pdsh,
    "stdin-merged": stdin,
    "gzip": gzipped,
    "rotated": rotated,
    "crlf": crlf,
    "bom": bom,
    "binary-garbage": garbage,
    "nul-run": nul_run,
    "truncated-last-line": truncated,
    "empty-files": empty_files,
}
