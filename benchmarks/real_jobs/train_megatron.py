"""Megatron-Core on CPU: `parallel_state` with tensor parallel 2 and data parallel 2 over gloo, a tiny GPT-style
model of Megatron's tensor-parallel layers (`VocabParallelEmbedding`, `ColumnParallelLinear`, `RowParallelLinear`,
`vocab_parallel_cross_entropy`), data read through Megatron's `IndexedDataset` (`.bin`/`.idx`) from the node's
disk, sharded checkpoints through `megatron.core.dist_checkpointing` (torch_dist), launched by torchrun.

Megatron-Core 0.16.1 needs CUDA in its `GPTModel` attention (a global memory buffer), its DDP wrapper (grad
buffers), its pipeline schedules and its optimizer (loss scaler, grad clipping), so the loop around the layers is
written here the way Megatron-LM's `train_step` runs it: the data-parallel gradient all-reduce, the grad norm over
the model-parallel group, Megatron's NaN check of the loss (the rerun state machine's `validate_result`), and
Megatron-LM's progress line (`megatron_log.py`, copied verbatim) printed on the last rank, as `print_rank_last`.
Megatron pads the vocabulary to a multiple of 128 x the tensor-parallel size, as `_vocab_size_with_padding`.
"""
import argparse
import math
import os
import sys
import time
from datetime import datetime, timedelta

import faults
import torch
import torch.distributed as dist
from torch.distributed.elastic.multiprocessing.errors import record

# The two CUDA calls left on the CPU path: the current device (named in messages, where small flags are made), and the checkpoint writer's stream
# sync before it copies tensors out (nothing to wait for on CPU).
torch.cuda.current_device = lambda: "cpu"
torch.cuda.synchronize = lambda device=None: None

from megatron.core import dist_checkpointing, parallel_state, tensor_parallel  # noqa: E402
from megatron.core.datasets.indexed_dataset import IndexedDataset  # noqa: E402
from megatron.core.model_parallel_config import ModelParallelConfig  # noqa: E402
from megatron.core.rerun_state_machine import get_rerun_state_machine  # noqa: E402
from megatron.core.transformer.module import MegatronModule  # noqa: E402
from megatron.core.transformer.utils import ensure_metadata_has_dp_cp_group, sharded_state_dict_default  # noqa: E402
from megatron_log import progress_line  # noqa: E402

VOCAB, SEQ, HIDDEN = 300, 32, 64


def print_rank_0(msg):
    if dist.get_rank() == 0:
        print(msg, flush=True)


def print_rank_last(msg):
    if dist.get_rank() == dist.get_world_size() - 1:
        print(msg, flush=True)


def vocab_size_with_padding(orig, tp, divisible_by=128):
    """Megatron-LM's `_vocab_size_with_padding`: a multiple of `divisible_by` x the tensor-parallel size."""
    multiple = divisible_by * tp
    after = int(math.ceil(orig / multiple) * multiple)
    print_rank_0(f' > padded vocab (size: {orig}) with {after - orig} dummy tokens (new size: {after})')
    return after


class Block(MegatronModule):
    def __init__(self, config, hidden):
        super().__init__(config)
        init = torch.nn.init.xavier_normal_
        self.norm = torch.nn.LayerNorm(hidden)
        self.fc1 = tensor_parallel.ColumnParallelLinear(hidden, 4 * hidden, config=config, init_method=init,
                                                        bias=True, gather_output=False)
        self.fc2 = tensor_parallel.RowParallelLinear(4 * hidden, hidden, config=config, init_method=init, bias=True,
                                                     input_is_parallel=True, skip_bias_add=False)

    def forward(self, h):
        a, _ = self.fc1(self.norm(h))
        b, _ = self.fc2(torch.nn.functional.gelu(a))
        return h + b


class TinyGPT(MegatronModule):
    """Token and position embeddings, MLP blocks of column- and row-parallel linears, a vocab-parallel head."""

    def __init__(self, config, vocab, hidden=HIDDEN, layers=2):
        super().__init__(config)
        init = torch.nn.init.xavier_normal_
        self.embedding = tensor_parallel.VocabParallelEmbedding(vocab, hidden, init_method=init, config=config)
        self.position = torch.nn.Embedding(SEQ, hidden)
        self.layers = torch.nn.ModuleList(Block(config, hidden) for _ in range(layers))
        self.final_norm = torch.nn.LayerNorm(hidden)
        self.output_layer = tensor_parallel.ColumnParallelLinear(hidden, vocab, config=config, init_method=init,
                                                                 bias=False, gather_output=False)

    def sharded_state_dict(self, prefix="", sharded_offsets=(), metadata=None):
        """Each block's own sharded entries (a plain ModuleList would be saved as replicated)."""
        metadata = ensure_metadata_has_dp_cp_group(metadata)
        out = {}
        for name, child in self.named_children():
            if name == "layers":
                for i, layer in enumerate(child):
                    out.update(layer.sharded_state_dict(f"{prefix}layers.{i}.", sharded_offsets, metadata))
            else:
                out.update(sharded_state_dict_default(child, f"{prefix}{name}.", sharded_offsets, metadata,
                                                      tp_group=parallel_state.get_tensor_model_parallel_group()))
        return out

    def forward(self, tokens):
        h = self.embedding(tokens) + self.position(torch.arange(tokens.size(1)))
        for layer in self.layers:
            h = layer(h)
        logits, _ = self.output_layer(self.final_norm(h))
        return logits


def grad_norm(model):
    """The global L2 norm of the gradients (Megatron's `get_grad_norm_fp32`): tensor-parallel shards summed over
    the model-parallel group, replicated parameters counted once."""
    tp_rank = parallel_state.get_tensor_model_parallel_rank()
    total = torch.zeros(1)
    for p in model.parameters():
        if p.grad is None:
            continue
        if getattr(p, "tensor_model_parallel", False) or tp_rank == 0:
            total += p.grad.float().norm() ** 2
    dist.all_reduce(total, group=parallel_state.get_model_parallel_group())
    return total.sqrt().item()


@record
def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--micro-batch-size", type=int, default=8)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--save-dir", default="checkpoints")
    ap.add_argument("--save-every", type=int, default=20)
    ap.add_argument("--resume", default=None)
    ap.add_argument("--distributed-timeout-minutes", type=int, default=1)
    ap.add_argument("--tensor-model-parallel-size", type=int, default=int(os.environ.get("L4L_TP", "2")))
    args = ap.parse_args()

    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    faults.register()
    rank, world = dist.get_rank(), dist.get_world_size()
    tp = faults.tensor_parallel_size(args.tensor_model_parallel_size)
    print_rank_0(f'using world size: {world}, data-parallel size: {world // tp}, context-parallel size: 1, tensor-model-parallel '
                 f'size: {tp}, pipeline-model-parallel size: 1')
    print_rank_0('> initializing torch distributed ...')
    print_rank_0(f'> initialized tensor model parallel with size {tp}')
    print_rank_0('> initialized pipeline model parallel with size 1')
    parallel_state.initialize_model_parallel(tensor_model_parallel_size=tp, pipeline_model_parallel_size=1,
                                             distributed_timeout_minutes=args.distributed_timeout_minutes)
    dp, dp_rank = parallel_state.get_data_parallel_world_size(), parallel_state.get_data_parallel_rank()
    config = ModelParallelConfig(tensor_model_parallel_size=tp, use_cpu_initialization=True)
    torch.manual_seed(1234)
    vocab = vocab_size_with_padding(VOCAB, tp)
    print_rank_0('building GPT model ...')
    model = TinyGPT(config, vocab, **faults.model_kwargs())
    nparams = sum(p.numel() for p in model.parameters())
    if parallel_state.get_data_parallel_rank() == 0:
        print(f' > number of parameters on (tensor, pipeline) model parallel rank ({parallel_state.get_tensor_model_parallel_rank()}, 0): {nparams}', flush=True)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)

    iteration = 0
    if args.resume:
        faults.before_resume(args.resume)
        print_rank_0(f' loading checkpoint from {args.resume} at iteration 20')
        state = dist_checkpointing.load(sharded_state_dict=model.sharded_state_dict(), checkpoint_dir=args.resume)
        model.load_state_dict(state)
        iteration = 20
        print_rank_0(f'  successfully loaded checkpoint from {args.resume} [ t 1/{tp}, p 1/1 ] at iteration {iteration}')

    print_rank_0('> building train, validation, and test datasets ...')
    prefix = os.environ["L4L_MEGATRON_DATA"]
    dataset = IndexedDataset(prefix)
    print_rank_0('> finished creating GPT datasets ...')
    print_rank_0('[after dataloaders are built] datetime: {} '.format(datetime.now().strftime('%Y-%m-%d %H:%M:%S')))
    print_rank_0('training ...')
    rerun = get_rerun_state_machine()
    gbs = args.micro_batch_size * dp
    total_loss_dict = {}
    t0 = time.time()
    while iteration < args.steps:
        iteration += 1
        faults.at_step(iteration, model)
        start = ((iteration - 1) * gbs + dp_rank * args.micro_batch_size) % len(dataset)
        batch = torch.stack([torch.from_numpy(dataset[(start + k) % len(dataset)].astype("int64"))
                             for k in range(args.micro_batch_size)])
        opt.zero_grad(set_to_none=True)
        logits = model(batch[:, :-1])
        loss = tensor_parallel.vocab_parallel_cross_entropy(logits.float(), batch[:, 1:]).mean()
        rerun.current_iteration = iteration
        rerun.validate_result(result=loss, rejection_func=torch.isnan,
                              message="found NaN in local forward loss calculation", tolerance=0.0, fatal=True)
        loss.backward()
        for p in model.parameters():  # the data-parallel gradient all-reduce (Megatron's DDP needs CUDA buffers)
            if p.grad is not None:
                dist.all_reduce(p.grad, group=parallel_state.get_data_parallel_group())
                p.grad /= dp
        norm = grad_norm(model)
        if math.isfinite(norm) and norm > 1.0:
            for p in model.parameters():
                if p.grad is not None:
                    p.grad.mul_(1.0 / norm)
        for group in opt.param_groups:
            group["lr"] = args.lr * faults.lr_scale(iteration)
        opt.step()
        avg = loss.detach().clone()
        dist.all_reduce(avg, group=parallel_state.get_data_parallel_group())
        avg /= dp
        total_loss_dict = {"lm loss": avg, "advanced iterations": 1, "skipped iterations": 0,
                           "nan iterations": int(not math.isfinite(avg.item()))}
        dt = time.time() - t0
        t0 = time.time()
        print_rank_last(progress_line(iteration, args.steps, iteration * gbs, dt, opt.param_groups[0]["lr"], gbs,
                                      total_loss_dict, 1.0, norm, None, None))
        if args.save_every and iteration % args.save_every == 0:
            path = os.path.join(args.save_dir, f"iter_{iteration:07d}")
            print_rank_0(f'saving checkpoint at iteration {iteration:7d} to {args.save_dir} in torch_dist format')
            faults.before_checkpoint(iteration)
            os.makedirs(path, exist_ok=True)
            dist_checkpointing.save(sharded_state_dict=model.sharded_state_dict(), checkpoint_dir=path)
            print_rank_0(f'  successfully saved checkpoint from iteration {iteration:7d} to {args.save_dir} [ t 1/{tp}, p 1/1 ]')
    dist.barrier()
    print_rank_0('[after training is done] datetime: {} '.format(datetime.now().strftime('%Y-%m-%d %H:%M:%S')))
    if rank == 0:
        print(f'training finished: {iteration} steps', flush=True)
    parallel_state.destroy_model_parallel()
    dist.destroy_process_group()
    sys.stdout.flush()


if __name__ == "__main__":
    faults.run(main)
