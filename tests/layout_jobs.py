"""Jobs in the layouts real launchers write, built from real lines: excerpts of fixtures/real/real-failures.jsonl
and fixtures/real/corpus.jsonl (hosts renamed where the layout needs other hosts) and lines of torchrun jobs run
on this machine (fixtures/real_jobs). Each builder writes a job under a folder and returns its faulty node and its
hosts. Used by the tests (tests/test_job_context.py) and by benchmarks/layouts.py, which makes the table of
docs/layouts.md."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REAL = {row["id"]: row for row in map(json.loads, (ROOT / "fixtures" / "real" / "real-failures.jsonl").open())}
IB_FAULT = REAL["nccl-1405-ib-completion-error-12"]["lines"]  # written by host kp-ddp-worker-0
HEALTHY = [line for line in REAL["nccl-tests-252-normal-init-complete"]["lines"] if line.startswith("kolyoz1:")]
SUMMARY = REAL["cppo-6-grpo-childfailed-sigkill"]["lines"]  # torchelastic failure summary naming its host
CORPUS = {row["id"]: row for row in map(json.loads, (ROOT / "fixtures" / "real" / "corpus.jsonl").open())}
OOM_KILLER = CORPUS["deepspeech2055-syslog-oom-killer"]["lines"]  # syslog lines of host yihuachiu-GTX1080
PCIE_INFO = [line for line in CORPUS["mle-pcie-limited-by-benign"]["lines"] if "pci" in line]  # benign dmesg
EFA_ERROR = CORPUS["awsofi156-efa-security-group"]["lines"]  # mpirun --tag-output of MPIJob pod nccl-tests-worker-1
NEMO_PROGRESS = CORPUS["nemo10128-nemo2-progress-healthy"]["lines"]

# a torchrun job run on this machine (fixtures/real_jobs/001-ddp-exception): rank 3 raises, rank 0 loses its peer
TRAINER_OK = [
    "2026-12-03 14:36:22,440 INFO [rank{r}] initialized process group: backend=gloo world_size=4 local_rank={lr}",
    "2026-12-03 14:36:27,420 INFO [rank{r}] step 16/40 | epoch 0 | loss 3.5340 | grad_norm 0.439 | lr 3.00e-03",
]
RAISES = [
    "[rank{r}]: Traceback (most recent call last):",
    '[rank{r}]:   File "/tmp/l4lite-realjobs/work/001-ddp-exception/run/train_ddp.py", line 111, in main',
    "[rank{r}]:     faults.at_step(step, model.module)",
    '[rank{r}]:   File "/tmp/l4lite-realjobs/work/001-ddp-exception/run/faults.py", line 99, in at_step',
    "[rank{r}]:     raise RuntimeError(EXCEPTION_MESSAGE.format(want=64, got=63))",
    "[rank{r}]: RuntimeError: shape mismatch in attention block: expected key length 64, got 63 (sequence packing bug)",
]


def host_lines(lines: list[str], host: str) -> list[str]:
    """Real NCCL lines as another host would have written them (only the host field changes)."""
    return [host + line[line.index(":"):] for line in lines]


def write(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")


def torchrun_logdir(job: Path) -> tuple[str, list[str]]:
    """``torchrun --log-dir <host>/torchelastic``: hosts named only by the folders (no digit in them), run
    folders with torchelastic's random suffix, local-rank folders, and a stray file beside the nodes."""
    hosts = ["cpu-node-a", "cpu-node-b"]
    for n, (host, rand) in enumerate(zip(hosts, ["ikil2jrv", "a6dd32x0"], strict=True)):
        for lr in (0, 1):
            r = 2 * n + lr
            lines = [t.format(r=r, lr=lr) for t in TRAINER_OK]
            if host == "cpu-node-b" and lr == 1:
                lines += [t.format(r=r) for t in RAISES]
            write(job / host / "torchelastic" / f"ddp-exception-001_{rand}" / "attempt_0" / str(lr) / "stderr.log",
                  lines)
            (job / host / "torchelastic" / f"ddp-exception-001_{rand}" / "attempt_0" / str(lr) / "stdout.log"
             ).write_text("")
    write(job / "latin1.log", ["Gr\u00f6\u00dfe des Puffers: 3 \u00b5s"])
    return "cpu-node-b", hosts


def srun_merged(job: Path) -> tuple[str, list[str]]:
    """``srun --label`` output of every rank in one file; hosts only inside the lines."""
    lines = [f"{r}: {line}" for r, h in enumerate(["dgx01", "dgx01", "dgx02", "dgx02"])
             for line in host_lines(HEALTHY, h)]
    lines += [f"3: {line}" for line in host_lines(IB_FAULT, "dgx02")]
    lines += ["srun: error: dgx02: task 3: Exited with exit code 1"]
    write(job / "slurm-81234.out", lines)
    return "dgx02", ["dgx01", "dgx02"]


def per_rank_hosts_inside(job: Path) -> tuple[str, list[str]]:
    """One file per rank, named by rank only: the hosts are in the NCCL headers."""
    for r, h in enumerate(["gn-a17", "gn-a17", "gn-b04", "gn-b04"]):
        lines = host_lines(HEALTHY, h) + (host_lines(IB_FAULT, h) if r == 0 else [])
        write(job / f"rank-{r}.log", lines)
    return "gn-a17", ["gn-a17", "gn-b04"]


def kubernetes_pods(job: Path) -> tuple[str, list[str]]:
    """``kubectl logs`` of a PyTorchJob's pods (their host names are the pod names)."""
    pods = ["kp-ddp-master-0", "kp-ddp-worker-0", "kp-ddp-worker-1"]
    for pod in pods:
        lines = host_lines(HEALTHY, pod) + (IB_FAULT if pod == "kp-ddp-worker-0" else [])
        write(job / f"{pod}.log", lines)
    return "kp-ddp-worker-0", pods


def mpirun_tagged(job: Path) -> tuple[str, list[str]]:
    """``mpirun --tag-output``: every rank's lines in the launcher's output, tagged ``[job,rank]<stream>:``."""
    lines = [f"[1,{r}]<stdout>:{line}" for r, h in enumerate(["c3n01", "c3n02"]) for line in host_lines(HEALTHY, h)]
    lines += [f"[1,1]<stderr>:{line}" for line in host_lines(IB_FAULT, "c3n02")]
    write(job / "launcher" / "mpirun.log", lines)
    return "c3n02", ["c3n01", "c3n02"]


def mpirun_output_filename(job: Path) -> tuple[str, list[str]]:
    """``mpirun --output-filename out``: ``out/1/rank.N/stdout`` per rank, hosts only inside."""
    for r, h in enumerate(["c3n01", "c3n01", "c3n02", "c3n02"]):
        lines = host_lines(HEALTHY, h) + (host_lines(IB_FAULT, h) if r == 1 else [])
        write(job / "out" / "1" / f"rank.{r}" / "stdout", lines)
    return "c3n01", ["c3n01", "c3n02"]


def slurm_per_node(job: Path) -> tuple[str, list[str]]:
    """``#SBATCH --output=slurm-%j-%N.out``: one file per node, its name carrying the node."""
    for h in ("hpc-gpu-0007", "hpc-gpu-0012"):
        lines = host_lines(HEALTHY, h) + (host_lines(IB_FAULT, h) if h.endswith("12") else [])
        write(job / f"slurm-99417-{h}.out", lines)
    return "hpc-gpu-0012", ["hpc-gpu-0007", "hpc-gpu-0012"]


def elastic_summary_only(job: Path) -> tuple[str, list[str]]:
    """Files named by run and rank only; the faulty host is named only by torchelastic's failure summary."""
    host = "mlxlab115rp2n7682d40d9-20250521025625-6dyyd3-8nir8b-worker"
    write(job / "run-20250521" / "agent-0.log", SUMMARY)
    write(job / "run-20250521" / "agent-1.log", host_lines(HEALTHY, "mlxlab-other-worker"))
    return host, [host, "mlxlab-other-worker"]


def prefixed_log(path: Path, prefix: Callable[[int], str], ranks: tuple[int, int]) -> None:
    """One driver log holding two workers' lines behind a per-worker prefix; the second worker raises."""
    lines = [prefix(r) + t.format(r=r, lr=0) for r in ranks for t in TRAINER_OK]
    lines += [prefix(ranks[1]) + t.format(r=ranks[1]) for t in RAISES]
    write(path, lines)


def ray_driver_log(job: Path) -> tuple[str, list[str]]:
    """A Ray Train driver log: every worker's lines prefixed ``(RayTrainWorker pid=N, ip=IP)``."""
    prefixed_log(job / "session_2026-12-03_14-36-00_123456_789" / "logs" / "job-driver-raysubmit_Xk2a.log",
                 lambda r: f"(RayTrainWorker pid={4242 + r}, ip=10.0.0.{2 + r}) ", (0, 1))
    return "10.0.0.3", ["10.0.0.2", "10.0.0.3"]


def skypilot_run_log(job: Path) -> tuple[str, list[str]]:
    """A SkyPilot multi-node run log: ``(head, rank=0, pid=N)`` and ``(worker1, rank=1, pid=N, ip=IP)``."""
    prefixed_log(job / "sky-2026-12-03-14-36-00-123456" / "tasks" / "run.log",
                 lambda r: f"(worker{r}, rank={r}, pid={5100 + r}, ip=10.1.0.{7 + r}) ", (1, 2))
    return "10.1.0.9", ["10.1.0.8", "10.1.0.9"]


def srun_merged_syslog(job: Path) -> tuple[str, list[str]]:
    """One ``srun --label`` file for every rank (hosts only inside its lines) and each host's syslog in its own
    folder; the kernel's OOM killer on one host is the root, srun's report of the killed task its echo."""
    lines = [f"{r}: {line}" for r, h in enumerate(["dgx01", "dgx01", "dgx02", "dgx02"])
             for line in host_lines(HEALTHY, h)]
    lines += ["srun: error: dgx02: task 3: Killed"]
    write(job / "slurm-81234.out", lines)
    pcie = [line.split("] ", 1)[1] for line in PCIE_INFO]
    write(job / "dgx01" / "syslog", [f"Apr 25 06:20:0{i} dgx01 kernel: [   1{i}.73532{i}] {text}"
                                     for i, text in enumerate(pcie)])
    write(job / "dgx02" / "syslog", [line.replace("yihuachiu-GTX1080", "dgx02") for line in OOM_KILLER])
    return "dgx02", ["dgx01", "dgx02"]


def kubernetes_mpijob(job: Path) -> tuple[str, list[str]]:
    """``kubectl logs`` of a Kubeflow MPIJob: the launcher pod holds every rank's output (``mpirun
    --tag-output``), the worker pods only their sshd; the pod names are the hosts the lines name."""
    lines = [f"[1,{r}]<stdout>:{line}" for r in range(16)
             for line in host_lines(HEALTHY, f"nccl-tests-worker-{r // 8}")]
    write(job / "nccl-tests-launcher.log", lines + EFA_ERROR)
    for w in (0, 1):
        write(job / f"nccl-tests-worker-{w}.log", ["Server listening on 0.0.0.0 port 22."])
    return "nccl-tests-worker-1", ["nccl-tests-worker-0", "nccl-tests-worker-1"]


def nemo_launcher(job: Path) -> tuple[str, list[str]]:
    """NeMo-Framework-Launcher output: ``results/<run>/log-<job name>_<slurm id>.out`` holds every rank's
    output (hosts only inside the lines), beside ``launcher.log`` and NeMo's own ``nemo_log_globalrank-N``."""
    run = job / "results" / "gpt3_126m"
    lines = [line for h in ("dgx-a100-0417", "dgx-a100-0418") for line in host_lines(HEALTHY, h)]
    lines += NEMO_PROGRESS + host_lines(IB_FAULT, "dgx-a100-0418")
    write(run / "log-nemo-megatron-gpt3_126m_81234.out", lines)
    write(run / "launcher.log", ["Submitted batch job 81234"])
    write(run / "results" / "nemo_log_globalrank-0_localrank-0.txt", NEMO_PROGRESS)
    return "dgx-a100-0418", ["dgx-a100-0417", "dgx-a100-0418"]


def stray_names_only(job: Path) -> tuple[str | None, list[str]]:
    """Files whose names are kinds or ranks, not hosts (``stderr.log``, ``0.log``, ``error.json``, ``latin1.log``),
    and no host named anywhere: no node can be blamed."""
    write(job / "stderr.log", [t.format(r=3) for t in RAISES])
    write(job / "0.log", [t.format(r=0, lr=0) for t in TRAINER_OK])
    write(job / "error.json", ['{"message": "RuntimeError: shape mismatch in attention block"}'])
    write(job / "latin1.log", ["Gr\u00f6\u00dfe des Puffers: 3 \u00b5s"])
    return None, []


LAYOUTS: dict[str, Callable[[Path], tuple[str | None, list[str]]]] = {
    "torchrun-logdir": torchrun_logdir, "srun-merged": srun_merged, "per-rank-hosts-inside": per_rank_hosts_inside,
    "kubernetes-pods": kubernetes_pods, "mpirun-tag-output": mpirun_tagged,
    "mpirun-output-filename": mpirun_output_filename, "slurm-per-node": slurm_per_node,
    "elastic-summary": elastic_summary_only, "ray-driver-log": ray_driver_log, "skypilot-run-log": skypilot_run_log,
    "srun-merged-syslog-per-host": srun_merged_syslog, "kubernetes-mpijob": kubernetes_mpijob,
    "nemo-launcher": nemo_launcher, "stray-file-names": stray_names_only,
}
