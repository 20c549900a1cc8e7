"""Turn a plan into time-ordered event streams, one per rank, node log and launcher.

A stream is a list of ``(true time, text, marks)``; base lines (start-up, progress, checkpoints) are generated
here and the scenario's injected events are merged in by time. Lines after a rank's stop time are dropped: the
process is dead or hung, only what the scenario injected still appears.
"""

from __future__ import annotations

import heapq
import re
from dataclasses import dataclass
from operator import itemgetter

import l4lite.simulate.runtime as runtime
import l4lite.simulate.system as system
from l4lite.simulate.formats import Timed, TrainerFormat
from l4lite.simulate.plan import ROOT, Event, Plan

_T = itemgetter(0)


@dataclass
class Stream:
    kind: str  # trainer | kernel | gpu | launcher | slurm
    node: int | None
    rank: int | None
    events: list[Event]


def _compile_noise(fmt: TrainerFormat, rank: int, t: float) -> Timed:
    """JIT extension build output: words like 'error' and -Werror in perfectly healthy start-ups."""
    c = fmt.c
    root = "/root/.cache/torch_extensions/py310_cu124"
    site = fmt.site()
    flags = (f"-DTORCH_EXTENSION_NAME=fused_adam -DTORCH_API_INCLUDE_EXTENSION_H -isystem {site}/torch/include "
             "-isystem /usr/local/cuda/include -D_GLIBCXX_USE_CXX11_ABI=0 -fPIC -std=c++17 -O3 -Wall "
             "-Werror=return-type -Wno-error=deprecated-declarations")
    lines = [f"Using {root} as PyTorch extensions root...",
             f"Emitting ninja build file {root}/fused_adam/build.ninja...",
             "Building extension module fused_adam...",
             "Allowing ninja to set a default number of workers... (overridable by setting the environment variable MAX_JOBS=N)",
             f"[1/4] c++ -MMD -MF error_handling.o.d {flags} -c {c.code_dir}/csrc/error_handling.cpp -o error_handling.o ",
             f"[2/4] c++ -MMD -MF fused_adam_frontend.o.d {flags} -c {c.code_dir}/csrc/adam/fused_adam_frontend.cpp "
             "-o fused_adam_frontend.o ",
             f"[3/4] /usr/local/cuda/bin/nvcc --generate-dependencies-with-compile --dependency-output "
             f"multi_tensor_adam.cuda.o.d -DTORCH_EXTENSION_NAME=fused_adam -O3 --use_fast_math -c "
             f"{c.code_dir}/csrc/adam/multi_tensor_adam.cu -o multi_tensor_adam.cuda.o ",
             "[4/4] c++ error_handling.o fused_adam_frontend.o multi_tensor_adam.cuda.o -shared "
             f"-L{site}/torch/lib -lc10 -lc10_cuda -ltorch_cpu -ltorch_cuda -ltorch -ltorch_python "
             "-L/usr/local/cuda/lib64 -lcudart -o fused_adam.so",
             "Loading extension module fused_adam...",
             f"Time to load fused_adam op: {24.61 + rank % 7 * 0.37:.2f} seconds"]
    return [(t + 0.4 * k, line) for k, line in enumerate(lines)]


def trainer_stream(plan: Plan, fmt: TrainerFormat, rank: int, hard_negatives: bool) -> Stream:
    c = plan.cluster
    node = c.node_of(rank)
    skew = node.skew + 0.0007 * c.local(rank)
    s = plan.sched
    base: Timed = list(fmt.init_lines(rank))
    if hard_negatives and c.local(rank) == 0 and fmt.name != "hf":
        base += _compile_noise(fmt, rank, c.t0 + 3.0)
    tuner = hard_negatives or c.variant.nccl_version >= "2.21"
    base += runtime.nccl_init_lines(plan, rank, plan.t_nccl + 0.003 * c.local(rank) + 0.01 * node.index, tuner)
    if hard_negatives:
        t = plan.t_nccl + 1.5
        base.append((t, runtime.c10_head(plan, rank, t, "W", "ProcessGroupNCCL.cpp:4115")
                     + f"[PG 0 Rank {rank}]  using GPU {c.local(rank)} to perform barrier as devices used by this process "
                     "are currently unknown. This can potentially cause a hang if this rank to GPU mapping is "
                     "incorrect.Specify device_ids in barrier() to force use of a particular device,or call "
                     "init_process_group() with a device_id."))
    base += fmt.load_lines(rank)
    base.sort(key=_T)
    stop = plan.stop[rank]
    events: list[Event] = [(t, text, None) for t, text in base if t <= stop]
    last = min(s.last, plan.stop_iter[rank])
    ends = plan.iter_end
    ckpt, evals = plan.ckpt_span, plan.eval_span
    overflow = fmt.name != "megatron"
    mark_i = plan.mark_iters.get(rank, ())
    mark_e = plan.mark_evals.get(rank, ())
    for i in range(s.first, last + 1):
        t = ends[i]
        if t > stop:
            break
        if overflow and plan.skipped[i]:
            scale = int(plan.loss_scale[i])
            events.append((t, f"[{plan.clock.ms('iso', t + skew)}] [INFO] [loss_scaler.py:183:update_scale] "
                              f"[deepspeed] OVERFLOW! Rank {rank} Skipping step. Attempted loss scale: {scale}, "
                              f"reducing to {scale // 2}", None))
        text = fmt.iter_line(i, rank, t + skew)
        events.append((t, text, ((text.count("\n"), ROOT),) if i in mark_i else None))
        if i in evals:
            block = [(tt, text) for tt, text in fmt.eval_lines(i, rank) if tt <= stop]
            hit = next((k for k, (_, text) in enumerate(block) if "loss" in text), -1) if i in mark_e else -1
            events.extend((tt, text, ((text.count("\n"), ROOT),) if k == hit else None)
                          for k, (tt, text) in enumerate(block))
        if i in ckpt:
            events.extend((tt, text, None) for tt, text in fmt.ckpt_lines(i, rank) if tt <= stop)
    if rank not in plan.exits and stop == float("inf"):
        events.extend((t, text, None) for t, text in fmt.final_lines(rank))
        if hard_negatives:
            t = plan.t_end - 0.2
            events.append((t, runtime.c10_head(plan, rank, t, "W", "ProcessGroupNCCL.cpp:1168")
                           + "Warning: WARNING: process group has NOT been destroyed before we destruct ProcessGroupNCCL. "
                           "On normal program exit, the application should call destroy_process_group to ensure that any "
                           "pending NCCL operations have finished in this process. In rare cases this process can exit "
                           "before this point and block the progress of another member of the process group. This "
                           "constraint has always been present,  but this warning has only recently been added. For more "
                           "info, please see https://pytorch.org/docs/stable/distributed.html#shutdown (function operator())", None))
    injected = sorted(plan.events.get(("trainer", rank), []), key=_T)
    return Stream("trainer", node.index, rank, list(heapq.merge(events, injected, key=_T)))


_REPORTS = re.compile(r"failed \(exitcode: -?\d+\) local_rank: \d+ \(pid: (\d+)\)|received by PID (\d+)")


def report_marks(text: str, pids: set[str]) -> tuple[tuple[int, str], ...] | None:
    """Root marks on the launcher's lines that report the exit of a pid in ``pids`` (its exit line, its summary's
    signal line): the proof that the process the kernel killed was that rank's worker."""
    if not pids:
        return None
    marks = []
    for k, line in enumerate(text.split("\n")):
        m = _REPORTS.search(line)
        if m is not None and (m.group(1) or m.group(2)) in pids:
            marks.append((k, ROOT))
    return tuple(marks) or None


def node_streams(plan: Plan, fmt: TrainerFormat, node: int, hard_negatives: bool) -> list[Stream]:
    """Kernel log, GPU telemetry and (under torchrun) the launcher log of one node."""
    system.boot_noise(plan, node, hard_negatives)
    c = plan.cluster
    ranks = c.ranks_of(node)
    end = max([plan.t_end] + [plan.exits[r].time for r in ranks if r in plan.exits])
    if all(r in plan.exits for r in ranks):
        end = max(plan.exits[r].time for r in ranks)
    system.gpu_telemetry(plan, node, end)
    out = [Stream("kernel", node, None, sorted(plan.events.get(("kernel", node), []), key=_T)),
           Stream("gpu", node, None, sorted(plan.events.get(("gpu", node), []), key=_T))]
    if c.variant.layout != "merged-slurm":
        lines = runtime.launcher_start(plan, node) + runtime.launcher_end(plan, fmt, node, plan.exits)
        reported = {str(c.pid(r)) for r in ranks if r in plan.exits and plan.exits[r].reported}
        events = [(t, text, report_marks(text, reported)) for t, text in lines] + plan.events.get(("launcher", node), [])
        out.append(Stream("launcher", node, None, sorted(events, key=_T)))
    return out


def all_streams(plan: Plan, fmt: TrainerFormat, hard_negatives: bool) -> list[Stream]:
    streams = [trainer_stream(plan, fmt, r, hard_negatives) for r in plan.ranks()]
    for n in range(plan.cluster.spec.nodes):
        streams += node_streams(plan, fmt, n, hard_negatives)
    if plan.cluster.variant.layout == "merged-slurm":
        streams.append(Stream("slurm", None, None, system.slurm_end(plan, plan.exits)
                              + sorted(plan.events.get(("slurm", 0), []), key=_T)))
    return streams
