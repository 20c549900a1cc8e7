"""Plant a real log excerpt in a small multi-node job, the way an on-call engineer would receive it.

A real failure never comes alone: the faulty rank prints its error and stops, and every healthy node then prints
the cascade of a collective that lost a member (NCCL watchdog timeouts, broken pipes, connection resets, the
launcher's SIGTERM teardown). An excerpt analysed on its own says nothing about whether the analyser can tell
the root from that cascade, or find the node in a job of eight. So each excerpt goes into an 8-node job whose
context matches the excerpt's labelled phase (init lines, checkpoint load, training iterations, a save, an
evaluation), and the job is written in one of three layouts:

- ``node-folders``: a folder per node with a file per rank and the node's kernel log;
- ``rank-files``: a file per rank whose host appears only inside the lines (NCCL's init lines), and a syslog
  file per host;
- ``srun-merged``: one ``srun --label`` file with every rank's lines, and a syslog file per host.

Kernel lines of the excerpt (NVRM/Xid, mlx5, Lustre, NFS, the OOM killer, dmesg-stamped lines) go into the
faulty node's kernel or syslog file, everything else into the faulty rank's output. The excerpt's lines are
copied verbatim; where an excerpt names its own host or rank (a NCCL header, a torchelastic summary,
``[Rank 6]``), the planted node and rank take those names, so that the lines and the layout agree. A job-wide
fault (numerical, user_config) whose thread names no node is printed by every node, a few seconds apart, each
copy with that node's host and rank names; the other ranks of the other nodes print the cascade. The ground
truth (``ground_truth.json``) lists every planted line as evidence. Everything is seeded: the same excerpt,
layout and seed give the same bytes.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from l4lite.evaluate.scoreboard import GROUND_TRUTH
from l4lite.ingest.attribution import NCCL_HEADER, RANK_IN_MESSAGE, elastic_ties, normalize_host
from l4lite.vocab import GLOBAL_CATEGORIES

LAYOUTS: tuple[str, ...] = ("node-folders", "rank-files", "srun-merged")
NODES = 8
RANKS_PER_NODE = 2
BASE_TIME = datetime(2024, 5, 14, 9, 0, 0, tzinfo=UTC).timestamp()
STEP_SECONDS = 2.0

# Lines a node's kernel writes (dmesg or syslog), not a rank's stdout.
_KERNEL = re.compile(
    r"NVRM:|\bXid\b|\bmlx5_|\bmlx5_core\b|\bLustre\b|\bLNet\b|\bLNetError\b|nfs: server|\bOut of memory: Kill|"
    r"oom-kill|oom_reaper|Memory cgroup out of memory|\bkernel:|\bEDAC\b|\bamdgpu \d|\bpcieport\b|\bAER:|"
    r"^\s*\[\s*\d+\.\d+\]\s|^\[(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) \w{3} +\d+ [\d:]{8} \d{4}\]|\bsegfault at\b|"
    r"\bblk_update_request\b|\bI/O error, dev\b|\bEXT4-fs\b|\bXFS \(",
)
_ISO = re.compile(r"(20\d\d)-(\d\d)-(\d\d)[ T_](\d\d):(\d\d):(\d\d)")
_DMESG_T = re.compile(r"\[(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (\w{3}) +(\d+) (\d\d):(\d\d):(\d\d) (\d{4})\]")
_MONTHS = {m: i + 1 for i, m in enumerate(("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct",
                                               "Nov", "Dec"))}
_RANK_NAMED = re.compile(r"\[rank(\d{1,4})\]:|\brank(\d{1,4}) \(local[_ ]rank|\[Rank (\d{1,4})\]")
_RANK_WORD = re.compile(r"(\[[Rr]ank ?|\brank)(\d{1,4})(?=\]| \(local)")  # a rank's name, to rename it
_HOSTY = re.compile(r"^[a-z][a-z0-9-]*[0-9][a-z0-9-]*$|^[0-9a-f]{12}$")
_HYPHENATED = re.compile(r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)+$")  # an NCCL header's host without digits (gpu-test)
# A syslog kernel line's own header: its date (no year) and host. Planted, the line is the planted node's kernel
# speaking at the job's time: the header is written anew, as a real node's syslog would have it.
_SYSLOG_HEAD = re.compile(r"^(?:<\d+>)?[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d(?: (?!kernel:)\S+)? kernel: ?")


@dataclass(frozen=True)
class Excerpt:
    """One corpus entry (see ``fixtures/real/CORPUS.md``)."""

    id: str
    source_group: str
    split: str
    status: str
    category: str | None
    phase: str | None
    faulty: str | None
    lines: tuple[str, ...]
    source_url: str = ""
    kind: str = ""


@dataclass
class _Line:
    time: float
    rank: int | None  # None: the node's kernel log
    node: int
    text: str
    planted: bool = False
    syslog: bool = False  # a kernel line that came with a syslog header of its own (taken off ``text``)


@dataclass
class PlantedJob:
    """Where a job was written and what its ground truth says."""

    path: Path
    truth: dict[str, Any] = field(default_factory=dict)


def excerpt_time(lines: Sequence[str]) -> float | None:
    """The first wall-clock time an excerpt states (ISO-like, or ``dmesg -T``), as epoch seconds."""
    for line in lines:
        m = _ISO.search(line)
        if m:
            y, mo, d, hh, mm, ss = (int(x) for x in m.groups())
            try:
                return datetime(y, mo, d, hh, mm, ss, tzinfo=UTC).timestamp()
            except ValueError:
                continue
        m = _DMESG_T.search(line)
        if m and m.group(1) in _MONTHS:
            mon, d, hh, mm, ss, y = m.groups()
            try:
                return datetime(int(y), _MONTHS[mon], int(d), int(hh), int(mm), int(ss), tzinfo=UTC).timestamp()
            except ValueError:
                continue
    return None


def excerpt_span(lines: Sequence[str]) -> float:
    """Seconds between the first and the last ISO-like time an excerpt states (0 without two)."""
    times: list[float] = []
    for line in lines:
        m = _ISO.search(line)
        if m:
            try:
                times.append(datetime(*(int(x) for x in m.groups()), tzinfo=UTC).timestamp())  # type: ignore[misc]
            except ValueError:
                continue
    return max(0.0, max(times) - min(times)) if len(times) >= 2 else 0.0


def excerpt_host(lines: Sequence[str]) -> str | None:
    """The host an excerpt names for itself (a NCCL header, a torchelastic summary), if it looks like one."""
    for host_rank in elastic_ties(lines):
        host = normalize_host(host_rank[1])
        if _HOSTY.match(host):
            return host
    for line in lines:
        m = NCCL_HEADER.search(line)
        if m:
            host = normalize_host(m.group(1))
            if (_HOSTY.match(host) or _HYPHENATED.match(host)) and any(c.isalpha() for c in host):
                return host
    return None


def excerpt_rank(lines: Sequence[str]) -> int | None:
    """The global rank an excerpt names (``[rank3]:``, ``rank2 (local_rank: 2)``, ``[Rank 6]``)."""
    for line in lines:
        m = _RANK_NAMED.search(line) or RANK_IN_MESSAGE.search(line)
        if m:
            return int(next(g for g in m.groups() if g is not None))
    return None


def is_kernel_line(line: str) -> bool:
    return _KERNEL.search(line) is not None


def _stamp(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M:%S,") + f"{int(t * 1000) % 1000:03d}"


def _syslog(t: float, host: str) -> str:
    """A syslog header as rsyslog writes it: the day of the month padded with a space, the hour always two digits."""
    d = datetime.fromtimestamp(t, UTC)
    return f"{d:%b} {d.day:2d} {d:%H:%M:%S} {host} kernel: "


class JobPlanter:
    """Builds the 8-node job around one excerpt; ``write`` lays it out in one of ``LAYOUTS``."""

    def __init__(self, excerpt: Excerpt, seed: int = 0) -> None:
        self.x = excerpt
        self.rng = random.Random(f"{seed}:{excerpt.id}")
        named_rank = excerpt_rank(excerpt.lines)
        self.ranks_per_node = RANKS_PER_NODE
        if named_rank is not None and named_rank >= NODES * RANKS_PER_NODE:
            self.ranks_per_node = -(-(named_rank + 1) // NODES)
        self.world = NODES * self.ranks_per_node
        own = excerpt_host(excerpt.lines)
        prefix = self.rng.choice(("node", "hgx", "dgx", "a100", "h100", "cn"))
        start = self.rng.randrange(1, 200)
        self.hosts = [f"{prefix}-{start + k:03d}" for k in range(NODES)]
        if named_rank is not None:
            self.faulty_node = named_rank // self.ranks_per_node
            self.faulty_rank = named_rank
        else:
            self.faulty_node = self.rng.randrange(NODES)
            self.faulty_rank = self.faulty_node * self.ranks_per_node + self.rng.randrange(self.ranks_per_node)
        if own is not None and own not in self.hosts:
            self.hosts[self.faulty_node] = own
        self.pids = {r: 10000 + self.rng.randrange(80000) for r in range(self.world)}
        t_ex = excerpt_time(excerpt.lines)
        self.t_excerpt = t_ex
        self.span = excerpt_span(excerpt.lines)
        self.context_seconds = 120.0  # longer than any phase's context
        self.t0 = (t_ex - self.context_seconds) if t_ex is not None else BASE_TIME + self.rng.randrange(86400)
        # A job-wide fault (a configuration every rank was given, a divergence of the shared model): every node
        # meets it, so every node prints it, and the truth blames none. A host or rank the thread names for such
        # a fault is where its log was printed, not a culprit: planted on that node alone, the logs would say
        # "one node" while the truth says "every node".
        self.shared = excerpt.status == "incident" and excerpt.category in GLOBAL_CATEGORIES
        self.lines: list[_Line] = []
        self.t_fail = self.t0
        self._build()

    # ------------------------------------------------------------------------------------ context
    def _node_of(self, rank: int) -> int:
        return rank // self.ranks_per_node

    def _ip(self, node: int) -> str:
        return f"10.{20 + node // 200}.{node % 200}.{11 + node}"

    def _emit(self, t: float, rank: int | None, node: int, text: str, planted: bool = False) -> None:
        self.lines.append(_Line(t, rank, node, text, planted))

    def _init(self, rank: int, t: float) -> float:
        node = self._node_of(rank)
        host, pid, dev = self.hosts[node], self.pids[rank], rank % self.ranks_per_node
        self._emit(t, rank, node, f"[{_stamp(t)}] [INFO] initializing torch distributed with world size "
                                  f"{self.world} (rank {rank})")
        head = f"{host}:{pid}:{pid} [{dev}] NCCL INFO"
        self._emit(t + 1, rank, node, f"{head} Bootstrap : Using eth0:{self._ip(node)}<0>")
        self._emit(t + 1, rank, node, f"{head} NCCL version 2.18.5+cuda12.2")
        bus = f"{0x1b + 0x10 * dev:x}000"
        self._emit(t + 2, rank, node, f"{head} comm 0x5581a3f0 rank {rank} nranks {self.world} cudaDev {dev} "
                                      f"busId {bus} commId 0x7c1d3e5f9a2b4c61 - Init COMPLETE")
        return t + 10

    def _load(self, rank: int, t: float, done: bool) -> float:
        node = self._node_of(rank)
        self._emit(t, rank, node, f"[{_stamp(t)}] [INFO] loading checkpoint from /ckpt/run-42/iter_0002000")
        if done:
            self._emit(t + 20, rank, node, f"[{_stamp(t + 20)}] [INFO] successfully loaded checkpoint from "
                                           "/ckpt/run-42/iter_0002000 at iteration 2000")
        return t + 30

    def _train(self, rank: int, t: float, first: int, n: int) -> float:
        node = self._node_of(rank)
        if first == 2001:
            self._emit(t, rank, node, f"[{_stamp(t)}] [INFO] training ...")
        for k in range(n):
            i = first + k
            loss = 2.31 - 0.002 * (i - 2000) + 0.01 * self.rng.random()
            ms = 1900 + 40 * self.rng.random()
            t += STEP_SECONDS
            self._emit(t, rank, node, f"[{_stamp(t)}] iteration {i:8d}/  100000 | consumed samples: {i * 1024:12d}"
                                      f" | elapsed time per iteration (ms): {ms:.1f} | learning rate: 3.000E-04 | "
                                      f"lm loss: {loss:.6E} | grad norm: {0.8 + 0.05 * self.rng.random():.3f} | "
                                      "number of skipped iterations:   0 | number of nan iterations:   0 |")
        return t

    def _context(self, rank: int, phase: str | None, upto: bool) -> float:
        """The rank's lines before the excerpt's moment (``upto``: the faulty rank stops there)."""
        t = self._init(rank, self.t0)
        if phase == "init":
            return t
        t = self._load(rank, t, done=phase != "load")
        if phase == "load":
            return t
        t = self._train(rank, t, 2001, 8)
        if phase == "checkpoint":
            self._emit(t + 1, rank, self._node_of(rank), f"[{_stamp(t + 1)}] [INFO] saving checkpoint at iteration "
                                                          "2008 to /ckpt/run-42/iter_0002008")
            t += 2
        elif phase == "eval":
            self._emit(t + 1, rank, self._node_of(rank), f"[{_stamp(t + 1)}] [INFO] Evaluating on the validation "
                                                          "set at iteration 2008")
            t += 2
        elif phase == "shutdown":
            self._emit(t + 1, rank, self._node_of(rank), f"[{_stamp(t + 1)}] [INFO] Training finished after "
                                                          "2008 iterations")
            t += 2
        return t

    # ------------------------------------------------------------------------------------ cascades
    def _cascade(self, rank: int, t: float, phase: str | None) -> None:
        node = self._node_of(rank)
        host, pid = self.hosts[node], self.pids[rank]
        dev = rank % self.ranks_per_node
        peer = self._ip(self.faulty_node)
        t += 30 + 20 * self.rng.random()
        style = self.rng.randrange(4)
        out: list[str]
        if phase in ("init", "load"):
            what = self.rng.choice(("Connection reset by peer", "Broken pipe"))
            out = [f"[{_stamp(t)}] Traceback (most recent call last):",
                   '  File "/opt/conda/lib/python3.10/site-packages/torch/distributed/distributed_c10d.py", '
                   "line 3693, in barrier",
                   "    work = default_pg.barrier(opts=opts)",
                   f"torch.distributed.DistBackendError: [{rank}] is setting up NCCL communicator and retrieving "
                   f"ncclUniqueId from [0] via c10d key-value store by key '0', but store->get('0') got error: {what}"]
        elif style == 0:
            seq = 40217
            out = [f"[{_stamp(t)}] [E ProcessGroupNCCL.cpp:828] [Rank {rank}] Watchdog caught collective operation "
                   f"timeout: WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) "
                   "ran for 600081 milliseconds before timing out.",
                   "[E ProcessGroupNCCL.cpp:455] Some NCCL operations have failed or timed out. Due to the "
                   "asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/"
                   "incomplete data.",
                   "[E ProcessGroupNCCL.cpp:460] To avoid data inconsistency, we are taking the entire process down.",
                   "terminate called after throwing an instance of 'std::runtime_error'",
                   f"  what():  [Rank {rank}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq}, "
                   "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600081 milliseconds "
                   "before timing out."]
        elif style == 1:
            out = [f"{host}:{pid}:{pid + 71} [{dev}] misc/socket.cc:538 NCCL WARN Net : Connection closed by remote "
                   f"peer {peer}<{40000 + self.rng.randrange(20000)}>",
                   f"{host}:{pid}:{pid + 71} [{dev}] NCCL INFO transport/net_socket.cc:493 -> 6",
                   f"[{_stamp(t)}] [E ProcessGroupNCCL.cpp:1182] [Rank {rank}] NCCL watchdog thread terminated with "
                   "exception: NCCL error: remote process exited or there was a network error, NCCL version 2.18.5",
                   "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting "
                   "prematurely."]
        elif style == 2:
            out = [f"[{_stamp(t)}] Traceback (most recent call last):",
                   '  File "/opt/conda/lib/python3.10/site-packages/torch/distributed/distributed_c10d.py", '
                   "line 2050, in all_reduce",
                   "    work = group.allreduce([tensor], opts)",
                   f"RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection closed by peer "
                   f"[{peer}]:{20000 + self.rng.randrange(9999)}"]
        else:
            out = [f"[{_stamp(t)}] Traceback (most recent call last):",
                   '  File "/opt/conda/lib/python3.10/site-packages/torch/distributed/distributed_c10d.py", '
                   "line 2050, in all_reduce",
                   "    work = group.allreduce([tensor], opts)",
                   "BrokenPipeError: [Errno 32] Broken pipe"]
        for k, text in enumerate(out):
            self._emit(t + 0.01 * k, rank, node, text)
        if rank % self.ranks_per_node == 0:  # the node's agent tears its workers down
            t2 = t + 5
            teardown = self.rng.choice((
                [f"[{_stamp(t2)}] torch.distributed.elastic.multiprocessing.api: [WARNING] Sending process "
                 f"{self.pids[r]} closing signal SIGTERM" for r in range(rank, rank + self.ranks_per_node)],
                [f"[{_stamp(t2)}] [INFO] [launch.py:315:sigkill_handler] Killing subprocess {self.pids[r]}"
                 for r in range(rank, rank + self.ranks_per_node)],
                [f"[{_stamp(t2)}] torch.distributed.elastic.multiprocessing.api.SignalException: Process {pid} got "
                 "signal: 15",
                 f"[{_stamp(t2)}] torch.distributed.elastic.rendezvous.api.RendezvousClosedError"],
            ))
            for k, text in enumerate(teardown):
                self._emit(t2 + 0.01 * k, rank, node, text)

    # ------------------------------------------------------------------------------------ the job
    def _build(self) -> None:
        x = self.x
        incident = x.status == "incident"
        phase = x.phase if x.phase in ("init", "load", "train", "checkpoint", "eval", "shutdown") else "train"
        ends: dict[int, float] = {}
        for rank in range(self.world):
            ends[rank] = self._context(rank, phase, rank == self.faulty_rank)
        self.t_fail = max(ends.values()) + 1.0
        if self.t_excerpt is not None:  # the excerpt's own clock says when it happened
            self.t_fail = max(self.t_fail, self.t_excerpt)
        t = self.t_fail
        for k, text in enumerate(x.lines):
            rank = None if is_kernel_line(text) else self.faulty_rank
            head = _SYSLOG_HEAD.match(text) if rank is None else None
            self.lines.append(_Line(t + 0.001 * k, rank, self.faulty_node, text[head.end():] if head else text,
                                    planted=True, syslog=head is not None))
        if incident:
            # The faulty node prints it and every other node's ranks lose a peer; a job-wide fault is printed by
            # one rank of every node too, and the other ranks of those nodes lose their peers as before.
            printed = self._copies(t) if self.shared else {self.faulty_rank}
            for rank in range(self.world):
                if rank not in printed and self._node_of(rank) != self.faulty_node:
                    self._cascade(rank, self.t_fail + self.span, phase)
        else:  # a healthy job trains on and ends well
            for rank in range(self.world):
                t_end = ends[rank]
                if phase in ("init", "load"):
                    t_end = self._train(rank, t_end + 5, 2001, 4)
                if phase != "shutdown":
                    t_end = self._train(rank, max(t_end, self.t_fail) + 2, 2020, 3)
                    self._emit(t_end + 1, rank, self._node_of(rank), f"[{_stamp(t_end + 1)}] [INFO] Training "
                                                                      "finished after 2022 iterations")
        for node in range(NODES):  # every node's kernel says something harmless
            self._emit(self.t0 - 3000, None, node, "[    0.000000] Linux version 5.15.0-105-generic "
                                                  "(buildd@lcy02-amd64-007) #115-Ubuntu SMP")
            self._emit(self.t0 - 2990, None, node, f"[   12.481023] mlx5_core 0000:{0x0c + node:02x}:00.0: "
                                                  "Port module event: module 0, Cable plugged")

    def _copies(self, t: float) -> set[int]:
        """The excerpt as every other node prints it, a few seconds apart: the same rank of each node, with the
        excerpt's own host and rank names read as that node's and that rank's. Returns the ranks that print it."""
        own = excerpt_host(self.x.lines)
        named = excerpt_rank(self.x.lines)
        local = self.faulty_rank % self.ranks_per_node
        printed = {self.faulty_rank}
        for node in range(NODES):
            if node == self.faulty_node:
                continue
            rank = node * self.ranks_per_node + local
            printed.add(rank)
            start = t + self.rng.uniform(0.2, 3.0)
            for k, text in enumerate(self.x.lines):
                if own is not None:
                    text = re.sub(rf"(?<![\w.-]){re.escape(own)}(?![\w-])", self.hosts[node], text)
                if named is not None:
                    text = _RANK_WORD.sub(lambda m, r=rank: m.group(1) + str(r) if int(m.group(2)) == named
                                          else m.group(0), text)
                kernel = is_kernel_line(text)
                head = _SYSLOG_HEAD.match(text) if kernel else None
                self.lines.append(_Line(start + 0.001 * k, None if kernel else rank, node,
                                        text[head.end():] if head else text, planted=True, syslog=head is not None))
        return printed

    def truth_base(self) -> dict[str, Any]:
        x = self.x
        incident = x.status == "incident"
        if not incident or x.category in GLOBAL_CATEGORIES:
            faulty: list[str] = []
            node_scored = incident
        else:
            faulty = [self.hosts[self.faulty_node]] if x.faulty else []
            node_scored = bool(x.faulty)
        return {
            "schema": "l4lite.ground_truth/1", "status": x.status, "category": x.category if incident else None,
            "phase": x.phase if incident else None, "faulty_nodes": faulty, "node_scored": node_scored,
            "evidence_any": True, "excerpt": x.id, "split": x.split, "source_group": x.source_group,
        }

    # ------------------------------------------------------------------------------------ layouts
    def write(self, layout: str, out: Path) -> PlantedJob:
        """Write the job under ``out`` in ``layout``; returns its path and ground truth."""
        if layout not in LAYOUTS:
            raise ValueError(f"unknown layout {layout!r}; choose one of {', '.join(LAYOUTS)}")
        out.mkdir(parents=True, exist_ok=True)
        files: dict[str, list[tuple[int, _Line]]] = {}
        ordered = sorted(enumerate(self.lines), key=lambda kv: (kv[1].time, kv[0]))
        for idx, ln in ordered:
            host = self.hosts[ln.node]
            if layout == "node-folders":
                name = f"{host}/kern.log" if ln.rank is None else f"{host}/rank{ln.rank}.log"
            elif ln.rank is None:
                name = f"syslog/{host}.log"
            elif layout == "rank-files":
                name = f"logs/rank{ln.rank:02d}.out"
            else:
                name = "slurm-48151.out"
            files.setdefault(name, []).append((idx, ln))
        for name, lns in files.items():  # a rank's file is in the rank's own order, the merged file in time order
            if name.startswith("logs/") or (layout == "node-folders" and not name.endswith("kern.log")):
                lns.sort(key=lambda kv: kv[0])
        evidence: list[dict[str, Any]] = []
        for name, lns in sorted(files.items()):
            text: list[str] = []
            for k, (_, ln) in enumerate(lns, start=1):
                body = ln.text
                if name.startswith("syslog/") or ln.syslog:
                    body = _syslog(ln.time, self.hosts[ln.node]) + body
                elif name.startswith("slurm-"):
                    body = f"{ln.rank}: {body}"
                text.append(body)
                if ln.planted:
                    evidence.append({"file": name, "line": k})
            path = out / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("\n".join(text) + "\n", encoding="utf-8")
        truth = {**self.truth_base(), "scenario": layout, "layout": layout, "evidence": evidence,
                 "node_names": list(self.hosts), "lines": sum(len(v) for v in files.values())}
        (out / GROUND_TRUTH).write_text(json.dumps(truth, indent=1) + "\n", encoding="utf-8")
        return PlantedJob(out, truth)
