"""Node containers `tfprov-<cloud>-N`: systemd, a role each, and sshd for SSH mode. On the private network each
node has its own address (network.py) and every node the same ports; on the host's network each node has ports
of its own. `up` converges a cloud to the nodes asked for; `down` removes that cloud, and only it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console

from ..errors import TfprovError
from ..project import project_root
from . import cloud as cloud_mod
from . import gateway, images, network, serving_image, ssh
from .cloud import Cloud
from .commands import apt_install, docker, is_root
from .engine import ensure_engine

CLUSTER_LABEL = "tfprov.cluster"  # the cloud's name
SLOT_LABEL = "tfprov.slot"
ROLES = ("chief", "worker", "ps", "evaluator", "serving", "cache")
# The default layout by node count: the smallest cluster of each size that shows something new (a worker to
# mirror with, a parameter server, a second worker, TF Serving); more nodes are more workers.
DEFAULT_LAYOUTS = {
    1: ("chief",),
    2: ("chief", "worker"),
    3: ("chief", "worker", "ps"),
    4: ("chief", "worker", "worker", "ps"),
    5: ("chief", "worker", "worker", "ps", "serving"),
}
IMAGE_LABEL = "tfprov.image"
SUITE_LABEL = "tfprov.suite"
DEFAULT_SUITE = "bookworm"
# The host's CA bundle, mounted into every node: pip there must trust what the host trusts (a TLS-inspecting
# proxy's CA, say). The inventory hands its path to the roles as tfprov_ca_bundle.
HOST_CA_BUNDLE = Path(os.environ.get("TFPROV_HOST_CA_BUNDLE", "/etc/ssl/certs/ca-certificates.crt"))
NODE_CA_BUNDLE = "/usr/local/share/tfprov/host-ca.crt"
SYSTEMD_RUN = ["--tmpfs", "/run", "--tmpfs", "/run/lock", "--tmpfs", "/tmp",
               "-v", "/sys/fs/cgroup:/sys/fs/cgroup:ro"]
# Nodes that run a Docker engine of their own (serving): what that engine needs to mount, make cgroups and
# set up seccomp for its containers. The engine's daemon.json keeps it off the host's network (no bridge,
# no iptables): the inventories hand those settings to the nvidia_docker role. /var/lib/docker is an anonymous
# volume (the host's file system, removed with the node): there the inner engine can use overlay2, not vfs.
ENGINE_RUN = ["--tmpfs", "/run", "--tmpfs", "/run/lock", "--tmpfs", "/tmp", "--cgroupns", "host",
              "-v", "/var/lib/docker", "-v", "/sys/fs/cgroup:/sys/fs/cgroup:rw",
              "--cap-add", "SYS_ADMIN", "--cap-add", "NET_ADMIN",
              "--security-opt", "seccomp=unconfined", "--security-opt", "apparmor=unconfined"]
ENGINE_ROLES = ("serving",)
# A job's shared directory (tfprov job): one host directory in every node, where dist_tf_cluster_shared_dir points, as
# an NFS mount or a bucket would be on a cloud. Checkpoints written there survive a node that is lost.
NODE_SHARED_DIR = "/srv/tfprov/shared"
SHARED_LABEL = "tfprov.shared_dir"
# Private network: every node listens on the same ports, as cloud VMs do.
PRIVATE_PORTS = {"ssh_port": 22, "tf_port": 2222, "serving_grpc_port": 8500, "serving_rest_port": 8501}
# Host network: node N of the cloud in slot S listens on BASE + 1000 * S + N (N < 100: no two ranges meet).
HOST_PORT_BASES = {"ssh_port": ssh.SSH_PORT_BASE, "tf_port": 22220, "serving_grpc_port": 28500,
                   "serving_rest_port": 28600}


@dataclass(frozen=True)
class Node:
    index: int
    role: str
    suite: str
    image: str = ""  # "" is the suite's node image, tfprov/node:<suite>
    cloud: Cloud = field(default_factory=Cloud)
    shared_dir: str = ""  # a host directory mounted at NODE_SHARED_DIR in every node (tfprov job's shared directory)

    @property
    def image_ref(self) -> str:
        return self.image or images.image_name(self.suite)

    @property
    def name(self) -> str:
        return f"{self.cloud.prefix}{self.index}"

    @property
    def address(self) -> str:
        """Where the node's services listen: its private address, or the host's loopback."""
        return self.cloud.address(self.index)

    @property
    def ports(self) -> dict[str, int]:
        if self.cloud.private:
            return dict(PRIVATE_PORTS)
        return {key: base + 1000 * self.cloud.slot + self.index for key, base in HOST_PORT_BASES.items()}

    @property
    def ssh_proxy(self) -> str:
        """ssh's ProxyCommand into the lab namespace, the jump to a private address (root, as the cloud needs)."""
        if not self.cloud.private:
            return ""
        return f"nsenter --net=/var/run/netns/{self.cloud.namespace} socat STDIO TCP:%h:%p,connect-timeout=10"

    @property
    def labels(self) -> dict[str, str]:
        ports = {f"tfprov.{k}": str(v) for k, v in self.ports.items()}
        ca = {"tfprov.ca_bundle": NODE_CA_BUNDLE} if HOST_CA_BUNDLE.is_file() else {}
        # Private network: the subnet, and the gateway's proxy, wheelhouse and pip cache (the nodes' only way out).
        subnet = {"tfprov.subnet": self.cloud.subnet, "tfprov.http_proxy": gateway.proxy_url(self.cloud),
                  "tfprov.wheelhouse": gateway.wheelhouse_url(self.cloud),
                  "tfprov.pip_index": gateway.pip_index_url(self.cloud)} if self.cloud.private else {}
        return {CLUSTER_LABEL: self.cloud.name, SLOT_LABEL: str(self.cloud.slot), "tfprov.network": self.cloud.network,
                "tfprov.role": self.role, "tfprov.index": str(self.index), "tfprov.address": self.address,
                "tfprov.ssh_proxy": self.ssh_proxy, SUITE_LABEL: self.suite,
                images.RECIPE_LABEL: images.recipe_digest(), IMAGE_LABEL: self.image_ref, **subnet, **ports, **ca,
                **({SHARED_LABEL: self.shared_dir} if self.shared_dir else {})}

    @property
    def runs_engine(self) -> bool:
        return self.role in ENGINE_ROLES

    @property
    def mounts(self) -> list[str]:
        ca = ["-v", f"{HOST_CA_BUNDLE}:{NODE_CA_BUNDLE}:ro"] if HOST_CA_BUNDLE.is_file() else []
        # The serving image cannot be pulled here: its `docker save` archive is read from the host's image cache.
        archives = ["-v", f"{serving_image.ARCHIVE_DIR}:{serving_image.ARCHIVE_DIR}:ro"] if self.runs_engine else []
        shared = ["-v", f"{self.shared_dir}:{NODE_SHARED_DIR}"] if self.shared_dir else []
        return ca + archives + shared

    @property
    def run_args(self) -> list[str]:
        args = ENGINE_RUN if self.runs_engine else SYSTEMD_RUN
        # A node with a namespace of its own may manage it, as root on a VM does (its firewall: nftables, ufw); on
        # the host's network the same capability would change the host's network, so it is not given there.
        if self.cloud.private and "NET_ADMIN" not in args:
            args = [*args, "--cap-add", "NET_ADMIN"]
        return args


def ssh_labels(files: ssh.SshFiles) -> dict[str, str]:
    """What the SSH inventory reads: who logs in, with which key, checking which recorded host keys."""
    return {"tfprov.ssh_user": ssh.LOGIN_USER, "tfprov.ssh_key": str(files.key),
            "tfprov.ssh_known_hosts": str(files.known_hosts)}


def assign_roles(count: int, roles: list[str] | None = None) -> list[str]:
    """DEFAULT_LAYOUTS, then more workers (appended: growing the cloud keeps the nodes it has); or exactly the
    roles asked for."""
    if roles:
        if len(roles) != count:
            raise TfprovError(f"--roles names {len(roles)} roles for {count} nodes")
        unknown = sorted(set(roles) - set(ROLES))
        if unknown:
            raise TfprovError(f"unknown node role {unknown[0]!r}: use {', '.join(ROLES[:-1])} or {ROLES[-1]}")
        if roles.count("cache") > 1:
            raise TfprovError(f"--roles names {roles.count('cache')} cache nodes: give one (every node's pip uses it)")
        return roles
    if count < 1:
        raise TfprovError("--nodes must be at least 1")
    largest = max(DEFAULT_LAYOUTS)
    return list(DEFAULT_LAYOUTS[min(count, largest)]) + ["worker"] * max(0, count - largest)


def image_suite(image: str, suite: str | None) -> str:
    """The suite of a baked image (its tfprov.suite label, set by tests/support/bake_node.py), checked against
    --suite. The image must exist here: there is no registry to pull it from."""
    proc = subprocess.run(["docker", "image", "inspect", "--format", "{{json .Config.Labels}}", image],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise TfprovError(f"image {image} does not exist: bake it first (make baked-image) or leave out --image")
    baked = (json.loads(proc.stdout or "null") or {}).get(SUITE_LABEL)
    if suite and baked and baked != suite:
        raise TfprovError(f"image {image} holds Debian {baked}, not {suite}: leave out --suite or give another image")
    return suite or baked or DEFAULT_SUITE


def _containers(label: str) -> list[dict]:
    """Containers with this label (key=value), running or not, by index, with their full id (their cgroup's name)
    and labels (from inspect: a label's value may hold commas, which `docker ps` would cut at)."""
    ids = docker("ps", "-aq", "--filter", f"label={label}", what="docker ps").split()
    if not ids:
        return []
    found = json.loads(docker("inspect", *ids, what="docker inspect") or "[]")
    entries = [{"name": c["Name"].lstrip("/"), "id": c["Id"], "state": c["State"]["Status"],
                "labels": c["Config"]["Labels"] or {}} for c in found]
    return sorted(entries, key=lambda n: int(n["labels"].get("tfprov.index", 0)))


def local_nodes(name: str | None = None) -> list[dict]:
    """Every node container of one local cloud (default: TFPROV_LOCAL_CLOUD or local), running or not, by index."""
    return _containers(f"{CLUSTER_LABEL}={name or cloud_mod.default_name()}")


def holders(name: str) -> list[dict]:
    return _containers(f"{network.HOLDER_LABEL}={name}")


def clouds_up() -> dict[str, int]:
    """The slot of every local cloud that has a node now, by cloud name."""
    out = docker("ps", "-a", "--filter", f"label={SLOT_LABEL}", "--format",
                 f'{{{{.Label "{CLUSTER_LABEL}"}}}} {{{{.Label "{SLOT_LABEL}"}}}}', what="docker ps")
    return {name: int(slot) for name, slot in (line.split() for line in out.splitlines() if len(line.split()) == 2)}


def find_cloud(name: str | None = None, network_mode: str | None = None, subnet: str | None = None,
               count: int = 1) -> Cloud:
    """The cloud to converge: its slot (kept while it is up), and its network and subnet as given, else as it
    has them now, else the defaults."""
    name = cloud_mod.check_name(name or cloud_mod.default_name())
    slot = cloud_mod.pick_slot(name, clouds_up())
    current = next(iter(local_nodes(name)), {"labels": {}})["labels"]
    network_mode = network_mode or current.get("tfprov.network") or cloud_mod.DEFAULT_NETWORK
    if network_mode != "private":
        if subnet:
            raise TfprovError("--subnet is for the private network: add --network private")
        return Cloud(name, slot, network_mode)
    subnet = subnet or current.get("tfprov.subnet") or cloud_mod.default_subnet(slot)
    return Cloud(name, slot, network_mode, str(cloud_mod.check_subnet(subnet, count)))


def cloud_of(node: dict) -> Cloud:
    """The cloud a node container belongs to, from its labels."""
    labels = node["labels"]
    return Cloud(labels[CLUSTER_LABEL], int(labels.get(SLOT_LABEL, 0)),
                 labels.get("tfprov.network", "host"), labels.get("tfprov.subnet", ""))


def wait_systemd(name: str, timeout: float = 90) -> str:
    """systemd in the node has finished booting: 'running', or 'degraded' (a unit failed, the node works).

    Right after `docker run` systemd may not have its bus yet ("Failed to connect to bus"): ask again.
    """
    deadline = time.monotonic() + timeout
    state = ""
    while time.monotonic() < deadline:
        proc = subprocess.run(["docker", "exec", name, "timeout", "30", "systemctl", "is-system-running", "--wait"],
                              capture_output=True, text=True)
        state = proc.stdout.strip() or proc.stderr.strip()
        if state in ("running", "degraded"):
            return state
        time.sleep(1)
    return state


def serving_labels(image: str, archive: Path, root: Path) -> dict[str, str]:
    """What the inventories hand the tf_serving role on serving nodes: the stand-in image, its archive, and the
    example model (this checkout's examples/digits), so `tfprov run serving` serves something out of the box."""
    example = root / "examples" / "digits"
    models = [{"name": "digits", "source": str(example / "export" / "digits"),
               "sample_input": str(example / "sample_request.json")}]
    return {"tfprov.serving_image": image, "tfprov.serving_archive": str(archive),
            "tfprov.serving_models": json.dumps(models, separators=(",", ":"))}


def _converge_container(node: Node, labels: dict[str, str], existing: dict | None, image: str,
                        console: Console, replace: bool = False) -> None:
    if existing and not replace and all(existing["labels"].get(k) == v for k, v in labels.items()):
        if existing["state"] != "running":
            docker("start", node.name, what=f"starting {node.name}")
            console.print(f"{node.name}: started")
        else:
            console.print(f"{node.name}: running")
        return
    if existing:
        docker("rm", "-f", "-v", node.name, what=f"replacing {node.name}")
    label_args = [arg for k, v in labels.items() for arg in ("--label", f"{k}={v}")]
    net = ["--network", f"container:{network.holder_name(node.name)}"] if node.cloud.private else [
        "--network", "host"]
    # The restart policy brings a node back after `systemctl reboot` in it, as a VM comes back; a node stopped
    # or killed by hand stays down.
    docker("run", "-d", "--name", node.name, *net, "--restart", "unless-stopped", "--stop-signal", "SIGRTMIN+3",
           *node.run_args, *node.mounts, *label_args, image,
           "/lib/systemd/systemd", what=f"creating {node.name}")
    where = f", {node.address}" if node.cloud.private else ""
    console.print(f"{node.name}: created ({node.role}, {node.suite}{where})")


def _converge_holder(node: Node, existing: dict | None, image: str) -> bool:
    """Node N's network namespace, holder container and link; True if the holder was made anew (the node, joined
    to the old holder's namespace, must then be made anew too)."""
    made = False
    if not (existing and existing["state"] == "running"
            and existing["labels"].get("tfprov.address") == node.address):
        if existing:
            docker("rm", "-f", network.holder_name(node.name), what=f"replacing {network.holder_name(node.name)}")
        docker(*network.holder_run_args(node.cloud, node.index, node.name, image),
               what=f"creating {network.holder_name(node.name)}")
        made = True
    network.plumb(node.cloud, node.index, network.holder_name(node.name))
    return made


def _set_up_ssh(node: Node, public_key: str) -> str:
    """sshd and the login user in the node; its host key, read over docker exec, as a known_hosts line."""
    port = node.ports["ssh_port"]
    out = docker("exec", "-i", node.name, "sh", "-s", what=f"{node.name}: setting up sshd",
                 stdin=ssh.render_setup_script(port, public_key, listen=node.address))
    return ssh.known_hosts_line(node.address, port, out.splitlines()[-1] if out else "")


def _remove(names: list[str]) -> None:
    for name in names:
        docker("rm", "-f", "-v", name, what=f"removing {name}")


def up(count: int, suite: str | None, console: Console, roles: list[str] | None = None,
       image: str | None = None, name: str | None = None, network_mode: str | None = None,
       subnet: str | None = None, shared_dir: str | None = None) -> list[Node]:
    """Converge one local cloud to exactly these nodes: start what exists, create what is missing, replace what
    differs (role, ports, image, network...).

    suite: None is the image's own (a baked one's label), else bookworm.
    image: start the nodes from it (one baked from a converged node) instead of tfprov/node:<suite>.
    name, network_mode, subnet: the cloud (cloud.py); None keeps what the cloud has, else the defaults.
    shared_dir: a host directory mounted in every node at NODE_SHARED_DIR (a node without it is replaced).
    """
    roles = assign_roles(count, roles)
    ensure_engine(console)
    cloud = find_cloud(name, network_mode, subnet, count)
    if "cache" in roles and not cloud.private:
        # On the host's network its port would be open on the host's own loopback, for anything on the host.
        raise TfprovError("a cache node needs the private network: add --network private")
    if image:
        suite = image_suite(image, suite)
    else:
        suite = suite or DEFAULT_SUITE
        image = images.build_image(suite, console)
    wanted = [Node(i, role, suite, image, cloud, str(Path(shared_dir).resolve()) if shared_dir else "")
              for i, role in enumerate(roles, 1)]
    files = ssh.ssh_files(project_root(), cloud.name)
    needed = {"ssh-keygen": "openssh-client"} | (gateway.needed_commands() if cloud.private else {})
    missing = sorted({package for command, package in needed.items() if not shutil.which(command)})
    if missing and is_root():  # the controller's side: ssh; the jump into the lab namespace, the gateway
        apt_install(console, *missing)
        gateway.disable_packaged_services(missing)
    public_key = ssh.ensure_key_pair(files)
    serving = {}
    if any(node.runs_engine for node in wanted):
        serving = serving_labels(*serving_image.build_serving_image(None, console), project_root())
    existing = {n["name"]: n for n in local_nodes(cloud.name)}
    existing_holders = {n["name"]: n for n in holders(cloud.name)}
    for extra in sorted(set(existing) - {n.name for n in wanted}):
        _remove([extra, *({network.holder_name(extra)} & set(existing_holders))])
        console.print(f"{extra}: removed (not among the {count} nodes asked for)")
    if cloud.private:
        network.ensure_lab(cloud)
        urls = gateway.ensure_gateway(cloud, project_root(), images.debian_mirror(), serving_image.WHEELHOUSE)
        console.print(f"gateway {cloud.gateway}: proxy {urls['proxy']}, pip cache {urls['pip_index']}"
                      + (f", wheelhouse {urls['wheelhouse']}" if "wheelhouse" in urls else ""))
    else:
        gateway.stop_gateway(cloud, project_root())
        _remove(sorted(existing_holders))  # a cloud moved to the host's network keeps no namespaces
        network.remove_lab(cloud)
    for node in wanted:
        holder_made = cloud.private and _converge_holder(node, existing_holders.get(network.holder_name(node.name)),
                                                         image)
        labels = node.labels | ssh_labels(files) | (serving if node.runs_engine else {})
        _converge_container(node, labels, existing.get(node.name), image, console, replace=holder_made)
    known_hosts = []
    for node in wanted:
        state = wait_systemd(node.name)
        if state not in ("running", "degraded"):
            raise TfprovError(f"{node.name}: systemd did not finish booting ({state or 'no answer'})")
        known_hosts.append(_set_up_ssh(node, public_key))
    ssh.write_known_hosts(files, known_hosts)
    return wanted


def down(console: Console, name: str | None = None) -> int:
    """Remove one local cloud (default: TFPROV_LOCAL_CLOUD or local): its nodes, their namespaces, its lab."""
    cloud = Cloud(cloud_mod.check_name(name or cloud_mod.default_name()))
    nodes = local_nodes(cloud.name)
    for node in nodes:
        _remove([node["name"]])
        console.print(f"{node['name']}: removed")
    _remove([holder["name"] for holder in holders(cloud.name)])
    gateway.stop_gateway(cloud, project_root())
    network.remove_lab(cloud)
    ssh.ssh_files(project_root(), cloud.name).known_hosts.unlink(missing_ok=True)  # their host keys went with them
    return len(nodes)
