"""The simulated cluster: job parameters, variant choice, nodes, ranks, clocks and timestamp formats.

Everything random is drawn from ``random.Random`` seeded with a string built from the job seed and a purpose,
so that the same seed gives a byte-identical archive on any machine and Python version (string seeds are
hashed with SHA-512 by ``random``, not with the per-process ``hash()``).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from l4lite.errors import L4Error

FORMATS: tuple[str, ...] = ("megatron", "deepspeed", "hf")
LAYOUTS: tuple[str, ...] = ("per-node-dir", "per-rank-file", "merged-slurm")
NAMINGS: tuple[str, ...] = ("node", "gpu", "ip", "dgx")

# Bus numbers of the 8 GPUs and 8 HCAs of DGX-style servers (rail-optimised: GPU i talks through mlx5_i).
_GPU_BUS = {
    "a100": ("07", "0f", "47", "4e", "87", "90", "b7", "bd"),
    "h100": ("18", "2a", "3a", "5d", "9a", "ab", "ba", "db"),
}
_HCA_BUS = ("0c", "12", "48", "54", "8d", "94", "c1", "cc")
_GPU_INFO = {  # (total capacity as torch reports it, marketing name)
    "a100": ("79.15 GiB", "NVIDIA A100-SXM4-80GB"),
    "h100": ("79.32 GiB", "NVIDIA H100 80GB HBM3"),
}


def rng_for(seed: int, *purpose: object) -> random.Random:
    """A generator private to one purpose, so that adding draws in one place does not shift the others."""
    return random.Random(":".join([str(seed), *map(str, purpose)]))


@dataclass(frozen=True)
class JobSpec:
    """What the user asks for; ``None`` variants are chosen from the seed."""

    scenario: str
    nodes: int = 4
    gpus_per_node: int = 8
    iterations: int = 200
    seed: int = 0
    fmt: str | None = None
    layout: str | None = None
    naming: str | None = None

    def validate(self) -> None:
        if self.nodes < 2:
            raise L4Error(f"--nodes must be at least 2 (got {self.nodes})")
        if not 1 <= self.gpus_per_node <= 8:
            raise L4Error(f"--gpus-per-node must be between 1 and 8 (got {self.gpus_per_node})")
        if self.iterations < 20:
            raise L4Error(f"--iterations must be at least 20 (got {self.iterations})")
        for value, allowed, flag in ((self.fmt, FORMATS, "--format"), (self.layout, LAYOUTS, "--layout"),
                                     (self.naming, NAMINGS, "--naming")):
            if value is not None and value not in allowed:
                raise L4Error(f"{flag} must be one of {', '.join(allowed)} (got {value!r})")


@dataclass(frozen=True)
class Variant:
    """The concrete choices for one job: trainer format, file layout, node naming, hardware."""

    fmt: str
    layout: str
    naming: str
    gpu: str
    kernel_style: str  # "dmesg" (dmesg -T) or "syslog"
    nccl_version: str
    torch_version: str
    precision: str  # "bf16" or "fp16"


def choose_variant(spec: JobSpec) -> Variant:
    r = rng_for(spec.seed, "variant")
    fmt = spec.fmt or r.choice(FORMATS)
    layout = spec.layout or r.choice(LAYOUTS)
    naming = spec.naming or r.choice(NAMINGS)
    return Variant(
        fmt=fmt,
        layout=layout,
        naming=naming,
        gpu=r.choice(("a100", "h100")),
        kernel_style=r.choice(("dmesg", "syslog")),
        nccl_version=r.choice(("2.20.5", "2.21.5", "2.23.4")),
        torch_version=r.choice(("2.4.1", "2.5.1")),
        precision="fp16" if fmt == "deepspeed" and r.random() < 0.5 else "bf16",
    )


@dataclass
class Node:
    index: int
    name: str  # as the scheduler and the file layout know it
    short: str  # as NCCL prints it (gethostname cut at the first dot)
    ip: str
    skew: float  # seconds this node's clock is ahead of true time
    boot_time: float
    agent_pid: int
    pids: list[int]
    tids: list[int]
    gpu_bus: list[str]
    hca_bus: list[str]
    uptime_at_t0: float


@dataclass
class Cluster:
    spec: JobSpec
    variant: Variant
    nodes: list[Node]
    t0: float  # true time the launcher starts
    job_id: int
    master_port: int
    comm_id: str
    run_name: str
    ckpt_dir: str
    data_path: str
    code_dir: str
    python: str
    gpu_capacity: str
    gpu_name: str
    extra: dict[str, object] = field(default_factory=dict)

    @property
    def world(self) -> int:
        return self.spec.nodes * self.spec.gpus_per_node

    @property
    def gpn(self) -> int:
        return self.spec.gpus_per_node

    def node_of(self, rank: int) -> Node:
        return self.nodes[rank // self.gpn]

    def local(self, rank: int) -> int:
        return rank % self.gpn

    def ranks_of(self, node: int) -> range:
        return range(node * self.gpn, (node + 1) * self.gpn)

    def pid(self, rank: int) -> int:
        return self.node_of(rank).pids[self.local(rank)]

    def nccl_head(self, rank: int, tid: int | None = None) -> str:
        """The ``host:pid:tid [dev]`` header NCCL puts in front of its debug lines."""
        node = self.node_of(rank)
        lr = self.local(rank)
        return f"{node.short}:{node.pids[lr]}:{tid if tid is not None else node.tids[lr]} [{lr}]"

    def pci(self, rank: int) -> str:
        """The GPU's address as NVRM prints it in Xid lines: ``PCI:0000:cb:00``."""
        return f"PCI:0000:{self.node_of(rank).gpu_bus[self.local(rank)]}:00"

    def bus_id(self, rank: int) -> str:
        return f"{int(self.node_of(rank).gpu_bus[self.local(rank)], 16):x}000"

    def hca(self, rank: int) -> tuple[str, str]:
        """(device name, PCI address) of the HCA the rank's GPU uses."""
        lr = self.local(rank)
        return f"mlx5_{lr}", f"0000:{self.node_of(rank).hca_bus[lr]}:00.0"


def _node_names(naming: str, numbers: list[int], gpu: str, r: random.Random) -> list[tuple[str, str, str]]:
    """(name, nccl short name, ip) per node."""
    out = []
    subnet = r.randint(0, 7)
    for n in numbers:
        ip = f"10.{subnet}.{n // 200}.{n % 200 + 10}"
        if naming == "node":
            name = f"node{n:03d}"
        elif naming == "gpu":
            name = f"gpu-{gpu}-{n:03d}"
        elif naming == "ip":
            name = ip.replace(".", "-")
        else:
            name = f"dgx{n:03d}.cluster.local"
        out.append((name, name.split(".")[0], ip))
    return out


def build_cluster(spec: JobSpec, variant: Variant) -> Cluster:
    r = rng_for(spec.seed, "cluster")
    start = r.randint(1, 300)
    numbers = sorted(r.sample(range(start, start + spec.nodes * 3), spec.nodes))
    # A job start between 2024-03-01 and 2025-03-01, at a whole second.
    t0 = float(1709251200 + r.randrange(0, 365 * 86400))
    names = _node_names(variant.naming, numbers, variant.gpu, r)
    nodes = []
    for i, (name, short, ip) in enumerate(names):
        base_pid = r.randint(1200, 90000)
        uptime = r.uniform(2 * 86400, 40 * 86400)
        nodes.append(Node(
            index=i, name=name, short=short, ip=ip,
            skew=0.0 if spec.nodes == 1 else round(r.uniform(-3.0, 3.0), 3),
            boot_time=t0 - uptime, agent_pid=base_pid - r.randint(3, 40),
            pids=[base_pid + k for k in range(spec.gpus_per_node)],
            tids=[base_pid + 90 + r.randint(0, 400) + 7 * k for k in range(spec.gpus_per_node)],
            gpu_bus=list(_GPU_BUS[variant.gpu][: spec.gpus_per_node]),
            hca_bus=list(_HCA_BUS[: spec.gpus_per_node]),
            uptime_at_t0=uptime,
        ))
    project = r.choice(("llm", "foundation", "pretrain", "nlp"))
    run = r.choice(("gpt3-1.3b", "llama-7b", "gpt-2.7b", "mixtral-lite", "llama3-8b"))
    fs = r.choice(("/lustre/fsw", "/lustre/scratch", "/nfs/shared"))
    capacity, gpu_name = _GPU_INFO[variant.gpu]
    code_dir = {"megatron": "/workspace/Megatron-LM", "deepspeed": "/workspace/ds-train",
                "hf": "/workspace/hf-train"}[variant.fmt]
    return Cluster(
        spec=spec, variant=variant, nodes=nodes, t0=t0,
        job_id=r.randint(100000, 999999), master_port=r.choice((29500, 29400, 6000)),
        comm_id=f"0x{r.getrandbits(64):016x}", run_name=run,
        ckpt_dir=f"{fs}/{project}/checkpoints/{run}", data_path=f"{fs}/{project}/data/{run}-corpus",
        code_dir=code_dir, python=r.choice(("/usr/bin/python3", "/opt/conda/bin/python")),
        gpu_capacity=capacity, gpu_name=gpu_name,
    )


# Second-resolution timestamp styles of the logs the simulator writes, by name (example for 2024-09-11 17:52:18).
TIME_STYLES: dict[str, Callable[[datetime], str]] = {
    "iso": lambda d: d.strftime("%Y-%m-%d %H:%M:%S"),  # 2024-09-11 17:52:18
    "ctime": lambda d: f"{d:%a %b} {d.day:2d} {d:%H:%M:%S %Y}",  # Wed Sep 11 17:52:18 2024 (dmesg -T)
    "syslog": lambda d: f"{d:%b} {d.day:2d} {d:%H:%M:%S}",  # Sep 11 17:52:18
    "glog": lambda d: d.strftime("%m%d %H:%M:%S"),  # 0911 17:52:18 (python torch.distributed logging)
    "c10": lambda d: f"{d.month}{d.day:02d} {d:%H:%M:%S}",  # 911 17:52:18 (c10 logging: month not padded)
    "elastic": lambda d: d.strftime("%Y-%m-%d_%H:%M:%S"),  # 2024-09-11_17:52:18
    "smi": lambda d: d.strftime("%Y/%m/%d %H:%M:%S"),  # 2024/09/11 17:52:18
    "us": lambda d: d.strftime("%m/%d/%Y %H:%M:%S"),  # 09/11/2024 17:52:18 (HF example scripts)
    "slurm": lambda d: d.strftime("%Y-%m-%dT%H:%M:%S"),  # 2024-09-11T17:52:18
}


class Clock:
    """Timestamp formatting with a per-second cache: trainer lines are the bulk of the output."""

    def __init__(self) -> None:
        self._cache: dict[tuple[str, int], str] = {}

    @staticmethod
    def dt(t: float) -> datetime:
        return datetime.fromtimestamp(t, tz=UTC)

    def sec(self, style: str, t: float) -> str:
        """``t`` to the second in one of the log styles of ``TIME_STYLES`` (cached per style and second)."""
        key = (style, int(t))
        s = self._cache.get(key)
        if s is None:
            fmt = TIME_STYLES.get(style)
            if fmt is None:
                raise ValueError(style)
            s = fmt(self.dt(int(t)))
            if len(self._cache) > 200_000:
                self._cache.clear()
            self._cache[key] = s
        return s

    def ms(self, style: str, t: float) -> str:
        """``sec`` plus milliseconds: ``,030`` for Python logging, ``.030`` otherwise."""
        frac = int((t - int(t)) * 1000)
        sep = "," if style == "iso" else "."
        return f"{self.sec(style, t)}{sep}{frac:03d}"

    def iso8601(self, t: float) -> str:
        return self.dt(t).isoformat(timespec="milliseconds").replace("+00:00", "Z")
