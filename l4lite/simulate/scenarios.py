"""Scenarios: healthy runs and injected faults, each with its ground truth.

A scenario is a small class: ``schedule`` adjusts intervals, ``prepare`` edits metrics before the timeline is
computed, ``inject`` adds the fault lines and fates after it. Faults localised on one node live in
:mod:`l4lite.simulate.node_faults` and :mod:`l4lite.simulate.io_faults`; this module has the registry, the healthy runs and the job-wide faults
(divergence, overfitting, user code, NCCL misconfiguration) that blame no node.
"""

from __future__ import annotations

import math
from dataclasses import replace

from l4lite.simulate.faults import fail_everywhere, fail_rank, hang_all, mid_iteration, terminate_siblings
from l4lite.simulate.formats import TrainerFormat
from l4lite.simulate.plan import Plan, Schedule, Truth


class Scenario:
    name = ""
    category: str | None = None
    phase: str | None = None
    status = "incident"
    summary = ""
    precision: str | None = None  # force "fp16" or "bf16"
    resume: bool | None = None  # force a resumed (True) or fresh (False) run; None: chosen by the seed
    hard_negatives = False

    def schedule(self, sched: Schedule) -> Schedule:
        return sched

    def prepare(self, plan: Plan) -> None:
        """Edit metrics and the slow-node map before the timeline is built."""

    def inject(self, plan: Plan, fmt: TrainerFormat) -> None:
        """Add fault lines, stop ranks, set exits and the ground truth."""


class Healthy(Scenario):
    name = "healthy"
    status = "healthy"
    summary = "A run that trains, evaluates, checkpoints and ends normally."

    def inject(self, plan: Plan, fmt: TrainerFormat) -> None:
        plan.truth = Truth(notes=["No fault injected."])


class HealthyHardNegatives(Healthy):
    name = "healthy_hard_negatives"
    summary = ("Healthy run full of alarming-looking benign lines: fp16 OVERFLOW skips in warm-up, NCCL tuner "
               "'Failed to find', mlx5 Link INIT at boot, -Werror and error_handling.cpp in compile output, "
               "ACPI errors at boot, SYN flooding on the rendezvous port, PyTorch shutdown warnings.")
    precision = "fp16"
    resume = False
    hard_negatives = True

    def inject(self, plan: Plan, fmt: TrainerFormat) -> None:
        plan.truth = Truth(notes=["No fault injected; every alarming line is benign."])


class LossDivergence(Scenario):
    name = "loss_divergence"
    category, phase = "numerical", "train"
    summary = "Grad norm grows, the loss spikes, then NaN (Megatron aborts on the NaN grad norm)."
    precision = "bf16"

    def prepare(self, plan: Plan) -> None:
        s = plan.sched
        r = plan.rng("divergence")
        spike = s.first + int((s.last - s.first) * r.uniform(0.5, 0.72))
        ramp = min(25, spike - s.first - 2)
        for k in range(ramp):
            plan.grad_norm[spike - ramp + k] *= 1.0 + (k + 1) * r.uniform(0.15, 0.3)
        plan.loss[spike] = plan.loss[spike - 1] * r.uniform(2.6, 3.4)
        plan.grad_norm[spike] = plan.grad_norm[spike - 1] * r.uniform(6.0, 12.0)
        first_nan = spike + r.randint(2, 5)
        for i in range(spike + 1, first_nan):
            plan.loss[i] = plan.loss[spike] * r.uniform(0.85, 1.15)
            plan.grad_norm[i] = plan.grad_norm[spike] * r.uniform(0.8, 2.5)
        for i in range(first_nan, s.last + 1):
            plan.loss[i] = plan.grad_norm[i] = math.nan
            plan.nan[i] = 1
        for i in list(plan.val_loss):
            if i >= first_nan:
                plan.val_loss[i] = math.nan
            elif i >= spike:
                plan.val_loss[i] = plan.loss[i] * 1.02
        plan.extras["spike"], plan.extras["first_nan"] = spike, first_nan

    def inject(self, plan: Plan, fmt: TrainerFormat) -> None:
        spike, first_nan = int(plan.extras["spike"]), int(plan.extras["first_nan"])  # type: ignore[call-overload]
        marked = range(min(4, plan.cluster.world))
        for rank in marked:
            plan.mark_iters[rank] = {spike} if fmt.name == "megatron" else {spike, first_nan}
        note = ("Global numerical fault: every rank logs the same loss; evidence is the loss-spike line (and the "
                "first NaN line or the NaN abort) of the lowest ranks 0-3, any rank's copy is equivalent.")
        if fmt.name == "megatron":
            c = plan.cluster
            for rank in plan.ranks():
                plan.stop_iter[rank] = first_nan - 1
            t = mid_iteration(plan, first_nan, 0.3)
            hang_all(plan, t)
            r = plan.rng("nan-abort")
            for rank in plan.ranks():
                line = (f"RuntimeError: Rank {rank}: found NaN in local grad norm in backward pass before data-parallel "
                        f"communication collective. Device: {c.local(rank)}, node: {c.node_of(rank).short}")
                fail_rank(plan, fmt, rank, t + r.uniform(0, 0.3), "train", [line], mark=rank < 4)
        plan.set_truth("numerical", "train", [], spike, plan.iter_end[spike], note)


class Overfitting(Scenario):
    name = "overfitting"
    category, phase = "numerical", "eval"
    summary = "Training loss keeps falling while validation loss rises; the job does not crash."

    def schedule(self, sched: Schedule) -> Schedule:
        n = sched.last - sched.first + 1
        return replace(sched, eval_every=max(5, n // 10))

    def prepare(self, plan: Plan) -> None:
        s = plan.sched
        r = plan.rng("overfit")
        evals = sorted(plan.val_loss)
        k = max(2, int(len(evals) * r.uniform(0.35, 0.5)))
        best = evals[k - 1]
        slope = r.uniform(0.05, 0.12)
        for j, i in enumerate(evals[k:], start=1):
            plan.val_loss[i] = plan.val_loss[best] + slope * j + r.gauss(0, 0.005)
        for i in range(best + 1, s.last + 1):
            plan.loss[i] -= 0.35 * (i - best) / max(1, s.last - best)
        plan.extras["rising"] = evals[k:k + 3]

    def inject(self, plan: Plan, fmt: TrainerFormat) -> None:
        rising = list(plan.extras["rising"])  # type: ignore[call-overload]
        plan.mark_evals[0] = set(rising)
        plan.set_truth("numerical", "eval", [], rising[0], plan.eval_span[rising[0]][1],
                       "No crash: validation loss rises at every evaluation after iteration "
                       f"{rising[0] - plan.sched.eval_every} while the training loss keeps falling. Status is "
                       "'incident' by convention (a run worth stopping), category numerical, phase eval, no faulty "
                       "node; evidence is the first rising validation lines (rank 0 prints them).")


class UserCodeError(Scenario):
    name = "user_code_error"
    category, phase = "user_config", "init"
    summary = "The same exception on every rank at start-up (bad configuration or code)."

    def inject(self, plan: Plan, fmt: TrainerFormat) -> None:
        c = plan.cluster
        r = plan.rng("usercode")
        t = c.t0 + r.uniform(4.0, 7.0)
        if fmt.name == "megatron":
            exc = ["AssertionError: max_position_embeddings (2048) must be greater than or equal to seq_length (4096)"]
        elif fmt.name == "deepspeed":
            exc = [f"AssertionError: Check batch related parameters. train_batch_size is not equal to "
                   f"micro_batch_per_gpu * gradient_acc_step * world_size {fmt.gbs} != 4 * 3 * {c.world}"]
        else:
            exc = ["ValueError: --load_best_model_at_end requires the save and eval strategy to match, but found",
                   "- Evaluation strategy: IntervalStrategy.NO", "- Save strategy: SaveStrategy.STEPS"]
        fail_everywhere(plan, fmt, t, "config", exc, None)
        plan.set_truth("user_config", "init", [], None, t,
                       "Global fault: every rank raises the same exception before NCCL starts; evidence is the "
                       "exception line of ranks 0-3 (any rank's copy is equivalent).")


class NcclMisconfig(Scenario):
    name = "nccl_misconfig"
    category, phase = "user_config", "init"
    summary = "NCCL cannot start: NCCL_SOCKET_IFNAME names no interface, or two ranks share one GPU."

    def inject(self, plan: Plan, fmt: TrainerFormat) -> None:
        c = plan.cluster
        r = plan.rng("misconfig")
        t = plan.t_nccl
        hang_all(plan, t - 0.01)
        v = c.variant.nccl_version
        socket = r.random() < 0.5 or c.gpn == 1
        marked = 0
        for rank in plan.ranks():
            head = c.nccl_head(rank, c.pid(rank))
            lr = c.local(rank)
            if socket:
                lines = [f"{head} NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth0",
                         f"{head} NCCL WARN Bootstrap : no socket interface found",
                         f"{head} NCCL INFO bootstrap.cc:94 -> 3", f"{head} NCCL INFO init.cc:1840 -> 3"]
                root = (1,)
                exc = [f"torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
                       f"ProcessGroupNCCL.cpp:2027, internal error - please report this issue to the NCCL developers, "
                       f"NCCL version {v}", "ncclInternalError: Internal check failed.", "Last error:",
                       "Bootstrap : no socket interface found"]
            elif lr == 0:
                lines, root, exc = [], (), []
            else:
                first = rank - lr
                lines = [f"{c.nccl_head(rank)} NCCL INFO ncclCommInitRank comm 0x{0x55d0c8a3b2c0 + rank:x} rank {rank} "
                         f"nranks {c.world} cudaDev 0 nvmlDev 0 busId {c.bus_id(first)} commId {c.comm_id} - Init START",
                         f"{c.nccl_head(rank)} init.cc:871 NCCL WARN Duplicate GPU detected : rank {rank} and rank "
                         f"{first} both on CUDA device {c.bus_id(first)}", f"{c.nccl_head(rank)} NCCL INFO init.cc:1501 -> 5"]
                root = (1,)
                exc = [f"torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
                       f"ProcessGroupNCCL.cpp:2027, invalid usage (run with NCCL_DEBUG=WARN for details), NCCL version {v}",
                       "ncclInvalidUsage: This usually reflects invalid usage of NCCL library.", "Last error:",
                       f"Duplicate GPU detected : rank {rank} and rank {first} both on CUDA device {c.bus_id(first)}"]
            tt = t + 0.01 * lr + r.uniform(0, 0.2)
            if lines:
                plan.add("trainer", rank, tt, "\n".join(lines), root if marked < 4 else ())
                marked += 1
            if exc:
                fail_rank(plan, fmt, rank, tt + 0.3, "init", exc, "barrier", mark=False)
        terminate_siblings(plan)  # the ranks that own the GPU wait at the barrier until torchrun stops them
        plan.set_truth("user_config", "init", [], None, t,
                       ("NCCL_SOCKET_IFNAME=eth0 matches no interface on any node" if socket else
                        "CUDA_VISIBLE_DEVICES/set_device missing: all local ranks use GPU 0")
                       + "; global start-up misconfiguration, evidence is the NCCL WARN line of the first 4 ranks "
                       "that print it.")
