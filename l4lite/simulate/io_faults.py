"""Faults on the input/output path of one node: checkpoint save and load, and a corrupted data shard.

The faulty node is the one whose ranks hit the error (the writer or reader of the bad file); the rest of the
job goes down in the usual cascade.
"""

from __future__ import annotations

import l4lite.simulate.system as system
from l4lite.simulate.faults import cascade, fail_rank, fault_iteration, mid_iteration
from l4lite.simulate.formats import TrainerFormat
from l4lite.simulate.node_faults import cascade_mode, pick_rank
from l4lite.simulate.plan import Plan
from l4lite.simulate.scenarios import Scenario


class CheckpointSaveFailure(Scenario):
    name = "checkpoint_save_failure"
    category, phase = "storage", "checkpoint"
    summary = "Writing a checkpoint fails on one node (Lustre/NFS errors, ENOSPC or EIO)."

    def inject(self, plan: Plan, fmt: TrainerFormat) -> None:
        c = plan.cluster
        ckpts = sorted(plan.ckpt_span)
        it = ckpts[1] if len(ckpts) > 2 else ckpts[0]
        r = plan.rng("ckpt-save")
        f = 0 if fmt.name == "hf" else r.randrange(c.spec.nodes)
        writers = [0] if fmt.name == "hf" else list(c.ranks_of(f))
        start = plan.ckpt_span[it][0]
        t = start + r.uniform(2.0, 8.0)
        enospc = r.random() < 0.35
        fs = system.lustre_fsname(plan)
        ost = f"{fs}-OST{r.randint(0, 31):04x}"
        oss = f"{c.nodes[0].ip.rsplit('.', 2)[0]}.250.{r.randint(10, 40)}"
        if c.ckpt_dir.startswith("/nfs"):
            msgs = [] if enospc else ["nfs: server nfs01 not responding, timed out",
                                      "nfs: server nfs01 not responding, timed out"]
        elif enospc:
            msgs = [f"LustreError: 11-0: {ost}-osc-ffff9a3c1e2f5800: operation ost_write to node {oss}@o2ib failed: rc = -28"]
        else:
            msgs = [f"LustreError: 167-0: {ost}-osc-ffff9a3c1e2f5800: This client was evicted by {ost}; in progress "
                    "operations using this service will fail.",
                    f"LustreError: {r.randint(2000, 9000)}:0:(osc_request.c:2173:osc_brw_redo_request()) @@@ redo for "
                    f"recoverable error -5  req@ffff8f2a6c3d1200 x{r.getrandbits(50)}/t0(0) o4->{ost}-osc-ffff9a3c1e2f5800"
                    f"@{oss}@o2ib:6/4 lens 488/448 e 1 to 1 dl {int(t) + 40} ref 2 fl Interpret:RQU/0/0 rc -5/-5"]
        if msgs:
            system.kernel(plan, f, t - 0.5, msgs, root=tuple(range(len(msgs))))
        code, word = (28, "No space left on device") if enospc else (5, "Input/output error")
        if fmt.name == "hf":
            kind = "StorageFull" if enospc else "Uncategorized"
            exc = [f'safetensors_rust.SafetensorError: Error while serializing: IoError(Os {{ code: {code}, kind: {kind}, '
                   f'message: "{word}" }})']
        else:
            exc = [f"OSError: [Errno {code}] {word}"]
        for k, rk in enumerate(writers):
            fail_rank(plan, fmt, rk, t + r.uniform(0.0, 1.5), "checkpoint", exc,
                      None if fmt.name == "hf" else "torch_save", mark=k < 3)
        cascade(plan, fmt, t, None, cascade_mode(plan), culprit_ranks=frozenset(writers))
        plan.set_truth("storage", "checkpoint", [f], it, t,
                       f"Saving the checkpoint of iteration {it} to {c.ckpt_dir} fails on {c.nodes[f].name} with "
                       f"{'ENOSPC' if enospc else 'EIO'}"
                       + (" after the Lustre client is evicted" if msgs and not enospc else "")
                       + "; the other ranks wait in the post-save barrier (cascade).")


class CheckpointLoadFailure(Scenario):
    name = "checkpoint_load_failure"
    category, phase = "storage", "load"
    summary = "Resuming from a truncated checkpoint file: PytorchStreamReader fails on one rank."
    resume = True

    def prepare(self, plan: Plan) -> None:
        plan.extras["load_fails"] = True

    def inject(self, plan: Plan, fmt: TrainerFormat) -> None:
        c = plan.cluster
        r = plan.rng("ckpt-load")
        rank = r.randrange(c.world)
        f = rank // c.gpn
        t = plan.t_load + 4.0 + r.uniform(1.0, 6.0)
        exc = ["RuntimeError: PytorchStreamReader failed reading zip archive: failed finding central directory"]
        fail_rank(plan, fmt, rank, t, "load", exc, "torch_load")
        cascade(plan, fmt, t, None, cascade_mode(plan), culprit_ranks=frozenset({rank}))
        shard = {"megatron": f"iter_{plan.sched.resume_from:07d}/mp_rank_00_{rank:03d}/distrib_optim.pt",
                 "deepspeed": f"global_step{plan.sched.resume_from}/{'bf16_' if c.variant.precision == 'bf16' else ''}"
                              f"zero_pp_rank_{rank}_mp_rank_00_optim_states.pt",
                 "hf": f"checkpoint-{plan.sched.resume_from}/rng_state_{rank}.pth"}[fmt.name]
        plan.set_truth("storage", "load", [f], None, t,
                       f"The job resumes from iteration {plan.sched.resume_from}; {shard} was truncated when the file "
                       f"system filled up during the previous run, so rank {rank} on {c.nodes[f].name} fails to read "
                       "it. No iteration is reached in this job.")


class DataPipelineFault(Scenario):
    name = "data_pipeline_fault"
    category, phase = "data", "train"
    summary = "A corrupted data shard: decode warnings, then a DataLoader worker exception on one rank."

    def inject(self, plan: Plan, fmt: TrainerFormat) -> None:
        c = plan.cluster
        f, _, rank = pick_rank(plan, "data")
        i = fault_iteration(plan)
        r = plan.rng("data-kind")
        shard = f"{c.data_path}/shard-{r.randint(0, 999):05d}.jsonl.zst"
        worker = r.randint(0, 7)
        warns = []
        for k in range(r.randint(2, 3)):
            tw = mid_iteration(plan, i - 3 + k, 0.9)
            line = (f"WARNING: skipping malformed sample {r.randint(10**6, 10**8)} in {shard}: JSONDecodeError: "
                    f"Unterminated string starting at: line 1 column {r.randint(100, 4000)} (char {r.randint(99, 3999)})")
            warns.append(line)
            plan.add("trainer", rank, tw, line, (0,))
        t = mid_iteration(plan, i, 0.95)
        if r.random() < 0.5:
            inner, name = "UnicodeDecodeError: 'utf-8' codec can't decode byte 0x8b in position 1: invalid start byte", \
                "UnicodeDecodeError"
        else:
            inner, name = "zstandard.backend_c.ZstdError: zstd decompress error: Unknown frame descriptor", "ZstdError"
        site = fmt.site()
        exc = [f"RuntimeError: Caught {name} in DataLoader worker process {worker}.",
               "Original Traceback (most recent call last):",
               f'  File "{site}/torch/utils/data/_utils/worker.py", line 309, in _worker_loop',
               "    data = fetcher.fetch(index)  # type: ignore[possibly-undefined]",
               f'  File "{site}/torch/utils/data/_utils/fetch.py", line 52, in fetch',
               "    data = [self.dataset[idx] for idx in possibly_batched_index]",
               f'  File "{c.code_dir}/data/jsonl_dataset.py", line 88, in __getitem__',
               '    record = json.loads(self._read_line(idx).decode("utf-8"))', inner]
        fail_rank(plan, fmt, rank, t, "data", exc, "dataloader", roots=(0, len(exc) - 1))
        cascade(plan, fmt, t, i, cascade_mode(plan), culprit_ranks=frozenset({rank}))
        plan.set_truth("data", "train", [f], i - 1, t,
                       f"{shard} is corrupted: the data loader of rank {rank} on {c.nodes[f].name} skips malformed "
                       f"samples, then its worker {worker} dies on an undecodable block.")


SCENARIOS: list[Scenario] = [CheckpointSaveFailure(), CheckpointLoadFailure(), DataPipelineFault()]
