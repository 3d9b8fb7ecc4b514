"""The cluster's package cache: a node of role cache (group tfprov_cache) runs a caching PyPI mirror, and every other
node's pip goes through it, as on a cloud where the controller is far from the nodes.

A private cloud of its own (`itcache`): the cache node and two fresh nodes (chief, worker; TensorFlow not
installed). `--check` first, which writes nothing on the fresh cache node. Then `tfprov run node`: the cache is set
up first, and both members install TensorFlow through it; the cache fetches each wheel from its upstream (here the
gateway's pip cache, which stands in for PyPI) once, listening on its private address only. A second run finds the
members' converge standing and leaves the cache node alone; with --full it sets it up again and changes nothing
anywhere; with the cache down, a member that installs is stopped before any change, in one line naming it.
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from local_cloud import label, log_since, log_size

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
TFPROV = str(Path(sys.executable).parent / "tfprov")
CLOUD = "itcache"
CACHE, CHIEF, WORKER = (f"tfprov-{CLOUD}-{i}" for i in range(1, 4))
ENV = {**os.environ, "TFPROV_LOCAL_CLOUD": CLOUD}
PIP_WHEEL = "GET /index/tensorflow-cpu/tensorflow_cpu-"  # a member's (or the cache's) request for TensorFlow's wheel


def tfprov(*args, runs_dir, timeout=1200):
    return subprocess.run([TFPROV, *args], cwd=ROOT, env={**ENV, "TFPROV_RUNS_DIR": str(runs_dir)},
                          capture_output=True, text=True, timeout=timeout)


def node_sh(node: str, script: str) -> str:
    return subprocess.run(["docker", "exec", node, "sh", "-c", script], capture_output=True, text=True).stdout.strip()


def latest_hosts(runs_dir) -> dict:
    return json.loads(sorted(Path(runs_dir).glob("*/report.json"))[-1].read_text())["hosts"]


@pytest.fixture(scope="module")
def cloud(tmp_path_factory):
    runs = tmp_path_factory.mktemp("itcache-runs")
    tfprov("down", "local", runs_dir=runs)
    proc = tfprov("up", "local", "--nodes", "3", "--roles", "cache,chief,worker", "--network", "private",
                  runs_dir=runs)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    yield runs
    tfprov("down", "local", runs_dir=runs)


def test_check_mode_on_a_fresh_cache_node_says_what_it_would_do_and_writes_nothing(cloud):
    proc = tfprov("run", "node", "--check", runs_dir=cloud)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    out = proc.stdout + proc.stderr  # the progress lines go to standard error
    assert re.search(rf"^ +changed +{CACHE} +Say what a real run would install$", out, re.M), out[-4000:]
    assert latest_hosts(cloud)[CACHE]["changed"] > 0
    assert node_sh(CACHE, "ls -d /opt/tfprov /etc/tfprov /etc/systemd/system/tfprov-package-cache.service "
                          "2>/dev/null; id tfprov-cache 2>/dev/null") == ""


def test_members_install_tensorflow_through_the_cache_node_which_fetches_each_wheel_once(cloud):
    gateway_log = ROOT / f".tfprov/local/clouds/{CLOUD}/pip-cache.log"
    before = log_size(gateway_log)
    proc = tfprov("run", "node", runs_dir=cloud)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    address = label(CACHE, "tfprov.address")
    # The members asked the cache node for TensorFlow's wheel (its log names each asker) ...
    served = node_sh(CACHE, "journalctl -q --no-pager -u tfprov-package-cache")
    askers = {line.split(" - - ")[0].rsplit(" ", 1)[-1] for line in served.splitlines() if PIP_WHEEL in line}
    assert askers == {label(CHIEF, "tfprov.address"), label(WORKER, "tfprov.address")}, served[-3000:]
    # ... and the cache asked its upstream (the gateway's pip cache, standing in for PyPI) for it once.
    assert log_since(gateway_log, before).count(PIP_WHEEL) == 1
    # It listens on its private address only, as its own system user; its settings are root's alone.
    assert [line.split()[3] for line in node_sh(CACHE, "ss -Hltn").splitlines() if line.split()[3].endswith(
        ":3141")] == [f"{address}:3141"]
    assert node_sh(CACHE, "systemctl show -p User --value tfprov-package-cache") == "tfprov-cache"
    assert node_sh(CACHE, "stat -c '%U %a' /etc/tfprov/package-cache.env") == "root 600"
    hosts = latest_hosts(cloud)
    assert {name: hosts[name]["data"]["gpu_check"]["problems"] for name in (CHIEF, WORKER)} == {CHIEF: [], WORKER: []}


def test_a_second_run_changes_nothing_on_the_cache_node(cloud):
    # The members' converge stands: nothing installs, so the cache node is left alone.
    proc = tfprov("run", "node", runs_dir=cloud)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert {name: host["changed"] for name, host in latest_hosts(cloud).items()} == {CHIEF: 0, WORKER: 0}
    # Every play on every node: the cache node is set up again, and nothing changes anywhere.
    proc = tfprov("run", "node", "--full", runs_dir=cloud)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert {name: host["changed"] for name, host in latest_hosts(cloud).items()} == {CACHE: 0, CHIEF: 0, WORKER: 0}


def test_with_the_cache_down_the_members_stop_before_any_change_in_one_line(cloud):
    node_sh(CACHE, "systemctl stop tfprov-package-cache")
    node_sh(CHIEF, "rm -rf /opt/tfprov/envs/tf")  # a run through the cache would install TensorFlow again
    # Limited to the members, the run does not set up the cache again: it finds it down.
    proc = tfprov("run", "node", "-l", "tfprov_nodes", runs_dir=cloud)
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    line = (rf"the package cache on {CACHE} \(group tfprov_cache\) http://[0-9.]+:3141/index/pip/ does not answer "
            rf"from the node \([^)]*\): run again with {CACHE} in the run .* -e tfprov_package_cache=false")
    assert re.search(line, out), out[-3000:]
    hosts = latest_hosts(cloud)
    assert {hosts[name]["changed"] for name in (CHIEF, WORKER)} == {0}
    assert node_sh(CHIEF, "ls /opt/tfprov/envs 2>/dev/null") == ""
