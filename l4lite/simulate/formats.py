"""Trainer output in three framework styles: Megatron-LM, DeepSpeed and the Hugging Face Trainer.

Each style writes the start-up banner, model and checkpoint loading, one progress line per iteration and rank,
checkpoint saves, evaluations and the end of training, with the wording and number formats of the real
frameworks (see fixtures/real/real-failures.jsonl). Iteration bodies are formatted once per iteration and shared
by all ranks; only the timestamp and rank differ per line, which keeps large jobs fast to generate.
"""

from __future__ import annotations

from l4lite.simulate.plan import Plan

Timed = list[tuple[float, str]]


def float32_repr(x: float) -> str:
    """How a float32 tensor value turned into a Python float prints (HF Trainer's grad_norm)."""
    import struct

    return repr(struct.unpack("f", struct.pack("f", x))[0]) if x == x else "nan"


class TrainerFormat:
    name = "base"
    entry = "train.py"

    def __init__(self, plan: Plan) -> None:
        self.p = plan
        self.c = plan.cluster
        self.clock = plan.clock
        self.gbs = 8 * self.c.world if self.c.world <= 64 else 4 * self.c.world
        self._bodies: dict[tuple[int, float], str] = {}

    # -- helpers -------------------------------------------------------------------------------------------
    def local(self, rank: int, t: float) -> float:
        return t + self.c.node_of(rank).skew

    def site(self) -> str:
        py = "python3.10" if self.c.python.startswith("/usr") else "python3.11"
        pkg = "dist-packages" if self.c.python.startswith("/usr") else "site-packages"
        root = "/usr/local/lib" if self.c.python.startswith("/usr") else "/opt/conda/lib"
        return f"{root}/{py}/{pkg}"

    def ms_for(self, rank: int, i: int) -> float:
        """Iteration time as this rank measures it: its own compute, slowed on a throttled node."""
        onset_factor = self.p.slow.get(rank // self.c.gpn)
        f = onset_factor[1] if onset_factor and i >= onset_factor[0] else 1.0
        return self.p.iter_ms[i] * f

    def body(self, i: int, rank: int) -> str:
        ms = self.ms_for(rank, i)
        key = (i, ms)
        b = self._bodies.get(key)
        if b is None:
            b = self._bodies[key] = self.make_body(i, ms)
        return b

    # -- to implement --------------------------------------------------------------------------------------
    def make_body(self, i: int, ms: float) -> str:
        raise NotImplementedError

    def iter_line(self, i: int, rank: int, t: float) -> str:
        raise NotImplementedError

    def init_lines(self, rank: int) -> Timed:
        raise NotImplementedError

    def load_lines(self, rank: int) -> Timed:
        raise NotImplementedError

    def ckpt_lines(self, i: int, rank: int) -> Timed:
        raise NotImplementedError

    def eval_lines(self, i: int, rank: int) -> Timed:
        raise NotImplementedError

    def final_lines(self, rank: int) -> Timed:
        raise NotImplementedError

    def ckpt_path(self, i: int) -> str:
        raise NotImplementedError


class Megatron(TrainerFormat):
    name = "megatron"
    entry = "pretrain_gpt.py"

    def make_body(self, i: int, ms: float) -> str:
        p = self.p
        gn = p.grad_norm[i]
        tflops = 190.0 * 800.0 / ms
        grad = "" if p.skipped[i] else f" grad norm: {gn:.3f} |"
        return (f" iteration {i:8d}/{p.sched.train_iters:8d} | consumed samples: {i * self.gbs:12d} |"
                f" elapsed time per iteration (ms): {ms:.1f} | throughput per GPU (TFLOP/s/GPU): {tflops:.1f} |"
                f" learning rate: {p.lr[i]:.6E} | global batch size: {self.gbs:5d} | lm loss: {p.loss[i]:.6E} |"
                f" loss scale: {p.loss_scale[i]:.1f} |{grad} number of skipped iterations: {p.skipped[i]:3d} |"
                f" number of nan iterations: {p.nan[i]:3d} |")

    def iter_line(self, i: int, rank: int, t: float) -> str:
        return f" [{self.clock.sec('iso', t)}]{self.body(i, rank)}"

    def init_lines(self, rank: int) -> Timed:
        t = self.c.t0 + 2.0
        if rank != 0:
            return []
        c, s = self.c, self.p.sched
        args = [("accumulate_allreduce_grads_in_fp32", "False"), ("bf16", str(c.variant.precision == "bf16")),
                ("data_path", f"['{c.data_path}']"), ("distributed_backend", "nccl"),
                ("eval_interval", str(s.eval_every)), ("eval_iters", "10"), ("fp16", str(c.variant.precision == "fp16")),
                ("global_batch_size", str(self.gbs)), ("hidden_size", "2048"), ("load", c.ckpt_dir),
                ("log_interval", "1"), ("lr", f"{max(self.p.lr):.6g}"), ("lr_decay_style", "cosine"),
                ("micro_batch_size", "4"), ("num_attention_heads", "16"), ("num_layers", "24"),
                ("save", c.ckpt_dir), ("save_interval", str(s.ckpt_every)), ("seq_length", "2048"),
                ("tensor_model_parallel_size", "1"), ("train_iters", str(s.train_iters)),
                ("world_size", str(c.world))]
        out = [f"using world size: {c.world}, data-parallel size: {c.world}, context-parallel size: 1, "
               "tensor-model-parallel size: 1, pipeline-model-parallel size: 1 ",
               "------------------------ arguments ------------------------"]
        out += [f"  {k} {'.' * max(3, 48 - len(k))} {v}" for k, v in args]
        out += ["-------------------- end of arguments ---------------------",
                f"setting number of micro-batches to constant {max(1, self.gbs // (4 * c.world))}",
                "> building GPT2BPETokenizer tokenizer ...",
                " > padded vocab (size: 50257) with 47 dummy tokens (new size: 50304)",
                "> initializing torch distributed ..."]
        return [(t + 0.01 * k, line) for k, line in enumerate(out)]

    def load_lines(self, rank: int) -> Timed:
        p, c = self.p, self.c
        t = p.t_load
        if rank != 0:
            return []
        out = [(t, "> initialized tensor model parallel with size 1"),
               (t, "> initialized pipeline model parallel with size 1"),
               (t + 0.1, "> setting random seeds to 1234 ..."),
               (t + 0.2, "> compiling dataset index builder ..."),
               (t + 0.2, f"make: Entering directory '{c.code_dir}/megatron/core/datasets'"),
               (t + 0.3, "make: Nothing to be done for 'default'."),
               (t + 0.3, f"make: Leaving directory '{c.code_dir}/megatron/core/datasets'"),
               (t + 0.3, ">>> done with dataset index builder. Compilation time: 0.052 seconds"),
               (t + 0.4, "> compiling and loading fused kernels ..."),
               (t + 2.5, ">>> done with compiling and loading fused kernels. Compilation time: 2.113 seconds"),
               (t + 2.6, f"time to initialize megatron (seconds): {2.6 + p.t_load - c.t0:.3f}"),
               (t + 2.6, f"[after megatron is initialized] datetime: {self.clock.sec('iso', self.local(0, t + 2.6))} "),
               (t + 2.7, "building GPT model ..."),
               (t + 3.5, " > number of parameters on (tensor, pipeline) model parallel rank (0, 0): 1315819520"),
               (t + 3.6, "> learning rate decay style: cosine")]
        tl = t + 4.0
        if p.sched.resume_from:
            out += [(tl, f" loading checkpoint from {c.ckpt_dir} at iteration {p.sched.resume_from}")]
            if not p.extras.get("load_fails"):
                tl = p.t_train - 8.0
                out += [(tl, f"  successfully loaded checkpoint from {c.ckpt_dir} [ t 0, p 0 ] at iteration "
                              f"{p.sched.resume_from}")]
        else:
            out += [(tl, f"WARNING: could not find the metadata file {c.ckpt_dir}/latest_checkpointed_iteration.txt "),
                    (tl, "    will not load any checkpoints and will start from random")]
        tt = p.t_train - 0.5
        out += [(tl + 0.1, f"[after model, optimizer, and learning rate scheduler are built] datetime: "
                           f"{self.clock.sec('iso', self.local(0, tl + 0.1))} "),
                (tl + 0.2, "> building train, validation, and test datasets ..."),
                (tl + 0.2, " > datasets target sizes (minimum size):"),
                (tl + 0.2, f"    train:      {p.sched.train_iters * self.gbs}"),
                (tl + 0.2, f"    validation: {(p.sched.train_iters // p.sched.eval_every + 1) * 10 * self.gbs}"),
                (tl + 0.2, f"    test:       {10 * self.gbs}"),
                (tt - 1.0, " > finished creating GPT datasets ..."),
                (tt, f"[after dataloaders are built] datetime: {self.clock.sec('iso', self.local(0, tt))} "),
                (tt, "done with setup ..."),
                (tt, "training ..."),
                (tt, f"[before the start of training step] datetime: {self.clock.sec('iso', self.local(0, tt))} ")]
        return out

    def ckpt_path(self, i: int) -> str:
        return self.c.ckpt_dir

    def ckpt_lines(self, i: int, rank: int) -> Timed:
        if rank != 0:
            return []
        start, end = self.p.ckpt_span[i]
        return [(start, f"saving checkpoint at iteration {i:7d} to {self.c.ckpt_dir}"),
                (end, f"  successfully saved checkpoint at iteration {i:7d} to {self.c.ckpt_dir}"),
                (end, "(min, max) time across ranks (ms):"),
                (end, f"    save-checkpoint ................................: ({(end - start) * 1000:.2f}, "
                      f"{(end - start) * 1000 + 0.07:.2f})")]

    def eval_lines(self, i: int, rank: int) -> Timed:
        if rank != 0:
            return []
        v = self.p.val_loss[i]
        end = self.p.eval_span[i][1]
        bar = "-" * 95
        ppl = "inf" if v > 700 else f"{2.718281828459045 ** v:.6E}"
        return [(end, bar), (end, f" validation loss at iteration {i} | lm loss value: {v:.6E} | lm loss PPL: {ppl} | "),
                (end, bar)]

    def final_lines(self, rank: int) -> Timed:
        if rank != 0:
            return []
        t = self.p.t_end - 1.0
        return [(t, f"[after training is done] datetime: {self.clock.sec('iso', self.local(0, t))} ")]


class DeepSpeed(TrainerFormat):
    name = "deepspeed"
    entry = "train.py"
    steps_per_print = 10

    def head(self, t: float, where: str, level: str = "INFO") -> str:
        return f"[{self.clock.ms('iso', t)}] [{level}] [{where}] "

    def make_body(self, i: int, ms: float) -> str:
        p = self.p
        return (f"step={i}, loss={p.loss[i]:.4f}, grad_norm={p.grad_norm[i]:.4f}, lr={p.lr[i]:.4e}, "
                f"step_time={ms / 1000:.3f}s")

    def iter_line(self, i: int, rank: int, t: float) -> str:
        line = f"{self.head(t, 'train.py:214:train')}[Rank {rank}] {self.body(i, rank)}"
        if i % self.steps_per_print:
            return line
        p = self.p
        sps = self.gbs * 1000.0 / self.ms_for(rank, i)
        skipped = sum(p.skipped[p.sched.first:i + 1])
        return (f"{self.head(t, 'logging.py:128:log_dist')}[Rank {rank}] step={i}, skipped={skipped}, "
                f"lr=[{p.lr[i]!r}], mom=[[0.9, 0.95]]\n"
                f"{self.head(t, 'timer.py:264:stop')}epoch=0/micro_step={i * 4}/global_step={i}, "
                f"RunningAvgSamplesPerSec={round(sps * 0.998, 11)!r}, CurrSamplesPerSec={round(sps, 11)!r}, MemAllocated=14.26GB, "
                f"MaxMemAllocated=31.02GB\n{line}")

    def init_lines(self, rank: int) -> Timed:
        t = self.c.t0 + 2.0
        lt = self.local(rank, t)
        out = [(t, self.head(lt, "real_accelerator.py:203:get_accelerator") + "Setting ds_accelerator to cuda (auto detect)"),
               (t + 1.5, self.head(lt + 1.5, "comm.py:652:init_distributed") + "cdb=None")]
        if rank == 0:
            out.append((t + 1.5, self.head(lt + 1.5, "comm.py:683:init_distributed")
                        + "Initializing TorchBackend in DeepSpeed with backend nccl"))
        return out

    def load_lines(self, rank: int) -> Timed:
        p, c = self.p, self.c
        t = p.t_load
        lt = self.local(rank, t)
        out: Timed = []
        if rank == 0:
            prec = "torch.float16" if c.variant.precision == "fp16" else "torch.bfloat16"
            for k, (where, msg) in enumerate([
                ("logging.py:128:log_dist", "[Rank 0] DeepSpeed info: version=0.15.1, git-hash=unknown, git-branch=unknown"),
                ("config.py:733:__init__", f"Config mesh_device None world_size = {c.world}"),
                ("logging.py:128:log_dist", "[Rank 0] DeepSpeed Flops Profiler Enabled: False"),
                ("logging.py:128:log_dist", "[Rank 0] Using DeepSpeed Optimizer param name adamw as basic optimizer"),
                ("logging.py:128:log_dist", "[Rank 0] DeepSpeed Basic Optimizer = FusedAdam"),
                ("logging.py:128:log_dist", f"[Rank 0] Creating {prec} ZeRO stage 1 optimizer"),
                ("stage_1_and_2.py:149:__init__", "Reduce bucket size 500000000"),
                ("stage_1_and_2.py:150:__init__", "Allgather bucket size 500000000"),
                ("utils.py:781:see_memory_usage", "After initializing ZeRO optimizer"),
                ("utils.py:782:see_memory_usage", "MA 14.26 GB         Max_MA 16.8 GB         CA 17.02 GB         Max_CA 17 GB "),
                ("utils.py:789:see_memory_usage", "CPU Virtual Memory:  used = 112.45 GB, percent = 11.2%"),
            ]):
                out.append((t + 0.2 * k, self.head(lt + 0.2 * k, where) + msg))
        tl = t + 3.0
        if p.sched.resume_from:
            path = f"{self.ckpt_path(p.sched.resume_from)}/mp_rank_00_model_states.pt"
            out.append((tl, self.head(self.local(rank, tl), "torch_checkpoint_engine.py:27:load")
                        + f"[Torch] Loading checkpoint from {path}..."))
            if not p.extras.get("load_fails"):
                tl = p.t_train - 6.0
                out.append((tl, self.head(self.local(rank, tl), "torch_checkpoint_engine.py:29:load")
                            + f"[Torch] Loaded checkpoint from {path}."))
                out.append((tl + 0.5, self.head(self.local(rank, tl + 0.5), "engine.py:3023:_get_all_zero_checkpoint_state_dicts")
                            + f"successfully read {c.world} ZeRO state_dicts for rank {rank}"))
        if rank == 0:
            tt = p.t_train - 0.5
            out.append((tt, self.head(self.local(0, tt), "train.py:180:main") + f"***** Running training for "
                        f"{p.sched.last - p.sched.first + 1} steps, global batch size {self.gbs} *****"))
        return out

    def ckpt_path(self, i: int) -> str:
        return f"{self.c.ckpt_dir}/global_step{i}"

    def zero_prefix(self) -> str:
        return "bf16_" if self.c.variant.precision == "bf16" else ""

    def ckpt_lines(self, i: int, rank: int) -> Timed:
        start, end = self.p.ckpt_span[i]
        ls, le = self.local(rank, start), self.local(rank, end)
        path = self.ckpt_path(i)
        shard = f"{path}/{self.zero_prefix()}zero_pp_rank_{rank}_mp_rank_00_optim_states.pt"
        out: Timed = []
        if rank == 0:
            out += [(start, self.head(ls, "logging.py:128:log_dist") + f"[Rank 0] [Torch] Checkpoint global_step{i} is about to be saved!"),
                    (start, self.head(ls, "logging.py:128:log_dist") + f"[Rank 0] Saving model checkpoint: {path}/mp_rank_00_model_states.pt"),
                    (start, self.head(ls, "torch_checkpoint_engine.py:21:save") + f"[Torch] Saving {path}/mp_rank_00_model_states.pt...")]
        out += [(start + 1.0, self.head(ls + 1.0, "torch_checkpoint_engine.py:21:save") + f"[Torch] Saving {shard}..."),
                (end - 1.0, self.head(le - 1.0, "torch_checkpoint_engine.py:23:save") + f"[Torch] Saved {shard}."),
                (end - 1.0, self.head(le - 1.0, "engine.py:3536:_save_zero_checkpoint") + f"zero checkpoint saved {shard}"),
                (end, self.head(le, "torch_checkpoint_engine.py:33:commit") + f"[Torch] Checkpoint global_step{i} is ready now!")]
        return out

    def eval_lines(self, i: int, rank: int) -> Timed:
        if rank != 0:
            return []
        v = self.p.val_loss[i]
        end = self.p.eval_span[i][1]
        ppl = "inf" if v > 700 else f"{2.718281828459045 ** v:.4f}"
        return [(end, self.head(self.local(0, end), "train.py:241:evaluate") + f"[Rank 0] eval at step {i}: "
                 f"eval_loss={v:.4f}, perplexity={ppl}")]

    def final_lines(self, rank: int) -> Timed:
        t = self.p.t_end - 1.5
        if rank != 0:
            return []
        return [(t, self.head(self.local(0, t), "train.py:262:main") + "training finished, exiting")]


class HFTrainer(TrainerFormat):
    name = "hf"
    entry = "run_clm.py"

    def head(self, t: float, where: str, level: str = "INFO") -> str:
        return f"[{level}|{where}] {self.clock.ms('iso', t)} >> "

    def make_body(self, i: int, ms: float) -> str:
        p = self.p
        epoch = i / p.sched.train_iters
        nan = p.nan[i] > 0
        loss = 0.0 if nan else round(p.loss[i], 4)
        gn = "nan" if nan else float32_repr(p.grad_norm[i])
        return f"{{'loss': {loss!r}, 'grad_norm': {gn}, 'learning_rate': {p.lr[i]!r}, 'epoch': {epoch!r}}}"

    def iter_line(self, i: int, rank: int, t: float) -> str:
        return self.body(i, rank)

    def init_lines(self, rank: int) -> Timed:
        t = self.c.t0 + 2.5
        lt = self.local(rank, t)
        return [(t, f"{self.clock.sec('us', lt)} - WARNING - __main__ - "
                    f"Process rank: {rank}, device: cuda:{self.c.local(rank)}, n_gpu: 1, distributed training: True, "
                    f"16-bits training: {self.c.variant.precision != 'fp32'}")]

    def load_lines(self, rank: int) -> Timed:
        p, c = self.p, self.c
        t = p.t_load
        out: Timed = []
        if rank == 0:
            lt = self.local(0, t)
            out += [(t, self.head(lt, "configuration_utils.py:733") + f"loading configuration file {c.code_dir}/config.json"),
                    (t + 2.0, self.head(lt + 2.0, "modeling_utils.py:3678") + "loading weights file model.safetensors"),
                    (t + 6.0, self.head(lt + 6.0, "modeling_utils.py:4507") + "All model checkpoint weights were used when "
                     "initializing LlamaForCausalLM.")]
        if p.sched.resume_from:
            tl = t + 7.0
            out.append((tl, self.head(self.local(rank, tl), "trainer.py:2318") + "Loading model from "
                        f"{self.ckpt_path(p.sched.resume_from)}."))
        if rank == 0:
            tt = p.t_train - 0.5
            lt = self.local(0, tt)
            steps = p.sched.train_iters
            for k, msg in enumerate(["***** Running training *****", f"  Num examples = {steps * self.gbs:,}",
                                     "  Num Epochs = 1", "  Instantaneous batch size per device = 4",
                                     f"  Total train batch size (w. parallel, distributed & accumulation) = {self.gbs:,}",
                                     f"  Gradient Accumulation steps = {max(1, self.gbs // (4 * c.world))}",
                                     f"  Total optimization steps = {steps:,}",
                                     "  Number of trainable parameters = 1,315,819,520"]):
                out.append((tt, self.head(lt, f"trainer.py:{2134 + k}") + msg))
            if p.sched.resume_from:
                out += [(tt, self.head(lt, "trainer.py:2156") + "  Continuing training from checkpoint, will skip to saved global_step"),
                        (tt, self.head(lt, "trainer.py:2158") + f"  Continuing training from global step {p.sched.resume_from}")]
        return out

    def ckpt_path(self, i: int) -> str:
        return f"{self.c.ckpt_dir}/checkpoint-{i}"

    def ckpt_lines(self, i: int, rank: int) -> Timed:
        if rank != 0:
            return []
        start, end = self.p.ckpt_span[i]
        ls, le = self.local(0, start), self.local(0, end)
        path = self.ckpt_path(i)
        return [(start, self.head(ls, "trainer.py:3503") + f"Saving model checkpoint to {path}"),
                (start + 0.1, self.head(ls + 0.1, "configuration_utils.py:472") + f"Configuration saved in {path}/config.json"),
                (end, self.head(le, "modeling_utils.py:2802") + f"Model weights saved in {path}/model.safetensors")]

    def eval_lines(self, i: int, rank: int) -> Timed:
        if rank != 0:
            return []
        start, end = self.p.eval_span[i]
        ls = self.local(0, start)
        v = self.p.val_loss[i]
        dur = end - start
        return [(start, self.head(ls, "trainer.py:3819") + "\n***** Running Evaluation *****"),
                (start, self.head(ls, "trainer.py:3821") + "  Num examples = 10240"),
                (start, self.head(ls, "trainer.py:3824") + "  Batch size = 8"),
                (end, f"{{'eval_loss': {round(v, 4)!r}, 'eval_runtime': {round(dur, 4)!r}, "
                      f"'eval_samples_per_second': {round(10240 / dur, 3)!r}, 'eval_steps_per_second': "
                      f"{round(1280 / dur, 3)!r}, 'epoch': {i / self.p.sched.train_iters!r}}}")]

    def final_lines(self, rank: int) -> Timed:
        if rank != 0:
            return []
        p = self.p
        t = p.t_end - 1.5
        run = t - p.t_train
        steps = p.sched.last - p.sched.first + 1
        return [(t, self.head(self.local(0, t), "trainer.py:2394") + "\n\nTraining completed. Do not forget to share "
                    "your model on huggingface.co/models =)\n\n"),
                (t, f"{{'train_runtime': {round(run, 4)!r}, 'train_samples_per_second': {round(steps * self.gbs / run, 3)!r}, "
                    f"'train_steps_per_second': {round(steps / run, 3)!r}, 'train_loss': {round(p.loss[p.sched.last], 4)!r}, "
                    f"'epoch': {p.sched.last / p.sched.train_iters!r}}}")]


FORMAT_CLASSES: dict[str, type[TrainerFormat]] = {"megatron": Megatron, "deepspeed": DeepSpeed, "hf": HFTrainer}
