"""A rolling update on six local nodes from the baked image (TensorFlow 2.21.0): 2.20.0 rolled out with a canary and
batches of 2, over SSH through the jump, offline (tensorflow-cpu 2.20.0 comes from the wheelhouse,
tests/support/wheelhouse.py, served to the nodes by the private cloud's gateway, their only way out). One node of
the second batch fails its health gate (a .pth in its environment makes `import tensorflow` fail, as a broken site
customisation would): the update stops there, the
report names that node and why, the nodes not reached still have 2.21.0. Once the node is fixed,
`--retry-failed` completes the rest. Then the canary's link is cut (tfprov local fault): the update still ends with
its report, naming the canary, every other host "not reached" with its version, and `--retry-failed` takes all six."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from local_cloud import fault, label

ROOT = Path(__file__).resolve().parents[2]
TFPROV = str(Path(sys.executable).parent / "tfprov")
WHEELHOUSE = Path(os.environ.get("TFPROV_WHEELHOUSE", "/var/cache/tfprov/wheelhouse"))
ENV = "/opt/tfprov/envs/tf"
BROKEN_PTH = f"{ENV}/lib/python3.11/site-packages/zz_tfprov_test_broken.pth"
# Hosts in the inventory's order (the local cloud's inventory lists the newest node first): canary, then pairs.
CANARY, SECOND_BATCH, NOT_REACHED = ["tfprov-itest-6"], ["tfprov-itest-5", "tfprov-itest-4"], [
    "tfprov-itest-3", "tfprov-itest-2", "tfprov-itest-1"]
VICTIM = "tfprov-itest-4"
# Over SSH through the jump, as cloud nodes are reached: a cut link is then what it is on a cloud (docker exec, the
# default inventory's connection, would not see it).
SSH_INVENTORY = "inventories/local_ssh.docker_containers.yml"

# Four fleet runs on three nodes (about 7 minutes on a slow 2-core machine): make integration-slow, not every CI run.
pytestmark = [pytest.mark.integration, pytest.mark.slow_integration]


@pytest.fixture(scope="module")
def wheelhouse_url(fleet_cloud):
    """The wheelhouse the private cloud's gateway serves (the nodes have no other way out), for pip's --find-links."""
    # A missing wheel is a broken setup, not a reason to skip the rollout.
    assert any(WHEELHOUSE.glob("tensorflow_cpu-2.20.0-cp311-*.whl")), \
        f"no tensorflow-cpu 2.20.0 in {WHEELHOUSE}: make wheelhouse"
    return label(CANARY[0], "tfprov.wheelhouse")


def tf_version(node: str) -> str:
    """The installed tensorflow-cpu, from its metadata (no import: seconds, and it works on the broken node)."""
    proc = subprocess.run(["docker", "exec", node, f"{ENV}/bin/python", "-c",
                           "import importlib.metadata as m; print(m.version('tensorflow-cpu'))"],
                          capture_output=True, text=True, check=True)
    return proc.stdout.strip()


def update(runs: Path, url: str, *extra: str) -> tuple[subprocess.CompletedProcess, dict]:
    env = {**os.environ, "TFPROV_RUNS_DIR": str(runs), "COLUMNS": "200"}
    proc = subprocess.run([TFPROV, "fleet", "update", "-i", SSH_INVENTORY, "--canary", "1", "--batch", "2",
                           "-e", "tensorflow_gpu_version=2.20.0", "-e", f"tfprov_pip_find_links={url}",
                           "-e", "tfprov_pip_no_index=true", *extra], cwd=ROOT, env=env, capture_output=True, text=True)
    newest = max(runs.glob("*-fleet*/fleet/update.json"), key=lambda p: p.parent.parent.name)
    return proc, json.loads(newest.read_text())


def test_rolling_update_stops_at_a_failed_health_gate_and_retry_completes_it(fleet_cloud, wheelhouse_url):
    subprocess.run(["docker", "exec", VICTIM, "sh", "-c",
                    f"echo \"import sys; sys.modules['tensorflow'] = None\" > {BROKEN_PTH}"], check=True)

    proc, record = update(fleet_cloud, wheelhouse_url)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 4, out
    hosts = record["hosts"]
    assert record["failed"] == [VICTIM], out
    assert "tensorflow" in hosts[VICTIM]["reason"] and hosts[VICTIM]["batch"] == 2, hosts[VICTIM]
    assert [h for h in CANARY + SECOND_BATCH if hosts[h]["result"] == "updated"] == CANARY + SECOND_BATCH[:1]
    assert sorted(record["not_reached"]) == sorted(NOT_REACHED)
    assert record["stopped"].startswith("the update stopped after batch 2")
    assert VICTIM in out and "not reached" in out and "TensorFlow 2.21.0 -> 2.20.0" in out
    # Not reached: untouched, on the node itself.
    assert {node: tf_version(node) for node in NOT_REACHED} == dict.fromkeys(NOT_REACHED, "2.21.0")
    assert tf_version(CANARY[0]) == "2.20.0"

    subprocess.run(["docker", "exec", VICTIM, "rm", BROKEN_PTH], check=True)
    # The rest in one batch (the options given last win): the canary and the batching were shown above.
    proc, record = update(fleet_cloud, wheelhouse_url, "--retry-failed", "--canary", "0", "--batch", "100%")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "--retry-failed: 4 host(s) from run" in out, out
    assert sorted(record["hosts"]) == sorted([VICTIM, *NOT_REACHED])
    assert not record["failed"] and not record["not_reached"], record
    nodes = CANARY + SECOND_BATCH + NOT_REACHED
    assert {node: tf_version(node) for node in nodes} == dict.fromkeys(nodes, "2.20.0")


def test_a_cut_canary_still_ends_with_the_report_and_retry_takes_every_host(fleet_cloud, wheelhouse_url):
    fault(CANARY[0], "cut")
    try:
        proc, record = update(fleet_cloud, wheelhouse_url)
    finally:
        fault(CANARY[0], "restore")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 4, out
    assert record["failed"] == CANARY and "unreachable" in record["hosts"][CANARY[0]]["reason"], out
    assert record["stopped"].startswith("the update stopped after batch 1"), record
    others = SECOND_BATCH + NOT_REACHED
    assert sorted(record["not_reached"]) == sorted(others)
    assert {h: record["hosts"][h]["before"].get("tensorflow") for h in others} == dict.fromkeys(others, "2.20.0")

    proc, record = update(fleet_cloud, wheelhouse_url, "--retry-failed")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "--retry-failed: 6 host(s) from run" in out, out
    assert {h: row["result"] for h, row in record["hosts"].items()} == dict.fromkeys(CANARY + others, "unchanged")
