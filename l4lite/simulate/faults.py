"""Building blocks the scenarios share: failing a rank with a traceback, and the cascade on everyone else.

The cascade is what makes localisation hard in real jobs: one dead GPU or link makes every healthy rank log an
NCCL watchdog timeout (or a remote-process error) and every node's torchrun print a failure summary that names
its own first casualty. None of these lines is root-cause evidence.
"""

from __future__ import annotations

import l4lite.simulate.runtime as runtime
from l4lite.simulate.formats import TrainerFormat
from l4lite.simulate.plan import Plan

WATCHDOG_MS = 600000


def seq_of(plan: Plan, i: int) -> int:
    """The NCCL work sequence number of the gradient all-reduce of iteration ``i``."""
    return 11 + 3 * i


def fault_iteration(plan: Plan, lo: float = 0.35, hi: float = 0.85, name: str = "fault") -> int:
    s = plan.sched
    span = s.last - s.first
    r = plan.rng(name)
    i = s.first + int(span * r.uniform(lo, hi))
    while i % s.ckpt_every == 0 or (i - 1) % s.ckpt_every == 0:
        i += 1
    return min(i, s.last - 2)


def mid_iteration(plan: Plan, i: int, frac: float = 0.5) -> float:
    """A true time inside the compute of iteration ``i``."""
    return plan.iter_end[i] - plan.iter_ms[i] * frac / 1000.0


def fail_rank(plan: Plan, fmt: TrainerFormat, rank: int, t: float, where: str, exc: list[str],
              tail: str | None = None, code: int = 1, roots: tuple[int, ...] = (0,), pre: list[str] | None = None,
              mark: bool = True) -> None:
    """The rank prints a traceback ending in ``exc`` (``roots`` index into ``exc``) and exits with ``code``."""
    lines, k = runtime.traceback(fmt, where, exc, tail)
    pre = pre or []
    root_lines = tuple(len(pre) + k + r for r in roots) if mark else ()
    plan.add("trainer", rank, t, runtime.rank_prefix(plan, rank, pre + lines), root_lines)
    plan.kill(rank, t + 0.05, code, exc[0])


def hang_all(plan: Plan, t: float) -> None:
    """From ``t`` on nobody makes progress: base lines stop, processes stay alive until something kills them."""
    for r in plan.ranks():
        plan.stop[r] = min(plan.stop[r], t)


def terminate_siblings(plan: Plan) -> None:
    """torchrun stops the other workers of a node (SIGTERM) just after the node's first failure."""
    c = plan.cluster
    for n in range(c.spec.nodes):
        ranks = list(c.ranks_of(n))
        failed = [plan.exits[r].time for r in ranks if r in plan.exits and plan.exits[r].code != -15]
        if not failed:
            continue
        t = min(failed) + 0.6
        for r in ranks:
            if r not in plan.exits:
                plan.kill(r, t, -15)


def cascade(plan: Plan, fmt: TrainerFormat, t_fail: float, i_fail: int | None, mode: str,
            last_error: str = "", culprit_ranks: frozenset[int] = frozenset()) -> None:
    """Every rank not already dead reacts to the loss of its peers.

    ``watchdog``: the collective of iteration ``i_fail`` times out after 10 minutes, the process aborts
    (SIGABRT). ``remote``: NCCL reports the remote process or network error within seconds (exit 1).
    Ranks of nodes that already have a failure are stopped by their torchrun first.
    """
    hang_all(plan, t_fail)
    terminate_siblings(plan)
    r = plan.rng("cascade")
    seq = seq_of(plan, i_fail) if i_fail is not None else 3
    for rank in plan.ranks():
        if rank in plan.exits or rank in culprit_ranks:
            continue
        if mode == "watchdog":
            t = t_fail + WATCHDOG_MS / 1000.0 + r.uniform(0.02, 0.9)
            plan.add("trainer", rank, t, runtime.watchdog_timeout(plan, rank, t, seq, timeout_ms=WATCHDOG_MS))
            plan.kill(rank, t + 0.05, -6)
        else:
            t = t_fail + r.uniform(1.0, 6.0)
            text, exc = runtime.remote_error(plan, fmt, rank, last_error or
                                             "socketProgressOpt: Call to recv from "
                                             f"{plan.cluster.nodes[0].ip}<{r.randint(30000, 60000)}> failed : "
                                             "Connection reset by peer")
            plan.add("trainer", rank, t, text)
            plan.kill(rank, t + 0.05, 1, exc)
    terminate_siblings(plan)


def fail_everywhere(plan: Plan, fmt: TrainerFormat, t: float, where: str, exc: list[str], tail: str | None,
                    marked: int = 4, roots: tuple[int, ...] = (0,)) -> None:
    """A global fault: every rank raises the same exception; the first ``marked`` ranks are evidence."""
    r = plan.rng("everywhere")
    hang_all(plan, t)
    for rank in plan.ranks():
        fail_rank(plan, fmt, rank, t + r.uniform(0.0, 0.4), where, exc, tail, roots=roots, mark=rank < marked)
