"""The whole node on real kernels (`make test-vm-heavy`): what takes emulated minutes, beyond `make test-vm`.

Two VMs under QEMU (TCG): `tfprov run cluster` converges both (TensorFlow from PyPI through the gateway's proxy, the
cluster's nftables table with the firewall asked for by name on nodes whose nftables.service is disabled, as Debian
installs it); a reboot keeps the table and the units as a converge left them (the table loaded at boot, the server
and job units installed, neither enabled nor started); the chief generalized and baked, both VMs made again from
the image (new host keys, new machine-id) and `tfprov run node` adopting them with 0 changed; then, on a VM of its
own with two vCPUs, the driver as an image bake installs it, Debian's DKMS module built against the kernel the VM
boots (about an hour emulated).
"""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tfprov.local import vms as local_vms

pytestmark = [pytest.mark.integration, pytest.mark.vm_heavy]
ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
TFPROV, PLAYBOOK = str(BIN / "tfprov"), str(BIN / "ansible-playbook")
CLOUD = "itvmn"
VM_1, VM_2 = f"tfprov-{CLOUD}-1", f"tfprov-{CLOUD}-2"
STATE = ROOT / ".tfprov" / "local" / "clouds" / CLOUD
INVENTORY = str(STATE / "inventory")
KNOWN_HOSTS = ROOT / ".tfprov" / "local" / "ssh" / f"known_hosts.{CLOUD}"
IMAGE = f"{CLOUD}-converged"
DKMS_CLOUD = "itvmd"


def tfprov(*args, check=True, timeout=3000):
    proc = subprocess.run([TFPROV, *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "TFPROV_LOCAL_CLOUD": CLOUD})
    assert not check or proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-3000:]
    return proc


def ansible(host: str, module: str, args: str, inventory=INVENTORY) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "ansible"), "-i", str(inventory), host, "-b", "-m", module, "-a", args],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)


def on(host: str, command: str, inventory=INVENTORY) -> str:
    proc = ansible(host, "ansible.builtin.shell", command, inventory)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return proc.stdout.split(">>", 1)[1].strip()


def report(output: str) -> dict:
    path = next(line.split("report: ", 1)[1].strip() for line in output.splitlines() if line.startswith("report: "))
    return json.loads(Path(path).read_text())


def changed(rep: dict) -> dict[str, int]:
    return {name: host["changed"] for name, host in rep["hosts"].items()}


@pytest.fixture(scope="module")
def converged():
    tfprov("down", "local", "--kind", "vm", "--name", CLOUD, check=False)
    tfprov("up", "local", "--kind", "vm", "--name", CLOUD, "--nodes", "2")
    # A node with nftables as Debian installs it: the package, its service disabled.
    assert ansible("tfprov_nodes", "ansible.builtin.apt", "name=nftables").returncode == 0
    started = time.monotonic()
    run = tfprov("run", "cluster", "-i", INVENTORY, "-e", "dist_tf_cluster_firewall=nftables")
    print(f"run cluster, 2 fresh VMs: {time.monotonic() - started:.0f} s")
    yield report(run.stdout)
    tfprov("down", "local", "--kind", "vm", "--name", CLOUD)
    (local_vms.BAKED / f"{IMAGE}.qcow2").unlink(missing_ok=True)


def test_the_cluster_converges_on_vms(converged):
    assert converged["status"] == "successful", converged
    assert on(VM_1, "/opt/tfprov/envs/tf/bin/python -c 'import tensorflow as tf; print(tf.__version__)'")


def test_the_firewall_and_the_units_survive_a_reboot_as_the_converge_left_them(converged):
    def state(host):
        return on(host, "nft list table inet tfprov_dist >/dev/null && echo table; systemctl is-enabled nftables; "
                        "for u in tfprov-tf-server tfprov-tf-job; do test -f /etc/systemd/system/$u.service && "
                        "echo $u:$(systemctl is-enabled $u):$(systemctl is-active $u); done; true").split()
    before = state(VM_2)
    assert before[:2] == ["table", "enabled"], before
    tfprov("local", "fault", VM_2, "reboot", "--name", CLOUD)
    after = state(VM_2)
    assert after == before, (before, after)  # the table again, the units installed and still neither on nor started
    # Never started by a boot: no [Install] section (static) or not enabled, and not running.
    units = [unit.split(":") for unit in after[2:]]
    assert units and all(enabled in ("static", "disabled") and active == "inactive" for _, enabled, active in units)
    # The members and the drop for everyone else, as the converge wrote them.
    rules = on(VM_2, "nft list table inet tfprov_dist")
    assert "10.220.0.11" in rules and "drop" in rules, rules


def test_a_converged_vm_baked_boots_as_new_nodes_that_run_node_adopts_with_nothing_changed(converged):
    old_ids = {host: on(host, "cat /etc/machine-id") for host in (VM_1, VM_2)}
    gen = subprocess.run([PLAYBOOK, "-i", INVENTORY, "-l", VM_1, "--tags", "generalize", "playbooks/bake_image.yml"],
                         cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert gen.returncode == 0, gen.stdout[-3000:]
    tfprov("local", "bake", VM_1, IMAGE, "--name", CLOUD)
    old_keys = KNOWN_HOSTS.read_text()
    up = tfprov("up", "local", "--kind", "vm", "--name", CLOUD, "--nodes", "2", "--image", IMAGE)
    assert "booting 2 new VM" in up.stdout, up.stdout
    assert KNOWN_HOSTS.read_text() != old_keys
    for host in (VM_1, VM_2):
        assert on(host, "cat /etc/machine-id") != old_ids[host]
        assert on(host, "cloud-init status") == "status: done"
    started = time.monotonic()
    run = tfprov("run", "node", "-i", INVENTORY)
    print(f"run node on 2 VMs from the baked image: {time.monotonic() - started:.0f} s")
    rep = report(run.stdout)
    assert rep["status"] == "successful" and changed(rep) == {VM_1: 0, VM_2: 0}, (rep["status"], changed(rep))


@pytest.fixture(scope="module")
def lone_vm():
    """A VM of its own for the DKMS build (hours under emulation): two vCPUs, nothing else running beside it."""
    env = {**os.environ, "TFPROV_VM_CPUS": "2"}
    subprocess.run([TFPROV, "down", "local", "--kind", "vm", "--name", DKMS_CLOUD], cwd=ROOT, capture_output=True)
    up = subprocess.run([TFPROV, "up", "local", "--kind", "vm", "--name", DKMS_CLOUD, "--nodes", "1"], cwd=ROOT,
                        capture_output=True, text=True, env=env, timeout=900)
    assert up.returncode == 0, up.stdout[-3000:] + up.stderr[-2000:]
    yield ROOT / ".tfprov" / "local" / "clouds" / DKMS_CLOUD / "inventory"
    subprocess.run([TFPROV, "down", "local", "--kind", "vm", "--name", DKMS_CLOUD], cwd=ROOT, capture_output=True)


def test_bake_mode_builds_debians_dkms_module_for_the_kernel_the_vm_boots(lone_vm):
    node = f"tfprov-{DKMS_CLOUD}-1"
    started = time.monotonic()
    proc = subprocess.run([PLAYBOOK, "-i", str(lone_vm), "tests/integration/vm/driver_bake.yml"],
                          cwd=ROOT, capture_output=True, text=True, timeout=4 * 3600)
    print(f"driver in bake mode (headers, DKMS build) on a VM: {time.monotonic() - started:.0f} s")
    assert proc.returncode == 0, proc.stdout[-4000:]
    assert "Install linux-headers-cloud-amd64, dkms" in proc.stdout  # the booted kernel's flavour, not the generic
    kernel = on(node, "uname -r", lone_vm)
    dkms = on(node, "dkms status", lone_vm)
    assert f"{kernel}, x86_64: installed" in dkms and dkms.count("installed") == 1, dkms
    # Built for this very kernel: loading it fails only for want of a GPU, not as a missing or foreign module.
    load = ansible(node, "ansible.builtin.command", "modprobe nvidia-current", lone_vm)
    assert load.returncode != 0 and "No such device" in load.stdout, load.stdout
    assert "NVRM" in on(node, "dmesg | grep -m1 NVRM || true", lone_vm)
