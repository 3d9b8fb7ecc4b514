"""The fleet commands on six local nodes (chief, four workers, ps) baked with TensorFlow 2.21.0, one cloud for the
module: first what reads the fleet, then what changes it.

`tfprov fleet drift`, as a user would use it: the desired version changed to 2.20.0 for two nodes in the inventory's
host_vars (an inventory directory: the local cloud's inventory, its group_vars and two host_vars files). Drift must
name exactly those two, 2.21.0 -> 2.20.0, and change nothing: no file on any node is written (but Ansible's own
temporary directory and the journal), and a second drift run finds the same two hosts with the same changes (had the
first installed anything, the second would find less).

`tfprov fleet update`, rolling: 2.20.0 rolled out with a canary and batches of 2, over SSH through the jump, offline
(tensorflow-cpu 2.20.0 comes from the wheelhouse, tests/support/wheelhouse.py, served to the nodes by the private
cloud's gateway, their only way out). One node of the second batch fails its health gate (a .pth in its environment
makes `import tensorflow` fail, as a broken site customisation would): the update stops there, the report names that
node and why, the nodes not reached still have 2.21.0. Once the node is fixed, `--retry-failed` completes the rest.
Then the canary's link is cut (tfprov local fault): the update still ends with its report, naming the canary, every
other host "not reached" with its version, and `--retry-failed` takes all six.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from local_cloud import fault, label

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
TFPROV = str(Path(sys.executable).parent / "tfprov")
BAKED_VERSION, NEW_VERSION = "2.21.0", "2.20.0"
MARKER = "/tmp/tfprov-drift-marker"  # nothing on a node may be newer than this after the drift runs
# What a read-only Ansible run still touches: its temporary directory (and the directories holding it), the journal.
TRANSIENT = ("/", "/root/.ansible/tmp")


def node_names(cluster: str = "itest") -> list[str]:
    out = subprocess.run(["docker", "ps", "--filter", f"label=tfprov.cluster={cluster}", "--format", "{{.Names}}"],
                         capture_output=True, text=True, check=True).stdout.split()
    return sorted(out, key=lambda name: int(name.rsplit("-", 1)[-1]))


def node_sh(node: str, script: str) -> str:
    proc = subprocess.run(["docker", "exec", node, "sh", "-c", script], capture_output=True, text=True)
    assert proc.returncode == 0, f"{node}: {script}: {proc.stderr}"
    return proc.stdout


def inventory_dir(tmp: Path, base_inventory: Path, desired: dict[str, str]) -> Path:
    """A copy of the inventory (and its group_vars) with host_vars asking `desired[host]` TensorFlow there."""
    target = tmp / "inventory"
    (target / "host_vars").mkdir(parents=True)
    shutil.copy(base_inventory, target / base_inventory.name)
    shutil.copytree(base_inventory.parent / "group_vars", target / "group_vars")
    for host, version in desired.items():
        (target / "host_vars" / f"{host}.yml").write_text(f'---\ntfprov_tf_version: "{version}"\n')
    return target


def written_since_marker(node: str) -> list[str]:
    """Files and directories of the node's own file system written since the marker. Mount points (the host's
    wheelhouse, /tmp) show their other file system's time: they are left out."""
    found = node_sh(node, f"find / -xdev -newer {MARKER} 2>/dev/null || true").split()
    mounts = {line.split()[1] for line in node_sh(node, "cat /proc/self/mounts").splitlines()}
    return [path for path in found
            if path not in TRANSIENT and path not in mounts and not path.startswith("/var/log/")]


def installed_tensorflow(node: str) -> list[str]:
    return node_sh(node, "ls /opt/tfprov/envs/tf/lib/python3*/site-packages | grep -i '^tensorflow.*dist-info'").split()


def drift(inventory: Path, runs: Path, command: list[str]) -> tuple[subprocess.CompletedProcess, dict]:
    env = {**os.environ, "TFPROV_RUNS_DIR": str(runs)}
    proc = subprocess.run([*command, "-i", str(inventory)], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=900)
    found = sorted(runs.glob("*-drift*/fleet/drift.json"))
    return proc, json.loads(found[-1].read_text()) if found else {}


def check_drift_lists_exactly_the_changed_hosts(nodes: list[str], base_inventory: Path, tmp: Path,
                                                command: list[str]) -> None:
    changed = [nodes[1], nodes[4]] if len(nodes) >= 5 else nodes[-1:]
    inventory = inventory_dir(tmp, base_inventory, {host: NEW_VERSION for host in changed})
    runs = tmp / "runs"
    for node in nodes:
        node_sh(node, f"touch {MARKER} && sleep 1")  # mtimes are compared to the second
    records = []
    for _ in range(2):  # the second run proves the first installed nothing
        proc, record = drift(inventory, runs, command)
        assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr
        assert f"{len(changed)} of {len(nodes)} hosts drift" in proc.stdout, proc.stdout[-3000:]
        assert sorted(record["drifting"]) == sorted(changed), record["summary"]
        for host, row in record["hosts"].items():
            tf = row["components"]["tensorflow"]
            if host in changed:
                assert (row["state"], tf["installed"], tf["desired"]) == ("drift", BAKED_VERSION, NEW_VERSION), row
                assert row["would_change"].get("tensorflow_gpu"), row  # the stack's check run would install it
            else:
                assert (row["state"], tf["installed"], tf["desired"]) == ("in sync", BAKED_VERSION, BAKED_VERSION)
                assert row["changed_tasks"] == 0, row
        assert f"{BAKED_VERSION} -> {NEW_VERSION}" in proc.stdout
        records.append({host: (row["state"], row["changed_tasks"]) for host, row in record["hosts"].items()})
    assert records[0] == records[1]
    report = json.loads(sorted(runs.glob("*-drift*/report.json"))[-1].read_text())
    assert report["check"] is True and report["plan"] == "drift"
    for node in nodes:
        assert installed_tensorflow(node) == [f"tensorflow_cpu-{BAKED_VERSION}.dist-info"], node
        assert written_since_marker(node) == [], node


def test_drift_lists_exactly_the_two_changed_hosts_and_changes_nothing(fleet_cloud, tmp_path):
    nodes = node_names()
    assert len(nodes) == 6, nodes
    check_drift_lists_exactly_the_changed_hosts(nodes, ROOT / "inventories" / "local.docker_containers.yml", tmp_path,
                                                [TFPROV, "fleet", "drift"])


def test_drift_reads_a_standing_converge_from_its_record_and_agrees_with_a_full_look(fleet_cloud, tmp_path):
    nodes = node_names()
    changed = [nodes[1], nodes[4]]
    in_sync = [node for node in nodes if node not in changed]
    inventory = inventory_dir(tmp_path, ROOT / "inventories" / "local.docker_containers.yml",
                              {host: NEW_VERSION for host in changed})
    runs = tmp_path / "runs"
    # The nodes in sync converge (nothing to install): each keeps its record; the two others never ran.
    converged = subprocess.run([TFPROV, "run", "node", "-i", str(inventory), "-l", ",".join(in_sync)], cwd=ROOT,
                               env={**os.environ, "TFPROV_RUNS_DIR": str(runs)}, capture_output=True, text=True,
                               timeout=900)
    assert converged.returncode == 0, converged.stdout[-3000:] + converged.stderr[-3000:]
    found = {}
    for variant, extra in (("record", []), ("full", ["-e", "tfprov_converge_reuse_hours=0"])):
        proc, record = drift(inventory, runs, [TFPROV, "fleet", "drift", *extra])
        assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr
        assert sorted(record["drifting"]) == sorted(changed), record["summary"]
        found[variant] = {host: (row["state"], row["components"]) for host, row in record["hosts"].items()}
        from_record = sorted(host for host, row in record["hosts"].items() if row.get("converge_recorded_at"))
        assert from_record == (sorted(in_sync) if variant == "record" else []), record["hosts"]
        assert ("4 host(s) read from their converge record" in proc.stdout) == (variant == "record"), proc.stdout
    assert found["record"] == found["full"]


# The rolling update: after the drift tests above, which find the nodes as baked and leave them so.
WHEELHOUSE = Path(os.environ.get("TFPROV_WHEELHOUSE", "/var/cache/tfprov/wheelhouse"))
ENV = "/opt/tfprov/envs/tf"
BROKEN_PTH = f"{ENV}/lib/python3.11/site-packages/zz_tfprov_test_broken.pth"
# Hosts in the inventory's order (the local cloud's inventory lists its nodes in their numbers' order): canary, then
# pairs.
CANARY, SECOND_BATCH, NOT_REACHED = ["tfprov-itest-1"], ["tfprov-itest-2", "tfprov-itest-3"], [
    "tfprov-itest-4", "tfprov-itest-5", "tfprov-itest-6"]
VICTIM = "tfprov-itest-3"
# Over SSH through the jump, as cloud nodes are reached: a cut link is then what it is on a cloud (docker exec, the
# default inventory's connection, would not see it).
SSH_INVENTORY = "inventories/local_ssh.docker_containers.yml"


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
