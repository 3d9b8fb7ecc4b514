#!/usr/bin/env python
"""Serve this host's ps or worker task of a TensorFlow cluster (parameter_server strategy) until stopped.

The task and the cluster come from TF_CONFIG. The chief's ClusterCoordinator places variables on the ps tasks
and runs steps on the worker tasks through these servers. Exit 0 on SIGTERM/SIGINT (systemctl stop), 2 when
TF_CONFIG is missing or names a task this script does not serve.
"""

import json
import os
import signal
import sys

SERVED = ("ps", "worker")


def task_of(tf_config_text):
    """(type, index) of TF_CONFIG's task; ValueError with one line saying what to change."""
    if not tf_config_text:
        raise ValueError("TF_CONFIG is not set: give this unit the cluster's environment file")
    try:
        task = json.loads(tf_config_text)["task"]
        kind, index = task["type"], int(task["index"])
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"TF_CONFIG has no valid task ({type(exc).__name__}: {exc})") from None
    if kind not in SERVED:
        raise ValueError(f"this task is {kind}:{index}; tf_server.py serves only ps and worker tasks "
                         "(the chief runs the job)")
    return kind, index


def stop(signum, _frame):
    print(f"tf_server: stopping on {signal.Signals(signum).name}", flush=True)
    os._exit(0)  # Server.join() never returns and the server has no clean stop: leave at once


def main():
    try:
        kind, index = task_of(os.environ.get("TF_CONFIG"))
    except ValueError as exc:
        print(f"tf_server: {exc}", file=sys.stderr, flush=True)
        return 2
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    import tensorflow as tf

    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    cluster = resolver.cluster_spec()
    _server = tf.distribute.Server(  # kept referenced: a collected server stops serving
        cluster, job_name=kind, task_index=index, protocol="grpc", start=True)
    address = cluster.task_address(kind, index)
    print(f"tf_server: {kind}:{index} serving at {address} (cluster: {json.dumps(cluster.as_dict(), sort_keys=True)})",
          flush=True)
    # Not server.join(): it blocks in C++ where Python never runs the SIGTERM handler. The server serves from its
    # own threads; this one only waits for a signal.
    while True:
        signal.pause()


if __name__ == "__main__":
    sys.exit(main())
