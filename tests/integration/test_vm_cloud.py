"""The local cloud's VM flavour: real kernels under QEMU (`tfprov up local --kind vm`), `make test-vm`.

Two Debian 12 VMs booted from the cloud image through cloud-init: SSH as `debian` with the host keys read from their
consoles (a forged key refused), their private segment (and no way out), a cut link, a reboot back on the same
address and host key, the idle-stop guard's `poweroff` really stopping a VM and `up` starting it again, a
generalized VM imaged and booted as a new node (new host keys and machine-id, cloud-init run again, the old key
refused), and the host's network as it was after `down`. Meanwhile, on the other VM, the driver role's reboot path
(install through the gateway's proxy, reboot, re-read, the one-line refusal; and no reboot when told not to).
"""

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tfprov.local import vms as local_vms

pytestmark = [pytest.mark.integration, pytest.mark.vm]
ROOT = Path(__file__).resolve().parents[2]
TFPROV = str(Path(sys.executable).parent / "tfprov")
PLAYBOOK = str(Path(sys.executable).parent / "ansible-playbook")
CLOUD = "itvm"
VM_1, VM_2 = f"tfprov-{CLOUD}-1", f"tfprov-{CLOUD}-2"
STATE = ROOT / ".tfprov" / "local" / "clouds" / CLOUD
INVENTORY = str(STATE / "inventory")
KNOWN_HOSTS = ROOT / ".tfprov" / "local" / "ssh" / f"known_hosts.{CLOUD}"
BAKED_CLOUD = "itvmb"  # a new node booted from VM_2's image


def tfprov(*args, check=True, timeout=900):
    proc = subprocess.run([TFPROV, *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    assert not check or proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


def vm(name: str, cloud: str = CLOUD) -> dict:
    state = ROOT / ".tfprov" / "local" / "clouds" / cloud / "vms.json"
    return next(node for node in json.loads(state.read_text())["nodes"] if f"tfprov-{cloud}-{node['index']}" == name)


def vm_ssh(name: str, command: str, known_hosts: Path = KNOWN_HOSTS, timeout=60,
           cloud: str = CLOUD) -> subprocess.CompletedProcess:
    node = vm(name, cloud)
    cmd = ["ssh", "-F", "/dev/null", "-p", str(node["ssh_port"]), "-i", str(KNOWN_HOSTS.parent / "id_ed25519"),
           "-o", "IdentitiesOnly=yes", "-o", "StrictHostKeyChecking=yes", "-o", f"UserKnownHostsFile={known_hosts}",
           "-o", "GlobalKnownHostsFile=/dev/null", "-o", f"HostKeyAlias={name}", "-o", "BatchMode=yes",
           "-o", "ConnectTimeout=5", "debian@127.0.0.1", command]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def connects(name: str, address: str, port: int = 22) -> bool:
    probe = f"timeout 5 bash -c 'echo > /dev/tcp/{address}/{port}' 2>/dev/null && echo open || echo closed"
    return vm_ssh(name, probe).stdout.strip() == "open"


def host_network() -> dict[str, str]:
    """The host's own namespace (other clouds' namespaces may come and go meanwhile: only this cloud's count)."""
    def out(*cmd):
        return subprocess.run(cmd, capture_output=True, text=True).stdout
    netns = [line for line in out("ip", "netns", "list").splitlines() if CLOUD in line]
    return {"addr": out("ip", "-o", "addr"), "route": out("ip", "route"), "netns": "\n".join(netns),
            "nft": out("nft", "list", "ruleset"), "links": out("ip", "-o", "link")}


def qemu_running(name: str) -> bool:
    pid = (STATE / name / "qemu.pid").read_text().strip() if (STATE / name / "qemu.pid").exists() else ""
    return bool(pid) and Path(f"/proc/{pid}").exists()


@pytest.fixture(scope="module")
def vms():
    os.environ["TFPROV_LOCAL_CLOUD"] = CLOUD
    tfprov("down", "local", "--kind", "vm", "--name", CLOUD, check=False)
    before = host_network()
    started = time.monotonic()
    up = tfprov("up", "local", "--kind", "vm", "--name", CLOUD, "--nodes", "2")
    print(f"up: 2 VMs in {time.monotonic() - started:.0f} s")
    assert "SSH as debian" in up.stdout and "inventory: .tfprov/local/clouds/itvm/inventory" in up.stdout, up.stdout
    yield up
    tfprov("down", "local", "--kind", "vm", "--name", CLOUD)
    assert not STATE.exists() and not KNOWN_HOSTS.exists()
    assert subprocess.run(["pgrep", "-f", f"qemu-system-x86_64 -name tfprov-{CLOUD}-"]).returncode == 1
    assert host_network() == before  # nothing of the VMs' networks was ever on the host's


def test_vms_answer_ssh_as_debian_with_sudo_and_the_host_keys_from_their_consoles(vms, driver_on_vm_1):
    # driver_on_vm_1 starts the driver's run on VM_1 now: the tests that need VM_1 (this one and the segment's) take
    # about a minute, and the run reboots VM_1 only after its headers and DKMS are in (four minutes and more).
    for name in (VM_1, VM_2):
        proc = vm_ssh(name, "hostname; sudo -n id -u; cloud-init status; systemd-detect-virt")
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.split() == [name, "0", "status:", "done", "qemu"], proc.stdout
    # The recorded keys are the VMs' own: a forged one for the same name is refused, never accepted.
    forged = KNOWN_HOSTS.with_name("forged")
    other = subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(forged)], capture_output=True)
    assert other.returncode == 0
    forged_hosts = KNOWN_HOSTS.with_name("known_hosts.forged")
    forged_hosts.write_text(f"{VM_1} {' '.join(Path(str(forged) + '.pub').read_text().split()[:2])}\n")
    try:
        refused = vm_ssh(VM_1, "true", known_hosts=forged_hosts)
        assert refused.returncode != 0 and "Host key verification failed" in refused.stderr, refused.stderr
    finally:
        for path in (forged, Path(str(forged) + ".pub"), forged_hosts):
            path.unlink(missing_ok=True)


def test_the_inventory_has_the_container_clouds_groups_and_vars(vms):
    listed = json.loads(subprocess.run([str(Path(sys.executable).parent / "ansible-inventory"), "-i", INVENTORY,
                                        "--list"], cwd=ROOT, capture_output=True, text=True, check=True).stdout)
    assert sorted(listed["tfprov_nodes"]["hosts"]) == [VM_1, VM_2]
    assert listed["tfprov_chief"]["hosts"] == [VM_1] and listed["tfprov_worker"]["hosts"] == [VM_2]
    hostvars = listed["_meta"]["hostvars"][VM_2]
    assert hostvars["tfprov_tf_address"] == "10.220.0.12" and hostvars["tfprov_node_state"] == "running"
    ping = subprocess.run([str(Path(sys.executable).parent / "ansible"), "-i", INVENTORY, "all", "-m", "ping"],
                          cwd=ROOT, capture_output=True, text=True)
    assert ping.returncode == 0, ping.stdout[-2000:]


def test_the_segment_joins_the_vms_and_nothing_leads_out(vms):
    assert connects(VM_1, "10.220.0.12") and connects(VM_2, "10.220.0.11")
    # User-mode networking with restrict=on: not the host (10.0.2.2), not anything beyond it.
    assert not connects(VM_1, "10.0.2.2") and not connects(VM_1, "192.0.2.1", 80)
    assert "default" not in vm_ssh(VM_1, "ip route").stdout.replace("default via 10.0.2.2", "")


def test_a_cut_vm_is_off_the_segment_until_restored(vms):
    tfprov("local", "fault", VM_2, "cut")
    try:
        assert not connects(VM_1, "10.220.0.12")
        assert vm_ssh(VM_2, "true").returncode == 0  # cut off its segment, still running
    finally:
        tfprov("local", "fault", VM_2, "restore")
    assert connects(VM_1, "10.220.0.12")


def driver_command(**extra) -> list[str]:
    return [PLAYBOOK, "-i", INVENTORY, "-l", VM_1, "-e", json.dumps(extra), "tests/integration/vm/driver_reboot.yml"]


@pytest.fixture(scope="module")
def driver_on_vm_1(vms, tmp_path_factory):
    """The driver role's run on VM_1 (minutes of emulated apt), started at the first test: its reboot comes minutes
    later, after the tests that need VM_1 up, while VM_2's tests go on."""
    log = tmp_path_factory.mktemp("driver") / "driver.log"
    before = vm_ssh(VM_1, "cat /proc/sys/kernel/random/boot_id").stdout.strip()
    started = time.monotonic()
    # Each task's time in the log (profile_tasks): where the emulated minutes go.
    env = {**os.environ, "ANSIBLE_CALLBACKS_ENABLED": "ansible.posix.profile_tasks"}
    with open(log, "w") as out:
        proc = subprocess.Popen(driver_command(), cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, text=True, env=env)
    yield proc, log, started, before
    if proc.poll() is None:
        proc.kill()


def test_a_rebooted_vm_comes_back_with_its_address_and_host_key(vms, driver_on_vm_1):
    before = vm_ssh(VM_2, "cat /proc/sys/kernel/random/boot_id").stdout.strip()
    proc = tfprov("local", "fault", VM_2, "reboot")
    assert "rebooted in" in proc.stdout, proc.stdout
    after = vm_ssh(VM_2, "cat /proc/sys/kernel/random/boot_id; ip -br addr show eth1")
    assert after.returncode == 0, after.stderr  # the same recorded host key: ssh requires it
    boot, addr = after.stdout.splitlines()
    assert boot != before and "10.220.0.12/24" in addr


def test_the_idle_stop_guard_powers_a_vm_off_and_up_starts_it_again(vms):
    # A one-minute window; the VM's load under emulation says nothing of a job, so only sessions count here.
    # Three minutes of grace after boot, not five: the VM rebooted a minute ago (the test before). Not less: started
    # again below, the VM must stay up until the guard is removed (its first check comes 3 minutes after boot, the
    # stop a minute later; removing it takes about two).
    extra = {"tfprov_idle_stop_minutes": 1, "idle_stop_cpu_threshold": 100, "idle_stop_boot_grace_minutes": 3}
    # No persistent SSH master: it would hold a session open on the VM for a minute after the play.
    env = {**os.environ, "ANSIBLE_SSH_ARGS": "-o ControlMaster=no -o ServerAliveInterval=5 -o ServerAliveCountMax=3"}
    proc = subprocess.run([PLAYBOOK, "-i", INVENTORY, "-l", VM_2, "-e", json.dumps(extra), "playbooks/idle_stop.yml"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:]
    key = KNOWN_HOSTS.read_text()
    started = time.monotonic()
    while qemu_running(VM_2) and time.monotonic() - started < 420:
        time.sleep(5)
    assert not qemu_running(VM_2), "the idle-stop guard did not power the VM off within 7 minutes"
    print(f"idle stop: powered off {time.monotonic() - started:.0f} s after the guard was installed")
    listed = subprocess.run([str(Path(sys.executable).parent / "ansible-inventory"), "-i", INVENTORY, "--host",
                             VM_2], cwd=ROOT, capture_output=True, text=True, check=True)
    assert json.loads(listed.stdout)["tfprov_node_state"] == "stopped"  # the inventory reads the VMs live
    up = tfprov("up", "local", "--kind", "vm", "--name", CLOUD, "--nodes", "2")
    assert qemu_running(VM_2) and KNOWN_HOSTS.read_text() == key, up.stdout  # the same VM, started, not replaced
    assert vm_ssh(VM_2, "systemctl is-enabled tfprov-idle-stop.timer").stdout.strip() == "enabled"
    # Removed again so the VM stays up for what follows.
    extra["tfprov_idle_stop_minutes"] = 0
    subprocess.run([PLAYBOOK, "-i", INVENTORY, "-l", VM_2, "-e", json.dumps(extra), "playbooks/idle_stop.yml"],
                   cwd=ROOT, capture_output=True, text=True, timeout=600, check=True)


def test_a_generalized_vm_imaged_boots_as_a_new_node(vms):
    old_key = [line.split(None, 1)[1] for line in KNOWN_HOSTS.read_text().splitlines() if line.startswith(VM_2 + " ")]
    old_id = vm_ssh(VM_2, "cat /etc/machine-id").stdout.strip()
    gen = subprocess.run([PLAYBOOK, "-i", INVENTORY, "-l", VM_2, "--tags", "generalize", "playbooks/bake_image.yml"],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert gen.returncode == 0, gen.stdout[-3000:]
    image = tfprov("local", "bake", VM_2, f"{CLOUD}-test")
    assert "imaged to" in image.stdout
    # A new node from the image, in a cloud of its own (VM_1 is busy with the driver meanwhile): a new instance id
    # for cloud-init, new host keys, a new machine-id.
    booted = f"tfprov-{BAKED_CLOUD}-1"
    try:
        up = tfprov("up", "local", "--kind", "vm", "--name", BAKED_CLOUD, "--nodes", "1", "--image", f"{CLOUD}-test")
        assert "booting 1 new VM" in up.stdout, up.stdout
        hosts = KNOWN_HOSTS.with_name(f"known_hosts.{BAKED_CLOUD}")
        new_key = [line.split(None, 1)[1] for line in hosts.read_text().splitlines() if line.startswith(booted + " ")]
        assert new_key and not set(new_key) & set(old_key)
        stale = KNOWN_HOSTS.with_name("known_hosts.stale")
        stale.write_text("".join(f"{booted} {key}\n" for key in old_key))  # the baked VM's keys: refused
        try:
            assert "Host key verification failed" in vm_ssh(booted, "true", known_hosts=stale, cloud=BAKED_CLOUD).stderr
        finally:
            stale.unlink()
        fresh = vm_ssh(booted, "cat /etc/machine-id; cloud-init status; sudo cloud-init query instance_id",
                       known_hosts=hosts, cloud=BAKED_CLOUD)
        machine_id, status, instance = fresh.stdout.split("\n")[:3]
        assert machine_id and machine_id != old_id and status == "status: done"
        assert instance == vm(booted, BAKED_CLOUD)["instance_id"]
    finally:
        tfprov("down", "local", "--kind", "vm", "--name", BAKED_CLOUD)  # the image's users first, then the image
        (local_vms.BAKED / f"{CLOUD}-test.qcow2").unlink(missing_ok=True)

def test_the_driver_role_reboots_a_vm_whose_driver_is_not_loaded_rereads_it_and_refuses_in_one_line(driver_on_vm_1):
    proc, log, started, before = driver_on_vm_1
    proc.wait(timeout=1500)
    print(f"driver role with its reboot: {time.monotonic() - started:.0f} s (beside VM_2's tests)")
    out = log.read_text()
    slowest = [line for line in out.splitlines() if re.search(r" -+ \d+\.\d+s$", line)][:8]
    print("slowest tasks:\n" + "\n".join(slowest))
    assert proc.returncode == 2, out[-4000:]
    assert "TASK [tfprov.gpu.nvidia_driver : Reboot to load the driver" in out
    assert "Read the driver state after the reboot" in out and "Record the node's new boot" in out
    # One message (the YAML callback folds it over lines): what happened, and what the CUDA needs.
    assert re.search(r"after installing and rebooting, the driver is not loaded; CUDA [0-9.]+ needs >= [0-9.]+",
                     " ".join(out.split())), out[-4000:]
    after = vm_ssh(VM_1, "cat /proc/sys/kernel/random/boot_id; sudo -n dkms status >/dev/null && echo dkms; "
                         "cat /etc/modprobe.d/blacklist-nouveau.conf")
    assert after.stdout.split()[0] != before and "dkms" in after.stdout and "blacklist nouveau" in after.stdout

    # nvidia_driver_reboot: false leaves the node as it is, and says what to do.
    rebooted = after.stdout.split()[0]
    again = subprocess.run(driver_command(nvidia_driver_reboot=False), cwd=ROOT, capture_output=True, text=True,
                           timeout=900)
    assert again.returncode == 0, again.stdout[-4000:]
    assert ("The NVIDIA driver is installed but not loaded: reboot this node (nvidia_driver_reboot is false)"
            in " ".join(again.stdout.split())), again.stdout[-3000:]
    assert vm_ssh(VM_1, "cat /proc/sys/kernel/random/boot_id").stdout.strip() == rebooted
