"""End to end on the local cloud: real containers, real ansible-runner, the CLI as a user runs it."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
TFPROV = str(Path(sys.executable).parent / "tfprov")
INVENTORY = "inventories/local.docker_containers.yml"
NODES = ["tfprov-local-1", "tfprov-local-2", "tfprov-local-3"]


def tfprov(*args, runs_dir, check=False):
    env = {**os.environ, "TFPROV_RUNS_DIR": str(runs_dir)}
    proc = subprocess.run([TFPROV, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    if check and proc.returncode != 0:
        raise AssertionError(f"tfprov {' '.join(args)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    return proc


def latest_report(runs_dir):
    return json.loads(sorted(Path(runs_dir).glob("*/report.json"))[-1].read_text())


def container_ids():
    out = subprocess.run(["docker", "inspect", "--format", "{{.Id}}", *NODES], capture_output=True, text=True)
    return out.stdout.split()


@pytest.fixture(scope="module")
def cloud(tmp_path_factory):
    runs = tmp_path_factory.mktemp("runs")
    tfprov("up", "local", "--nodes", "3", runs_dir=runs, check=True)
    yield runs
    tfprov("down", "local", runs_dir=runs)


def test_preflight_on_three_nodes_reports_every_host_ok(cloud):
    started = time.monotonic()
    proc = tfprov("run", "preflight", "-i", INVENTORY, runs_dir=cloud)
    seconds = time.monotonic() - started
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = latest_report(cloud)
    assert sorted(report["hosts"]) == NODES
    assert {h["status"] for h in report["hosts"].values()} == {"ok"}
    for host in report["hosts"].values():
        assert host["data"]["preflight"]["os"].startswith("Debian 12")
    print(f"\npreflight on 3 nodes: {seconds:.1f} s wall, {report['seconds']} s in ansible-runner")
    assert "report: " in proc.stdout and (Path(report["run_dir"]) / "artifacts").is_dir()


def test_up_again_changes_nothing(cloud):
    before = container_ids()
    proc = tfprov("up", "local", "--nodes", "3", runs_dir=cloud, check=True)
    assert container_ids() == before
    assert proc.stdout.count(": running") == 3


def test_inventory_yields_the_group_contract(cloud):
    env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg")}
    out = subprocess.run([str(Path(TFPROV).parent / "ansible-inventory"), "-i", INVENTORY, "--list"],
                         cwd=ROOT, env=env, capture_output=True, text=True, check=True).stdout
    inventory = json.loads(out)
    assert sorted(inventory["tfprov_nodes"]["hosts"]) == NODES
    assert inventory["tfprov_chief"]["hosts"] == ["tfprov-local-1"]
    assert inventory["tfprov_worker"]["hosts"] == ["tfprov-local-2"]
    assert inventory["tfprov_ps"]["hosts"] == ["tfprov-local-3"]
    ports = [inventory["_meta"]["hostvars"][n]["tfprov_tf_port"] for n in NODES]
    assert len(set(ports)) == 3


def test_limit_and_check_mode(cloud):
    proc = tfprov("run", "preflight", "--limit", "tfprov_chief", "--check", runs_dir=cloud)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = latest_report(cloud)
    assert list(report["hosts"]) == ["tfprov-local-1"] and report["check"] is True


def test_a_blocking_problem_fails_every_host_with_the_reason(cloud):
    proc = tfprov("run", "preflight", "-e", "preflight_min_disk_gb=100000", runs_dir=cloud)
    assert proc.returncode != 0
    report = latest_report(cloud)
    assert sorted(report["hosts"]) == NODES
    for host in report["hosts"].values():
        assert host["status"] == "failed"
        assert "100000 GB needed" in host["failed_tasks"][0]["message"]
    assert "100000 GB needed" in proc.stdout


def test_a_node_stopped_mid_run_fails_the_run_and_the_others_are_recorded(cloud):
    env = {**os.environ, "TFPROV_RUNS_DIR": str(cloud)}
    proc = subprocess.Popen([TFPROV, "run", "preflight"], cwd=ROOT, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    killed = False
    for line in proc.stderr:  # one line per task result when not on a terminal
        if not killed and "tfprov-local-3" in line:
            subprocess.run(["docker", "kill", "tfprov-local-3"], check=True, capture_output=True)
            killed = True
    out = proc.stdout.read()
    assert proc.wait(timeout=300) != 0 and killed
    report = latest_report(cloud)
    assert report["hosts"]["tfprov-local-3"]["status"] == "unreachable"
    assert report["hosts"]["tfprov-local-1"]["status"] == "ok"
    assert report["hosts"]["tfprov-local-2"]["status"] == "ok"
    assert "tfprov-local-3" in out and "is not running" in out
    # `up` brings the stopped node back.
    again = tfprov("up", "local", "--nodes", "3", runs_dir=cloud, check=True)
    assert "tfprov-local-3: started" in again.stdout
