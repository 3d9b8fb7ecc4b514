"""Shared by the integration tests: their own local cloud, and for the cluster tests four local nodes (chief, worker,
worker, ps) from the image baked from a converged node (`make baked-image`), made once per test module and removed
after it."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TFPROV = str(Path(sys.executable).parent / "tfprov")
BAKED = os.environ.get("TFPROV_BAKED_IMAGE", "tfprov/node-baked:bookworm")
# The tests' own local cloud (nodes tfprov-itest-N): `tfprov up|down local` and the local inventories follow this
# variable, so no test ever touches the user's own cloud (`local`), which may be in the middle of a run.
os.environ["TFPROV_LOCAL_CLOUD"] = "itest"


@pytest.fixture(scope="module")
def cluster_cloud(tmp_path_factory):
    """The runs directory of a fresh four-node local cloud on the private network: an address per node, every
    node on port 2222, as cloud VMs."""
    runs = tmp_path_factory.mktemp("runs")
    env = {**os.environ, "TFPROV_RUNS_DIR": str(runs)}
    subprocess.run([TFPROV, "down", "local"], cwd=ROOT, env=env, capture_output=True)
    proc = subprocess.run([TFPROV, "up", "local", "--nodes", "4", "--image", BAKED, "--network", "private"],
                          cwd=ROOT, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    yield runs
    subprocess.run([TFPROV, "down", "local"], cwd=ROOT, env=env, capture_output=True)


@pytest.fixture(scope="module")
def fleet_cloud(tmp_path_factory):
    """The runs directory of a fresh six-node local cloud (chief, four workers, ps) from the baked image: the fleet
    tests' nodes (rolling update, drift)."""
    runs = tmp_path_factory.mktemp("fleet-runs")
    env = {**os.environ, "TFPROV_RUNS_DIR": str(runs)}
    subprocess.run([TFPROV, "down", "local"], cwd=ROOT, env=env, capture_output=True)
    proc = subprocess.run([TFPROV, "up", "local", "--nodes", "6", "--roles", "chief,worker,worker,worker,worker,ps",
                           "--image", BAKED], cwd=ROOT, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    yield runs
    subprocess.run([TFPROV, "down", "local"], cwd=ROOT, env=env, capture_output=True)
