#!/usr/bin/env python
"""GPU check and matmul bench, run on a node inside its TensorFlow environment. Prints JSON.

Lists the devices TensorFlow sees, then times N x N matmuls (warm-up, median of repeats) on the CPU and on
each GPU: float32 everywhere, bfloat16 and float16 on GPUs. Reports GFLOP/s, the percent of the GPU's peak
when its model is known (--peaks, from the compatibility matrix), and the same sizes in NumPy on the CPU, the
yardstick for TensorFlow's CPU number. With --require-gpu, exits 3 when TensorFlow sees no GPU, saying why.

With --quick (the check that ends `tfprov run node`): one small float32 matmul per device, compared with
NumPy's, in a few seconds; a device that fails or computes wrong is a problem (exit 3). No sweep, no NumPy timing.
Either way the JSON carries the digest of the environment it ran in (every installed distribution and its version,
as the tensorflow_gpu role's requirements_met.py prints it): the role reuses a passing check while that is unchanged.
With --record FILE --record-key KEY, a check without problems is also written there for that reuse (its key, the
digest, when it ran and the result; mode 0644, replaced whole), in the same run: no second trip to the node.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import statistics
import sys
import time
from importlib import metadata

FLOAT_PEAK_KEYS = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}
# --quick: the largest relative difference from NumPy a device may show (TF32 on Ampere and later: about 1e-3).
QUICK_TOLERANCE = 1e-2


def gflops(n: int, seconds: float) -> float:
    """An N x N by N x N matmul is 2 N^3 floating point operations."""
    return 2.0 * n**3 / seconds / 1e9


def percent_of_peak(measured_gflops: float, peak_tflops: float | None) -> float | None:
    if not peak_tflops:
        return None
    return round(100.0 * measured_gflops / (peak_tflops * 1000.0), 1)


def peak_for(peaks: dict, device_name: str, dtype: str, tf32: bool) -> tuple[str | None, float | None]:
    """(peak name, TFLOP/s) of a GPU for a dtype; float32 matmuls run as TF32 where TensorFlow enables it."""
    row = peaks.get(device_name) or {}
    key = FLOAT_PEAK_KEYS[dtype]
    if dtype == "float32" and tf32 and row.get("tf32"):
        key = "tf32"
    return (key, row.get(key)) if row.get(key) else (None, None)


def time_median(run, repeats: int, warmup: int) -> float:
    for _dummy in range(warmup):
        run()
    samples = []
    for _dummy in range(repeats):
        start = time.perf_counter()
        run()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def numpy_gflops(n: int, repeats: int, warmup: int) -> float:
    import numpy as np

    rng = np.random.default_rng(0)
    a, b = rng.random((n, n), dtype=np.float32), rng.random((n, n), dtype=np.float32)
    return gflops(n, time_median(lambda: a @ b, repeats, warmup))


def tf_matmul_seconds(tf, device: str, dtype: str, n: int, repeats: int, warmup: int) -> float:
    with tf.device(device):
        a = tf.cast(tf.random.uniform((n, n), dtype=tf.float32), dtype)
        b = tf.cast(tf.random.uniform((n, n), dtype=tf.float32), dtype)

        # Operands are arguments, not captured constants, so that graph optimisation cannot fold the matmul away.
        @tf.function
        def step(x, y):
            # A scalar forces the matmul to finish (GPUs run asynchronously) at negligible cost (N^2 vs N^3).
            return tf.reduce_sum(tf.cast(tf.linalg.matmul(x, y)[0, :1], tf.float32))

        return time_median(lambda: step(a, b).numpy(), repeats, warmup)


def diagnose_no_gpu(tf) -> str:
    """Why TensorFlow sees no GPU, in the words a user can act on."""
    if not tf.test.is_built_with_cuda():
        return "this TensorFlow is a CPU build (install tensorflow[and-cuda] on GPU nodes)"
    if not os.path.exists("/dev/nvidiactl"):
        return "no NVIDIA driver is loaded (/dev/nvidiactl missing): install the driver or reboot"
    return "TensorFlow is built with CUDA and the driver is loaded, but it found no GPU: check CUDA/cuDNN libraries"


def quick_matmul(tf, device: str, n: int) -> dict:
    """One N x N float32 matmul on a device, checked against NumPy's: the device computes, and computes right."""
    import numpy as np

    rng = np.random.default_rng(0)
    a, b = rng.random((n, n), dtype=np.float32), rng.random((n, n), dtype=np.float32)
    expected = a @ b
    with tf.device(device):
        x, y = tf.constant(a), tf.constant(b)
        tf.linalg.matmul(x, y).numpy()  # the first call pays for kernel and library loading
        start = time.perf_counter()
        product = tf.linalg.matmul(x, y)
        got = product.numpy()
        seconds = time.perf_counter() - start
    placed = product.device.rsplit("device:", 1)[-1]  # /job:localhost/replica:0/task:0/device:GPU:0 -> GPU:0
    # Relative to the largest entry, so one tolerance fits every N.
    error = float(np.max(np.abs(got - expected)) / max(float(np.max(np.abs(expected))), 1e-30))
    return {"seconds": seconds, "relative_error": error, "ran_on": placed}


def quick_rows(tf, devices: list[dict], n: int) -> tuple[list[dict], list[str]]:
    rows, problems = [], []
    for dev in devices:
        row = {"device": dev["device"], "name": dev["name"], "dtype": "float32", "n": n,
               "peak": None, "peak_tflops": None, "percent_of_peak": None}
        try:
            measured = quick_matmul(tf, dev["device"], n)
        except Exception as error:  # noqa: BLE001 - any failure of the device is the finding
            row.update(ok=False, error=f"{type(error).__name__}: {error}".splitlines()[0])
            problems.append(f"a {n}x{n} matmul on {dev['device']} ({dev['name']}) failed: {row['error']}")
        else:
            row.update(seconds=round(measured["seconds"], 6), gflops=round(gflops(n, measured["seconds"]), 1),
                       relative_error=measured["relative_error"], ran_on=measured["ran_on"])
            wrong_device = measured["ran_on"].upper() != dev["device"].strip("/").upper()
            if wrong_device:
                problems.append(f"a {n}x{n} matmul meant for {dev['device']} ({dev['name']}) ran on "
                                f"{measured['ran_on']}")
            if measured["relative_error"] > QUICK_TOLERANCE:
                problems.append(f"a {n}x{n} matmul on {dev['device']} ({dev['name']}) differs from NumPy's by "
                                f"{measured['relative_error']:.2g} (relative, more than {QUICK_TOLERANCE})")
            row["ok"] = not wrong_device and measured["relative_error"] <= QUICK_TOLERANCE
        rows.append(row)
    return rows, problems


def environment_digest() -> str:
    """sha256 of every installed distribution's name==version, sorted (the same digest as requirements_met.py's)."""
    held = sorted({f"{dist.metadata['Name']}=={dist.version}" for dist in metadata.distributions()
                   if dist.metadata["Name"]})
    return hashlib.sha256("\n".join(held).encode()).hexdigest()


def run(args) -> dict:
    digest = environment_digest()  # the environment as installed, read as requirements_met.py reads it
    import tensorflow as tf

    # One op at a time: a single matmul gains nothing from inter-op threads, and on a small CPU they compete with
    # the intra-op threads that do the work (NumPy's BLAS likewise uses one pool of one thread per core).
    tf.config.threading.set_inter_op_parallelism_threads(args.inter_op_threads)
    gpus = tf.config.list_physical_devices("GPU")
    tf32 = tf.config.experimental.tensor_float_32_execution_enabled()
    build = tf.sysconfig.get_build_info()
    peaks = json.loads(args.peaks) if args.peaks else {}
    devices = [{"device": "/CPU:0", "kind": "CPU", "name": platform.processor() or platform.machine()}]
    for index, gpu in enumerate(gpus):
        details = tf.config.experimental.get_device_details(gpu)
        devices.append({"device": f"/GPU:{index}", "kind": "GPU", "name": details.get("device_name", gpu.name),
                        "compute_capability": ".".join(map(str, details.get("compute_capability", ())))})
    report = {
        "host": args.host or platform.node(),
        "mode": "quick" if args.quick else "sweep",
        "environment_digest": digest,
        "settings": {"sizes": [args.quick_size] if args.quick else args.sizes, "repeats": args.repeats,
                     "warmup": args.warmup, "inter_op_threads": args.inter_op_threads, "cpus": os.cpu_count()},
        "tensorflow": {"version": tf.__version__, "built_with_cuda": tf.test.is_built_with_cuda(),
                       "cuda_build": build.get("cuda_version"), "cudnn_build": build.get("cudnn_version"),
                       "gpus_visible": len(gpus), "tf32": tf32},
        "devices": devices,
        "results": [],
        "numpy": [],
        "problems": [],
    }
    if args.require_gpu and not gpus:
        report["problems"].append("a GPU is required but TensorFlow sees none: " + diagnose_no_gpu(tf))
        return report
    if args.quick:
        report["results"], report["problems"] = quick_rows(tf, devices, args.quick_size)
        return report
    raw = {}  # (device, n) -> unrounded GFLOP/s, for the CPU/NumPy ratio
    for n in args.sizes:
        raw[("numpy", n)] = numpy_gflops(n, args.repeats, args.warmup)
        report["numpy"].append({"n": n, "gflops": round(raw[("numpy", n)], 1)})
        for dev in devices:
            dtypes = ["float32"] if dev["kind"] == "CPU" else ["float32", "bfloat16", "float16"]
            for dtype in dtypes:
                seconds = tf_matmul_seconds(tf, dev["device"], dtype, n, args.repeats, args.warmup)
                measured = gflops(n, seconds)
                raw[(dev["device"], n, dtype)] = measured
                peak_key, peak = peak_for(peaks, dev["name"], dtype, tf32) if dev["kind"] == "GPU" else (None, None)
                report["results"].append({
                    "device": dev["device"], "name": dev["name"], "dtype": dtype, "n": n,
                    "seconds": round(seconds, 6), "gflops": round(measured, 1),
                    "peak": peak_key, "peak_tflops": peak, "percent_of_peak": percent_of_peak(measured, peak),
                })
    ratios = {n: round(raw[("/CPU:0", n, "float32")] / raw[("numpy", n)], 2)
              for n in args.sizes if raw.get(("numpy", n))}
    if ratios:
        report["cpu_vs_numpy_by_size"] = ratios
        report["cpu_vs_numpy"] = ratios[max(args.sizes)]
    return report


def write_record(path: str, key: str, report: dict, now: float | None = None) -> None:
    """The passing check, as the tensorflow_gpu role reads it back (vars/main.yml: key, digest, checked_epoch,
    result): written beside and renamed over the old record, so a reader never sees half of one."""
    now = time.time() if now is None else now
    record = {"key": key, "digest": report["environment_digest"], "checked_epoch": int(now),
              "checked_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)), "result": report}
    partial = f"{path}.partial"
    with open(partial, "w") as handle:
        handle.write(json.dumps(record, indent=4, sort_keys=True) + "\n")
    os.chmod(partial, 0o644)
    os.replace(partial, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1024, 2048, 4096])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--peaks", help='JSON: {"<GPU name>": {"fp32": TFLOP/s, "tf32": .., "bf16": .., "fp16": ..}}')
    parser.add_argument("--inter-op-threads", type=int, default=1, help="TensorFlow inter-op threads (0 = its default)")
    parser.add_argument("--require-gpu", action="store_true")
    parser.add_argument("--quick", action="store_true", help="one small matmul per device, checked; no sweep")
    parser.add_argument("--quick-size", type=int, default=512, help="N of the --quick matmul")
    parser.add_argument("--host")
    parser.add_argument("--out", help="write the JSON here too")
    parser.add_argument("--record", help="write a check without problems here, for the role to reuse")
    parser.add_argument("--record-key", help="what the check was run for (the role's key); --record needs it")
    args = parser.parse_args(argv)
    if bool(args.record) != bool(args.record_key):
        parser.error("--record and --record-key go together")
    report = run(args)
    # One line on stdout, so that a playbook finds it after any log lines a terminal mixes into stdout.
    if args.out:
        with open(args.out, "w") as handle:
            handle.write(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report), flush=True)
    if args.record and not report["problems"]:
        try:
            write_record(args.record, args.record_key, report)
        except OSError as exc:
            print(f"gpu_check: cannot record the check in {args.record}: {exc}", file=sys.stderr)
            return 4
    return 3 if report["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
