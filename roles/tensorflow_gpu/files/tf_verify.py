"""Import TensorFlow in its environment and say what it is built with and which GPUs it sees (JSON)."""

import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402 - the log level must be set first

info = tf.sysconfig.get_build_info()
print(json.dumps({
    "version": tf.__version__,
    "built_with_cuda": tf.test.is_built_with_cuda(),
    "cuda_build": info.get("cuda_version"),
    "cudnn_build": info.get("cudnn_version"),
    "gpus": [gpu.name for gpu in tf.config.list_physical_devices("GPU")],
}))
