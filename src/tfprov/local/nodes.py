"""Node containers `tfprov-local-N`: systemd on the host's network, a role each, their own ports, and sshd for
SSH mode. `up` converges to the nodes asked for; `down` removes them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from ..errors import TfprovError
from ..project import project_root
from . import images, serving_image, ssh
from .commands import apt_install, docker, is_root
from .engine import ensure_engine

CLUSTER_LABEL = "tfprov.cluster=local"
NAME_PREFIX = "tfprov-local-"
ROLES = ("chief", "worker", "ps", "evaluator", "serving")
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


@dataclass(frozen=True)
class Node:
    index: int
    role: str
    suite: str
    image: str = ""  # "" is the suite's node image, tfprov/node:<suite>

    @property
    def image_ref(self) -> str:
        return self.image or images.image_name(self.suite)

    @property
    def name(self) -> str:
        return f"{NAME_PREFIX}{self.index}"

    @property
    def ports(self) -> dict[str, int]:
        """Distinct per node, since all nodes listen on the host's network."""
        return {
            "ssh_port": ssh.SSH_PORT_BASE + self.index,
            "tf_port": 22220 + self.index,
            "serving_grpc_port": 28500 + self.index,
            "serving_rest_port": 28600 + self.index,
        }

    @property
    def labels(self) -> dict[str, str]:
        ports = {f"tfprov.{k}": str(v) for k, v in self.ports.items()}
        ca = {"tfprov.ca_bundle": NODE_CA_BUNDLE} if HOST_CA_BUNDLE.is_file() else {}
        return {"tfprov.cluster": "local", "tfprov.role": self.role, "tfprov.index": str(self.index),
                SUITE_LABEL: self.suite, images.RECIPE_LABEL: images.recipe_digest(),
                IMAGE_LABEL: self.image_ref, **ports, **ca}

    @property
    def runs_engine(self) -> bool:
        return self.role in ENGINE_ROLES

    @property
    def mounts(self) -> list[str]:
        ca = ["-v", f"{HOST_CA_BUNDLE}:{NODE_CA_BUNDLE}:ro"] if HOST_CA_BUNDLE.is_file() else []
        # The serving image cannot be pulled here: its `docker save` archive is read from the host's image cache.
        archives = ["-v", f"{serving_image.ARCHIVE_DIR}:{serving_image.ARCHIVE_DIR}:ro"] if self.runs_engine else []
        return ca + archives

    @property
    def run_args(self) -> list[str]:
        return ENGINE_RUN if self.runs_engine else SYSTEMD_RUN


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


def local_nodes() -> list[dict]:
    """Every node container of the local cloud, running or not, by index."""
    out = docker("ps", "-a", "--filter", f"label={CLUSTER_LABEL}", "--format", "{{json .}}", what="docker ps")
    nodes = []
    for line in filter(None, out.splitlines()):
        entry = json.loads(line)
        labels = dict(kv.split("=", 1) for kv in entry.get("Labels", "").split(",") if "=" in kv)
        nodes.append({"name": entry["Names"], "state": entry["State"], "labels": labels})
    return sorted(nodes, key=lambda n: int(n["labels"].get("tfprov.index", 0)))


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
                        console: Console) -> None:
    if existing and all(existing["labels"].get(k) == v for k, v in labels.items()):
        if existing["state"] != "running":
            docker("start", node.name, what=f"starting {node.name}")
            console.print(f"{node.name}: started")
        else:
            console.print(f"{node.name}: running")
        return
    if existing:
        docker("rm", "-f", "-v", node.name, what=f"replacing {node.name}")
    label_args = [arg for k, v in labels.items() for arg in ("--label", f"{k}={v}")]
    docker("run", "-d", "--name", node.name, "--network", "host", "--stop-signal", "SIGRTMIN+3",
           *node.run_args, *node.mounts, *label_args, image,
           "/lib/systemd/systemd", what=f"creating {node.name}")
    console.print(f"{node.name}: created ({node.role}, {node.suite})")


def _set_up_ssh(node: Node, public_key: str) -> str:
    """sshd and the login user in the node; its host key, read over docker exec, as a known_hosts line."""
    port = node.ports["ssh_port"]
    out = docker("exec", "-i", node.name, "sh", "-s", what=f"{node.name}: setting up sshd",
                 stdin=ssh.render_setup_script(port, public_key))
    return ssh.known_hosts_line(port, out.splitlines()[-1] if out else "")


def up(count: int, suite: str | None, console: Console, roles: list[str] | None = None,
       image: str | None = None) -> list[Node]:
    """Converge the local cloud to exactly these nodes: start what exists, create what is missing, replace what
    differs (role, ports, image...).

    suite: None is the image's own (a baked one's label), else bookworm.
    image: start the nodes from it (one baked from a converged node) instead of tfprov/node:<suite>.
    """
    roles = assign_roles(count, roles)
    ensure_engine(console)
    if image:
        suite = image_suite(image, suite)
    else:
        suite = suite or DEFAULT_SUITE
        image = images.build_image(suite, console)
    wanted = [Node(i, role, suite, image) for i, role in enumerate(roles, 1)]
    files = ssh.ssh_files(project_root())
    if not shutil.which("ssh-keygen") and is_root():  # ssh and ssh-keygen: SSH mode's controller side
        apt_install(console, "openssh-client")
    public_key = ssh.ensure_key_pair(files)
    serving = {}
    if any(node.runs_engine for node in wanted):
        serving = serving_labels(*serving_image.build_serving_image(None, console), project_root())
    existing = {n["name"]: n for n in local_nodes()}
    for extra in sorted(set(existing) - {n.name for n in wanted}):
        docker("rm", "-f", "-v", extra, what=f"removing {extra}")
        console.print(f"{extra}: removed (not among the {count} nodes asked for)")
    for node in wanted:
        labels = node.labels | ssh_labels(files) | (serving if node.runs_engine else {})
        _converge_container(node, labels, existing.get(node.name), image, console)
    known_hosts = []
    for node in wanted:
        state = wait_systemd(node.name)
        if state not in ("running", "degraded"):
            raise TfprovError(f"{node.name}: systemd did not finish booting ({state or 'no answer'})")
        known_hosts.append(_set_up_ssh(node, public_key))
    ssh.write_known_hosts(files, known_hosts)
    return wanted


def down(console: Console) -> int:
    nodes = local_nodes()
    for node in nodes:
        docker("rm", "-f", "-v", node["name"], what=f"removing {node['name']}")
        console.print(f"{node['name']}: removed")
    ssh.ssh_files(project_root()).known_hosts.unlink(missing_ok=True)  # their host keys went with them
    return len(nodes)
