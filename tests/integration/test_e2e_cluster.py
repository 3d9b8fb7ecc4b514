"""`tfprov run cluster` on the local cloud, as README shows it: four nodes (chief, worker, worker, ps) started from
the image baked from a converged node (`make baked-image`), the distributed check under the default strategy, a
user's own MultiWorkerMirrored Keras script through --job, and a member unreachable at the start.

Faults during a run (a task killed mid-check, then a re-run that recovers) are in test_cluster_faults.py, run by
`make cluster-faults` (too long for every CI run).
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from local_cloud import fault, label, log_since, log_size

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
TFPROV = str(Path(sys.executable).parent / "tfprov")
CHIEF, WORKER_1, WORKER_2, PS = (f"tfprov-itest-{i}" for i in range(1, 5))
SSH_INVENTORY = "inventories/local_ssh.docker_containers.yml"

# A user's script: it knows nothing of tfprov, reads only TF_CONFIG (through the strategy), trains with Keras's
# fit (tf.keras: tf_keras under TF_USE_LEGACY_KERAS=1, which the role sets up) and prints its weights' digest.
USER_JOB = '''
import hashlib, json, os
import numpy as np
import tensorflow as tf

strategy = tf.distribute.MultiWorkerMirroredStrategy()
rng = np.random.default_rng(7)
x = rng.normal(size=(512, 8)).astype("float32")
y = (x @ rng.normal(size=(8, 1))).astype("float32")
with strategy.scope():
    model = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(16, activation="relu"),
                                 tf.keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
options = tf.data.Options()
options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
data = tf.data.Dataset.from_tensor_slices((x, y)).batch(64).repeat().with_options(options)
history = model.fit(data, epochs=3, steps_per_epoch=8, verbose=2)
digest = hashlib.sha256(b"".join(w.tobytes() for w in model.get_weights())).hexdigest()
task = json.loads(os.environ["TF_CONFIG"])["task"]
print(f"USER-JOB {task['type']}:{task['index']} loss {history.history['loss'][-1]:.4f} weights {digest}")
'''


def tfprov(*args, runs_dir, timeout=1200):
    env = {**os.environ, "TFPROV_RUNS_DIR": str(runs_dir)}
    return subprocess.run([TFPROV, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


def latest_report(runs_dir: Path) -> dict:
    return json.loads(sorted(runs_dir.glob("*/report.json"))[-1].read_text())


def jobs(report: dict) -> dict[str, dict]:
    return {host: data["data"]["dist_job"] for host, data in report["hosts"].items()
            if "dist_job" in (data.get("data") or {})}


def address(node: str) -> str:
    return label(node, "tfprov.address")


def node_sh(node: str, script: str) -> subprocess.CompletedProcess:
    return subprocess.run(["docker", "exec", node, "sh", "-c", script], capture_output=True, text=True)


def test_run_cluster_passes_the_distributed_check(cluster_cloud):
    # The baked image has Keras 2 (tf_keras); one worker without it installs it in the cluster's play, from PyPI
    # through the gateway's pip cache, as a fresh node does (its only way out).
    assert node_sh(WORKER_2, "/opt/tfprov/envs/tf/bin/python -m pip uninstall -q -y tf_keras").returncode == 0
    cache_log = ROOT / ".tfprov/local/clouds/itest/pip-cache.log"
    cache_before = log_size(cache_log)
    proc = tfprov("run", "cluster", runs_dir=cluster_cloud)
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr
    pip_cache_log = log_since(cache_log, cache_before)
    assert "GET /index/tf-keras/tf_keras-" in pip_cache_log, pip_cache_log[-2000:]
    found = jobs(latest_report(cluster_cloud))
    # Multi-worker mirrored: the chief and both workers run the check; the parameter server takes no part.
    assert sorted(found) == [CHIEF, WORKER_1, WORKER_2], found
    reports = [job["report"] for job in found.values()]
    assert all(job["state"] == "succeeded" and job["exit_status"] == 0 for job in found.values()), found
    assert all(r["ok"] and r["loss_decreased"] and r["all_took_part"] and r["weights_identical"] for r in reports)
    assert {r["workers"] for r in reports} == {3}
    assert len({r["weights_digest"] for r in reports}) == 1
    assert "distributed check" in proc.stdout
    # Each node's TF_CONFIG, from the inventory: as on a cloud, each member's own private address, all on port
    # 2222; the ps left out under this strategy.
    config = json.loads(node_sh(WORKER_2, "cat /etc/tfprov/tf_config.json").stdout)
    chief, worker_1, worker_2 = (f"{address(node)}:2222" for node in (CHIEF, WORKER_1, WORKER_2))
    assert config == {"cluster": {"chief": [chief], "worker": [worker_1, worker_2]},
                      "task": {"type": "worker", "index": 1}}
    assert len({chief, worker_1, worker_2}) == 3 and not chief.startswith("127.")
    mode = node_sh(WORKER_2, "stat -c '%a %U:%G' /etc/tfprov/tf_config.json").stdout.split()
    assert mode == ["640", "root:tfprov-tf"]
    # The parameter-server strategy's services are not left running (none under this strategy).
    assert node_sh(PS, "systemctl is-active tfprov-tf-server").stdout.strip() in ("inactive", "unknown")
    # The run's page: `tfprov report latest` names it; every node, its steps and versions, the check's results.
    named = tfprov("report", "latest", runs_dir=cluster_cloud)
    assert named.returncode == 0 and named.stdout.strip().endswith("report.html"), named.stderr
    page = Path(named.stdout.strip()).read_text()
    for text in (CHIEF, WORKER_1, WORKER_2, PS, "TensorFlow", "2.21.0", "Distributed check", "scaling efficiency",
                 "examples/s per worker", "role dist_tf_cluster", "tensorflow_gpu"):
        assert text in page, text
    assert (cluster_cloud / "index.html").is_file()

    # A second run changing nothing is molecule/cluster's idempotence step (same playbook, fewer minutes in CI).


def test_a_failed_task_is_at_the_top_of_the_runs_page(cluster_cloud, tmp_path):
    script = tmp_path / "fails_on_one_worker.py"
    script.write_text("import json, os, sys\ntask = json.loads(os.environ['TF_CONFIG'])['task']\n"
                      "if task == {'type': 'worker', 'index': 1}:\n"
                      "    print('out of memory on purpose', flush=True)\n    sys.exit(3)\n"
                      "print('done', task)\n")
    proc = tfprov("run", "cluster", "--job", str(script), runs_dir=cluster_cloud)
    assert proc.returncode == 4, proc.stdout[-5000:] + proc.stderr
    report = latest_report(cluster_cloud)
    [failure] = report["hosts"][WORKER_2]["failed_tasks"]
    page = (Path(report["run_dir"]) / "report.html").read_text()
    top = page.index('id="failures"')
    assert top < page.index('id="run"') < page.index('id="hosts"')
    assert page.index(WORKER_2, top) < page.index('id="run"') and "out of memory on purpose" in page[top:]
    assert "exit 3" in page and failure["message"].split(":")[0] in page[top:]


def test_a_member_unreachable_at_the_start_is_refused_before_any_change(cluster_cloud):
    # Over SSH, like a cloud VM whose sshd is gone: the node stays in the inventory but cannot be reached. The
    # resolve play stops the whole run there (any_errors_fatal): every TF_CONFIG names every member.
    assert node_sh(WORKER_1, "systemctl stop ssh").returncode == 0
    try:
        proc = tfprov("run", "cluster", "-i", SSH_INVENTORY, runs_dir=cluster_cloud)
        report = latest_report(cluster_cloud)
    finally:
        node_sh(WORKER_1, "systemctl start ssh")
    assert proc.returncode == 5, proc.stdout[-3000:]  # the exit code of an unreachable host
    assert report["hosts"][WORKER_1]["status"] == "unreachable", report["hosts"][WORKER_1]
    assert all(host["changed"] == 0 for host in report["hosts"].values()), report["hosts"]
    # Through the jump (private network) ssh sees the proxy's stream close, not a refused connect.
    assert [line for line in proc.stdout.splitlines() if WORKER_1 in line and re.search(
        r"Connection refused|Connection closed by remote host", line)], proc.stdout[-3000:]


def test_a_member_left_out_by_limit_is_refused_with_one_line(cluster_cloud):
    proc = tfprov("run", "cluster", "--limit", f"all:!{WORKER_2}", runs_dir=cluster_cloud)
    assert proc.returncode == 2, proc.stdout[-3000:]  # refused before any change
    report = latest_report(cluster_cloud)
    assert all(host["changed"] == 0 for host in report["hosts"].values()), report["hosts"]
    refusal = [line for line in proc.stdout.splitlines() if f"{WORKER_2} (worker:1) is not in this run"
               in line]
    assert refusal and "remove it from tfprov_worker" in refusal[0], proc.stdout[-3000:]


def test_a_worker_stopped_between_runs_is_refused_until_started_then_runs_a_users_own_script(cluster_cloud, tmp_path):
    # Stopped as a cloud VM is (idle-stop, by hand): the inventory still lists it, with its state. A cluster built
    # without it would be smaller and every later worker's index would shift.
    fault(WORKER_1, "stop")
    try:
        proc = tfprov("run", "cluster", runs_dir=cluster_cloud)
        report = latest_report(cluster_cloud)
    finally:
        fault(WORKER_1, "start")
    assert proc.returncode == 2, proc.stdout[-3000:]  # refused before any change
    assert all(host["changed"] == 0 for host in report["hosts"].values()), report["hosts"]
    refusal = [line for line in proc.stdout.splitlines() if f"worker:0 ({WORKER_1}) is stopped" in line]
    assert refusal and "tfprov up starts stopped nodes" in refusal[0], proc.stdout[-3000:]
    # Started again, it is a member: a user's own script (--job) runs on every task, worker:0 on it. One run proves
    # both (a cluster run is minutes of CI).
    script = tmp_path / "my_training.py"
    script.write_text(USER_JOB)
    proc = tfprov("run", "cluster", "--job", str(script), runs_dir=cluster_cloud)
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr
    found = jobs(latest_report(cluster_cloud))
    assert sorted(found) == [CHIEF, WORKER_1, WORKER_2], found
    lines = {host: next(line for line in reversed(job["log_tail"]) if line.startswith("USER-JOB")) for host, job in
             found.items()}
    tasks = {host: line.split()[1] for host, line in lines.items()}
    assert tasks == {CHIEF: "chief:0", WORKER_1: "worker:0", WORKER_2: "worker:1"}, lines
    assert len({line.split("weights ")[1] for line in lines.values()}) == 1, lines  # identical weights everywhere
    assert all(job["report"] is None for job in found.values())  # not the built-in check
