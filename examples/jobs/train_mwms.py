#!/usr/bin/env python3
"""A MultiWorkerMirroredStrategy training job that survives a lost node: the script to copy for `tfprov job run`.

Every task (the chief and each worker) runs this same script with its TF_CONFIG (tfprov sets it). Keras's
BackupAndRestore keeps a checkpoint of the model and the optimizer in the shared directory (TFPROV_SHARED_DIR: a
directory every node mounts, gs:// or s3://) at the end of every epoch. When tfprov replaces a lost node and starts
the job again, every task resumes from the epoch after the last checkpoint, not from the start.

Deterministic on purpose (seeds, TensorFlow's op determinism, the same data order every epoch), so that a run that
lost a node ends with the same weights as one that did not: each task writes the digest of its final weights to
weights-<task>.sha256 in the shared directory, and its losses to history-<task>.json. The chief exports the model
to model/.

    tfprov job run --spec examples/jobs/local.yml examples/jobs/train_mwms.py --job-arg=--epochs=8

The data is scikit-learn's 8x8 digits (inside the package: no download at run time).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import sys
import time

SEED = 20261126


def task_name() -> str:
    task = json.loads(os.environ.get("TF_CONFIG", "{}")).get("task", {})
    return f"{task.get('type', 'chief')}-{task.get('index', 0)}"


def seed_everything(seed: int):
    os.environ["PYTHONHASHSEED"] = str(seed)
    random.seed(seed)
    import numpy as np
    import tensorflow as tf

    np.random.seed(seed)
    tf.keras.utils.set_random_seed(seed)
    tf.config.experimental.enable_op_determinism()
    return tf


def dataset(tf, global_batch: int):
    """The same examples in the same order every epoch (no reshuffling between epochs, no endless repeat: every
    epoch reads the data set from its start), so that an epoch run after a restore sees exactly the batches it would
    have seen without the loss."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    x = (digits.data / 16.0).astype("float32")
    y = digits.target.astype("int64")
    data = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(len(x), seed=SEED, reshuffle_each_iteration=False)
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    options.deterministic = True
    return data.batch(global_batch, drop_remainder=True).with_options(options)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--batch-per-worker", type=int, default=32)
    parser.add_argument("--pause", type=float, default=0.0, help="seconds slept after each epoch")
    parser.add_argument("--collective-timeout", type=float, default=120.0,
                        help="a collective that waits longer for a peer fails (a dead peer never hangs the job)")
    parser.add_argument("--raise-at-epoch", type=int, default=0, metavar="N",
                        help="stand in for a bug in your own code: the chief raises ValueError at the end of epoch N "
                             "(tfprov does not run such a job again: running it again does not fix the script)")
    parser.add_argument("--shared-dir", default=os.environ.get("TFPROV_SHARED_DIR", ""))
    args = parser.parse_args(argv)
    if not args.shared_dir:
        print("no --shared-dir and no TFPROV_SHARED_DIR: nowhere to keep checkpoints", file=sys.stderr)
        return 2
    shared = args.shared_dir.rstrip("/")
    name = task_name()
    tf = seed_everything(SEED)
    options = tf.distribute.experimental.CommunicationOptions(timeout_seconds=args.collective_timeout)
    strategy = tf.distribute.MultiWorkerMirroredStrategy(communication_options=options)
    print(f"{name}: {strategy.num_replicas_in_sync} replicas in sync; checkpoints in {shared}/backup", flush=True)
    with strategy.scope():
        model = tf.keras.Sequential([tf.keras.Input(shape=(64,)), tf.keras.layers.Dense(32, activation="relu"),
                                     tf.keras.layers.Dense(10)])
        model.compile(optimizer=tf.keras.optimizers.Adam(0.01),
                      loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    callbacks = [tf.keras.callbacks.BackupAndRestore(backup_dir=f"{shared}/backup"),
                 tf.keras.callbacks.LambdaCallback(on_epoch_end=lambda epoch, logs: print(
                     f"{name}: epoch {epoch + 1}/{args.epochs} loss {logs['loss']:.6f}", flush=True))]
    if args.raise_at_epoch and name.startswith("chief"):
        def bug(epoch, logs):
            if epoch + 1 == args.raise_at_epoch:
                raise ValueError(f"a bug in the job's own code at epoch {epoch + 1} (--raise-at-epoch)")

        callbacks.append(tf.keras.callbacks.LambdaCallback(on_epoch_end=bug))
    if args.pause:  # a demo or a test has time to stop a node mid-training
        callbacks.append(tf.keras.callbacks.LambdaCallback(on_epoch_end=lambda epoch, logs: time.sleep(args.pause)))
    history = model.fit(dataset(tf, args.batch_per_worker * strategy.num_replicas_in_sync), epochs=args.epochs,
                        callbacks=callbacks, verbose=0)
    digest = hashlib.sha256(b"".join(w.tobytes() for w in model.get_weights())).hexdigest()
    with tf.io.gfile.GFile(f"{shared}/weights-{name}.sha256", "w") as out:
        out.write(digest + "\n")
    with tf.io.gfile.GFile(f"{shared}/history-{name}.json", "w") as out:
        out.write(json.dumps({"epochs": history.epoch, "loss": history.history["loss"]}) + "\n")
    # Every task takes part in saving (the collectives need it); only the chief's copy is the model.
    target = f"{shared}/model" if name.startswith("chief") else f"{shared}/.model-{name}"
    model.save(target)
    print(f"{name}: done; weights sha256 {digest}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
