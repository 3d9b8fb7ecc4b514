"""The local cloud's VM flavour (`tfprov up local --kind vm`): real kernels under QEMU, for what containers cannot
show (reboot, kernel modules, cloud-init, a baked image booted as a new node).

Each VM boots the cached cloud image (vm_image.py) through a qcow2 overlay of its own, with a NoCloud seed: user
`debian` with the cloud's key and passwordless sudo, its hostname, its private address. Networking never touches
the host's: user-mode networking with `restrict=on` (no way out) and one forwarded port, SSH on 127.0.0.1; a second
NIC on the cloud's private segment (vm_hub.py, a Unix socket) with fixed addresses. Host keys are read from the
serial console, where cloud-init prints them at first boot, and ssh requires them (never ignored).

KVM is not usable on the test machine: QEMU runs under TCG, its translation cache kept small (tb-size) so that a
VM takes about 0.8 GiB. The CPU model is QEMU's `max` (AVX and AVX2 under TCG): TensorFlow's wheels need AVX.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from rich.console import Console

from ..errors import TfprovError
from ..project import project_root
from . import gateway, nodes, serving_image, ssh, vm_image
from .cloud import FIRST_HOST, check_name
from .commands import apt_install, run
from .images import debian_mirror
from .nodes import assign_roles

KIND = "vm"
DEFAULT_NAME = "vm"
SUBNET = "10.220.0"  # the segment is the hub's alone (no kernel routes it): every VM cloud may use the same range
MEMORY_MIB = 1024
# vCPUs per VM. One by default: under TCG each vCPU is a host thread, and two VMs fill this 2-core machine. A lone
# long build (the driver's DKMS module) finishes sooner with 2 (QEMU's multi-threaded TCG).
CPUS_ENV = "TFPROV_VM_CPUS"
TB_SIZE_MIB = 256
# A cloud VM's disk (sparse: only what is written takes space); cloud-init's resizefs grows the image's root file
# system to it at first boot, as on a cloud. Room for the whole GPU stack, which preflight asks for.
DISK_GB = 32
BOOT_TIMEOUT = 300  # seconds; measured first boots on 2 cores: 25-36 s alone, 75-94 s for four at once
KEY_BLOCK = re.compile(r"-----BEGIN SSH HOST KEY KEYS-----\s*(.*?)-----END SSH HOST KEY KEYS-----", re.S)


@dataclass
class Vm:
    index: int
    role: str
    cloud: str
    ssh_port: int
    instance_id: str  # cloud-init runs its first-boot modules again when this changes (a new VM from an image)
    base: str  # the disk the overlay starts from: the cloud image's, or a baked one
    image: str  # the cloud image's directory: the kernel and initrd QEMU boots

    @property
    def name(self) -> str:
        return f"tfprov-{self.cloud}-{self.index}"

    @property
    def address(self) -> str:
        return f"{SUBNET}.{FIRST_HOST + self.index}"

    @property
    def mac_user(self) -> str:
        return f"52:54:00:00:{FIRST_HOST + self.index:02x}:01"

    @property
    def mac_segment(self) -> str:
        return f"52:54:00:00:{FIRST_HOST + self.index:02x}:02"


@dataclass(frozen=True)
class VmCloud:
    name: str

    @property
    def directory(self) -> Path:
        return project_root() / ".tfprov" / "local" / "clouds" / self.name

    @property
    def state(self) -> Path:
        return self.directory / "vms.json"

    @property
    def hub_socket(self) -> Path:
        return self.directory / "segment.sock"

    @property
    def inventory(self) -> Path:
        return self.directory / "inventory"

    @property
    def ssh(self) -> ssh.SshFiles:
        return ssh.ssh_files(project_root(), self.name)

    def vm_dir(self, vm: Vm) -> Path:
        return self.directory / vm.name

    def load(self) -> list[Vm]:
        if not self.state.is_file():
            return []
        data = json.loads(self.state.read_text())
        return [Vm(**node) for node in data["nodes"]]

    def save(self, vms: list[Vm]) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        tmp = self.state.with_suffix(".new")
        tmp.write_text(json.dumps({"kind": KIND, "nodes": [asdict(vm) for vm in vms]}, indent=1))
        tmp.replace(self.state)


def is_vm_cloud(name: str) -> bool:
    return VmCloud(name).state.is_file()


def cloud_named_by(node: str) -> str | None:
    """The VM cloud a node name tfprov-<cloud>-N names, when that cloud is a VM cloud."""
    match = re.fullmatch(r"tfprov-([a-z][a-z0-9-]*)-[0-9]+", node)
    return match.group(1) if match and is_vm_cloud(match.group(1)) else None


def pid_of(cloud: VmCloud, vm: Vm) -> int | None:
    """QEMU's pid while it runs, else None."""
    try:
        pid = int((cloud.vm_dir(vm) / "qemu.pid").read_text().strip())
        os.kill(pid, 0)
    except (FileNotFoundError, ValueError, ProcessLookupError):
        return None
    return pid


# --- first boot: the NoCloud seed ---

def user_data(vm: Vm, public_key: str) -> str:
    return "#cloud-config\n" + json.dumps({
        "hostname": vm.name,
        "users": [{"name": ssh.LOGIN_USER, "shell": "/bin/bash", "sudo": "ALL=(ALL) NOPASSWD:ALL",
                   "lock_passwd": True, "ssh_authorized_keys": [public_key]}],
        "disable_root": True,
        "ssh_pwauth": False,
        "ssh_genkeytypes": ["ed25519"],
        "locale": False,
        "manage_etc_hosts": True,  # its own name in /etc/hosts: sudo resolves it without DNS (there is none)
        # The host's CA bundle, as the container nodes get it mounted: pip in the VM trusts what the host trusts.
        "write_files": [{"path": nodes.NODE_CA_BUNDLE, "content": nodes.HOST_CA_BUNDLE.read_text(),
                         "permissions": "0644"}] if nodes.HOST_CA_BUNDLE.is_file() else [],
    }, indent=1) + "\n"


def network_config(vm: Vm) -> str:
    """eth0 (user-mode, DHCP) and eth1 (the segment, a fixed address): kernel names (net.ifnames=0), in PCI order."""
    return json.dumps({"version": 2, "ethernets": {
        "eth0": {"dhcp4": True},
        "eth1": {"addresses": [f"{vm.address}/24"]},
    }}, indent=1) + "\n"


def write_seed(cloud: VmCloud, vm: Vm, public_key: str) -> Path:
    directory = cloud.vm_dir(vm)
    files = {"user-data": user_data(vm, public_key), "network-config": network_config(vm),
             "meta-data": json.dumps({"instance-id": vm.instance_id, "local-hostname": vm.name}) + "\n"}
    for name, text in files.items():
        (directory / name).write_text(text)
    seed = directory / "seed.img"
    run(["cloud-localds", f"--network-config={directory / 'network-config'}", str(seed),
         str(directory / "user-data"), str(directory / "meta-data")], f"cloud-localds for {vm.name}")
    return seed


# --- the way out: the gateway's proxy and wheelhouse, as on the private container network ---

GATEWAY = "10.0.2.100"  # in QEMU's user-mode network, forwarded (guestfwd) to the host's Unix sockets
PROXY_URL = f"http://{GATEWAY}:{gateway.PROXY_PORT}"
WHEELHOUSE_URL = f"http://{GATEWAY}:{gateway.WHEELHOUSE_PORT}/"


def ensure_gateway(cloud: VmCloud) -> None:
    """tinyproxy (its allow-list: the Debian mirror, PyPI) and the wheelhouse, each behind a Unix socket that QEMU's
    guestfwd connects the VMs to: nothing listens but on the host's loopback, nothing is added to its network."""
    state = cloud.directory
    try:
        procs = json.loads((state / gateway.STATE_FILE).read_text())
    except (OSError, ValueError):
        procs = {}
    if gateway.alive(procs):
        return
    gateway.stop_processes(procs)
    missing = sorted({pkg for cmd, pkg in gateway.needed_commands().items() if not shutil.which(cmd)})
    if missing:
        apt_install(Console(stderr=True), *missing)
        gateway.disable_packaged_services(missing)
    procs = gateway.start_host_proxy(state, debian_mirror())
    if serving_image.WHEELHOUSE.is_dir():
        port = gateway.free_loopback_port()
        log = state / "gateway.log"
        procs["wheelhouse"] = gateway.spawn([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1",
                                              "--directory", str(serving_image.WHEELHOUSE)], log)
        procs["wheelhouse_end"] = gateway.spawn(["socat", f"UNIX-LISTEN:{state / 'wheelhouse.sock'},fork,"
                                                  "unlink-early,mode=600", f"TCP:127.0.0.1:{port}"], log)
    (state / gateway.STATE_FILE).write_text(json.dumps(procs))


def guestfwd(cloud: VmCloud) -> str:
    """The user-mode network's forwards to the gateway's sockets (socat per connection)."""
    forwards = [(gateway.PROXY_PORT, cloud.directory / "proxy.sock")]
    if serving_image.WHEELHOUSE.is_dir():
        forwards.append((gateway.WHEELHOUSE_PORT, cloud.directory / "wheelhouse.sock"))
    return "".join(f",guestfwd=tcp:{GATEWAY}:{port}-cmd:socat STDIO UNIX-CONNECT:{sock}" for port, sock in forwards)


# --- boot ---

def vm_cpus() -> int:
    value = os.environ.get(CPUS_ENV, "1")
    if not value.isdigit() or not 1 <= int(value) <= (os.cpu_count() or 1):
        raise TfprovError(f"{CPUS_ENV}={value!r}: give a whole number of vCPUs from 1 to this machine's "
                          f"{os.cpu_count()} cores")
    return int(value)


def qemu_command(cloud: VmCloud, vm: Vm, image: vm_image.VmImage) -> list[str]:
    directory = cloud.vm_dir(vm)
    return [
        "qemu-system-x86_64", "-name", vm.name, "-machine", "q35", "-accel", f"tcg,tb-size={TB_SIZE_MIB},thread=multi",
        "-cpu", "max", "-m", str(MEMORY_MIB), "-smp", str(vm_cpus()), "-display", "none", "-daemonize",
        "-pidfile", str(directory / "qemu.pid"), "-serial", f"file:{directory / 'console.log'}",
        "-monitor", f"unix:{directory / 'monitor.sock'},server=on,wait=off",
        "-kernel", str(image.kernel), "-initrd", str(image.initrd),
        "-append", "root=/dev/vda rw console=ttyS0 net.ifnames=0 biosdevname=0",
        # cache=unsafe: the guest's flushes are not passed on (dpkg syncs every file; emulated, that costs minutes).
        # A VM's disk is thrown away with it; `local bake` images it only after a clean power-off.
        "-drive", f"file={directory / 'disk.qcow2'},if=virtio,format=qcow2,cache=unsafe",
        "-drive", f"file={directory / 'seed.img'},if=virtio,format=raw,readonly=on",
        "-netdev", f"user,id=user,restrict=on,hostfwd=tcp:127.0.0.1:{vm.ssh_port}-:22{guestfwd(cloud)}",
        "-device", f"virtio-net-pci,netdev=user,mac={vm.mac_user}",
        "-netdev", f"stream,id=segment,server=off,addr.type=unix,addr.path={cloud.hub_socket}",
        "-device", f"virtio-net-pci,netdev=segment,mac={vm.mac_segment}",
    ]


def start_hub(cloud: VmCloud) -> None:
    if cloud.hub_socket.exists():
        probe = socket.socket(socket.AF_UNIX)
        try:
            probe.connect(str(cloud.hub_socket))
            return  # running
        except OSError:
            cloud.hub_socket.unlink()
        finally:
            probe.close()
    log = open(cloud.directory / "hub.log", "a")  # noqa: SIM115 (the hub keeps it)
    subprocess.Popen([sys.executable, "-m", "tfprov.local.vm_hub", str(cloud.hub_socket)], stdout=log, stderr=log,
                     stdin=subprocess.DEVNULL, start_new_session=True)
    for _ in range(50):
        if cloud.hub_socket.exists():
            return
        time.sleep(0.1)
    raise TfprovError(f"the private segment's hub did not start: see {cloud.directory / 'hub.log'}")


def boot(cloud: VmCloud, vm: Vm, image: vm_image.VmImage) -> None:
    """Start QEMU for an existing disk (the first boot, or a start after a stop)."""
    if pid_of(cloud, vm):
        return
    start_hub(cloud)
    ensure_gateway(cloud)
    run(qemu_command(cloud, vm, image), f"qemu for {vm.name}")


def create(cloud: VmCloud, vm: Vm, image: vm_image.VmImage, public_key: str) -> None:
    directory = cloud.vm_dir(vm)
    directory.mkdir(parents=True, exist_ok=True)
    base = Path(vm.base)
    fmt = "qcow2" if base.suffix == ".qcow2" else "raw"
    run(["qemu-img", "create", "-q", "-f", "qcow2", "-F", fmt, "-b", str(base), str(directory / "disk.qcow2"),
         f"{DISK_GB}G"], f"qemu-img create for {vm.name}")
    (directory / "console.log").unlink(missing_ok=True)
    write_seed(cloud, vm, public_key)
    boot(cloud, vm, image)


def host_keys(console_log: Path) -> list[str]:
    """The host public keys cloud-init printed on the serial console at first boot (the newest block)."""
    try:
        text = console_log.read_text(errors="replace")
    except FileNotFoundError:
        return []
    blocks = KEY_BLOCK.findall(text.replace("\r", ""))
    if not blocks:
        return []
    keys = [line.strip() for line in blocks[-1].splitlines() if line.strip().startswith(("ssh-", "ecdsa-"))]
    return [" ".join(key.split()[:2]) for key in keys]


def ssh_options(cloud: VmCloud, vm: Vm) -> list[str]:
    """The recorded host key required, under the VM's name; the cloud's key only. tfprov's own ssh and the
    inventory's ansible_ssh_common_args both use them."""
    return ["-F", "/dev/null", "-o", "IdentitiesOnly=yes", "-o", "StrictHostKeyChecking=yes",
            "-o", f"UserKnownHostsFile={cloud.ssh.known_hosts}", "-o", "GlobalKnownHostsFile=/dev/null",
            "-o", f"HostKeyAlias={vm.name}"]


def ssh_command(cloud: VmCloud, vm: Vm, *remote: str) -> list[str]:
    return ["ssh", *ssh_options(cloud, vm), "-p", str(vm.ssh_port), "-i", str(cloud.ssh.key),
            "-o", "ConnectTimeout=5", "-o", "BatchMode=yes", f"{ssh.LOGIN_USER}@127.0.0.1", *remote]


def vm_ssh(cloud: VmCloud, vm: Vm, command: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(ssh_command(cloud, vm, command), capture_output=True, text=True, timeout=timeout)


def wait_ready(cloud: VmCloud, vms: list[Vm], console: Console, started: float,
               recorded: dict[str, list[str]]) -> dict[str, list[str]]:
    """Wait until every VM answers SSH with its host keys, then for cloud-init to finish. A new VM's keys are those
    cloud-init prints on its console at first boot; a VM started again prints none and keeps its recorded ones."""
    keys = dict(recorded)
    pending = list(vms)
    while pending:
        if time.monotonic() - started > BOOT_TIMEOUT:
            names = ", ".join(vm.name for vm in pending)
            raise TfprovError(f"{names}: no SSH login within {BOOT_TIMEOUT} s; see its console.log under "
                              f"{cloud.directory}")
        for vm in list(pending):
            if not pid_of(cloud, vm):
                raise TfprovError(f"{vm.name}: QEMU exited while booting; see {cloud.vm_dir(vm) / 'console.log'}")
            found = host_keys(cloud.vm_dir(vm) / "console.log") or recorded.get(vm.name, [])
            if not found:
                continue
            keys[vm.name] = found
            record_host_keys(cloud, keys)
            if vm_ssh(cloud, vm, "true", timeout=30).returncode == 0:
                pending.remove(vm)
                console.print(f"{vm.name}: SSH as {ssh.LOGIN_USER} after {time.monotonic() - started:.0f} s "
                              f"(host key {found[0].split()[0]} from the console)", highlight=False)
        time.sleep(2)
    for vm in vms:
        # A VM that was already running may be rebooting or too busy to answer in time: ssh's own failure (255) is
        # tried again until the boot timeout, cloud-init's answer is final.
        while True:
            done = vm_ssh(cloud, vm, "cloud-init status --wait", timeout=BOOT_TIMEOUT)
            if done.returncode != 255 or time.monotonic() - started > BOOT_TIMEOUT:
                break
            time.sleep(2)
        if "status: done" not in done.stdout:
            raise TfprovError(f"{vm.name}: cloud-init did not finish: {(done.stdout + done.stderr).strip()[-200:]}")
    return keys


def record_host_keys(cloud: VmCloud, keys: dict[str, list[str]]) -> None:
    """Exactly these VMs' keys, under their names (HostKeyAlias): a VM made again brings new keys, the old go."""
    lines = [f"{name} {key}" for name, found in sorted(keys.items()) for key in found]
    ssh.write_known_hosts(cloud.ssh, lines)


def known_keys(cloud: VmCloud) -> dict[str, list[str]]:
    keys: dict[str, list[str]] = {}
    if cloud.ssh.known_hosts.is_file():
        for line in cloud.ssh.known_hosts.read_text().splitlines():
            name, *key = line.split()
            keys.setdefault(name, []).append(" ".join(key))
    return keys


# --- inventory: the container clouds' group contract ---

def inventory(cloud: VmCloud) -> dict:
    """`--list` of Ansible's script protocol: the container clouds' groups and host vars (_meta: no --host calls)."""
    vms = cloud.load()
    files = cloud.ssh
    hosts = {}
    for vm in vms:
        hosts[vm.name] = {
            "ansible_host": "127.0.0.1", "ansible_port": vm.ssh_port, "ansible_user": ssh.LOGIN_USER,
            "ansible_ssh_private_key_file": str(files.key), "ansible_ssh_host_key_checking": True,
            "ansible_ssh_common_args": " ".join(ssh_options(cloud, vm)), "ansible_become": True,
            "ansible_python_interpreter": "/usr/bin/python3",
            # An emulated VM just back from a reboot, or busy, can miss ssh's keep-alives: ssh's own failures (255)
            # are tried again before a VM is called unreachable (the container clouds keep Ansible's 0).
            "ansible_ssh_retries": 3,
            "tfprov_node_role": vm.role, "tfprov_node_state": "running" if pid_of(cloud, vm) else "stopped",
            "tfprov_tf_address": vm.address, "tfprov_tf_port": 2222, "tfprov_serving_grpc_port": 8500,
            "tfprov_serving_rest_port": 8501, "tfprov_no_proxy": f"{SUBNET}.0/24", "tfprov_http_proxy": PROXY_URL,
            "tfprov_local_wheelhouse": WHEELHOUSE_URL if serving_image.WHEELHOUSE.is_dir() else "",
            "tfprov_ca_bundle": nodes.NODE_CA_BUNDLE if nodes.HOST_CA_BUNDLE.is_file() else "",
            "tfprov_require_gpu": False,  # no GPU can be attached here, as on the container nodes
            # 1 GiB VMs: TensorFlow's CPU build installs, imports and runs the check in them (measured), below the
            # 3.5 GB preflight asks of a GPU node.
            "preflight_min_memory_mb": MEMORY_MIB - 100,
        }
    groups: dict[str, dict] = {"tfprov_nodes": {"hosts": sorted(hosts)}}
    for vm in vms:
        groups.setdefault(f"tfprov_{vm.role}", {"hosts": []})["hosts"].append(vm.name)
    return {**groups, "_meta": {"hostvars": hosts}}


def write_inventory(cloud: VmCloud) -> Path:
    """An inventory script (Ansible's `script` plugin), read live: a VM the idle guard powered off is 'stopped'."""
    cloud.inventory.write_text(
        f"#!{sys.executable}\n"
        f"# Written by `tfprov up local --kind vm`: the VM cloud {cloud.name}, its VMs' state read at each use.\n"
        "import json, os\n"
        f"os.environ['TFPROV_HOME'] = {str(project_root())!r}\n"
        "from tfprov.local import vms\n"
        f"print(json.dumps(vms.inventory(vms.VmCloud({cloud.name!r}))))\n")
    cloud.inventory.chmod(0o755)
    return cloud.inventory


# --- up / down ---

def up(count: int, roles: list[str] | None, name: str | None, console: Console,
       base: Path | None = None) -> tuple[VmCloud, list[Vm]]:
    """Converge the VM cloud to these nodes; base: boot new VMs from this disk (a baked image) instead."""
    cloud = VmCloud(check_name(name or DEFAULT_NAME))
    if cloud.directory.is_dir() and any(cloud.directory.iterdir()) and not cloud.state.is_file():
        raise TfprovError(f"local cloud {cloud.name} holds container nodes: tfprov down local --name {cloud.name} "
                          "first, or give the VMs another --name")
    if base is not None and not base.is_file():
        raise TfprovError(f"--image {base}: no such VM image (tfprov local bake NODE makes one)")
    roles = assign_roles(count, roles)  # the container clouds' layouts and role checks
    image = vm_image.build(console)
    public_key = ssh.ensure_key_pair(cloud.ssh)
    existing = {vm.index: vm for vm in cloud.load()}
    for vm in existing.values():
        if vm.index > count:
            remove(cloud, vm, console)
    vms, new = [], []
    started = time.monotonic()
    for index, role in enumerate(roles, start=1):
        vm = existing.get(index)
        same_base = vm is not None and (base is None or vm.base == str(base))
        if vm and vm.role == role and same_base and (cloud.vm_dir(vm) / "disk.qcow2").is_file():
            boot(cloud, vm, image)  # a stopped VM is started
        else:
            if vm:
                remove(cloud, vm, console)
            vm = Vm(index, role, cloud.name, gateway.free_loopback_port(),
                    f"{cloud.name}-{index}-{os.urandom(4).hex()}", str(base or image.disk), str(image.directory))
            new.append(vm)
        vms.append(vm)
        cloud.save(vms + [v for i, v in existing.items() if i > index and i <= count])
    console.print(f"local cloud {cloud.name}: booting {len(new)} new VM(s) under QEMU (TCG: about 30 s each "
                  f"alone, more when they boot together)", highlight=False)
    for vm in new:
        create(cloud, vm, image, public_key)
    kept = {vm.name for vm in vms if vm not in new}  # a new VM's old keys (of the VM it replaced) are not kept
    recorded = {name: found for name, found in known_keys(cloud).items() if name in kept}
    record_host_keys(cloud, wait_ready(cloud, vms, console, started, recorded))
    cloud.save(vms)
    write_inventory(cloud)
    return cloud, vms


def stop(cloud: VmCloud, vm: Vm, timeout: float = 60) -> bool:
    """Power the VM off as a cloud's stop does (ACPI), then make sure QEMU is gone. False when it had to be killed
    (its disk may then miss writes: cache=unsafe)."""
    pid = pid_of(cloud, vm)
    if not pid:
        return True
    monitor(cloud, vm, "system_powerdown")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and pid_of(cloud, vm):
        time.sleep(0.5)
    if pid_of(cloud, vm):
        os.kill(pid, signal.SIGKILL)
        return False
    return True


def monitor(cloud: VmCloud, vm: Vm, command: str) -> None:
    """One command to QEMU's human monitor."""
    with socket.socket(socket.AF_UNIX) as sock:
        sock.settimeout(5)
        try:
            sock.connect(str(cloud.vm_dir(vm) / "monitor.sock"))
            sock.sendall(command.encode() + b"\n")
            time.sleep(0.2)
        except OSError as exc:
            raise TfprovError(f"{vm.name}: QEMU's monitor did not answer ({exc})") from None


def remove(cloud: VmCloud, vm: Vm, console: Console) -> None:
    if pid := pid_of(cloud, vm):
        os.kill(pid, signal.SIGKILL)  # its disk goes too: nothing to shut down cleanly for
        for _ in range(50):
            if not pid_of(cloud, vm):
                break
            time.sleep(0.1)
    subprocess.run(["rm", "-rf", "--", str(cloud.vm_dir(vm))], check=False)
    console.print(f"{vm.name}: removed (QEMU stopped, its disk deleted)", highlight=False)


def down(name: str | None, console: Console) -> int:
    cloud = VmCloud(check_name(name or DEFAULT_NAME))
    vms = cloud.load()
    for vm in vms:
        remove(cloud, vm, console)
    cloud.ssh.known_hosts.unlink(missing_ok=True)
    try:
        gateway.stop_processes(json.loads((cloud.directory / gateway.STATE_FILE).read_text()))
    except (OSError, ValueError):
        pass
    subprocess.run(["rm", "-rf", "--", str(cloud.directory)], check=False)  # the hub stops with its socket
    return len(vms)



# --- faults on demand (`tfprov local fault` on a VM cloud) ---

def boot_id(cloud: VmCloud, vm: Vm) -> str:
    proc = vm_ssh(cloud, vm, "cat /proc/sys/kernel/random/boot_id", timeout=15)
    return proc.stdout.strip() if proc.returncode == 0 else ""


def wait_ssh(cloud: VmCloud, vm: Vm, timeout: float, changed_from: str = "") -> str:
    """The VM's boot id once it answers SSH (with its recorded host key) on a boot other than changed_from."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        current = boot_id(cloud, vm)
        if current and current != changed_from:
            return current
        time.sleep(2)
    raise TfprovError(f"{vm.name} did not answer SSH within {timeout:.0f} s; see {cloud.vm_dir(vm) / 'console.log'}")


def set_cut(cloud: VmCloud, vm: Vm, cut: bool) -> None:
    """The hub drops a cut VM's frames both ways (the link is down; the VM keeps running)."""
    path = cloud.hub_socket.with_suffix(".cut")
    macs = set(path.read_text().split()) if path.is_file() else set()
    macs = macs | {vm.mac_segment} if cut else macs - {vm.mac_segment}
    path.write_text("".join(f"{mac}\n" for mac in sorted(macs)))


def fault(name: str, node: str, action: str, wait: bool = True, timeout: float = 300) -> str:
    """cut / restore: the VM's link on the segment; stop: ACPI power-off, as a cloud's stop; start: boot its disk
    again; reboot: the guest's own `systemctl reboot`, back on the same disk and address."""
    cloud = VmCloud(name)
    vms = cloud.load()
    vm = next((vm for vm in vms if node in (vm.name, str(vm.index))), None)
    if vm is None:
        names = ", ".join(vm.name for vm in vms) or "none: tfprov up local --kind vm first"
        raise TfprovError(f"no VM {node!r} in the local cloud {name} (its VMs: {names})")
    running = pid_of(cloud, vm) is not None
    if action in ("cut", "restore"):
        set_cut(cloud, vm, action == "cut")
        return "link cut: unreachable on the segment, still running" if action == "cut" else "link restored"
    if action == "stop":
        stop(cloud, vm)
        return "stopped (its disk and address are kept)"
    if action == "start":
        boot(cloud, vm, vm_image.VmImage(Path(vm.image)))
        if wait:
            wait_ssh(cloud, vm, timeout)
        return "started"
    if action == "reboot":
        if not running:
            raise TfprovError(f"{vm.name} is stopped, not running: start it instead")
        started, before = time.monotonic(), boot_id(cloud, vm)
        vm_ssh(cloud, vm, "sudo systemctl reboot", timeout=30)
        if not wait:
            return "rebooting"
        wait_ssh(cloud, vm, timeout, changed_from=before)
        return f"rebooted in {time.monotonic() - started:.1f} s"
    raise TfprovError(f"{action} is not a fault of the VM flavour: use cut, restore, stop, start or reboot")


# --- images from VMs (the VM cloud's form of a cloud's create-image) ---

BAKED = vm_image.CACHE / "baked"


def baked_path(image: str) -> Path:
    """A baked image by name (under the cache) or by path."""
    return Path(image) if "/" in image else BAKED / f"{image}.qcow2"


def bake(name: str, node: str, image: str, console: Console) -> Path:
    """Stop the VM (ACPI power-off, so its file systems are clean) and copy its disk, flattened, into an image that
    new VMs boot from. Generalize the VM first (playbooks/bake_image.yml --tags generalize), as on a cloud."""
    cloud = VmCloud(name)
    vm = next((vm for vm in cloud.load() if node in (vm.name, str(vm.index))), None)
    if vm is None:
        raise TfprovError(f"no VM {node!r} in the local cloud {name}")
    dest = baked_path(image)
    dest.parent.mkdir(parents=True, exist_ok=True)
    if not stop(cloud, vm, timeout=180):
        raise TfprovError(f"{vm.name} did not power off within 3 minutes and was killed: its disk is not imaged "
                          "(it may miss writes); start it with `tfprov up local --kind vm` and bake again")
    tmp = dest.with_suffix(".partial")
    started = time.monotonic()
    run(["qemu-img", "convert", "-O", "qcow2", str(cloud.vm_dir(vm) / "disk.qcow2"), str(tmp)],
        f"qemu-img convert of {vm.name}")
    tmp.replace(dest)  # an image is there whole or not at all
    console.print(f"{vm.name}: stopped and imaged to {dest} in {time.monotonic() - started:.0f} s", highlight=False)
    return dest
