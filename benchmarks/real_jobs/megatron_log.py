# Copyright (c) 2025 NVIDIA CORPORATION & AFFILIATES. All rights reserved.
#
# The progress line of Megatron-LM's `training_log` (megatron/training/training.py, NVIDIA/Megatron-LM at
# d98e8a64dd), its string-building statements copied as they are (the `args.` fields passed in as arguments): the
# `megatron.training` package is not part of megatron-core's wheel and its loop needs CUDA. What the excerpt does
# not build (throughput, energy, MoE, RL, skipped samples) is left out.
# ruff: noqa: UP032
"""Megatron-LM's per-iteration progress line (`iteration N/ M | consumed samples: ... | lm loss: ... |`)."""
from datetime import datetime


def progress_line(iteration: int, train_iters: int, consumed_train_samples: int,
                  elapsed_time_per_iteration: float, learning_rate: float, batch_size: int,
                  total_loss_dict: dict, loss_scale: float, grad_norm, num_zeros_in_grad, params_norm) -> str:
    """The line Megatron-LM's `training_log` prints on the last rank every `--log-interval` iterations."""
    advanced_iters_key = 'advanced iterations'
    skipped_iters_key = 'skipped iterations'
    nan_iters_key = 'nan iterations'
    log_string = f" [{datetime.now().strftime('%Y-%m-%d %H:%M:%S.%f')}]"
    log_string += ' iteration {:8d}/{:8d} |'.format(iteration, train_iters)
    log_string += ' consumed samples: {:12d} |'.format(consumed_train_samples)
    log_string += ' elapsed time per iteration (ms): {:.1f} |'.format(
        elapsed_time_per_iteration * 1000.0
    )
    if learning_rate is not None:
        log_string += f' learning rate: {learning_rate:.6E} |'
    log_string += f' global batch size: {batch_size:5d} |'
    for key in total_loss_dict:
        if key not in [advanced_iters_key, skipped_iters_key, nan_iters_key]:
            avg = total_loss_dict[key].item() / float(
                max(1, total_loss_dict[advanced_iters_key])
            )
            if avg >= 0.0:
                log_string += ' {}: {:.6E} |'.format(key, avg)
    log_string += f' loss scale: {loss_scale:.1f} |'
    if grad_norm is not None:
        log_string += f' grad norm: {grad_norm:.3f} |'
    if num_zeros_in_grad is not None:
        log_string += f' num zeros: {num_zeros_in_grad} |'
    if params_norm is not None:
        log_string += f' params norm: {params_norm:.3f} |'
    log_string += ' number of skipped iterations: {:3d} |'.format(
        total_loss_dict[skipped_iters_key]
    )
    log_string += ' number of nan iterations: {:3d} |'.format(total_loss_dict[nan_iters_key])
    return log_string
