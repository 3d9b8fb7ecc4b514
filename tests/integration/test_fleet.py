"""`tfprov fleet drift` on six local nodes baked with TensorFlow 2.21.0, as a user would use it: the desired version
changed to 2.20.0 for two nodes in the inventory's host_vars (an inventory directory: the local cloud's inventory,
its group_vars and two host_vars files). Drift must name exactly those two, 2.21.0 -> 2.20.0, and change nothing:
no file on any node is written (but Ansible's own temporary directory and the journal), and a second drift run
finds the same two hosts with the same changes (had the first installed anything, the second would find less).
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

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
