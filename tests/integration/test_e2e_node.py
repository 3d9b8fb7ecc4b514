"""`tfprov run node` on one local container node on the private network, reached as cloud VMs are: over SSH through
the jump as the sudo user `debian` (the plays become root where they change the node), with pipelining. TensorFlow
from PyPI through the gateway's pip cache (the node has no other way out; apt goes through the gateway's proxy and its
apt cache, with the host's CA bundle), its bytecode compiled by the role on the node's cores (every file, as pip
would) and the quick check that ends the run; a second run finds that converge standing and skips the install (the
gate still runs); one with --full changes nothing, reuses that check and leaves the profile file alone; a package
added to the environment brings the whole run and the check back, and an edited profile file is written again; then
`tfprov bench`: the bench table, JSON and PNG."""

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from ansible_collections.tfprov.gpu.plugins.module_utils.compat import load_matrix, resolve_stack
from local_cloud import label, log_since, log_size

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
TFPROV = str(Path(sys.executable).parent / "tfprov")
SSH_INVENTORY = "inventories/local_ssh.docker_containers.yml"


def tfprov(*args, runs_dir):
    env = {**os.environ, "TFPROV_RUNS_DIR": str(runs_dir)}
    started = time.monotonic()
    proc = subprocess.run([TFPROV, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    return proc, time.monotonic() - started


def latest_report(runs_dir):
    return json.loads(sorted(Path(runs_dir).glob("*/report.json"))[-1].read_text())


def task_results(runs_dir, task: str) -> list[str]:
    """The latest run's results (ok, changed, skipped, failed) of the named task, from ansible-runner's events."""
    run = sorted(Path(runs_dir).glob("*/report.json"))[-1].parent
    found = []
    for path in sorted(run.glob("artifacts/*/job_events/*.json")):
        event = json.loads(path.read_text())
        data = event.get("event_data", {})
        if data.get("task") == task and event["event"] in ("runner_on_ok", "runner_on_skipped", "runner_on_failed"):
            status = event["event"].rsplit("_", 1)[1]
            found.append("changed" if status == "ok" and data.get("res", {}).get("changed") else status)
    return found


PROFILE_TASK = "Tell users where the TensorFlow environment is"
COMPILE_TASK = "Compile the installed packages' bytecode on all the node's cores"
# The environment's .py files without the bytecode Python would load for them: pip installs with --no-compile and
# the role compiles everything after it, so none is left to compile at first import (as a user who cannot write the
# root-owned environment would have to, at every start).
UNCOMPILED = ("import importlib.util, pathlib, sysconfig; site = pathlib.Path(sysconfig.get_paths()['purelib']); "
              "print(sum(1 for p in site.rglob('*.py') if not pathlib.Path(importlib.util.cache_from_source(str(p)))"
              ".exists()), sum(1 for _ in site.rglob('*.py')))")


def uncompiled_and_all() -> tuple[int, int]:
    out = subprocess.run(["docker", "exec", "tfprov-itest-1", "/opt/tfprov/envs/tf/bin/python", "-c", UNCOMPILED],
                         capture_output=True, text=True, check=True).stdout.split()
    return int(out[0]), int(out[1])


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    runs = tmp_path_factory.mktemp("runs")
    proc, _ = tfprov("up", "local", "--nodes", "1", runs_dir=runs)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    yield runs
    tfprov("down", "local", runs_dir=runs)


def test_run_node_over_ssh_installs_tensorflow_and_ends_with_the_quick_check(node):
    proxy_log = ROOT / ".tfprov/local/clouds/itest/proxy.log"
    cache_log = ROOT / ".tfprov/local/clouds/itest/pip-cache.log"
    apt_log = ROOT / ".tfprov/local/clouds/itest/apt-cache/apt-cacher.log"
    before, cache_before, apt_before = log_size(proxy_log), log_size(cache_log), log_size(apt_log)
    proc, seconds = tfprov("run", "node", "-i", SSH_INVENTORY, runs_dir=node)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    sshd_log = subprocess.run(["docker", "exec", "tfprov-itest-1", "journalctl", "-q", "--no-pager", "-u", "ssh"],
                              capture_output=True, text=True).stdout
    gateway = label("tfprov-itest-1", "tfprov.http_proxy").split("//")[1].split(":")[0]
    assert f"Accepted publickey for debian from {gateway}" in sshd_log  # over SSH, through the lab's jump
    # pip went through the gateway's pip cache, and nothing of PyPI's through the proxy around it.
    pip_cache_log = log_since(cache_log, cache_before)
    assert "GET /index/tensorflow-cpu/tensorflow_cpu-" in pip_cache_log, pip_cache_log[-2000:]
    assert "pythonhosted" not in log_since(proxy_log, before)
    # apt's packages (python3-venv and what it needs) came through the gateway's apt cache.
    assert re.search(r"^\d+\|O\|\d+\|[^|]+\|.*/python3[^/]*_amd64\.deb$", log_since(apt_log, apt_before), re.M)
    check = latest_report(node)["hosts"]["tfprov-itest-1"]["data"]["gpu_check"]
    assert check["tensorflow"]["version"] == resolve_stack(load_matrix(), "latest")["tensorflow_patch"]
    assert check["problems"] == []
    assert {r["device"] for r in check["results"]} == {"/CPU:0"} and all(r["ok"] for r in check["results"])
    # pip left the bytecode to the role, which compiled all of it on the node's cores.
    assert task_results(node, COMPILE_TASK) == ["changed"]
    uncompiled, sources = uncompiled_and_all()
    assert sources > 1000 and uncompiled == 0, (uncompiled, sources)
    print(f"\nrun node over SSH: {seconds:.0f} s")


def test_a_second_run_finds_the_converge_standing_and_skips_the_install(node):
    proc, seconds = tfprov("run", "node", "-i", SSH_INVENTORY, runs_dir=node)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    host = latest_report(node)["hosts"]["tfprov-itest-1"]
    assert host["changed"] == 0, host
    assert host["data"]["converge"] == {"current": True, "recorded_at": host["data"]["converge"]["recorded_at"],
                                        "reason": ""}
    assert "install skipped on 1 node(s) whose last converge still stands" in proc.stdout
    # The first run's check and stack, as its record has them; the gate judged the node now.
    first = json.loads(sorted(Path(node).glob("*/report.json"))[-2].read_text())["hosts"]["tfprov-itest-1"]
    assert host["data"]["gpu_check"]["results"] == first["data"]["gpu_check"]["results"]
    assert host["data"]["stack"] == first["data"]["stack"] and host["data"]["gate"]["healthy"]
    assert task_results(node, PROFILE_TASK) == [] and task_results(node, COMPILE_TASK) == []
    print(f"\nsecond run node over SSH: {seconds:.1f} s, changed={host['changed']}")


def test_a_full_run_changes_nothing_and_reuses_the_check(node):
    proc, seconds = tfprov("run", "node", "--full", "-i", SSH_INVENTORY, runs_dir=node)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    host = latest_report(node)["hosts"]["tfprov-itest-1"]
    assert host["changed"] == 0, host
    assert host["data"]["converge"]["current"] is False and "--full" in host["data"]["converge"]["reason"]
    # Nothing the quick check depends on changed: the first run's passing check stands, TensorFlow not imported.
    check = host["data"]["gpu_check"]
    assert check["reused_from"], check
    # The profile file was found as the role writes it by the environment's read: copy did not run at all.
    assert task_results(node, PROFILE_TASK) == ["skipped"]
    assert task_results(node, COMPILE_TASK) == ["skipped"]  # pip did not run
    print(f"\nfull no-op run node over SSH: {seconds:.1f} s, changed={host['changed']}")


def test_a_package_added_to_the_environment_brings_the_check_back_and_an_edited_profile_is_rewritten(node):
    site = subprocess.run(["docker", "exec", "tfprov-itest-1", "/opt/tfprov/envs/tf/bin/python", "-c",
                           "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    info = f"{site}/tfprov_itest_marker-1.0.dist-info"  # what a user's `pip install` leaves
    subprocess.run(["docker", "exec", "tfprov-itest-1", "sh", "-c", f"mkdir -p {info} && printf 'Metadata-Version: "
                    f"2.1\\nName: tfprov-itest-marker\\nVersion: 1.0\\n' > {info}/METADATA"], check=True)
    profile = "/etc/profile.d/tfprov-tensorflow.sh"
    written = subprocess.run(["docker", "exec", "tfprov-itest-1", "cat", profile], capture_output=True, text=True,
                             check=True).stdout
    subprocess.run(["docker", "exec", "tfprov-itest-1", "sh", "-c", f"echo 'export TFPROV_TF_ENV=/tmp' >> {profile}"],
                   check=True)
    try:
        proc, _ = tfprov("run", "node", "-i", SSH_INVENTORY, runs_dir=node)
    finally:
        subprocess.run(["docker", "exec", "tfprov-itest-1", "rm", "-r", info], check=True)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    # The converge recorded by the --full run did not stand: a witness changed (site-packages or the profile).
    data = latest_report(node)["hosts"]["tfprov-itest-1"]["data"]
    assert data["converge"]["current"] is False and data["converge"]["reason"].endswith("changed since"), data
    check = data["gpu_check"]
    assert "reused_from" not in check and check["problems"] == [], check
    assert task_results(node, PROFILE_TASK) == ["changed"]
    assert subprocess.run(["docker", "exec", "tfprov-itest-1", "cat", profile], capture_output=True, text=True,
                          check=True).stdout == written


def test_bench_writes_the_table_json_and_png(node):
    proc, seconds = tfprov("bench", "-i", SSH_INVENTORY, runs_dir=node)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    report = latest_report(node)
    bench = report["hosts"]["tfprov-itest-1"]["data"]["bench"]
    assert bench["problems"] == []
    assert {r["device"] for r in bench["results"]} == {"/CPU:0"}
    assert "bench: matmul throughput" in proc.stdout
    run_dir = Path(report["run_dir"])
    assert (run_dir / "bench" / "tfprov-itest-1.json").is_file()
    assert (run_dir / "bench" / "throughput.png").read_bytes()[:4] == b"\x89PNG"
    largest = max(r["n"] for r in bench["results"])
    tf_gflops = next(r["gflops"] for r in bench["results"] if r["n"] == largest)
    np_gflops = next(r["gflops"] for r in bench["numpy"] if r["n"] == largest)
    print(f"\nbench: {seconds:.0f} s; {largest}x{largest} float32 matmul: TensorFlow {tf_gflops} GFLOP/s, "
          f"NumPy {np_gflops} GFLOP/s; TF/NumPy by size {bench['cpu_vs_numpy_by_size']}")
