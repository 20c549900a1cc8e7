"""Lines written by the runtime under the trainer: NCCL, PyTorch c10d, Python tracebacks and torchrun.

Wording and headers follow real logs (fixtures/real/real-failures.jsonl): NCCL ``host:pid:tid [dev] NCCL INFO``,
c10d ``[rank3]:[E911 18:20:33.715298746 ProcessGroupNCCL.cpp:607]``, torchrun ``E0911 18:20:33.571000 140234
torch/distributed/elastic/multiprocessing/api.py:869]`` and its ChildFailedError summary.
"""

from __future__ import annotations

from l4lite.simulate.formats import Timed, TrainerFormat
from l4lite.simulate.plan import Exit, Plan

CUDA_TAIL = ["CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below "
             "might be incorrect.", "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
             "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.", ""]

# Python frames per format and place: (under code dir or site-packages, file, line, function, source line).
_FRAMES: dict[str, dict[str, list[tuple[str, str, int, str, str]]]] = {
    "megatron": {
        "entry": [("code", "pretrain_gpt.py", 281, "<module>", "pretrain(")],
        "init": [("code", "megatron/training/training.py", 239, "pretrain", "initialize_megatron("),
                 ("code", "megatron/training/initialize.py", 73, "initialize_megatron", "_initialize_distributed("
                  "get_embedding_ranks, get_position_embedding_ranks)"),
                 ("code", "megatron/training/initialize.py", 292, "_initialize_distributed", "torch.distributed.barrier()")],
        "config": [("code", "megatron/training/training.py", 239, "pretrain", "initialize_megatron("),
                   ("code", "megatron/training/initialize.py", 60, "initialize_megatron", "validate_args(args, args_defaults)"),
                   ("code", "megatron/training/arguments.py", 551, "validate_args",
                    "assert args.max_position_embeddings >= args.seq_length, \\")],
        "load": [("code", "megatron/training/training.py", 281, "pretrain", "model, optimizer, opt_param_scheduler = "
                  "setup_model_and_optimizer("),
                 ("code", "megatron/training/training.py", 623, "setup_model_and_optimizer",
                  "args.iteration, args.num_floating_point_operations_so_far = load_checkpoint("),
                 ("code", "megatron/training/checkpointing.py", 1087, "load_checkpoint",
                  "state_dict, checkpoint_name, release = _load_base_checkpoint("),
                 ("code", "megatron/training/checkpointing.py", 811, "_load_base_checkpoint",
                  "state_dict = torch.load(checkpoint_name, map_location='cpu')")],
        "train": [("code", "megatron/training/training.py", 340, "pretrain", "iteration, num_floating_point_operations_so_far = train("),
                  ("code", "megatron/training/training.py", 1226, "train", "train_step(forward_step_func,"),
                  ("code", "megatron/training/training.py", 694, "train_step", "losses_reduced = forward_backward_func("),
                  ("code", "megatron/core/pipeline_parallel/schedules.py", 452, "forward_backward_no_pipelining",
                   "output_tensor, num_tokens = forward_step("),
                  ("code", "megatron/core/pipeline_parallel/schedules.py", 274, "forward_step",
                   "output_tensor, loss_func = forward_step_func(data_iterator, model)")],
        "data": [("code", "megatron/training/training.py", 340, "pretrain", "iteration, num_floating_point_operations_so_far = train("),
                 ("code", "megatron/training/training.py", 1226, "train", "train_step(forward_step_func,"),
                 ("code", "pretrain_gpt.py", 186, "forward_step", "tokens, labels, loss_mask, attention_mask, position_ids = get_batch("),
                 ("code", "megatron/training/utils.py", 297, "get_batch_on_this_tp_rank", "data = next(data_iterator)")],
        "checkpoint": [("code", "megatron/training/training.py", 1301, "train", "save_checkpoint_and_time(iteration, model, optimizer,"),
                       ("code", "megatron/training/training.py", 1010, "save_checkpoint_and_time",
                        "save_checkpoint(iteration, model, optimizer, opt_param_scheduler,"),
                       ("code", "megatron/training/checkpointing.py", 402, "save_checkpoint", "torch.save(state_dict, checkpoint_name)")],
    },
    "deepspeed": {
        "entry": [("code", "train.py", 266, "<module>", "main()")],
        "init": [("code", "train.py", 121, "main", "deepspeed.init_distributed()")],
        "config": [("code", "train.py", 138, "main", "engine, optimizer, _, _ = deepspeed.initialize("),
                   ("site", "deepspeed/__init__.py", 181, "initialize", "engine = DeepSpeedEngine(args=args,"),
                   ("site", "deepspeed/runtime/engine.py", 265, "__init__", "self._configure_with_arguments(args, mpu)"),
                   ("site", "deepspeed/runtime/engine.py", 1006, "_configure_with_arguments",
                    "self._config = DeepSpeedConfig(self.config, mpu, mesh_device=self.mesh_device)"),
                   ("site", "deepspeed/runtime/config.py", 799, "__init__", "self._configure_train_batch_size()"),
                   ("site", "deepspeed/runtime/config.py", 975, "_configure_train_batch_size", "self._batch_assertion()"),
                   ("site", "deepspeed/runtime/config.py", 923, "_batch_assertion",
                    "assert train_batch == micro_batch * grad_acc * self.world_size, (")],
        "load": [("code", "train.py", 168, "main", "engine.load_checkpoint(args.load_dir)"),
                 ("site", "deepspeed/runtime/engine.py", 2935, "load_checkpoint", "load_path, client_states = self._load_checkpoint("),
                 ("site", "deepspeed/runtime/engine.py", 2998, "_load_checkpoint", "checkpoint = self.checkpoint_engine.load(load_path, map_location=map_location)"),
                 ("site", "deepspeed/runtime/checkpoint_engine/torch_checkpoint_engine.py", 28, "load",
                  "partition = torch.load(path, map_location=map_location)")],
        "train": [("code", "train.py", 205, "main", "loss = engine(batch)"),
                  ("site", "torch/nn/modules/module.py", 1736, "_wrapped_call_impl", "return self._call_impl(*args, **kwargs)"),
                  ("site", "deepspeed/runtime/engine.py", 1899, "forward", "loss = self.module(*inputs, **kwargs)")],
        "data": [("code", "train.py", 201, "main", "batch = next(train_iter)")],
        "checkpoint": [("code", "train.py", 228, "main", "engine.save_checkpoint(args.save_dir, tag=f\"global_step{step}\")"),
                       ("site", "deepspeed/runtime/engine.py", 3192, "save_checkpoint", "self._save_checkpoint(save_dir,"),
                       ("site", "deepspeed/runtime/checkpoint_engine/torch_checkpoint_engine.py", 22, "save", "torch.save(state_dict, path)")],
    },
    "hf": {
        "entry": [("code", "run_clm.py", 655, "<module>", "main()")],
        "init": [("code", "run_clm.py", 279, "main", "model_args, data_args, training_args = parser.parse_args_into_dataclasses()"),
                 ("site", "transformers/training_args.py", 1772, "__post_init__", "self.device")],
        "config": [("code", "run_clm.py", 279, "main",
                    "model_args, data_args, training_args = parser.parse_args_into_dataclasses()"),
                   ("site", "transformers/hf_argparser.py", 339, "parse_args_into_dataclasses", "obj = dtype(**inputs)"),
                   ("code", "<string>", 133, "__init__", ""),
                   ("site", "transformers/training_args.py", 1664, "__post_init__", "raise ValueError(")],
        "load": [("code", "run_clm.py", 603, "main", "train_result = trainer.train(resume_from_checkpoint=checkpoint)"),
                 ("site", "transformers/trainer.py", 2123, "train", "return inner_training_loop("),
                 ("site", "transformers/trainer.py", 2318, "_inner_training_loop", "self._load_from_checkpoint(resume_from_checkpoint, self.model_wrapped)"),
                 ("site", "transformers/trainer.py", 2839, "_load_from_checkpoint", "state_dict = torch.load(")],
        "train": [("code", "run_clm.py", 603, "main", "train_result = trainer.train(resume_from_checkpoint=checkpoint)"),
                  ("site", "transformers/trainer.py", 2123, "train", "return inner_training_loop("),
                  ("site", "transformers/trainer.py", 2481, "_inner_training_loop", "tr_loss_step = self.training_step(model, inputs)"),
                  ("site", "transformers/trainer.py", 3612, "training_step", "loss = self.compute_loss(model, inputs)")],
        "data": [("code", "run_clm.py", 603, "main", "train_result = trainer.train(resume_from_checkpoint=checkpoint)"),
                 ("site", "transformers/trainer.py", 2123, "train", "return inner_training_loop("),
                 ("site", "transformers/trainer.py", 2427, "_inner_training_loop", "for step, inputs in enumerate(epoch_iterator):"),
                 ("site", "accelerate/data_loader.py", 552, "__iter__", "current_batch = next(dataloader_iter)")],
        "checkpoint": [("code", "run_clm.py", 603, "main", "train_result = trainer.train(resume_from_checkpoint=checkpoint)"),
                       ("site", "transformers/trainer.py", 2530, "_inner_training_loop", "self._maybe_log_save_evaluate(tr_loss, grad_norm, model, trial, epoch, ignore_keys_for_eval)"),
                       ("site", "transformers/trainer.py", 3007, "_maybe_log_save_evaluate", "self._save_checkpoint(model, trial, metrics=metrics)"),
                       ("site", "transformers/trainer.py", 3097, "_save_checkpoint", "self.save_model(output_dir, _internal_call=True)"),
                       ("site", "safetensors/torch.py", 286, "save_file", "serialize_file(_flatten(tensors), filename, metadata=metadata)")],
    },
}
# Frames appended under a place by the kind of failure.
TAIL_FRAMES: dict[str, list[tuple[str, str, int, str, str]]] = {
    "torch_load": [("site", "torch/serialization.py", 1065, "load", "with _open_zipfile_reader(opened_file) as opened_zipfile:"),
                   ("site", "torch/serialization.py", 468, "__init__", "super().__init__(torch._C.PyTorchFileReader(name_or_buffer))")],
    "torch_save": [("site", "torch/serialization.py", 651, "save", "with _open_zipfile_writer(f) as opened_zipfile:"),
                   ("site", "torch/serialization.py", 499, "__exit__", "self.file_like.write_end_of_file()")],
    "dataloader": [("site", "torch/utils/data/dataloader.py", 630, "__next__", "data = self._next_data()"),
                   ("site", "torch/utils/data/dataloader.py", 1344, "_next_data", "return self._process_data(data)"),
                   ("site", "torch/utils/data/dataloader.py", 1370, "_process_data", "data.reraise()"),
                   ("site", "torch/_utils.py", 706, "reraise", "raise exception")],
    "cuda_sync": [("site", "torch/cuda/__init__.py", 954, "synchronize", "return torch._C._cuda_synchronize()")],
    "alloc": [("site", "torch/nn/modules/module.py", 1747, "_call_impl", "return forward_call(*args, **kwargs)"),
              ("site", "torch/nn/functional.py", 2551, "layer_norm", "return torch.layer_norm(")],
    "collective": [("site", "torch/distributed/c10d_logger.py", 83, "wrapper", "return func(*args, **kwargs)"),
                   ("site", "torch/distributed/distributed_c10d.py", 2501, "all_reduce", "work = group.allreduce([tensor], opts)")],
    "barrier": [("site", "torch/distributed/c10d_logger.py", 83, "wrapper", "return func(*args, **kwargs)"),
                ("site", "torch/distributed/distributed_c10d.py", 4166, "barrier", "work = group.barrier(opts=opts)")],
}


def traceback(fmt: TrainerFormat, where: str, exc: list[str], tail: str | None = None) -> tuple[list[str], int]:
    """A Python traceback as lines; returns the lines and the index of the (first) exception line."""
    frames = _FRAMES[fmt.name]["entry"] + _FRAMES[fmt.name][where] + (TAIL_FRAMES[tail] if tail else [])
    lines = ["Traceback (most recent call last):"]
    for kind, path, no, func, code in frames:
        base = fmt.c.code_dir if kind == "code" else fmt.site()
        lines.append(f'  File "{path if path.startswith("<") else base + "/" + path}", line {no}, in {func}')
        if code:
            lines.append(f"    {code}")
    return lines + exc, len(lines)


def rank_prefix(plan: Plan, rank: int, lines: list[str]) -> str:
    """PyTorch >= 2.2 under torchrun prefixes uncaught-exception output with ``[rankN]: ``."""
    if plan.cluster.variant.layout == "merged-slurm":
        return "\n".join(lines)
    pre = f"[rank{rank}]: "
    return "\n".join(pre + line for line in lines)


def c10_head(plan: Plan, rank: int, t: float, level: str, src: str) -> str:
    """``[rank3]:[E911 18:20:33.715298746 ProcessGroupNCCL.cpp:607] ``: c10 logging with nanoseconds."""
    lt = plan.local_time(rank // plan.cluster.gpn, t)
    ns = int((lt - int(lt)) * 1e9)
    return f"[rank{rank}]:[{level}{plan.clock.sec('c10', lt)}.{ns:09d} {src}] "


def watchdog_timeout(plan: Plan, rank: int, t: float, seq: int, op: str = "ALLREDUCE", numel: int = 466119168,
                     timeout_ms: int = 600000) -> str:
    """The cascade every healthy rank prints when a peer never joins the collective, then the abort."""
    ran = timeout_ms + plan.rng(f"wd{rank}").randint(20, 120)
    work = (f"WorkNCCL(SeqNum={seq}, OpType={op}, NumelIn={numel}, NumelOut={numel}, Timeout(ms)={timeout_ms}) "
            f"ran for {ran} milliseconds before timing out.")
    h = c10_head(plan, rank, t, "E", "ProcessGroupNCCL.cpp:607")
    h2 = c10_head(plan, rank, t, "E", "ProcessGroupNCCL.cpp:1664")
    h3 = c10_head(plan, rank, t + 0.01, "E", "ProcessGroupNCCL.cpp:621")
    h4 = c10_head(plan, rank, t + 0.01, "E", "ProcessGroupNCCL.cpp:627")
    h5 = c10_head(plan, rank, t + 0.02, "E", "ProcessGroupNCCL.cpp:1515")
    return "\n".join([
        f"{h}[Rank {rank}] Watchdog caught collective operation timeout: {work}",
        f"{h2}[PG 0 (default_pg) Rank {rank}] Exception (either an error or timeout) detected by watchdog at work: "
        f"{seq}, last enqueued NCCL work: {seq}, last completed NCCL work: {seq - 1}.",
        f"{h3}[Rank {rank}] Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA "
        "kernels, subsequent GPU operations might run on corrupted/incomplete data.",
        f"{h4}[Rank {rank}] To avoid data inconsistency, we are taking the entire process down.",
        f"{h5}[PG 0 (default_pg) Rank {rank}] Process group watchdog thread terminated with exception: [Rank {rank}] "
        f"Watchdog caught collective operation timeout: {work}",
        "Exception raised from checkTimeout at ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:609 (most recent "
        "call first):",
        "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x7f3a1c96c446 in "
        "/usr/local/lib/python3.10/dist-packages/torch/lib/libc10.so)",
        "frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::duration<long, "
        "std::ratio<1l, 1000l> > >) + 0x1d2 (0x7f39d2a8e772 in /usr/local/lib/python3.10/dist-packages/torch/lib/libtorch_cuda.so)",
        "frame #2: c10d::ProcessGroupNCCL::watchdogHandler() + 0x233 (0x7f39d2a951b3 in "
        "/usr/local/lib/python3.10/dist-packages/torch/lib/libtorch_cuda.so)",
        "frame #3: c10d::ProcessGroupNCCL::ncclCommWatchdog() + 0x14d (0x7f39d2a96b9d in "
        "/usr/local/lib/python3.10/dist-packages/torch/lib/libtorch_cuda.so)",
        "frame #4: <unknown function> + 0xdc253 (0x7f3a3c8b0253 in /usr/lib/x86_64-linux-gnu/libstdc++.so.6)",
        "frame #5: <unknown function> + 0x94ac3 (0x7f3a3e7d9ac3 in /usr/lib/x86_64-linux-gnu/libc.so.6)",
        "frame #6: clone + 0x44 (0x7f3a3e86aa04 in /usr/lib/x86_64-linux-gnu/libc.so.6)",
        "",
        "terminate called after throwing an instance of 'c10::DistBackendError'",
    ])


def _frames(kind: str) -> list[str]:
    lib = "/usr/local/lib/python3.10/dist-packages/torch/lib"
    if kind == "cuda":
        return [f"frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x7f3a1c96c446 in {lib}/libc10.so)",
                "frame #1: c10::detail::torchCheckFail(char const*, char const*, unsigned int, std::string const&) + 0x64 "
                f"(0x7f3a1c9166e4 in {lib}/libc10.so)",
                "frame #2: c10::cuda::c10_cuda_check_implementation(int, char const*, char const*, int, bool) + 0x118 "
                f"(0x7f3a1ca42a18 in {lib}/libc10_cuda.so)",
                "frame #3: c10d::ProcessGroupNCCL::WorkNCCL::finishedGPUExecutionInternal() const + 0x56 "
                f"(0x7f39d2a8d726 in {lib}/libtorch_cuda.so)",
                "frame #4: c10d::ProcessGroupNCCL::WorkNCCL::isCompleted() + 0xa0 (0x7f39d2a923f0 in "
                f"{lib}/libtorch_cuda.so)",
                f"frame #5: c10d::ProcessGroupNCCL::watchdogHandler() + 0x1da (0x7f39d2a99b5a in {lib}/libtorch_cuda.so)",
                f"frame #6: c10d::ProcessGroupNCCL::ncclCommWatchdog() + 0x14d (0x7f39d2a9a61d in {lib}/libtorch_cuda.so)"]
    return [f"frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x7f3a1c96c446 in {lib}/libc10.so)",
            "frame #1: c10d::ProcessGroupNCCL::checkForNCCLErrorsInternal(std::shared_ptr<c10d::NCCLComm>&) + 0x220 "
            f"(0x7f39d2a8b6d0 in {lib}/libtorch_cuda.so)",
            "frame #2: c10d::ProcessGroupNCCL::WorkNCCL::checkAndSetException() + 0x7c (0x7f39d2a8b9ac in "
            f"{lib}/libtorch_cuda.so)",
            f"frame #3: c10d::ProcessGroupNCCL::watchdogHandler() + 0x213 (0x7f39d2a99b93 in {lib}/libtorch_cuda.so)",
            f"frame #4: c10d::ProcessGroupNCCL::ncclCommWatchdog() + 0x14d (0x7f39d2a9a61d in {lib}/libtorch_cuda.so)"]


def watchdog_abort(plan: Plan, rank: int, t: float, error: list[str], kind: str) -> str:
    """The watchdog thread dies on a CUDA or NCCL error and takes the process down (SIGABRT).

    ``error`` is the error text (first line appended to the header line); ``kind`` is "cuda" or "nccl"."""
    h = c10_head(plan, rank, t, "E", "ProcessGroupNCCL.cpp:1515")
    where = ("c10_cuda_check_implementation at ../c10/cuda/CUDAException.cpp:43" if kind == "cuda"
             else "checkForNCCLErrorsInternal at ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:2027")
    lines = [f"{h}[PG 0 (default_pg) Rank {rank}] Process group watchdog thread terminated with exception: {error[0]}"]
    lines += error[1:] + (CUDA_TAIL if kind == "cuda" else [])
    frames = _frames(kind)
    n = len(frames)
    lines += [f"Exception raised from {where} (most recent call first):"] + frames
    lines += [f"frame #{n}: <unknown function> + 0xdc253 (0x7f3a3c8b0253 in /usr/lib/x86_64-linux-gnu/libstdc++.so.6)",
              f"frame #{n + 1}: <unknown function> + 0x94ac3 (0x7f3a3e7d9ac3 in /usr/lib/x86_64-linux-gnu/libc.so.6)",
              f"frame #{n + 2}: clone + 0x44 (0x7f3a3e86aa04 in /usr/lib/x86_64-linux-gnu/libc.so.6)", "",
              "terminate called after throwing an instance of 'c10::DistBackendError'"]
    return "\n".join(lines)


def remote_error(plan: Plan, fmt: TrainerFormat, rank: int, last_error: str) -> tuple[str, str]:
    """A healthy rank's traceback when a peer's process died: (text, exception line for the summary)."""
    v = plan.cluster.variant.nccl_version
    exc = ("torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:317, "
           f"remote process exited or there was a network error, NCCL version {v}")
    lines, _ = traceback(fmt, "train", [exc, "ncclRemoteError: A call failed possibly due to a network error or a "
                                        "remote process exiting prematurely.", "Last error:", last_error],
                         tail="collective")
    return rank_prefix(plan, rank, lines), exc


def nccl_init_lines(plan: Plan, rank: int, t: float, tuner: bool) -> Timed:
    """What NCCL_DEBUG=INFO prints while a communicator is created (about 25 lines per rank)."""
    c = plan.cluster
    node = c.node_of(rank)
    lr = c.local(rank)
    v = c.variant.nccl_version
    main = c.nccl_head(rank, node.pids[lr])
    h = c.nccl_head(rank)
    comm = f"0x{(0x55d0c8a3b2c0 + 0x1f3a40 * rank) & 0xFFFFFFFFFFFF:x}"
    nnodes = c.spec.nodes
    hcas = " ".join(f"[{k}]mlx5_{k}:1/IB" for k in range(c.gpn))
    nxt, prv = (rank + 1) % c.world, (rank - 1) % c.world
    out = [f"{main} NCCL INFO Bootstrap : Using ib0:{node.ip}<0>",
           f"{main} NCCL INFO cudaDriverVersion 12040"]
    if rank == 0:
        out.append(f"NCCL version {v}+cuda12.4")
    out += [f"{main} NCCL INFO NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin.",
            f"{h} NCCL INFO NET/IB : Using {hcas} ; OOB ib0:{node.ip}<0>",
            f"{h} NCCL INFO Using non-device net plugin version 0",
            f"{h} NCCL INFO Using network IB",
            f"{h} NCCL INFO ncclCommInitRank comm {comm} rank {rank} nranks {c.world} cudaDev {lr} nvmlDev {lr} "
            f"busId {c.bus_id(rank)} commId {c.comm_id} - Init START",
            f"{h} NCCL INFO Setting affinity for GPU {lr} to ffff,ffffffff",
            f"{h} NCCL INFO comm {comm} rank {rank} nRanks {c.world} nNodes {nnodes} localRanks {c.gpn} "
            f"localRank {lr} MNNVL 0"]
    for ch in range(2):
        out.append(f"{h} NCCL INFO Channel {ch:02d}/0 : {prv}[{c.local(prv)}] -> {rank}[{lr}] "
                   + ("[receive] via NET/IB/" + str(lr) if prv // c.gpn != rank // c.gpn else "via P2P/IPC/read"))
        out.append(f"{h} NCCL INFO Channel {ch:02d}/0 : {rank}[{lr}] -> {nxt}[{c.local(nxt)}] "
                   + ("[send] via NET/IB/" + str(lr) if nxt // c.gpn != rank // c.gpn else "via P2P/IPC/read"))
    out += [f"{h} NCCL INFO Connected all rings",
            f"{h} NCCL INFO Connected all trees",
            f"{h} NCCL INFO threadThresholds 8/8/64 | {8 * c.world}/8/64 | 512 | 512",
            f"{h} NCCL INFO 2 coll channels, 2 collnet channels, 0 nvls channels, 2 p2p channels, 2 p2p channels per peer"]
    if tuner:
        out.append(f"{h} NCCL INFO TUNER/Plugin: Failed to find ncclTunerPlugin_v2, using internal tuner instead.")
    out += [f"{h} NCCL INFO ncclCommInitRank comm {comm} rank {rank} nranks {c.world} cudaDev {lr} nvmlDev {lr} "
            f"busId {c.bus_id(rank)} commId {c.comm_id} - Init COMPLETE",
            f"{h} NCCL INFO Init timings: rank {rank} nranks {c.world} total 1.08 (kernels 0.51, bootstrap 0.22, "
            "allgathers 0.01, topo 0.28, graphs 0.04, connections 0.02, rest 0.01)"]
    return [(t + 0.002 * k, line) for k, line in enumerate(out)]


def elastic_head(plan: Plan, node: int, t: float, level: str, src: str) -> str:
    lt = plan.local_time(node, t)
    us = int((lt - int(lt)) * 1e6)
    return f"{level}{plan.clock.sec('glog', lt)}.{us:06d} {plan.cluster.nodes[node].agent_pid} {src}] "


def launcher_start(plan: Plan, node: int) -> Timed:
    t = plan.cluster.t0
    h = elastic_head(plan, node, t, "W", "torch/distributed/run.py:793")
    return [(t, h), (t, h + "*****************************************"),
            (t, h + "Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid your "
                "system being overloaded, please further tune the variable for optimal performance in your "
                "application as needed. "),
            (t, h + "*****************************************")]


def launcher_end(plan: Plan, fmt: TrainerFormat, node: int, exits: dict[int, Exit]) -> Timed:
    """torchrun's last words on one node: success, or the failed worker and the ChildFailedError summary."""
    c = plan.cluster
    ranks = list(c.ranks_of(node))
    failed = sorted((exits[r].time, r) for r in ranks if r in exits and exits[r].code not in (0, -15))
    if not failed:
        t = max([plan.t_end] + [exits[r].time for r in ranks if r in exits]) + 0.5
        h = elastic_head(plan, node, t, "I", "torch/distributed/elastic/agent/server/api.py:879")
        if any(r in exits for r in ranks):  # stopped from outside (SIGTERM): nothing useful to report
            return [(t, elastic_head(plan, node, t, "W", "torch/distributed/elastic/agent/server/api.py:704")
                     + "Received Signals.SIGTERM death signal, shutting down workers")]
        return [(t, h + "[default] worker group successfully finished. Waiting 300 seconds for other agents to finish."),
                (t + 0.2, elastic_head(plan, node, t + 0.2, "I", "torch/distributed/elastic/agent/server/api.py:932")
                 + "Local worker group finished (WorkerState.SUCCEEDED). Waiting 300 seconds for other agents to finish"),
                (t + 0.4, elastic_head(plan, node, t + 0.4, "I", "torch/distributed/elastic/agent/server/api.py:946")
                 + "Done waiting for other agents. Elapsed: 0.412 seconds")]
    t_first, first = failed[0]
    t = t_first + 0.6
    out: Timed = []
    for r in ranks:
        if r not in exits or exits[r].code == -15:
            out.append((t, elastic_head(plan, node, t, "W", "torch/distributed/elastic/multiprocessing/api.py:897")
                        + f"Sending process {c.pid(r)} closing signal SIGTERM"))
    ex = exits[first]
    out.append((t + 0.3, elastic_head(plan, node, t + 0.3, "E", "torch/distributed/elastic/multiprocessing/api.py:869")
                + f"failed (exitcode: {ex.code}) local_rank: {c.local(first)} (pid: {c.pid(first)}) of binary: {c.python}"))
    site = fmt.site()
    lines = ["Traceback (most recent call last):", '  File "/usr/local/bin/torchrun", line 8, in <module>',
             "    sys.exit(main())",
             f'  File "{site}/torch/distributed/elastic/multiprocessing/errors/__init__.py", line 355, in wrapper',
             "    return f(*args, **kwargs)",
             f'  File "{site}/torch/distributed/run.py", line 919, in main', "    run(args)",
             f'  File "{site}/torch/distributed/run.py", line 910, in run', "    elastic_launch(",
             f'  File "{site}/torch/distributed/launcher/api.py", line 138, in __call__',
             "    return launch_agent(self._config, self._entrypoint, list(args))",
             f'  File "{site}/torch/distributed/launcher/api.py", line 269, in launch_agent',
             "    raise ChildFailedError(", "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
             "=" * 60, f"{fmt.entry} FAILED", "-" * 60, "Failures:"]
    others = failed[1:]
    if not others:
        lines.append("  <NO_OTHER_FAILURES>")
    for k, (_, r) in enumerate(others, start=1):
        lines += [f"[{k}]:"] + _failure_block(plan, r, exits[r], node)
    lines += ["-" * 60, "Root Cause (first observed failure):", "[0]:"] + _failure_block(plan, first, ex, node)
    lines.append("=" * 60)
    out.append((t + 0.5, "\n".join(lines)))
    return out


def _failure_block(plan: Plan, rank: int, ex: Exit, node: int) -> list[str]:
    c = plan.cluster
    lt = plan.local_time(node, ex.time)
    sig = {-6: "SIGABRT", -9: "SIGKILL", -11: "SIGSEGV", -7: "SIGBUS"}.get(ex.code)
    if sig:
        err_file, tb = "<N/A>", f"Signal {-ex.code} ({sig}) received by PID {c.pid(rank)}"
    else:
        err_file = f"/tmp/torchelastic_{c.job_id:x}/none_{c.comm_id[2:10]}/attempt_0/{c.local(rank)}/error.json"
        site = plan.extras.get("site", "/usr/local/lib/python3.10/dist-packages")
        tb = ("Traceback (most recent call last):\n"
              f'    File "{site}/torch/distributed/elastic/multiprocessing/errors/__init__.py", line 355, in wrapper\n'
              "      return f(*args, **kwargs)\n    ...\n  " + (ex.error or "RuntimeError"))
    return [f"  time      : {plan.clock.sec('elastic', lt)}", f"  host      : {c.nodes[node].name}",
            f"  rank      : {rank} (local_rank: {c.local(rank)})", f"  exitcode  : {ex.code} (pid: {c.pid(rank)})",
            f"  error_file: {err_file}", f"  traceback : {tb}"]
