#!/usr/bin/env python3
"""Train a small Keras classifier on scikit-learn's 8x8 digits and export it as a SavedModel for TF Serving.

Offline on purpose: the data ships inside scikit-learn (no download at run time). The export has one
signature, `serving_default`: input `pixels`, float32 [None, 64] (the 8x8 image, row by row, scaled to 0..1),
output `probabilities`, float32 [None, 10] (one per digit 0-9).

    python train.py                       # writes export/digits/1 and samples.json beside this file
    python train.py --version 2 --epochs 60
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
from pathlib import Path

HERE = Path(__file__).resolve().parent
SEED = 20261121


def seed_everything(seed: int) -> None:
    os.environ["PYTHONHASHSEED"] = str(seed)
    os.environ.setdefault("TF_DETERMINISTIC_OPS", "1")
    random.seed(seed)
    import numpy as np
    import tensorflow as tf

    np.random.seed(seed)
    tf.keras.utils.set_random_seed(seed)
    tf.config.experimental.enable_op_determinism()


def load_data(seed: int):
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    x = (digits.data / 16.0).astype("float32")  # pixel intensities are 0..16
    y = digits.target.astype("int64")
    return train_test_split(x, y, test_size=0.2, random_state=seed, stratify=y)


def build_model():
    import tensorflow as tf

    inputs = tf.keras.Input(shape=(64,), name="pixels", dtype="float32")
    hidden = tf.keras.layers.Dense(32, activation="relu")(inputs)
    outputs = tf.keras.layers.Dense(10, activation="softmax", name="probabilities")(hidden)
    model = tf.keras.Model(inputs, outputs, name="digits")
    model.compile(optimizer=tf.keras.optimizers.Adam(0.01), loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    return model


def export(model, target: Path) -> None:
    """A plain tf.Module with one named signature: what TF Serving expects, and no Keras needed to load it."""
    import tensorflow as tf

    class Serving(tf.Module):
        def __init__(self, keras_model):
            super().__init__()
            self.model = keras_model

        @tf.function(input_signature=[tf.TensorSpec([None, 64], tf.float32, name="pixels")])
        def serve(self, pixels):
            return {"probabilities": self.model(pixels, training=False)}

    module = Serving(model)
    tmp = target.with_name(target.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tf.saved_model.save(module, str(tmp), signatures={"serving_default": module.serve})
    shutil.rmtree(target, ignore_errors=True)
    tmp.rename(target)  # a server polling the base path never sees a half-written version


def dump_samples(samples: dict) -> str:
    """JSON with one line per sample: readable diffs, and a file small enough to read."""
    head = {k: v for k, v in samples.items() if k != "samples"}
    lines = [json.dumps(s, separators=(", ", ": ")) for s in samples["samples"]]
    body = json.dumps(head, indent=1)[:-2]
    return body + ',\n "samples": [\n  ' + ",\n  ".join(lines) + "\n ]\n}\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--version", type=int, default=1, help="numeric version directory under export/digits")
    parser.add_argument("--export-dir", type=Path, default=HERE / "export" / "digits")
    parser.add_argument("--samples", type=Path, default=HERE / "samples.json")
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args()

    seed_everything(args.seed)
    import numpy as np
    import tensorflow as tf

    x_train, x_test, y_train, y_test = load_data(args.seed)
    model = build_model()
    model.fit(x_train, y_train, epochs=args.epochs, batch_size=64, shuffle=True, verbose=0)
    dummy, accuracy = model.evaluate(x_test, y_test, verbose=0)
    print(f"test accuracy {accuracy:.4f} on {len(y_test)} held-out images ({len(y_train)} trained)")

    target = args.export_dir / str(args.version)
    export(model, target)
    print(f"exported {target}")

    # Check the export itself (not the Keras model) and record known answers for the serving tests.
    loaded = tf.saved_model.load(str(target)).signatures["serving_default"]
    probabilities = loaded(pixels=tf.constant(x_test))["probabilities"].numpy()
    exported_accuracy = float((probabilities.argmax(axis=1) == y_test).mean())
    # One held-out image per digit that the export classifies right, so "the right digit" is unambiguous.
    correct = probabilities.argmax(axis=1) == y_test
    picks = [int(np.flatnonzero((y_test == digit) & correct)[0]) for digit in range(10)]
    samples = {
        "model": "digits",
        "signature": "serving_default",
        "input": "pixels",
        "output": "probabilities",
        "tensorflow": tf.__version__,
        "test_accuracy": round(exported_accuracy, 4),
        "test_size": int(len(y_test)),
        "samples": [{"label": int(y_test[i]), "predicted": int(probabilities[i].argmax()),
                     "confidence": round(float(probabilities[i].max()), 4),
                     "pixels": [round(float(v), 4) for v in x_test[i]]} for i in picks],
    }
    args.samples.write_text(dump_samples(samples))
    print(f"wrote {args.samples} (export accuracy {exported_accuracy:.4f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
