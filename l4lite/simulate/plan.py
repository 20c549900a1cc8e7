"""The job plan: a timeline, the training metrics, per-rank fates and the injected events.

A scenario edits a plan in two steps: ``prepare`` changes the metrics and the schedule before the timeline is
computed (a slow node, a resumed run, a diverging loss), ``inject`` adds events (kernel lines, tracebacks, NCCL
errors), stops ranks and sets their exit codes once the timeline is known. Rendering turns the plan into
per-file streams of ``(true time, text, marks)``; marks are ``(line offset in text, label)`` pairs that the
writer resolves to ``file:line`` for the ground truth.
"""

from __future__ import annotations

import bisect
import math
import random
from collections import defaultdict
from dataclasses import dataclass, field

from l4lite.simulate.cluster import Clock, Cluster, rng_for

Mark = tuple[int, str]
Event = tuple[float, str, tuple[Mark, ...] | None]
ROOT = "root"
INF = float("inf")


@dataclass
class Exit:
    """How a worker process ends: exit code (negative = signal), when, and the exception it raised if any."""

    time: float
    code: int
    error: str | None = None  # last line of the Python traceback, shown in the torchelastic summary
    # the launcher's report of this exit is proof too: the kernel named the pid it killed, the report ties it to a rank
    reported: bool = False


@dataclass
class Truth:
    status: str = "healthy"
    faulty_nodes: list[int] = field(default_factory=list)
    phase: str | None = None
    iteration: int | None = None
    category: str | None = None
    notes: list[str] = field(default_factory=list)


@dataclass
class Schedule:
    """Intervals in iterations and the resume point, chosen per job before the timeline is built."""

    first: int  # first iteration this job runs (resume + 1)
    last: int  # last iteration it would run if nothing failed
    train_iters: int  # the N of "iteration i/N"
    ckpt_every: int
    eval_every: int
    resume_from: int | None  # checkpoint iteration loaded at start, or None for a fresh start
    warmup: int


@dataclass
class Plan:
    cluster: Cluster
    clock: Clock
    sched: Schedule
    # Per-iteration series indexed by iteration number (index < first unused).
    loss: list[float]
    grad_norm: list[float]
    lr: list[float]
    iter_ms: list[float]
    loss_scale: list[float]
    skipped: list[int]
    nan: list[int]
    val_loss: dict[int, float]
    slow: dict[int, tuple[int, float]] = field(default_factory=dict)  # node -> (onset iteration, factor)
    # Timeline (true seconds), filled by build_timeline.
    t_nccl: float = 0.0
    t_load: float = 0.0
    t_train: float = 0.0
    t_end: float = 0.0
    iter_end: list[float] = field(default_factory=list)
    ckpt_span: dict[int, tuple[float, float]] = field(default_factory=dict)  # iteration -> (start, end)
    eval_span: dict[int, tuple[float, float]] = field(default_factory=dict)
    # Fates and injections, filled by the scenario.
    stop: list[float] = field(default_factory=list)  # per rank: no base lines after this true time
    stop_iter: list[int] = field(default_factory=list)  # per rank: last iteration line printed
    exits: dict[int, Exit] = field(default_factory=dict)
    # Base lines that are evidence: iteration lines and validation lines, per rank.
    mark_iters: dict[int, set[int]] = field(default_factory=dict)
    mark_evals: dict[int, set[int]] = field(default_factory=dict)
    events: dict[tuple[str, int], list[Event]] = field(default_factory=lambda: defaultdict(list))
    truth: Truth = field(default_factory=Truth)
    extras: dict[str, object] = field(default_factory=dict)

    @property
    def spec(self):  # noqa: ANN201 - convenience
        return self.cluster.spec

    def rng(self, purpose: str) -> random.Random:
        return rng_for(self.cluster.spec.seed, "plan", purpose)

    def local_time(self, node: int, t: float) -> float:
        """The time as written on ``node``'s clock."""
        return t + self.cluster.nodes[node].skew

    def add(self, kind: str, key: int, t: float, text: str, root_lines: tuple[int, ...] = ()) -> None:
        """Inject an event into stream ``(kind, key)``: kind is trainer (key=rank), kernel, launcher or gpu
        (key=node). ``root_lines`` are offsets of the lines of ``text`` that are root-cause evidence."""
        marks = tuple((o, ROOT) for o in root_lines) or None
        self.events[(kind, key)].append((t, text, marks))

    def iteration_at(self, t: float) -> int | None:
        """The last iteration completed at true time ``t`` (None before the first)."""
        s = self.sched
        k = bisect.bisect_right(self.iter_end, t, lo=s.first, hi=s.last + 1)
        return k - 1 if k > s.first else None

    def kill(self, rank: int, t: float, code: int, error: str | None = None, reported: bool = False) -> None:
        """The rank stops printing at ``t`` and exits with ``code`` (first fate wins)."""
        if rank in self.exits:
            return
        self.stop[rank] = min(self.stop[rank], t)
        self.exits[rank] = Exit(time=t, code=code, error=error, reported=reported)

    def ranks(self) -> range:
        return range(self.cluster.world)

    def node_ranks(self, node: int) -> range:
        return self.cluster.ranks_of(node)

    def set_truth(self, category: str, phase: str, faulty: list[int], iteration: int | None, fault_t: float,
                  notes: str) -> None:
        self.truth = Truth(status="incident", faulty_nodes=faulty, phase=phase, iteration=iteration,
                           category=category, notes=[notes])
        self.extras["fault_t"] = fault_t


def _nice(n: float) -> int:
    for step in (10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 2500, 5000):
        if n <= step:
            return step
    return int(round(n, -3))


def make_schedule(cluster: Cluster, resume: bool) -> Schedule:
    k = cluster.spec.iterations
    r = rng_for(cluster.spec.seed, "schedule")
    ckpt_every = _nice(k / 3)
    eval_every = ckpt_every if r.random() < 0.5 else max(10, ckpt_every // 2)
    resume_from = ckpt_every * r.randint(1, 4) if resume else None
    first = (resume_from or 0) + 1
    last = first + k - 1
    return Schedule(first=first, last=last, train_iters=_nice(last * 1.5) if r.random() < 0.7 else last,
                    ckpt_every=ckpt_every, eval_every=eval_every, resume_from=resume_from,
                    warmup=max(5, min(2000, (last * 3) // 100)))


def make_plan(cluster: Cluster, sched: Schedule) -> Plan:
    """Smooth training curves with noise: loss decays, grad norm settles, lr warms up then decays."""
    r = rng_for(cluster.spec.seed, "metrics")
    n = sched.last + 1
    l_inf, l_0 = r.uniform(1.9, 2.6), r.uniform(9.5, 11.0)
    tau = max(20.0, sched.last * r.uniform(0.08, 0.25))
    peak_lr = r.choice((3.0e-4, 1.5e-4, 6.0e-4, 2.0e-4))
    min_lr = peak_lr / 10
    base_ms = r.uniform(550.0, 1900.0)
    fp16 = cluster.variant.precision == "fp16"
    loss, gn, lr, ms, scale = [0.0] * n, [0.0] * n, [0.0] * n, [0.0] * n, [1.0] * n
    # fp16: dynamic loss scaling starts at 2**32 and halves on every overflow of the first steps (benign).
    warm_skips = r.randint(3, 7) if fp16 and sched.first == 1 else 0
    cur_scale = 2.0**32 / 2**warm_skips if fp16 and sched.first == 1 else (65536.0 if fp16 else 1.0)
    skipped = [0] * n
    for i in range(1, n):
        loss[i] = l_inf + (l_0 - l_inf) * math.exp(-i / tau) + r.gauss(0, 0.02 + 0.01 * math.exp(-i / tau))
        gn[i] = abs(0.25 + 6.0 * math.exp(-i / (tau / 3)) + r.gauss(0, 0.04))
        if i <= sched.warmup:
            lr[i] = peak_lr * i / sched.warmup
        else:
            frac = min(1.0, (i - sched.warmup) / max(1, sched.train_iters - sched.warmup))
            lr[i] = min_lr + 0.5 * (peak_lr - min_lr) * (1 + math.cos(math.pi * frac))
        lr[i] = float(f"{lr[i]:.15g}")  # printed with repr by HF: keep the last digits platform-independent
        ms[i] = base_ms * (1 + r.gauss(0, 0.015))
        if fp16 and i % 1000 == 0:
            cur_scale *= 2
        scale[i] = cur_scale
        if i <= warm_skips:
            scale[i] = 2.0**32 / 2 ** (i - 1)
            skipped[i] = 1
    val = {}
    for i in range(sched.first, n):
        if i % sched.eval_every == 0:
            val[i] = l_inf + 0.08 + (l_0 - l_inf) * math.exp(-i / tau) + r.gauss(0, 0.01)
    ms[0] = base_ms
    return Plan(cluster=cluster, clock=Clock(), sched=sched, loss=loss, grad_norm=gn, lr=lr, iter_ms=ms,
                loss_scale=scale, skipped=skipped, nan=[0] * n, val_loss=val)


def build_timeline(plan: Plan) -> None:
    """True times of each phase and of the end of every iteration, including checkpoint and eval pauses."""
    c = plan.cluster
    r = plan.rng("timeline")
    plan.t_nccl = c.t0 + r.uniform(9.0, 20.0)
    plan.t_load = plan.t_nccl + r.uniform(2.0, 4.0)
    load = r.uniform(8.0, 20.0) + (r.uniform(20.0, 60.0) if plan.sched.resume_from else 0.0)
    plan.t_train = plan.t_load + load
    s = plan.sched
    ends = [0.0] * (s.last + 1)
    t = plan.t_train
    save_s = r.uniform(15.0, 60.0)
    for i in range(s.first, s.last + 1):
        factor = max((f for onset, f in plan.slow.values() if i >= onset), default=1.0)
        t += plan.iter_ms[i] * factor / 1000.0
        ends[i] = t
        if i % s.eval_every == 0 and i in plan.val_loss:
            dur = r.uniform(8.0, 25.0)
            plan.eval_span[i] = (t, t + dur)
            t += dur
        if i % s.ckpt_every == 0:
            dur = save_s * r.uniform(0.9, 1.1)
            plan.ckpt_span[i] = (t, t + dur)
            t += dur
    plan.iter_end = ends
    plan.t_end = t + r.uniform(2.0, 6.0)
    plan.stop = [INF] * c.world
    plan.stop_iter = [s.last] * c.world
