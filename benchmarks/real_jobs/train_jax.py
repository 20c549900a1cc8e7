"""JAX multi-process data-parallel training of a small Flax MLP with optax, on CPU (gloo collectives).

One process per (simulated) device: generate.py starts 2 processes on each of 2 nodes, each calling
`jax.distributed.initialize(coordinator_address, num_processes=4, process_id=K)`. The batch is sharded over a
4-device mesh and the parameters replicated, so XLA all-reduces the gradients across processes. absl logging on
every process (absl's `I1204 13:40:01.123456 1234 train_jax.py:88] ...` header), as JAX programs usually log.
"""
import os
import socket
import time
import warnings

import faults
import flax.linen as nn
import flax.serialization
import jax
import jax.numpy as jnp
import numpy as np
import optax
from absl import app, flags, logging
from jax.sharding import Mesh, NamedSharding, PartitionSpec

FLAGS = flags.DEFINE_string("coordinator", "127.0.0.1:1234", "host:port of process 0's coordination service")
NPROC = flags.DEFINE_integer("num_processes", 4, "processes in the job")
PID = flags.DEFINE_integer("process_id", 0, "this process's id")
STEPS = flags.DEFINE_integer("steps", 40, "optimizer steps")
SAVE_DIR = flags.DEFINE_string("save_dir", "/tmp/ckpt", "checkpoint folder (process 0 writes)")
SAVE_EVERY = flags.DEFINE_integer("save_every", 20, "checkpoint every N steps")
BATCH = flags.DEFINE_integer("batch_size", 16, "per-process batch")
HEARTBEAT = flags.DEFINE_integer("heartbeat_timeout", 20, "seconds without a heartbeat before a process is lost")
RESUME = flags.DEFINE_string("resume", None, "checkpoint to resume from (unused)")


class MLP(nn.Module):
    width: int = 256
    classes: int = 16

    @nn.compact
    def __call__(self, x):
        for _ in range(2):
            x = nn.gelu(nn.Dense(self.width)(x))
        return nn.Dense(self.classes)(x)


def synthetic_batch(process, step, batch, dim=64, classes=16):
    """Deterministic per-process data: noisy points around 16 class centres (the loss falls)."""
    g = np.random.default_rng(1000 * step + process)
    centres = np.random.default_rng(0).normal(size=(classes, dim)).astype(np.float32)
    y = g.integers(0, classes, size=batch)
    x = centres[y] + 0.5 * g.normal(size=(batch, dim)).astype(np.float32)
    return x, y.astype(np.int32)


def shard_batch(folder, process, step):
    """The process's batch of `step` from the node's local copy of the feature shards (`part-NNNNN.npy`, each
    SHARD_STEPS steps x 4 processes x 16 samples x (64 features + the label)), as a data loader reads them."""
    k, i = (step - 1) // SHARD_STEPS, (step - 1) % SHARD_STEPS
    path = os.path.join(folder, f"part-{k:05d}.npy")
    if faults.FAULT == "shard_truncated" and os.path.getsize(path) < SHARD_BYTES:
        faults.record("shard_truncated", step, path=path, shard=k)
    block = np.load(path)[i, process]
    return block[:, :-1], block[:, -1].astype(np.int32)


def write_shards(folder, steps=40, cut_shard=None):
    """The feature shards of `synthetic_batch` for every step and process; `cut_shard`'s file left at 40%."""
    os.makedirs(folder, exist_ok=True)
    for k in range((steps + SHARD_STEPS - 1) // SHARD_STEPS):
        block = np.zeros((SHARD_STEPS, 4, 16, 65), dtype=np.float32)
        for i in range(SHARD_STEPS):
            for p in range(4):
                x, y = synthetic_batch(p, k * SHARD_STEPS + i + 1, 16)
                block[i, p, :, :-1], block[i, p, :, -1] = x, y
        path = os.path.join(folder, f"part-{k:05d}.npy")
        np.save(path, block)
        if k == cut_shard:
            with open(path, "r+b") as fh:
                fh.truncate(int(os.path.getsize(path) * 0.4))


SHARD_STEPS = 5
SHARD_BYTES = SHARD_STEPS * 4 * 16 * 65 * 4 + 128


def evaluate(params, model, step, data_sharding):
    """The validation pass every 10 steps: two held-out batches, the loss gathered over the processes."""
    logging.info("running evaluation at step %d", step)
    total = 0.0
    for b in range(2):
        faults.at_eval(step)
        x, y = synthetic_batch(jax.process_index(), 10000 + b, BATCH.value)
        gx = jax.make_array_from_process_local_data(data_sharding, x)
        gy = jax.make_array_from_process_local_data(data_sharding, y)
        logits = model.apply(params, gx)
        total += float(optax.softmax_cross_entropy_with_integer_labels(logits, gy).mean())
    logging.info("eval step %d: loss=%.4f", step, total / 2)


def main(argv):
    del argv
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.config.update("jax_platforms", "cpu")
    if os.environ.get("L4L_JAX_CACHE"):  # a persistent compilation cache shared by the jobs (compiles are slow here)
        jax.config.update("jax_compilation_cache_dir", os.environ["L4L_JAX_CACHE"])
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
    os.environ["RANK"] = str(PID.value)  # faults.py reads the launcher's rank variable
    kwargs = {}
    try:
        import inspect
        if "heartbeat_timeout_seconds" in inspect.signature(jax.distributed.initialize).parameters:
            kwargs["heartbeat_timeout_seconds"] = HEARTBEAT.value
    except (TypeError, ValueError):
        pass
    jax.distributed.initialize(coordinator_address=FLAGS.value, num_processes=NPROC.value,
                               process_id=PID.value, initialization_timeout=120, **kwargs)
    faults.register()
    logging.info("process %d/%d on %s: %d local device(s), %d global", jax.process_index(), jax.process_count(),
                 socket.gethostname(), jax.local_device_count(), jax.device_count())
    mesh = Mesh(np.array(jax.devices()), ("data",))
    data_sharding = NamedSharding(mesh, PartitionSpec("data"))
    replicated = NamedSharding(mesh, PartitionSpec())

    model = MLP()
    params = jax.jit(model.init)(jax.random.PRNGKey(0), jnp.zeros((1, 64)))  # one compile, not one per op
    tx = optax.adamw(3e-3, weight_decay=0.01)
    params = jax.device_put(params, replicated)
    opt_state = jax.device_put(tx.init(params), replicated)
    if jax.process_index() == 0:
        n = sum(x.size for x in jax.tree_util.tree_leaves(params))
        logging.info("model: MLP params=%d", n)

    @jax.jit
    def train_step(params, opt_state, x, y):
        def loss_fn(p):
            logits = model.apply(p, x)
            return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()
        loss, grads = jax.value_and_grad(loss_fn)(params)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss, optax.global_norm(grads)

    t0 = time.time()
    for step in range(1, STEPS.value + 1):
        faults.at_step(step)
        if os.environ.get("L4L_TOKEN_SHARDS"):
            x, y = shard_batch(os.environ["L4L_TOKEN_SHARDS"], jax.process_index(), step)
        else:
            x, y = synthetic_batch(jax.process_index(), step, BATCH.value)
        if faults.FAULT == "warn_storm":  # the step's metrics code asks for float64 (x64 is off): JAX warns
            warnings.simplefilter("always")  # each time (Python warnings shown always, `-W always`)
            step_count = jnp.zeros((1,), dtype=jnp.float64) + step
            del step_count
        if faults.FAULT == "nan" and step == faults.FAULT_STEP and faults.rank() == faults.FAULT_RANK:
            faults.record("nan", step)
            x[0, 0] = np.nan  # one corrupt sample in this process's shard of the global batch
        gx = jax.make_array_from_process_local_data(data_sharding, x)
        gy = jax.make_array_from_process_local_data(data_sharding, y)
        params, opt_state, loss, gnorm = train_step(params, opt_state, gx, gy)
        loss = float(loss)
        dt, t0 = time.time() - t0, time.time()
        logging.info("step %d/%d loss=%.4f grad_norm=%.3f (%.2fs)", step, STEPS.value, loss, float(gnorm), dt)
        if not np.isfinite(loss):
            raise FloatingPointError(f"loss is {loss} at step {step}; stopping training")
        if os.environ.get("L4L_VALIDATE") and step % 10 == 0:
            evaluate(params, model, step, data_sharding)
        if step % SAVE_EVERY.value == 0:
            if jax.process_index() == 0:
                faults.before_checkpoint(step)
                path = os.path.join(SAVE_DIR.value, f"params_{step:06d}.msgpack")
                os.makedirs(SAVE_DIR.value, exist_ok=True)
                with open(path, "wb") as f:
                    f.write(flax.serialization.to_bytes(jax.device_get(params)))
                logging.info("saved checkpoint %s", path)
            jax.experimental.multihost_utils.sync_global_devices(f"checkpoint {step}")
    logging.info("training finished: %d steps", STEPS.value)
    jax.distributed.shutdown()


if __name__ == "__main__":
    import jax.experimental.multihost_utils  # noqa: F401  (sync_global_devices)
    app.run(main)
