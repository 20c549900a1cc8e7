"""TensorFlow multi-worker data-parallel training on CPU: `tf.distribute.MultiWorkerMirroredStrategy`.

generate.py starts 2 workers on each of 2 nodes, each with its own `TF_CONFIG` (the 4 workers' host:port, its
own index; worker 0 is the chief). A custom loop (`strategy.run` of a Keras MLP's step, the loss summed over the
workers), the data read from the node's local TFRecord file (`L4L_TFRECORD`) through `tf.data` with each worker
keeping its own quarter, checkpoints through `tf.train.CheckpointManager` every 20 steps (the chief writes to the
checkpoint folder, the others to temporary folders, as the TensorFlow guide does), absl logging on every worker.
"""
import json
import os
import socket
import time

import faults
import numpy as np
import tensorflow as tf
from absl import app, flags, logging

STEPS = flags.DEFINE_integer("steps", 40, "optimizer steps")
SAVE_DIR = flags.DEFINE_string("save_dir", "/tmp/ckpt", "checkpoint folder (the chief writes)")
SAVE_EVERY = flags.DEFINE_integer("save_every", 20, "checkpoint every N steps")
BATCH = flags.DEFINE_integer("batch_size", 16, "per-worker batch")
TIMEOUT = flags.DEFINE_integer("timeout", 30, "seconds a collective waits for its peers")

DIM, CLASSES = 32, 8


def write_records(path, n=4 * 16 * 45, cut=None):
    """Noisy points around 8 class centres as tf.train.Examples; `cut`: the file left at that fraction."""
    g = np.random.default_rng(0)
    centres = np.random.default_rng(1).normal(size=(CLASSES, DIM)).astype(np.float32)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with tf.io.TFRecordWriter(path) as w:
        for _ in range(n):
            y = int(g.integers(0, CLASSES))
            x = centres[y] + 0.5 * g.normal(size=DIM).astype(np.float32)
            ex = tf.train.Example(features=tf.train.Features(feature={
                "x": tf.train.Feature(float_list=tf.train.FloatList(value=x)),
                "y": tf.train.Feature(int64_list=tf.train.Int64List(value=[y]))}))
            w.write(ex.SerializeToString())
    if cut is not None:
        with open(path, "r+b") as fh:
            size = os.path.getsize(path)
            fh.seek(int(size * cut))
            fh.write(b"\xff" * 64)  # a run of bad bytes inside a record (a disk or copy error)


def dataset(path, batch, workers, index):
    spec = {"x": tf.io.FixedLenFeature([DIM], tf.float32), "y": tf.io.FixedLenFeature([1], tf.int64)}
    ds = tf.data.TFRecordDataset(path).shard(workers, index)
    ds = ds.map(lambda r: tf.io.parse_single_example(r, spec)).map(lambda e: (e["x"], e["y"][0]))
    return ds.batch(batch).repeat()


def main(argv):
    del argv
    cfg = json.loads(os.environ["TF_CONFIG"])
    index, workers = cfg["task"]["index"], len(cfg["cluster"]["worker"])
    os.environ["RANK"] = str(index)  # faults.py reads the launcher's rank variable
    options = tf.distribute.experimental.CommunicationOptions(timeout_seconds=TIMEOUT.value)
    strategy = tf.distribute.MultiWorkerMirroredStrategy(communication_options=options)
    faults.register()
    logging.info("worker %d/%d on %s: %d replica(s) in sync", index, workers, socket.gethostname(),
                 strategy.num_replicas_in_sync)
    with strategy.scope():
        model = tf.keras.Sequential([tf.keras.layers.Input((DIM,)), tf.keras.layers.Dense(128, activation="gelu"),
                                     tf.keras.layers.Dense(CLASSES)])
        opt = tf.keras.optimizers.Adam(3e-3)
        loss_obj = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True,
                                                                 reduction="none")
    if index == 0:
        logging.info("model: MLP params=%d", model.count_params())
    ds = dataset(os.environ["L4L_TFRECORD"], BATCH.value, workers, index)
    it = iter(ds)
    global_batch = BATCH.value * workers

    @tf.function
    def train_step(x, y):
        def step_fn(x, y):
            with tf.GradientTape() as tape:
                loss = tf.nn.compute_average_loss(loss_obj(y, model(x, training=True)), global_batch_size=global_batch)
            grads = tape.gradient(loss, model.trainable_variables)
            opt.apply_gradients(zip(grads, model.trainable_variables, strict=True))
            return loss
        per = strategy.run(step_fn, args=(x, y))
        return strategy.reduce(tf.distribute.ReduceOp.SUM, per, axis=None)

    ckpt = tf.train.Checkpoint(model=model, optimizer=opt)
    save_dir = SAVE_DIR.value if index == 0 else os.path.join(SAVE_DIR.value + "-tmp", f"worker_{index}")
    manager = tf.train.CheckpointManager(ckpt, save_dir, max_to_keep=2)
    t0 = time.time()
    for step in range(1, STEPS.value + 1):
        faults.at_step(step)
        try:
            x, y = next(it)
        except tf.errors.DataLossError:
            if faults.FAULT == "data":
                faults.record("data", step, path=os.environ["L4L_TFRECORD"])
            raise
        loss = float(train_step(x, y))
        dt, t0 = time.time() - t0, time.time()
        logging.info("step %d/%d loss=%.4f (%.2fs)", step, STEPS.value, loss, dt)
        if step % SAVE_EVERY.value == 0:
            if index == 0:
                faults.before_checkpoint(step)
            path = manager.save(checkpoint_number=step)
            if index == 0:
                logging.info("saved checkpoint %s", path)
    logging.info("training finished: %d steps", STEPS.value)


if __name__ == "__main__":
    app.run(main)
