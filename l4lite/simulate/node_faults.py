"""Faults that belong to one node: GPU, network, memory and a silent hang (storage and data: io_faults).

Each picks the faulty node (and GPU or rank) from the seed, writes the first fault lines there (marked as
root-cause evidence), kills or stops the affected ranks and lets :func:`faults.cascade` take the rest of the job
down the way real jobs go down.
"""

from __future__ import annotations

import random

import l4lite.simulate.runtime as runtime
import l4lite.simulate.system as system
from l4lite.simulate.faults import cascade, fail_rank, fault_iteration, hang_all, mid_iteration, seq_of
from l4lite.simulate.formats import TrainerFormat
from l4lite.simulate.plan import Plan
from l4lite.simulate.scenarios import Scenario


def pick(plan: Plan, purpose: str) -> tuple[int, int]:
    """(faulty node, local GPU index), drawn from the seed stream named ``purpose``."""
    r = plan.rng(purpose)
    return r.randrange(plan.cluster.spec.nodes), r.randrange(plan.cluster.gpn)


def pick_rank(plan: Plan, purpose: str) -> tuple[int, int, int]:
    """(faulty node, local GPU index, global rank of that GPU): most faults hit one rank of one node."""
    f, g = pick(plan, purpose)
    return f, g, f * plan.cluster.gpn + g


def xid(plan: Plan, rank: int, code: int, text: str) -> str:
    """An NVRM Xid kernel line for the GPU of ``rank`` (the driver names the PCI address and the process)."""
    return f"NVRM: Xid ({plan.cluster.pci(rank)}): {code}, pid={plan.cluster.pid(rank)}, name=pt_main_thread, {text}"


def cascade_mode(plan: Plan) -> str:
    """How healthy ranks go down: by their own NCCL watchdog, or by the remote-error path (both occur in real jobs)."""
    return "watchdog" if plan.rng("mode").random() < 0.5 else "remote"


def _dbe(plan: Plan, rank: int, r: random.Random) -> str:
    """The Xid 48 double-bit-error line that opens every uncorrectable ECC fault (draws two numbers from ``r``)."""
    return xid(plan, rank, 48, "An uncorrectable double bit error (DBE) has been detected on GPU in the "
                               f"framebuffer at partition {r.randint(0, 7)}, subpartition {r.randint(0, 1)}.")


class Xid79(Scenario):
    name = "xid79_fallen_off_bus"
    category, phase = "gpu_hardware", "train"
    summary = "A GPU falls off the PCIe bus (NVRM Xid 79); its rank aborts, the rest of the job cascades."

    def inject(self, plan: Plan, fmt: TrainerFormat) -> None:
        c = plan.cluster
        f, g, rank = pick_rank(plan, "xid79")
        i = fault_iteration(plan)
        t = mid_iteration(plan, i)
        bus = c.node_of(rank).gpu_bus[g]
        uuid = f"GPU-{plan.rng('uuid').getrandbits(128):032x}"
        uuid = f"{uuid[:12]}-{uuid[12:16]}-{uuid[16:20]}-{uuid[20:24]}-{uuid[24:36]}"
        system.kernel(plan, f, t, [xid(plan, rank, 79, "GPU has fallen off the bus."),
                                   f"NVRM: GPU 0000:{bus}:00.0: GPU has fallen off the bus.",
                                   f"NVRM: GPU at PCI:0000:{bus}:00: {uuid}",
                                   "NVRM: A GPU crash dump has been created. If possible, please run",
                                   "NVRM: nvidia-bug-report.sh as root to collect this data before",
                                   "NVRM: the NVIDIA kernel module is unloaded."], root=(0, 1))
        ta = t + plan.rng("xid79t").uniform(0.3, 2.0)
        plan.add("trainer", rank, ta, runtime.watchdog_abort(plan, rank, ta, ["CUDA error: unknown error"], "cuda"),
                 (0,))
        plan.kill(rank, ta + 0.05, -6)
        cascade(plan, fmt, t, i, cascade_mode(plan), culprit_ranks=frozenset({rank}))
        plan.set_truth("gpu_hardware", "train", [f], i - 1, t,
                       f"GPU {g} ({c.pci(rank)}) of {c.nodes[f].name} fell off the bus during iteration {i}; rank "
                       f"{rank} aborts with a CUDA error, every other rank is a cascade.")


class EccUncorrectable(Scenario):
    name = "ecc_uncorrectable"
    category, phase = "gpu_hardware", "train"
    summary = "Uncorrectable ECC error in GPU memory (Xid 48/63 or 94/95) and the trainer's CUDA ECC error."

    def inject(self, plan: Plan, fmt: TrainerFormat) -> None:
        c = plan.cluster
        f, g, rank = pick_rank(plan, "ecc")
        i = fault_iteration(plan)
        t = mid_iteration(plan, i)
        r = plan.rng("ecc-kind")
        if c.variant.gpu == "a100":
            msgs = [_dbe(plan, rank, r),
                    xid(plan, rank, 63, f"Row Remapper: New row (0x{r.getrandbits(32):016x}) marked for remapping, "
                                        "reset gpu to activate.")]
        else:
            code, what = (94, "Contained: SM (0x1). RST: No, D-RST: No") if r.random() < 0.5 else \
                (95, "Uncontained: FBHUB. RST: Yes, D-RST: No")
            msgs = [_dbe(plan, rank, r), xid(plan, rank, code, what)]
        system.kernel(plan, f, t, msgs, root=(0, 1))
        exc = ["RuntimeError: CUDA error: uncorrectable ECC error encountered"] + runtime.CUDA_TAIL[:-1]
        fail_rank(plan, fmt, rank, t + r.uniform(0.1, 0.8), "train", exc, "cuda_sync")
        cascade(plan, fmt, t, i, cascade_mode(plan), culprit_ranks=frozenset({rank}))
        plan.set_truth("gpu_hardware", "train", [f], i - 1, t,
                       f"Uncorrectable ECC error on GPU {g} of {c.nodes[f].name} during iteration {i}.")


class NvlinkError(Scenario):
    name = "nvlink_error"
    category, phase = "gpu_hardware", "train"
    summary = "Fatal NVLink error between two GPUs of one node (Xid 74, or 145/149 on NVLink 5)."

    def inject(self, plan: Plan, fmt: TrainerFormat) -> None:
        c = plan.cluster
        f, g = pick(plan, "nvlink")
        g2 = (g + 1) % c.gpn
        ranks = sorted({f * c.gpn + g, f * c.gpn + g2})
        i = fault_iteration(plan)
        t = mid_iteration(plan, i)
        r = plan.rng("nvlink-kind")
        link = r.randint(0, 17)
        if r.random() < 0.7:
            msgs = [xid(plan, rk, 74, f"NVLink: fatal error detected on link {link}(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)")
                    for rk in ranks]
        else:
            msgs = [f"NVRM: Xid ({c.pci(ranks[0])}): 149, NETIR_LINK_EVT Fatal XC0 i0 Link {link:02d} (0x025001c6 "
                    "0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)",
                    f"NVRM: Xid ({c.pci(ranks[-1])}): 145, RLW_RXPIPE Nonfatal XC0 i0 Link {link:02d} (0x0409a0c2 "
                    "0x00000008 0x00000001 0x00000000 0x00100000 0x00000004)"]
        system.kernel(plan, f, t, msgs, root=tuple(range(len(msgs))))
        exc = ["RuntimeError: CUDA error: an uncorrectable NVLink error was detected during the execution"] + \
            runtime.CUDA_TAIL[:-1]
        for k, rk in enumerate(ranks):
            fail_rank(plan, fmt, rk, t + 0.2 + 0.15 * k + r.uniform(0, 0.3), "train", exc, "collective")
        cascade(plan, fmt, t, i, cascade_mode(plan), culprit_ranks=frozenset(ranks))
        plan.set_truth("gpu_hardware", "train", [f], i - 1, t,
                       f"NVLink {link} between GPUs {g} and {g2} of {c.nodes[f].name} failed during iteration {i}.")


class IbLinkDown(Scenario):
    name = "ib_link_down"
    category, phase = "network", "train"
    summary = ("One node's InfiniBand port goes down: mlx5 link down, NCCL NET/IB completion error status=12 on "
               "that node, then NCCL watchdog timeouts on every other rank.")

    def inject(self, plan: Plan, fmt: TrainerFormat) -> None:
        c = plan.cluster
        f, k = pick(plan, "ib")
        node = c.nodes[f]
        rank = f * c.gpn + k
        hca, hca_pci = c.hca(rank)
        i = fault_iteration(plan)
        t = mid_iteration(plan, i, 0.8)
        r = plan.rng("ib-kind")
        dev = f"mlx5_core {hca_pci}"
        msgs = []
        if r.random() < 0.6:
            msgs.append(f"{dev}: mlx5_port_module_event:1131:(pid 0): Port module event[error]: module {k}, Cable error, "
                        + r.choice(["Bus stuck (I2C or data shorted)", "High Temperature", "Bad or shorted cable/module"]))
        msgs.append(f"{dev} ibp{int(node.hca_bus[k], 16)}s0: Link down")
        system.kernel(plan, f, t, msgs, root=tuple(range(len(msgs))))
        peer = c.nodes[(f + 1) % c.spec.nodes]
        port = r.randint(30000, 60000)
        te = t + r.uniform(7.0, 20.0)  # IB retry: timeout x retry count
        warn = (f"transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion from peer {peer.ip}<{port}> with status=12 "
                f"opcode=0 len=0 vendor err 129 (Send) localGid ::ffff:{node.ip} remoteGids::ffff:{peer.ip}")
        h = c.nccl_head(rank, c.node_of(rank).tids[k] + 37)
        lines = [f"{h} {warn}", f"{h} NCCL INFO transport/net.cc:1302 -> 6", f"{h} NCCL INFO proxy.cc:698 -> 6",
                 f"{h} NCCL INFO proxy.cc:878 -> 6 [Progress Thread]"]
        plan.add("trainer", rank, te, "\n".join(lines), (0,))
        v = c.variant.nccl_version
        ta = te + r.uniform(0.2, 1.0)
        err = [f"NCCL error: remote process exited or there was a network error, NCCL version {v}",
               "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.",
               "Last error:", warn.split("NCCL WARN ", 1)[1]]
        plan.add("trainer", rank, ta, runtime.watchdog_abort(plan, rank, ta, err, "nccl"))
        plan.kill(rank, ta + 0.05, -6)
        cascade(plan, fmt, t, i, "watchdog", culprit_ranks=frozenset({rank}))
        plan.set_truth("network", "train", [f], i - 1, t,
                       f"Port 1 of {hca} ({hca_pci}) on {node.name} went down during iteration {i}; rank {rank} (rail "
                       f"{k}) gets IB completion errors (status=12, retry exceeded); all other ranks time out in the "
                       "all-reduce 10 minutes later (cascade).")


class NcclHang(Scenario):
    name = "nccl_hang"
    category, phase = "software", "train"
    summary = ("The culprit node's ranks stop without a single error line; everyone else blocks in the next "
               "all-reduce and is killed by the NCCL watchdog 10 minutes later.")

    def inject(self, plan: Plan, fmt: TrainerFormat) -> None:
        c = plan.cluster
        f, _ = pick(plan, "hang")
        h = fault_iteration(plan, name="hang")
        culprits = list(c.ranks_of(f))
        t_stall = plan.iter_end[h - 1] - 0.01
        for rk in plan.ranks():
            plan.stop_iter[rk] = h - 2 if rk in culprits else h - 1
        for rk in culprits:
            plan.stop[rk] = t_stall
        for rk in culprits[:4]:
            plan.mark_iters[rk] = {h - 2}
        t_block = plan.iter_end[h - 1] + plan.iter_ms[h] / 1000.0
        hang_all(plan, t_block)
        cascade(plan, fmt, t_block, h, "watchdog", culprit_ranks=frozenset(culprits))
        r = plan.rng("hang")
        if r.random() < 0.5 and f != 0:
            t = plan.exits[0].time - 0.04
            ranks = ", ".join(map(str, culprits))
            plan.add("trainer", 0, t, "\n".join([
                runtime.c10_head(plan, 0, t, "E", "ProcessGroupNCCL.cpp:1297") + f"[PG 0 (default_pg) Rank 0] Timeout "
                f"at NCCL work: {seq_of(plan, h)}, last enqueued NCCL work: {seq_of(plan, h)}, last completed NCCL "
                f"work: {seq_of(plan, h) - 1}.",
                runtime.c10_head(plan, 0, t, "E", "ProcessGroupNCCL.cpp:1301") + "[PG 0 (default_pg) Rank 0] ",
                "\t - To our best knowledge, the lagging/dead/mismatched ranks that caused the desync are:",
                f"\t   - [{ranks}] finished collective #{seq_of(plan, h) - 1}, but didn't join collective "
                f"#{seq_of(plan, h)} (count from 1)"]))
        t_cancel = max(e.time for e in plan.exits.values()) + r.uniform(120.0, 600.0)
        for rk in culprits:
            plan.kill(rk, t_cancel, -15)
        if c.variant.layout == "merged-slurm":
            plan.add("slurm", 0, t_cancel, f"slurmstepd: error: *** JOB {c.job_id} ON {c.nodes[0].name.split('.')[0]} "
                                           f"CANCELLED AT {plan.clock.sec('slurm', plan.local_time(0, t_cancel))} ***")
        plan.set_truth("software", "train", [f], h - 1, t_stall,
                       f"All ranks of {c.nodes[f].name} stop after iteration {h - 2} without any error line (a stuck "
                       "process); they never join the all-reduce of the next step, the other ranks log iteration "
                       f"{h - 1} and time out 10 minutes later (cascade). Category 'software' by convention: nothing "
                       "in the logs points at hardware or the network; the culprit is found only as the node that "
                       "stopped first / is missing from the collective. Evidence: the last progress line of the "
                       "culprit's first ranks; the job is cancelled by hand afterwards.")


class SlowNode(Scenario):
    name = "slow_node"
    category, phase = "gpu_hardware", "train"
    summary = "Thermal slowdown on one node: its iteration time grows 1.5-3x; the job does not crash."

    def prepare(self, plan: Plan) -> None:
        s = plan.sched
        r = plan.rng("slow")
        f, _ = pick(plan, "slow")
        onset = s.first + int((s.last - s.first) * r.uniform(0.3, 0.5))
        plan.slow[f] = (onset, r.uniform(1.5, 3.0))
        plan.extras["slow_gpus"] = tuple(range(plan.cluster.gpn))

    def inject(self, plan: Plan, fmt: TrainerFormat) -> None:
        c = plan.cluster
        (f, (onset, factor)), = plan.slow.items()
        t = plan.iter_end[onset - 1]
        cpu = plan.rng("slow-cpu").randint(0, 63)
        system.kernel(plan, f, t, [f"mce: CPU{cpu}: Package temperature above threshold, cpu clock throttled (total events = 1)",
                                   f"mce: CPU{cpu}: Core temperature above threshold, cpu clock throttled (total events = 1)"],
                      root=(0, 1))
        plan.set_truth("gpu_hardware", "train", [f], onset, t,
                       f"Cooling fault on {c.nodes[f].name} from iteration {onset}: its GPUs report HW (thermal) "
                       f"slowdown in the nvidia-smi log and its ranks' iteration time is {factor:.2f}x the others'. "
                       "The job completes; the status is incident because the node slows the whole job.")


class DeviceOom(Scenario):
    name = "device_oom"
    category, phase = "oom", "train"
    summary = "One rank runs out of GPU memory (torch.OutOfMemoryError); the job cascades."

    def inject(self, plan: Plan, fmt: TrainerFormat) -> None:
        c = plan.cluster
        f, g, rank = pick_rank(plan, "oom")
        i = fault_iteration(plan)
        t = mid_iteration(plan, i, 0.3)
        r = plan.rng("oom-size")
        total = float(c.gpu_capacity.split()[0])
        want, free = r.uniform(1.5, 6.0), r.uniform(0.3, 1.4)
        used = total - free
        exc = [f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {want:.2f} GiB. GPU {g} has a total "
               f"capacity of {c.gpu_capacity} of which {free:.2f} GiB is free. Process {c.pid(rank)} has {used:.2f} GiB "
               f"memory in use. Of the allocated memory {used - 1.6:.2f} GiB is allocated by PyTorch, and 1.59 GiB is "
               "reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting "
               "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory "
               "Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"]
        fail_rank(plan, fmt, rank, t, "train", exc, "alloc")
        cascade(plan, fmt, t, i, cascade_mode(plan), culprit_ranks=frozenset({rank}))
        plan.set_truth("oom", "train", [f], i - 1, t,
                       f"Rank {rank} (GPU {g} of {c.nodes[f].name}) runs out of device memory on a long batch in "
                       f"iteration {i}.")


class HostOom(Scenario):
    name = "host_oom"
    category, phase = "host", "train"
    summary = "The kernel OOM killer kills one worker (SIGKILL, exitcode -9 in the torchelastic summary)."

    def inject(self, plan: Plan, fmt: TrainerFormat) -> None:
        c = plan.cluster
        f, g, rank = pick_rank(plan, "hostoom")
        pid = c.pid(rank)
        i = fault_iteration(plan)
        t = mid_iteration(plan, i)
        r = plan.rng("hostoom-size")
        vm, rss = r.randint(380, 520) * 1048576 + r.randint(0, 999999), r.randint(180, 260) * 1048576 + r.randint(0, 99999)
        system.kernel(plan, f, t, [
            "python3 invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0, oom_score_adj=0",
            f"CPU: {r.randint(0, 127)} PID: {pid} Comm: python3 Tainted: P           OE     5.15.0-105-generic #115-Ubuntu",
            "Mem-Info:",
            f"oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0-1,global_oom,task_memcg=/system."
            f"slice/slurmstepd.scope/job_{c.job_id}/step_0/user/task_0,task=python3,pid={pid},uid=1000",
            f"Out of memory: Killed process {pid} (python3) total-vm:{vm}kB, anon-rss:{rss}kB, file-rss:{r.randint(200000, 900000)}kB, "
            f"shmem-rss:{r.randint(10000, 90000)}kB, UID:1000 pgtables:{r.randint(500000, 900000)}kB oom_score_adj:0",
            f"oom_reaper: reaped process {pid} (python3), now anon-rss:0kB, file-rss:{r.randint(100000, 200000)}kB, shmem-rss:0kB",
        ], root=(0, 4))
        plan.kill(rank, t + 0.01, -9, reported=True)
        plan.extras["cgroup_oom"] = c.variant.layout == "merged-slurm"
        cascade(plan, fmt, t, i, cascade_mode(plan), culprit_ranks=frozenset({rank}))
        plan.set_truth("host", "train", [f], i - 1, t,
                       f"Host memory of {c.nodes[f].name} is exhausted (data-loader workers growing); the kernel kills "
                       f"rank {rank} (pid {pid}) with SIGKILL: no Python traceback, exitcode -9.")


SCENARIOS: list[Scenario] = [Xid79(), EccUncorrectable(), NvlinkError(), IbLinkDown(), NcclHang(), SlowNode(),
                             DeviceOom(), HostOom()]
