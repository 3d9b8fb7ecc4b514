"""The local cloud: a Docker engine with host-only networking and systemd node containers built from Debian.

Nodes share the host's network (no bridge may be created here), so each gets its own service ports.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from .errors import TfprovError

CLUSTER_LABEL = "tfprov.cluster=local"
NAME_PREFIX = "tfprov-local-"
SUITES = ("bookworm", "trixie")
# What every node needs before Ansible can manage it (apt module, lspci, ps for lock holders).
NODE_PACKAGES = "python3,python3-apt,sudo,systemd,systemd-sysv,ca-certificates,pciutils,procps"
# Settings that keep an engine off the host's network: no docker0 bridge, no NAT rules.
SAFE_DAEMON = {"bridge": "none", "iptables": False, "ip-forward": False, "ip-masq": False}
DAEMON_JSON = Path(os.environ.get("TFPROV_DOCKER_DAEMON_JSON", "/etc/docker/daemon.json"))
# The host's CA bundle, mounted into every node: pip there must trust what the host trusts (a TLS-inspecting
# proxy's CA, say). The inventory hands its path to the roles as tfprov_ca_bundle.
HOST_CA_BUNDLE = Path(os.environ.get("TFPROV_HOST_CA_BUNDLE", "/etc/ssl/certs/ca-certificates.crt"))
NODE_CA_BUNDLE = "/usr/local/share/tfprov/host-ca.crt"
SYSTEMD_RUN = ["--tmpfs", "/run", "--tmpfs", "/run/lock", "--tmpfs", "/tmp",
               "-v", "/sys/fs/cgroup:/sys/fs/cgroup:ro"]


@dataclass(frozen=True)
class Node:
    index: int
    role: str
    suite: str

    @property
    def name(self) -> str:
        return f"{NAME_PREFIX}{self.index}"

    @property
    def ports(self) -> dict[str, int]:
        """Distinct per node, since all nodes listen on the host's network."""
        return {
            "tf_port": 22220 + self.index,
            "serving_grpc_port": 28500 + self.index,
            "serving_rest_port": 28600 + self.index,
        }

    @property
    def labels(self) -> dict[str, str]:
        ports = {f"tfprov.{k}": str(v) for k, v in self.ports.items()}
        ca = {"tfprov.ca_bundle": NODE_CA_BUNDLE} if HOST_CA_BUNDLE.is_file() else {}
        return {"tfprov.cluster": "local", "tfprov.role": self.role, "tfprov.index": str(self.index),
                "tfprov.suite": self.suite, **ports, **ca}

    @property
    def mounts(self) -> list[str]:
        return ["-v", f"{HOST_CA_BUNDLE}:{NODE_CA_BUNDLE}:ro"] if HOST_CA_BUNDLE.is_file() else []


def assign_roles(count: int, roles: list[str] | None = None) -> list[str]:
    """chief, worker, ps, serving, then more workers; or exactly the roles asked for."""
    if roles:
        if len(roles) != count:
            raise TfprovError(f"--roles names {len(roles)} roles for {count} nodes")
        unknown = sorted(set(roles) - {"chief", "worker", "ps", "serving"})
        if unknown:
            raise TfprovError(f"unknown node role {unknown[0]!r}: use chief, worker, ps or serving")
        return roles
    if count < 1:
        raise TfprovError("--nodes must be at least 1")
    order = ["chief", "worker", "ps", "serving"]
    return order[:count] + ["worker"] * max(0, count - len(order))


def _run(cmd: list[str], what: str, **kwargs) -> subprocess.CompletedProcess:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    except FileNotFoundError as exc:
        raise TfprovError(f"{what}: {cmd[0]} is not installed") from exc
    if proc.returncode != 0:
        detail = (proc.stderr or proc.stdout).strip().splitlines()
        raise TfprovError(f"{what} failed: {detail[-1] if detail else 'exit ' + str(proc.returncode)}")
    return proc


def docker(*args: str, what: str = "docker") -> str:
    return _run(["docker", *args], what).stdout.strip()


def engine_running() -> bool:
    if not shutil.which("docker"):
        return False
    return subprocess.run(["docker", "info", "--format", "{{.ServerVersion}}"],
                          capture_output=True).returncode == 0


def _is_root() -> bool:
    return os.geteuid() == 0


def write_safe_daemon_json(path: Path = DAEMON_JSON) -> bool:
    """Merge the host-only settings into daemon.json before any engine starts. True if it changed."""
    current = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    merged = {**current, **SAFE_DAEMON}
    if merged == current:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(merged, indent=2) + "\n", encoding="utf-8")
    return True


def _apt_install(console: Console, *packages: str) -> None:
    console.print(f"installing {' '.join(packages)} with apt-get")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    _run(["apt-get", "update", "-qq"], "apt-get update", env=env)
    _run(["apt-get", "install", "-y", "-qq", *packages], f"apt-get install {' '.join(packages)}", env=env)


def ensure_engine(console: Console) -> None:
    """A running engine is used as it is; otherwise, as root, install Debian's docker.io and start it."""
    if engine_running():
        return
    if not _is_root():
        raise TfprovError("no Docker engine is running and tfprov is not root: start one "
                          "(dockerd with bridge none and iptables off) or run `tfprov engine` as root")
    if write_safe_daemon_json():
        console.print(f"wrote host-only networking settings to {DAEMON_JSON}")
    if not shutil.which("dockerd"):
        _apt_install(console, "docker.io")
    if engine_running():  # the package's own service may have started it, with our settings
        return
    if Path("/run/systemd/system").is_dir():
        _run(["systemctl", "start", "docker"], "systemctl start docker")
    else:
        log = open("/var/log/tfprov-dockerd.log", "ab")  # noqa: SIM115 - the daemon keeps it
        subprocess.Popen(["dockerd"], stdout=log, stderr=log, start_new_session=True)
    console.print("starting the Docker engine")
    for _ in range(60):
        if engine_running():
            return
        time.sleep(1)
    raise TfprovError("the Docker engine did not start within 60 s: see /var/log/tfprov-dockerd.log")


def debian_mirror(apt_dir: Path = Path("/etc/apt")) -> str:
    """TFPROV_DEBIAN_MIRROR, else the first Debian archive this host's apt already uses."""
    if env := os.environ.get("TFPROV_DEBIAN_MIRROR"):
        return env
    files = [*sorted(apt_dir.glob("sources.list.d/*.sources")), apt_dir / "sources.list",
             *sorted(apt_dir.glob("sources.list.d/*.list"))]
    texts = [p.read_text(encoding="utf-8") for p in files if p.is_file()]
    for text in texts:
        for url in re.findall(r"(?:^URIs:\s*|^deb\s+(?:\[[^\]]*\]\s+)?)(\S+)", text, re.M):
            if url.rstrip("/").endswith("/debian"):
                return url
    raise TfprovError("no Debian mirror found in /etc/apt: set TFPROV_DEBIAN_MIRROR")


def image_name(suite: str) -> str:
    return f"tfprov/node:{suite}"


def image_exists(suite: str) -> bool:
    return subprocess.run(["docker", "image", "inspect", image_name(suite)], capture_output=True).returncode == 0


def build_image(suite: str, console: Console, rebuild: bool = False) -> str:
    """debootstrap a minimal Debian with systemd and import it; an existing image is reused."""
    if suite not in SUITES:
        raise TfprovError(f"unknown suite {suite!r}: use one of {', '.join(SUITES)}")
    name = image_name(suite)
    if image_exists(suite) and not rebuild:
        console.print(f"image {name}: cached")
        return name
    if not shutil.which("debootstrap"):
        if not _is_root():
            raise TfprovError("debootstrap is not installed: apt-get install debootstrap")
        _apt_install(console, "debootstrap")
    rootfs = Path(f"/var/tmp/tfprov-rootfs-{suite}")
    shutil.rmtree(rootfs, ignore_errors=True)  # a build cut off earlier
    log = Path(f"/var/tmp/tfprov-debootstrap-{suite}.log")
    started = time.monotonic()
    cmd = ["debootstrap", "--variant=minbase", f"--include={NODE_PACKAGES}", suite, str(rootfs), debian_mirror()]
    console.print(f"image {name}: building with debootstrap from {cmd[-1]} (about a minute; log: {log})")
    try:
        with console.status(f"debootstrap {suite}"):
            with log.open("w") as out:
                proc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT)
            if proc.returncode != 0:
                tail = log.read_text(errors="replace").strip().splitlines()[-1:]
                raise TfprovError(f"debootstrap {suite} failed ({tail[0] if tail else 'no output'}): see {log}")
            (rootfs / "etc/hostname").write_text("tfprov-node\n")
            tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
            _run(["docker", "import", "--change", 'CMD ["/lib/systemd/systemd"]', "--change", "ENV container=docker",
                  "-", name], f"docker import {name}", stdin=tar.stdout)
            tar.wait()
    finally:
        shutil.rmtree(rootfs, ignore_errors=True)
    console.print(f"image {name}: built in {time.monotonic() - started:.0f} s")
    return name


def local_nodes() -> list[dict]:
    """Every node container of the local cloud, running or not, by index."""
    out = docker("ps", "-a", "--filter", f"label={CLUSTER_LABEL}", "--format", "{{json .}}", what="docker ps")
    nodes = []
    for line in filter(None, out.splitlines()):
        entry = json.loads(line)
        labels = dict(kv.split("=", 1) for kv in entry.get("Labels", "").split(",") if "=" in kv)
        nodes.append({"name": entry["Names"], "state": entry["State"], "labels": labels})
    return sorted(nodes, key=lambda n: int(n["labels"].get("tfprov.index", 0)))


def _wait_systemd(name: str, timeout: float = 90) -> str:
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


def up(count: int, suite: str, console: Console, roles: list[str] | None = None) -> list[Node]:
    """Converge the local cloud to exactly these nodes: start what exists, create what is missing."""
    wanted = [Node(i, role, suite) for i, role in enumerate(assign_roles(count, roles), 1)]
    ensure_engine(console)
    image = build_image(suite, console)
    existing = {n["name"]: n for n in local_nodes()}
    for extra in sorted(set(existing) - {n.name for n in wanted}):
        docker("rm", "-f", extra, what=f"removing {extra}")
        console.print(f"{extra}: removed (not among the {count} nodes asked for)")
    for node in wanted:
        current = existing.get(node.name)
        if current and all(current["labels"].get(k) == v for k, v in node.labels.items()):
            if current["state"] != "running":
                docker("start", node.name, what=f"starting {node.name}")
                console.print(f"{node.name}: started")
            else:
                console.print(f"{node.name}: running")
            continue
        if current:
            docker("rm", "-f", node.name, what=f"replacing {node.name}")
        labels = [arg for k, v in node.labels.items() for arg in ("--label", f"{k}={v}")]
        docker("run", "-d", "--name", node.name, "--network", "host", "--stop-signal", "SIGRTMIN+3",
               *SYSTEMD_RUN, *node.mounts, *labels, image,
               "/lib/systemd/systemd", what=f"creating {node.name}")
        console.print(f"{node.name}: created ({node.role}, {suite})")
    for node in wanted:
        state = _wait_systemd(node.name)
        if state not in ("running", "degraded"):
            raise TfprovError(f"{node.name}: systemd did not finish booting ({state or 'no answer'})")
    return wanted


def down(console: Console) -> int:
    nodes = local_nodes()
    for node in nodes:
        docker("rm", "-f", node["name"], what=f"removing {node['name']}")
        console.print(f"{node['name']}: removed")
    return len(nodes)
