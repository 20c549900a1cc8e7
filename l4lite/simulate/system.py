"""Node-level logs: the kernel ring buffer (dmesg -T or journal style), GPU telemetry and Slurm's messages.

Kernel lines carry the node's own clock. Boot noise includes the benign lines that fool naive detectors
(mlx5 ``Link INIT``, ``Cable plugged``, NVRM module load banners); scenarios add the fault lines (NVRM Xid,
mlx5 link down, OOM killer, Lustre and NFS errors) through :func:`kernel`.
"""

from __future__ import annotations

from l4lite.simulate.plan import Exit, Plan

_GPU_PCI_ID = {"a100": "10de:20b2", "h100": "10de:2330"}


def kernel(plan: Plan, node: int, t: float, msgs: list[str], root: tuple[int, ...] = ()) -> None:
    """Add kernel messages at true time ``t`` on ``node``; ``root`` are indices of root-cause messages."""
    c = plan.cluster
    n = c.nodes[node]
    lines = []
    for k, msg in enumerate(msgs):
        lt = plan.local_time(node, t + 0.000013 * k)
        if c.variant.kernel_style == "dmesg":
            lines.append(f"[{plan.clock.sec('ctime', lt)}] {msg}")
        else:
            lines.append(f"{plan.clock.sec('syslog', lt)} {n.name.split('.')[0]} kernel: {msg}")
    plan.add("kernel", node, t, "\n".join(lines), root)


def _fs_kind(plan: Plan) -> str:
    return "nfs" if plan.cluster.ckpt_dir.startswith("/nfs") else "lustre"


def lustre_fsname(plan: Plan) -> str:
    return plan.cluster.ckpt_dir.split("/")[2]


def boot_noise(plan: Plan, node: int, hard_negatives: bool) -> None:
    """Kernel messages from boot: hardware enumeration, drivers, the parallel file system client."""
    c = plan.cluster
    n = c.nodes[node]
    r = plan.rng(f"boot{node}")
    boot = n.boot_time
    dmi = "NVIDIA DGXA100 920-23687-2530-000/DGXA100, BIOS 1.25 09/04/2023" if c.variant.gpu == "a100" else \
        "NVIDIA DGXH100/DGXH100, BIOS 1.5.0 01/18/2024"
    early = [
        "Linux version 5.15.0-105-generic (buildd@lcy02-amd64-054) (gcc (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0, GNU ld "
        "(GNU Binutils for Ubuntu) 2.38) #115-Ubuntu SMP Mon Apr 15 09:52:04 UTC 2024 (Ubuntu 5.15.0-105.115-generic 5.15.148)",
        "Command line: BOOT_IMAGE=/vmlinuz-5.15.0-105-generic root=UUID=6f1c2d9e-3b1a-4c55-9e0f-4a3b2c1d0e9f ro "
        "console=tty0 console=ttyS0,115200n8 pci=realloc=off iommu=pt",
        f"DMI: {dmi}",
        "x86/fpu: Supporting XSAVE feature 0x001: 'x87 floating point registers'",
        "ACPI: RSDP 0x00000000000F05B0 000024 (v02 ALASKA)",
    ]
    if hard_negatives:
        early += ["ACPI BIOS Error (bug): Could not resolve symbol [\\_SB.PC00.PEG1.PEGP], AE_NOT_FOUND (20210730/dswload2-162)",
                  "ACPI Error: AE_NOT_FOUND, During name lookup/catalog (20210730/psobject-220)"]
    kernel(plan, node, boot + 0.0, early)
    pci = [f"pci 0000:{b}:00.0: [{_GPU_PCI_ID[c.variant.gpu]}] type 00 class 0x030200" for b in n.gpu_bus]
    kernel(plan, node, boot + 1.2, pci)
    mlx = []
    for k, b in enumerate(n.hca_bus):
        dev = f"mlx5_core 0000:{b}:00.0"
        mlx += [f"{dev}: firmware version: 28.39.1002",
                f"{dev}: 252.048 Gb/s available PCIe bandwidth (16.0 GT/s PCIe x16 link)",
                f"{dev}: Rate limit: 127 rates are supported, range: 0Mbps to 97656Mbps",
                f"{dev}: Port module event: module {k}, Cable plugged",
                f"{dev}: mlx5_pcie_event:301:(pid {r.randint(900, 1400)}): PCIe slot advertised sufficient power (27W)."]
    kernel(plan, node, boot + 4.8, mlx)
    kernel(plan, node, boot + 6.1, [f"mlx5_core 0000:{b}:00.0 ibp{int(b, 16)}s0: renamed from ib{k}"
                                    for k, b in enumerate(n.hca_bus)])
    kernel(plan, node, boot + 6.9, [f"mlx5_core 0000:{b}:00.0 ibp{int(b, 16)}s0: Link INIT" for b in n.hca_bus])
    kernel(plan, node, boot + 9.3, [
        "nvidia: loading out-of-tree module taints kernel.",
        "nvidia: module license 'NVIDIA' taints kernel.",
        "nvidia-nvlink: Nvlink Core is being initialized, major device number 508",
        "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024",
        "nvidia-modeset: Loading NVIDIA Kernel Mode Setting Driver for UNIX platforms  550.54.15  Tue Mar  5 22:23:56 UTC 2024",
        "nvidia_uvm: module uses symbols nvUvmInterfaceDisableAccessCntr from proprietary module nvidia, inheriting taint.",
    ])
    if _fs_kind(plan) == "lustre":
        kernel(plan, node, boot + 14.0, [
            "LNet: HW NUMA nodes: 2, HW CPU cores: 256, npartitions: 8",
            f"LNet: Added LNI {n.ip}@o2ib [8/256/0/180]",
            "Lustre: Lustre: Build Version: 2.15.4",
            f"Lustre: Mounted {lustre_fsname(plan)}-client"])
    else:
        kernel(plan, node, boot + 14.0, ["FS-Cache: Netfs 'nfs' registered for caching",
                                         "NFS: Registering the id_resolver key type",
                                         "Key type id_resolver registered", "Key type id_legacy registered"])
    kernel(plan, node, boot + 31.5, [f"mlx5_core 0000:{b}:00.0 ibp{int(b, 16)}s0: Link ACTIVE" for b in n.hca_bus]
           + [f"IPv6: ADDRCONF(NETDEV_CHANGE): ibp{int(n.hca_bus[0], 16)}s0: link becomes ready"])
    if r.random() < 0.5:
        t = plan.t_train + r.uniform(0, max(1.0, plan.t_end - plan.t_train))
        kernel(plan, node, t, [f"perf: interrupt took too long (2{r.randint(501, 999)} > 2500), lowering "
                               f"kernel.perf_event_max_sample_rate to {r.randint(70, 79)}750"])
    if hard_negatives and node == 0:
        kernel(plan, node, c.t0 + 3.0, [f"TCP: request_sock_TCP: Possible SYN flooding on port {c.master_port}. "
                                        "Sending cookies.  Check SNMP counters."])


def gpu_telemetry(plan: Plan, node: int, t_stop: float) -> None:
    """``nvidia-smi --query-gpu=... --format=csv -l 30`` run by the job script on every node."""
    c = plan.cluster
    n = c.nodes[node]
    r = plan.rng(f"smi{node}")
    slow = plan.slow.get(node)
    slow_gpus = plan.extras.get("slow_gpus", ())
    t = plan.cluster.t0 + 1.0
    plan.add("gpu", node, t, "timestamp, index, pci.bus_id, temperature.gpu, utilization.gpu [%], clocks.sm [MHz], "
             "clocks_event_reasons.hw_slowdown, clocks_event_reasons.hw_thermal_slowdown, power.draw [W]")
    marked = 0
    while t < t_stop:
        ts = plan.clock.ms("smi", plan.local_time(node, t))
        training = plan.t_train <= t
        it = plan.iteration_at(t) if training else None
        lines, roots = [], []
        for k in range(c.gpn):
            hot = bool(slow and it is not None and it >= slow[0] and k in slow_gpus)
            temp = r.randint(88, 94) if hot else (r.randint(55, 71) if training else r.randint(31, 38))
            util = r.randint(96, 100) if training else 0
            clk = r.randint(900, 1110) if hot else (1410 if c.variant.gpu == "a100" else 1980)
            act = "Active" if hot else "Not Active"
            power = r.uniform(250, 330) if hot else (r.uniform(340, 415) if training else r.uniform(58, 70))
            if hot and marked < 2:
                roots.append(len(lines))
                marked += 1
            lines.append(f"{ts}, {k}, 00000000:{n.gpu_bus[k].upper()}:00.0, {temp}, {util} %, {clk} MHz, {act}, "
                         f"{act}, {power:.2f} W")
        plan.add("gpu", node, t, "\n".join(lines), tuple(roots))
        t += 30.0


def slurm_end(plan: Plan, exits: dict[int, Exit]) -> list[tuple[float, str, tuple | None]]:
    """What srun prints when tasks fail (merged Slurm output, no torchrun): one line per node and outcome."""
    c = plan.cluster
    failed = [r for r, e in exits.items() if e.code != 0]
    if not failed:
        return []
    out = []
    first_t = min(exits[r].time for r in failed)
    words = {-6: "Aborted (core dumped)", -9: "Killed", -15: "Terminated", -11: "Segmentation fault (core dumped)",
             -7: "Bus error (core dumped)"}
    step = f"{c.job_id}.0"  # srun runs without --kill-on-bad-exit: the other tasks go on until they fail
    groups: dict[tuple[int, str], list[int]] = {}
    for r in sorted(failed):
        e = exits[r]
        what = words.get(e.code, f"Exited with exit code {e.code}") if e.code != -9 or not plan.extras.get(
            "cgroup_oom") else "Out Of Memory"
        groups.setdefault((r // c.gpn, what), []).append(r)
    for (node, what), ranks in sorted(groups.items(), key=lambda kv: min(exits[r].time for r in kv[1])):
        t = min(exits[r].time for r in ranks) + 0.4
        label = f"task {ranks[0]}" if len(ranks) == 1 else f"tasks {ranks[0]}-{ranks[-1]}"
        out.append((t, f"srun: error: {c.nodes[node].name.split('.')[0]}: {label}: {what}", None))
    if plan.extras.get("cgroup_oom"):
        out.append((first_t + 0.3, f"slurmstepd: error: Detected 1 oom_kill event in StepId={step}. Some of the step "
                                   "tasks have been OOM Killed.", None))
    out.sort(key=lambda e: e[0])
    return out
