#!/usr/bin/env python
"""All-reduce bus bandwidth across the GPUs of one node, run inside its TensorFlow environment. Prints ONE JSON line.

TensorFlow's MirroredStrategy over every GPU with NCCL (tf.distribute.NcclAllReduce, as training on the node uses
it): a sum all-reduce of --mb MB per GPU, one warm-up, then --reps timed, the median kept. Reported as nccl-tests
counts it: algbw = bytes / time, busbw = algbw * 2(n-1)/n, comparable with the interconnect's own figure. Given
--expected-gbps (the matrix's figure for the GPU model and its NVSwitch board), the run fails below --min-fraction
of it (exit 3) with one line saying so.

A node with fewer than two GPUs has nothing to measure: the line says so (exit 0). --cpu-devices N splits the CPU
into N logical devices instead (no NCCL: TensorFlow reduces them in host memory), to run the same code without a
GPU.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

REPORT_KEY = "tfprov_allreduce_local"


def bus_bandwidth(nbytes: int, seconds: float, devices: int) -> tuple[float, float]:
    """(algbw, busbw) in GB/s, as nccl-tests counts them."""
    algbw = nbytes / seconds / 1e9
    return algbw, algbw * 2 * (devices - 1) / devices


def verdict(busbw: float, expected: float | None, min_fraction: float) -> tuple[float | None, str | None]:
    """(percent of the expected figure, the problem line or None)."""
    if not expected:
        return None, None
    percent = round(100 * busbw / expected, 1)
    if busbw >= min_fraction * expected:
        return percent, None
    return percent, (f"all-reduce across the node's GPUs: bus bandwidth {busbw:.1f} GB/s is {percent:g} % of the "
                     f"{expected:g} GB/s expected, below {100 * min_fraction:g} %: look for an NVLink link down or a "
                     f"degraded PCIe link (tfprov run gate), else take the node out of service")


def measure(tf, devices: list[str], megabytes: float, reps: int, nccl: bool) -> float:
    """Median seconds of one all-reduce of `megabytes` per device."""
    ops = tf.distribute.NcclAllReduce() if nccl else tf.distribute.ReductionToOneDevice()
    strategy = tf.distribute.MirroredStrategy(devices=devices, cross_device_ops=ops)
    count = int(megabytes * 2**20) // 4
    with strategy.scope():
        # A variable on every device: a constant would be folded away, and the "all-reduce" timed as nothing.
        value = tf.Variable(tf.ones([count], tf.float32))

    @tf.function
    def reduce():
        def step():
            return tf.distribute.get_replica_context().all_reduce("sum", tf.identity(value))
        return strategy.experimental_local_results(strategy.run(step))[0][0]

    reduce().numpy()
    times = []
    for _dummy in range(reps):
        start = time.perf_counter()
        reduce().numpy()
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2]


def run(args) -> tuple[dict, int]:
    import tensorflow as tf

    if args.cpu_devices:
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * args.cpu_devices)
        devices, kind = [d.name for d in tf.config.list_logical_devices("CPU")], "cpu"
    else:
        devices, kind = [d.name for d in tf.config.list_logical_devices("GPU")], "gpu"
    report = {"devices": len(devices), "kind": kind, "megabytes": args.mb, "reps": args.reps,
              "expected_busbw_gbps": args.expected_gbps, "min_fraction": args.min_fraction}
    if len(devices) < 2:
        return dict(report, skipped=f"{len(devices)} {kind.upper()} device(s): an all-reduce needs two or more",
                    ok=True, problem=None), 0
    seconds = measure(tf, devices, args.mb, args.reps, nccl=kind == "gpu")
    algbw, busbw = bus_bandwidth(int(args.mb * 2**20) // 4 * 4, seconds, len(devices))
    percent, problem = verdict(busbw, args.expected_gbps, args.min_fraction)
    report.update(seconds=round(seconds, 5), algbw_gbps=round(algbw, 3), busbw_gbps=round(busbw, 3),
                  percent_of_expected=percent, problem=problem, ok=problem is None)
    return report, 0 if problem is None else 3


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=float, default=256.0,
                        help="MB all-reduced per device (nccl-tests' size range tops out in the hundreds)")
    parser.add_argument("--reps", type=int, default=10, help="timed all-reduces; the median is kept")
    parser.add_argument("--expected-gbps", type=float, default=None, help="the interconnect's bus bandwidth, GB/s")
    parser.add_argument("--min-fraction", type=float, default=0.7, help="fail below this fraction of it")
    parser.add_argument("--cpu-devices", type=int, default=0, help="run on N logical CPU devices instead (a test)")
    args = parser.parse_args(argv)
    if args.mb <= 0 or args.reps < 1 or not 0 < args.min_fraction <= 1 or args.cpu_devices < 0 or \
            (args.expected_gbps is not None and args.expected_gbps <= 0):
        parser.error("--mb and --expected-gbps must be above 0, --reps and --cpu-devices whole numbers (--reps at "
                     "least 1), --min-fraction in (0, 1]")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        report, code = run(args)
    except Exception as exc:  # noqa: BLE001 - one JSON line whatever happened
        report, code = {"ok": False, "problem": f"all-reduce across the node's devices failed: "
                                                f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:300]}"}, 1
    print(json.dumps({REPORT_KEY: report}), flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
