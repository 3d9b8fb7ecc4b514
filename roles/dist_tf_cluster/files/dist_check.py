#!/usr/bin/env python
"""The built-in distributed check: train a small model on every task of a TensorFlow cluster, prove they all
took part and agree. Progress lines, then ONE JSON line: {"tfprov_dist_check": {...}}.

The cluster comes from TF_CONFIG; without one it runs as a single local worker (a baseline, or a first try).
- multi_worker_mirrored (run on the chief and every worker): each worker trains on its shard of scikit-learn's
  digits (shipped with the package: no download) in a custom loop (Keras 3's fit fails under this strategy), then
  one all-gather tells which tasks took part, each one's examples/s and whether every worker ends with the same
  weights. A dead peer makes the survivors fail (at most --collective-timeout) instead of hanging.
- parameter_server (run on the chief only; ps and workers run tf_server.py): the chief schedules the steps on
  the workers; each step also reads the identity file ON the worker that runs it (its TF_CONFIG; the chief names
  the path, so it must be the same on every host), so the chief counts the steps of every worker. Variables must
  live on /job:ps.
Then the same model, batch and steps on this task alone: the single-worker baseline and the scaling efficiency.
The chief saves the final weights to <save dir>/dist_check/weights.npz (a path, gs:// or s3://).
A supervisor process runs the check as its child: a cluster that does not come up within --startup-timeout,
SIGTERM or a crash still end with a report line (see supervise()).

Exit 0 when the check holds, 3 when it ran and found problems, 1 on errors (the JSON line says which).
"""

from __future__ import annotations  # annotations stay strings: the TensorFlow env may run Python 3.9

import argparse
import hashlib
import io
import json
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback

STRATEGIES = ("multi_worker_mirrored", "parameter_server")
REPORT_KEY = "tfprov_dist_check"
CHILD_ENV = "TFPROV_DIST_CHECK_CHILD"
CLUSTER_UP = "the cluster is up"
DEFAULT_IDENTITY_FILE = "/etc/tfprov/tf_config.json"
LAYERS = (("dense1", 64, 32), ("dense2", 32, 10))  # digits: 8x8 pixels in, 10 classes out
COLLECTIVE_ERRORS = ("DeadlineExceededError", "UnavailableError", "CancelledError", "AbortedError")


# ---- pure helpers: no TensorFlow (unit tested) ----

def parse_tf_config(text: str | None) -> dict:
    """TF_CONFIG as a dict ({} when unset); one-line ValueError when it is not a JSON object."""
    if not text or not text.strip():
        return {}
    try:
        config = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"TF_CONFIG is not JSON ({exc})") from None
    if not isinstance(config, dict):
        raise ValueError("TF_CONFIG is not a JSON object")
    return config


def task_name(tf_config: dict) -> str:
    """'worker:1' for this task; a lone worker without TF_CONFIG is 'worker:0'."""
    task = tf_config.get("task") or {}
    return f"{task.get('type', 'worker')}:{int(task.get('index', 0))}"


def training_tasks(tf_config: dict, strategy: str) -> list[str]:
    """The tasks that compute steps: chief and workers under multi_worker_mirrored, workers under parameter_server."""
    cluster = tf_config.get("cluster") or {}
    kinds = ("worker",) if strategy == "parameter_server" else ("chief", "worker")
    tasks = [f"{kind}:{i}" for kind in kinds for i in range(len(cluster.get(kind) or []))]
    return tasks or ["worker:0"]


def is_chief(tf_config: dict) -> bool:
    """The chief task, or worker 0 of a cluster without one (TensorFlow's rule): it saves the weights."""
    cluster = tf_config.get("cluster") or {}
    me = task_name(tf_config)
    return me == "chief:0" or (me == "worker:0" and not cluster.get("chief"))


def identity_task(text: bytes | str) -> str:
    """'worker:1' from a worker's identity file (its TF_CONFIG JSON); ValueError when it names no task."""
    try:
        task = json.loads(text)["task"]
        return f"{task['type']}:{int(task['index'])}"
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"identity file names no task ({type(exc).__name__}: {exc})") from None


def count_steps(identities: list[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for task in identities:
        counts[task] = counts.get(task, 0) + 1
    return counts


def examples_per_s(steps_by_task: dict[str, int], batch: int, seconds: float) -> dict[str, float]:
    return {task: round(steps * batch / seconds, 1) if seconds > 0 else 0.0
            for task, steps in sorted(steps_by_task.items())}


def scaling_efficiency(cluster_rate: float, workers: int, single_rate: float) -> float | None:
    """Cluster throughput over `workers` times one worker alone: 1.0 is perfect scaling."""
    if not workers or not single_rate:
        return None
    return round(cluster_rate / (workers * single_rate), 3)


def weights_digest(arrays: list) -> str:
    """sha256 of the concatenated bytes of the weights, in model order: equal digests, equal weights."""
    digest = hashlib.sha256()
    for array in arrays:
        digest.update(array.tobytes())
    return digest.hexdigest()


def digest_fingerprint(digest: str, chunks: int = 8) -> list[float]:
    """The digest's first chunks*16 bits as floats (exact in float32), so collectives can MAX/MIN-compare them."""
    return [float(int(digest[4 * i:4 * i + 4], 16)) for i in range(chunks)]


def summarize_rows(rows: list[list[float]], expected: list[str]) -> tuple[list[str], dict[str, float], bool]:
    """From the gathered [task slot, examples/s, fingerprint...] rows of every replica: the tasks that took part,
    each task's examples/s (its replicas share its one rate) and whether every replica ends with the same weights."""
    rates = {expected[int(row[0])]: round(row[1], 1) for row in rows}
    identical = all(row[2:] == rows[0][2:] for row in rows)
    return sorted(rates), dict(sorted(rates.items())), identical


def bus_bandwidth(nbytes: int, seconds: float, workers: int) -> tuple[float, float]:
    """(algorithm, bus) bandwidth in GB/s of an all-reduce of nbytes that took `seconds`, as nccl-tests count them:
    the bus figure, algbw * 2(n-1)/n, is what each worker's link carried, comparable with the link's own rate."""
    algbw = nbytes / seconds / 1e9
    return algbw, algbw * 2 * (workers - 1) / workers if workers > 1 else 0.0


def bandwidth_verdict(busbw: float, link_gbit: float | None, min_fraction: float) -> tuple[float | None, str | None]:
    """(percent of the expected figure, the problem line or None). A ring all-reduce can at best move each link's
    rate: the expected bus bandwidth is the link's Gbit/s over 8 (GB/s). Without a link figure there is no verdict."""
    if not link_gbit:
        return None, None
    expected = link_gbit / 8
    percent = round(100 * busbw / expected, 1)
    if busbw >= min_fraction * expected:
        return percent, None
    return percent, (f"all-reduce bus bandwidth {busbw:.3f} GB/s is {percent:g} % of the {expected:.3f} GB/s a "
                     f"{link_gbit:g} Gbit/s link gives, below {100 * min_fraction:g} %: check the nodes' network "
                     f"(a link trained down, a congested or shaped path) or replace the slow node")


def find_problems(loss_first: float | None, loss_last: float | None, expected: list[str],
                  participants: list[str], weights_identical: bool | None,
                  variables_off_ps: list[str] | None = None) -> list[str]:
    """One line per way the check failed."""
    problems = []
    if loss_first is None or loss_last is None or not loss_last < loss_first:
        problems.append(f"loss did not decrease ({loss_first} -> {loss_last}): training does not work")
    missing = [task for task in expected if task not in participants]
    if missing:
        problems.append(f"{', '.join(missing)} took no part in training (expected {', '.join(expected)})")
    strangers = [task for task in participants if task not in expected]
    if strangers:
        problems.append(f"{', '.join(strangers)} took part but is not a training task of TF_CONFIG")
    if weights_identical is False:
        problems.append("the workers ended with different weights: the all-reduce did not keep them in sync")
    if variables_off_ps:
        problems.append(f"variables not placed on /job:ps: {', '.join(variables_off_ps)}")
    return problems


def build_report(strategy: str, task: str, expected: list[str], steps: int, batch: int,
                 loss_first: float | None, loss_last: float | None, participants: list[str],
                 weights_identical: bool | None, digest: str, rates: dict[str, float], single_rate: float | None,
                 seconds: float, problems: list[str], **extra) -> dict:
    cluster_rate = round(sum(rates.values()), 1)
    report = {
        "strategy": strategy, "task": task, "workers": len(expected), "steps": steps, "batch_per_worker": batch,
        "loss_first": loss_first, "loss_last": loss_last,
        "loss_decreased": loss_first is not None and loss_last is not None and loss_last < loss_first,
        "participants": sorted(participants), "all_took_part": set(expected) <= set(participants),
        "weights_identical": weights_identical, "weights_digest": digest,
        "examples_per_s": rates, "cluster_examples_per_s": cluster_rate,
        "single_worker_examples_per_s": single_rate,
        "scaling_efficiency": scaling_efficiency(cluster_rate, len(expected), single_rate or 0.0),
        "seconds": round(seconds, 2), "ok": not problems, "problems": problems,
    }
    report.update(extra)
    return report


def error_report(strategy: str | None, task: str, seconds: float, problem: str,
                 tf_config: dict | None = None) -> dict:
    """The report of a check that could not run to its end (exit 1); the workers TF_CONFIG names, when it is known."""
    report = {"strategy": strategy, "task": task, "seconds": round(seconds, 2), "ok": False, "problems": [problem]}
    if tf_config and strategy:
        report["workers"] = len(training_tasks(tf_config, strategy))
    return report


ERROR_NOISE = ("in user code:", "Graph execution error:", "Detected at node", "File ", "[[", "Additional GRPC",
               ":UNKNOWN:", "Stack trace", "Traceback")


def error_message(text: str) -> str:
    """The line of a TensorFlow error message that says what went wrong: tf.function errors put their traceback
    (File lines, each followed by its code line) and node names around it."""
    found, after_file = [], False
    for line in (raw.strip() for raw in text.splitlines()):
        line = re.sub(r"^\(\d+\) ", "", line)  # "(0) NOT_FOUND: ..." of a multi-error message
        skip = not line or after_file or line.startswith(ERROR_NOISE) or re.match(r"\d+ root error", line)
        after_file = line.startswith("File ")
        if not skip:
            found.append(line)
            if not line.endswith(":"):  # "... unhealthy (stopped sending heartbeats):" continues on the next line
                break
    return " ".join(found) or "no message"


def describe_error(exc: BaseException, collective_timeout: float) -> str:
    """One line: what failed, where (a remote task), and what a failed collective usually means."""
    name, message = type(exc).__name__, error_message(str(exc))
    text = message if message.startswith(name + ":") else f"{name}: {message}"
    remote = re.search(r"from remote target (\S+)", str(exc))
    if remote:
        text += f" (on {remote.group(1)})"
    if name in COLLECTIVE_ERRORS:
        text += (f" (a collective failed: a peer task died, restarted or cannot be reached; collective timeout"
                 f" {collective_timeout:g} s)")
    return text[:600]


def cluster_addresses(tf_config: dict) -> list[tuple[str, str]]:
    """[("worker:1", "10.0.0.3:2222"), ...] of every task in TF_CONFIG's cluster, but this one."""
    me = task_name(tf_config)
    return [(f"{kind}:{i}", address) for kind, addresses in sorted((tf_config.get("cluster") or {}).items())
            for i, address in enumerate(addresses) if f"{kind}:{i}" != me]


def unreachable(tf_config: dict, connect) -> list[str]:
    """The tasks whose address takes no TCP connection; connect(host, port) raises OSError when it fails."""
    down = []
    for task, address in cluster_addresses(tf_config):
        host, dummy, port = address.rpartition(":")
        try:
            connect(host.strip("[]"), int(port))
        except (OSError, ValueError):
            down.append(f"{task} ({address})")
    return down


def startup_problem(seconds: float, down: list[str]) -> str:
    if down:
        return (f"the cluster did not start within {seconds:g} s: no connection to {', '.join(down)} "
                "(is its job or tf_server running, its address right, its port open?)")
    return f"the cluster did not start within {seconds:g} s, though every task takes connections"


def report_line(report: dict) -> str:
    return json.dumps({REPORT_KEY: report}, sort_keys=True)


def weights_path(save_dir: str | None) -> str | None:
    if not save_dir:
        return None
    return save_dir.rstrip("/") + "/dist_check/weights.npz"


def save_weights(path: str, named_arrays: dict, gfile=None) -> None:
    """np.savez to a local path, or through tf.io.gfile (pass it) for gs:// and s3://."""
    import numpy as np

    buffer = io.BytesIO()
    np.savez(buffer, **named_arrays)
    directory = path.rsplit("/", 1)[0]
    if "://" in path:
        gfile.makedirs(directory)
        with gfile.GFile(path, "wb") as handle:
            handle.write(buffer.getvalue())
        return
    os.makedirs(directory, exist_ok=True)
    with open(path, "wb") as handle:
        handle.write(buffer.getvalue())


def say(line: str) -> None:
    print(line, flush=True)


# ---- the supervisor: TensorFlow cannot be trusted to stop ----
# While a task waits for peers that never come up, TensorFlow blocks in C++ holding the interpreter (no Python
# thread or signal handler runs), and under multi_worker_mirrored it catches SIGTERM for its preemption notifier.
# So the check runs in a child process; this parent relays its output, ends it when the cluster is not up within
# --startup-timeout or on SIGTERM/SIGINT, and always leaves a report as the last line. The child is this script
# with TFPROV_DIST_CHECK_CHILD=1 (set it yourself to run without a supervisor).

def connect_once(host: str, port: int) -> None:
    socket.create_connection((host, port), timeout=3).close()


def die_with_parent() -> None:
    """In the child, before exec: the kernel kills it when the supervisor dies, even of SIGKILL (Linux)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def watches_startup(tf_config: dict) -> bool:
    """Only a task that waits for others can hang at startup (an evaluator trains alone)."""
    return bool(cluster_addresses(tf_config)) and not task_name(tf_config).startswith("evaluator:")


def supervise(command: list[str], env: dict, strategy: str, tf_config: dict, startup_timeout: float,
              started: float, out=None, connect=connect_once) -> int:
    """Run the check as a child, relay its stdout; the exit code of the check, or 1 with a report of our own."""
    out = out or sys.stdout
    task = task_name(tf_config)

    def finish(problem: str) -> int:
        out.write(report_line(error_report(strategy, task, time.monotonic() - started, problem, tf_config)) + "\n")
        out.flush()
        return 1

    child = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True, bufsize=1,
                             preexec_fn=die_with_parent)  # safe: no other thread runs yet

    def stop(signum, _frame):
        child.kill()
        child.wait()
        finish(f"stopped by {signal.Signals(signum).name} before the end of the check")
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)  # die of the signal: systemd counts that as a clean stop

    previous = {signum: signal.signal(signum, stop) for signum in (signal.SIGTERM, signal.SIGINT)}
    lines: queue.Queue = queue.Queue()

    def pump():
        for line in child.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    deadline = time.monotonic() + startup_timeout if startup_timeout and watches_startup(tf_config) else None
    last = ""
    try:
        while True:
            try:
                line = lines.get(timeout=None if deadline is None else max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                child.kill()
                child.wait()
                return finish(startup_problem(startup_timeout, unreachable(tf_config, connect)))
            if line is None:
                break
            out.write(line)
            out.flush()
            if line.rstrip().endswith(CLUSTER_UP):
                deadline = None
            last = line.strip() or last
        code = child.wait()
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    if code < 0:
        return finish(f"the check died of {signal.Signals(-code).name}")
    if not last.startswith('{"' + REPORT_KEY):
        return finish(f"the check ended (exit status {code}) without its report; its stderr says why")
    return code


# ---- TensorFlow part ----

def load_digits():
    import numpy as np
    from sklearn.datasets import load_digits as digits

    x, y = digits(return_X_y=True)
    return (x / 16.0).astype(np.float32), y.astype(np.int32)


def make_params(tf, seed: int, aggregation=None):
    """Glorot-uniform kernels and zero biases from a fixed seed: every task starts from the same weights."""
    import numpy as np

    rng = np.random.default_rng(seed)
    params = []
    for name, fan_in, fan_out in LAYERS:
        limit = (6.0 / (fan_in + fan_out)) ** 0.5
        kernel = rng.uniform(-limit, limit, (fan_in, fan_out)).astype(np.float32)
        for suffix, value in (("kernel", kernel), ("bias", np.zeros(fan_out, np.float32))):
            kwargs = {"aggregation": aggregation} if aggregation is not None else {}
            params.append(tf.Variable(value, name=f"{name}_{suffix}", **kwargs))
    return params


def model_loss(tf, params, x, y):
    w1, b1, w2, b2 = params
    logits = tf.matmul(tf.nn.relu(tf.matmul(x, w1) + b1), w2) + b2
    return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))


def make_dataset(tf, x, y, batch: int, seed: int, shards: int = 1, shard: int = 0):
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).shard(shards, shard)
    return dataset.shuffle(len(x), seed=seed).repeat().batch(batch, drop_remainder=True).prefetch(2)


def replica_step_fn(tf, params, learning_rate: float):
    """One SGD step on this replica's batch; gradients and loss averaged over all replicas in ONE all-reduce."""
    def replica_step(batch):
        x, y = batch
        with tf.GradientTape() as tape:
            loss = model_loss(tf, params, x, y)
        grads = tape.gradient(loss, params)
        *grads, loss = tf.distribute.get_replica_context().all_reduce(
            tf.distribute.ReduceOp.MEAN, [*grads, loss])
        for i, grad in enumerate(grads):
            params[i].assign_sub(learning_rate * grad)
        return loss
    return replica_step


def train_locally(tf, args, x, y) -> tuple[float, float, float, list]:
    """The baseline: same model, batch and steps, no strategy. (first loss, last loss, examples/s, weights)."""
    params = make_params(tf, args.seed)
    iterator = iter(make_dataset(tf, x, y, args.batch, args.seed))

    @tf.function
    def step():
        xb, yb = next(iterator)
        with tf.GradientTape() as tape:
            loss = model_loss(tf, params, xb, yb)
        for i, grad in enumerate(tape.gradient(loss, params)):
            params[i].assign_sub(args.learning_rate * grad)
        return loss

    first = float(step())  # traces: kept out of the timing
    start = time.perf_counter()
    for _dummy in range(args.steps - 1):
        last = step()
    last = float(last) if args.steps > 1 else first
    rate = (args.steps - 1) * args.batch / (time.perf_counter() - start) if args.steps > 1 else 0.0
    return first, last, round(rate, 1), [p.numpy() for p in params]


def baseline(tf, args, x, y) -> float:
    first, last, rate, dummy = train_locally(tf, args, x, y)
    say(f"baseline: {args.steps} steps on this task alone, loss {first:.3f} -> {last:.3f}, {rate:.0f} examples/s")
    return rate


def run_multi_worker(tf, args, tf_config: dict, x, y, connected) -> dict:
    me, expected = task_name(tf_config), training_tasks(tf_config, args.strategy)
    options = tf.distribute.experimental.CommunicationOptions(timeout_seconds=args.collective_timeout)
    strategy = tf.distribute.MultiWorkerMirroredStrategy(communication_options=options)
    say(f"{me}: multi_worker_mirrored with {len(expected)} worker(s) ({', '.join(expected)}), "
        f"{strategy.num_replicas_in_sync} replica(s) in sync, collective timeout {args.collective_timeout:g} s")
    with strategy.scope():
        # Each replica applies the same all-reduced update to its own copy: ONLY_FIRST_REPLICA needs no second
        # collective, so identical weights at the end prove the all-reduce kept the workers in sync.
        params = make_params(tf, args.seed, tf.VariableAggregation.ONLY_FIRST_REPLICA)

    def dataset_fn(context):
        batch = context.get_per_replica_batch_size(args.batch * context.num_input_pipelines)
        return make_dataset(tf, x, y, batch, args.seed, context.num_input_pipelines, context.input_pipeline_id)

    iterator = iter(strategy.distribute_datasets_from_function(dataset_fn))
    replica_step = replica_step_fn(tf, params, args.learning_rate)

    @tf.function
    def train_step():
        return strategy.experimental_local_results(strategy.run(replica_step, args=(next(iterator),)))[0]

    loss_first = float(train_step())  # traces and connects: kept out of the timing
    connected()  # the cluster is up: the startup watchdog stands down
    say(f"step 1/{args.steps} loss {loss_first:.4f}")
    loss = loss_first
    start = time.perf_counter()
    for step in range(2, args.steps + 1):
        loss = train_step()
        if step % args.progress_every == 0 or step == args.steps:
            say(f"step {step}/{args.steps} loss {float(loss):.4f}")
    loss_last = float(loss)
    seconds = time.perf_counter() - start
    my_rate = (args.steps - 1) * args.batch / seconds if args.steps > 1 else 0.0

    # Every replica's row [its task's slot, its examples/s, its weights' fingerprint], gathered everywhere.
    arrays = [p.numpy() for p in params]
    digest = weights_digest(arrays)
    row = tf.constant([[expected.index(me), my_rate, *digest_fingerprint(digest)]], tf.float64)

    @tf.function
    def gather(row):
        # tf.identity gives the value a device on each replica: collectives refuse a value without one.
        rows = strategy.run(lambda r: tf.distribute.get_replica_context().all_gather(tf.identity(r), 0), args=(row,))
        return strategy.experimental_local_results(rows)[0]

    participants, rates, identical = summarize_rows(gather(row).numpy().tolist(), expected)
    timed = args.allreduce_mb > 0 and len(expected) > 1  # one worker has no link to measure
    allreduce = measure_allreduce(tf, strategy, args, len(expected)) if timed else None
    say(f"{me}: {len(participants)} of {len(expected)} worker(s) took part, weights "
        f"{'identical' if identical else 'DIFFER'} (sha256 {digest[:16]})")
    return {"expected": expected, "loss_first": round(loss_first, 4), "loss_last": round(loss_last, 4),
            "participants": participants, "weights_identical": identical, "digest": digest, "rates": rates,
            "arrays": arrays, "variables_off_ps": None, "allreduce": allreduce}


def measure_allreduce(tf, strategy, args, workers: int) -> dict:
    """Time a sum all-reduce of --allreduce-mb MB (float32) across the workers: one warm-up, then --allreduce-reps
    timed, the median kept. On GPU nodes TensorFlow's collectives go over NCCL; on CPU nodes over its gRPC ring."""
    count = int(args.allreduce_mb * 2**20) // 4
    tensor = tf.ones([count], tf.float32)

    @tf.function
    def reduce(value):
        out = strategy.run(lambda v: tf.distribute.get_replica_context().all_reduce("sum", tf.identity(v)),
                           args=(value,))
        return strategy.experimental_local_results(out)[0][0]

    reduce(tensor).numpy()
    times = []
    for _dummy in range(args.allreduce_reps):
        start = time.perf_counter()
        reduce(tensor).numpy()  # .numpy() waits for the collective to finish
        times.append(time.perf_counter() - start)
    seconds = sorted(times)[len(times) // 2]
    algbw, busbw = bus_bandwidth(count * 4, seconds, workers)
    percent, problem = bandwidth_verdict(busbw, args.link_gbit, args.min_fraction)
    say(f"all-reduce of {args.allreduce_mb:g} MB over {workers} worker(s): {seconds * 1000:.1f} ms, bus bandwidth "
        f"{busbw:.3f} GB/s" + (f" ({percent:g} % of the {args.link_gbit:g} Gbit/s link)" if percent is not None
                               else " (no link figure to compare with)"))
    return {"megabytes": args.allreduce_mb, "reps": args.allreduce_reps, "seconds": round(seconds, 4),
            "algbw_gbps": round(algbw, 4), "busbw_gbps": round(busbw, 4), "link_gbit": args.link_gbit,
            "expected_busbw_gbps": round(args.link_gbit / 8, 4) if args.link_gbit else None,
            "percent_of_expected": percent, "min_fraction": args.min_fraction, "problem": problem}


def run_parameter_server(tf, args, tf_config: dict, x, y, connected) -> dict:
    me, expected = task_name(tf_config), training_tasks(tf_config, args.strategy)
    if not me.startswith("chief:"):
        raise RuntimeError(f"under parameter_server the check runs on the chief only; this task is {me} "
                           "(ps and worker tasks run tf_server.py)")
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    strategy = tf.distribute.ParameterServerStrategy(resolver)
    coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
    total = args.steps * len(expected)  # --steps per worker, as under multi_worker_mirrored
    say(f"{me}: parameter_server, {len(expected)} worker(s) and {len(resolver.cluster_spec().job_tasks('ps'))} "
        f"ps; {total} steps scheduled ({args.steps} per worker on average), identity file {args.identity_file}")
    with strategy.scope():
        params = make_params(tf, args.seed)
    off_ps = [f"{p.name} on {p.device}" for p in params if "/job:ps" not in p.device]
    loss_first = float(model_loss(tf, params, x, y))  # the whole data set, evaluated on the chief

    def per_worker_dataset():
        return strategy.distribute_datasets_from_function(
            lambda context: make_dataset(tf, x, y, args.batch, args.seed))

    iterator = iter(coordinator.create_per_worker_dataset(per_worker_dataset))
    replica_step = replica_step_fn(tf, params, args.learning_rate)
    identity_file = args.identity_file

    @tf.function
    def worker_step(iterator):
        losses = strategy.run(replica_step, args=(next(iterator),))
        # Runs on the worker that executes this step: its own TF_CONFIG tells the chief who it is.
        return strategy.reduce(tf.distribute.ReduceOp.MEAN, losses, axis=None), tf.io.read_file(identity_file)

    results = [coordinator.schedule(worker_step, args=(iterator,))]
    coordinator.join()  # the first step traces and connects: kept out of the timing
    connected()  # the cluster is up: the startup watchdog stands down
    start = time.perf_counter()
    chunk = args.progress_every * len(expected)
    while len(results) < total:
        more = min(chunk - len(results) % chunk, total - len(results))  # progress at multiples of chunk
        results += [coordinator.schedule(worker_step, args=(iterator,)) for _dummy in range(more)]
        coordinator.join()
        say(f"step {len(results)}/{total} loss {float(results[-1].fetch()[0]):.4f}")
    seconds = time.perf_counter() - start
    identities = [identity_task(result.fetch()[1]) for result in results]
    steps_by_task = count_steps(identities[1:])
    loss_last = float(model_loss(tf, params, x, y))
    say(f"{me}: steps per worker {json.dumps(count_steps(identities), sort_keys=True)}, loss on the whole data set "
        f"{loss_first:.4f} -> {loss_last:.4f}, variables on {sorted({p.device for p in params})}")
    arrays = [p.numpy() for p in params]
    return {"expected": expected, "loss_first": round(loss_first, 4), "loss_last": round(loss_last, 4),
            "participants": sorted(set(identities)), "weights_identical": None, "digest": weights_digest(arrays),
            "rates": examples_per_s(steps_by_task, args.batch, seconds), "arrays": arrays,
            "variables_off_ps": off_ps, "steps_by_task": count_steps(identities)}


def run_evaluator(tf, args, tf_config: dict, x, y) -> dict:
    """An evaluator takes no part in training: it only checks that TensorFlow trains here, alone."""
    first, last, dummy, arrays = train_locally(tf, args, x, y)
    return {"expected": [], "loss_first": round(first, 4), "loss_last": round(last, 4), "participants": [],
            "weights_identical": None, "digest": weights_digest(arrays), "rates": {}, "arrays": arrays,
            "variables_off_ps": None, "note": "evaluator: not part of training, local run only"}


def save_if_chief(tf, args, tf_config: dict, arrays: list) -> tuple[str | None, list[str]]:
    if not is_chief(tf_config):
        return None, []
    path = weights_path(args.save_dir)
    if not path:
        say("no --save-dir and no TFPROV_SHARED_DIR: the final weights are not saved")
        return None, []
    names = [f"{name}_{suffix}" for name, *dummy in LAYERS for suffix in ("kernel", "bias")]
    try:
        save_weights(path, {name: arrays[i] for i, name in enumerate(names)}, tf.io.gfile)
    except Exception as exc:  # noqa: BLE001 - any storage error is a problem of the check, in one line
        return None, [f"cannot save the weights to {path}: {describe_error(exc, 0)}"]
    say(f"saved the final weights to {path}")
    return path, []


def run(args, tf_config: dict, started: float) -> dict:
    import tensorflow as tf

    tf.random.set_seed(args.seed)
    x, y = load_digits()

    def connected():  # the supervisor's startup deadline ends with this line
        say(f"{task_name(tf_config)}: {CLUSTER_UP}")
    kind = task_name(tf_config).split(":", 1)[0]
    if kind == "evaluator":
        result = run_evaluator(tf, args, tf_config, x, y)
    elif args.strategy == "parameter_server":
        result = run_parameter_server(tf, args, tf_config, x, y, connected)
    else:
        result = run_multi_worker(tf, args, tf_config, x, y, connected)
    saved_to, save_problems = save_if_chief(tf, args, tf_config, result.pop("arrays"))
    single = baseline(tf, args, x, y)
    problems = find_problems(result["loss_first"], result["loss_last"], result["expected"],
                             result["participants"], result["weights_identical"], result.pop("variables_off_ps"))
    if (result.get("allreduce") or {}).get("problem"):
        problems.append(result["allreduce"]["problem"])
    return build_report(args.strategy, task_name(tf_config), result.pop("expected"), args.steps, args.batch,
                        result.pop("loss_first"), result.pop("loss_last"), result.pop("participants"),
                        result.pop("weights_identical"), result.pop("digest"), result.pop("rates"), single,
                        time.monotonic() - started, problems + save_problems, saved_to=saved_to, **result)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--strategy", choices=STRATEGIES,
                        default=os.environ.get("TFPROV_DIST_STRATEGY") or "multi_worker_mirrored")
    parser.add_argument("--steps", type=int, default=60, help="training steps per worker")
    parser.add_argument("--batch", type=int, default=64, help="examples per step per worker")
    parser.add_argument("--learning-rate", type=float, default=0.5)
    parser.add_argument("--seed", type=int, default=20_260)
    parser.add_argument("--collective-timeout", type=float, default=60.0,
                        help="seconds a collective may wait for its peers before the task fails")
    parser.add_argument("--startup-timeout", type=float, default=300.0,
                        help="seconds to wait for every task of the cluster to come up (0: for ever)")
    parser.add_argument("--progress-every", type=int, default=10, help="steps between progress lines")
    parser.add_argument("--allreduce-mb", type=float, default=8.0,
                        help="multi_worker_mirrored: MB of the timed all-reduce (0: none)")
    parser.add_argument("--allreduce-reps", type=int, default=5, help="timed all-reduces; the median is kept")
    parser.add_argument("--link-gbit", type=float, default=None,
                        help="each node's link to the others in Gbit/s (the instance type's network figure): the "
                             "bus bandwidth is compared with it over 8")
    parser.add_argument("--min-fraction", type=float, default=0.7,
                        help="the check fails below this fraction of the link's figure")
    parser.add_argument("--identity-file", default=os.environ.get("TFPROV_TF_CONFIG_FILE") or DEFAULT_IDENTITY_FILE,
                        help="a worker's own TF_CONFIG file, same path on every host (parameter_server)")
    parser.add_argument("--save-dir", default=os.environ.get("TFPROV_SHARED_DIR") or None,
                        help="the chief writes <dir>/dist_check/weights.npz (a path, gs:// or s3://)")
    args = parser.parse_args(argv)
    if args.steps < 2 or args.batch < 1 or args.progress_every < 1:
        parser.error("--steps must be at least 2, --batch and --progress-every at least 1")
    if args.allreduce_mb < 0 or args.allreduce_reps < 1 or not 0 < args.min_fraction <= 1 or (args.link_gbit or 0) < 0:
        parser.error("--allreduce-mb must be 0 or more, --allreduce-reps at least 1, --min-fraction in (0, 1], "
                     "--link-gbit above 0")
    return args


def main(argv: list[str] | None = None) -> int:
    started = time.monotonic()
    args = parse_args(argv)
    if os.environ.get(CHILD_ENV) != "1":
        try:
            tf_config = parse_tf_config(os.environ.get("TF_CONFIG"))
        except ValueError:
            tf_config = {}  # the child reports it
        command = [sys.executable, os.path.abspath(__file__), *(sys.argv[1:] if argv is None else argv)]
        return supervise(command, {**os.environ, CHILD_ENV: "1"}, args.strategy, tf_config, args.startup_timeout,
                         started)
    task, code, tf_config = "worker:0", 1, {}
    try:
        tf_config = parse_tf_config(os.environ.get("TF_CONFIG"))
        task = task_name(tf_config)
        if args.strategy == "parameter_server" and not tf_config.get("cluster"):
            raise ValueError("parameter_server needs TF_CONFIG with a cluster (chief, ps and workers); "
                             "without one run --strategy multi_worker_mirrored")
        report = run(args, tf_config, started)
        code = 0 if report["ok"] else 3
    except Exception as exc:  # noqa: BLE001 - every failure ends as one JSON line and exit 1
        traceback.print_exc()  # the whole story on stderr (the journal), one line in the report
        report = error_report(args.strategy, task, time.monotonic() - started,
                              describe_error(exc, args.collective_timeout), tf_config)
    say(report_line(report))
    return code


if __name__ == "__main__":
    exit_code = main()
    # Leave without TensorFlow's teardown: after a failed collective its threads wait on dead peers, and with a
    # collective timeout each collective's timer thread holds a normal exit for seconds (measured: 2 to 9 s).
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(exit_code)
