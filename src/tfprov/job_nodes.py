"""The nodes of one `tfprov job run`: up (which also replaces a lost node: same name, role and task index), lost,
down, and the inventory the job's runs use. Local container nodes, or a cloud spec's instances."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml
from rich.console import Console

from . import cloud_inventory, clouds, cost
from .errors import TfprovError
from .local import cloud as local_cloud
from .local import nodes as local_nodes
from .options import DEFAULT_INVENTORY
from .project import project_root


class JobNodes:
    inventory: str
    env: dict[str, str]  # what tfprov processes of this job need in their environment
    node_shared_dir: str  # dist_tf_cluster_shared_dir on the nodes
    down_command: str

    def planned(self) -> list[str]:
        raise NotImplementedError

    def up(self) -> None:
        raise NotImplementedError

    def lost(self) -> list[str]:
        """Members that are not running now (stopped, preempted, removed)."""
        return []

    def states(self, hosts: list[str]) -> dict[str, str]:
        """What the provider says of each host now: running, stopped, terminated, removed, ... (asked of the cloud,
        not of the host: a host that does not answer SSH may still run). A host left out is unknown."""
        return {}

    def answering(self) -> dict[str, bool]:
        """{host: whether it answers over SSH now} for every node of the inventory (Ansible's ping, 10 s each)."""
        return ping(self.inventory, self.env)

    def hourly(self) -> float | None:
        """What the nodes cost per hour in USD; None where a price is unknown."""
        return None

    def local_logs_dir(self) -> Path | None:
        """A directory on this machine inside the shared directory, where the task logs go too."""
        return None

    def down(self) -> None:
        raise NotImplementedError


class LocalJobNodes(JobNodes):
    """Container nodes on a private network of their own (local cloud job-<name>), the shared directory mounted in
    each. up() starts a stopped node again and creates a removed one from the spec's image."""

    def __init__(self, spec: dict, console: Console):
        self.spec, self.console = spec, console
        self.cloud = spec["cloud"]
        self.env = {local_cloud.NAME_ENV: self.cloud}
        os.environ.update(self.env)  # the local inventories, in this process and in ansible's, follow it
        self.inventory = DEFAULT_INVENTORY
        self.node_shared_dir = local_nodes.NODE_SHARED_DIR
        self.down_command = f"TFPROV_LOCAL_CLOUD={self.cloud} tfprov down local"

    def planned(self) -> list[str]:
        prefix = local_cloud.Cloud(self.cloud).prefix
        return [f"{prefix}{index}" for index in range(1, len(self.spec["node_roles"]) + 1)]

    def up(self) -> None:
        shared = Path(self.spec["job"]["shared_dir"])
        shared.mkdir(parents=True, exist_ok=True)
        local_nodes.up(len(self.spec["node_roles"]), None, self.console, roles=self.spec["node_roles"],
                       image=self.spec["image"], name=self.cloud, network_mode="private", shared_dir=str(shared))

    def lost(self) -> list[str]:
        running = {n["name"] for n in local_nodes.local_nodes(self.cloud) if n["state"] == "running"}
        return [name for name in self.planned() if name not in running]

    def states(self, hosts: list[str]) -> dict[str, str]:
        found = {n["name"]: n["state"] for n in local_nodes.local_nodes(self.cloud)}
        return {host: ("running" if found.get(host) == "running" else "stopped" if host in found else "removed")
                for host in hosts}

    def down(self) -> None:
        local_nodes.down(self.console, name=self.cloud)

    def hourly(self) -> float | None:
        return 0.0  # containers on this machine

    def local_logs_dir(self) -> Path | None:
        return Path(self.spec["job"]["shared_dir"]) / "logs"


class CloudJobNodes(JobNodes):
    """A cloud spec's instances (tfprov up|down aws|gcp --spec): up creates what is missing, a terminated or
    preempted node included, trying the spec's zones in order. Losses are read from the run (unreachable hosts)."""

    def __init__(self, spec: dict, job_dir: Path, console: Console):
        self.spec, self.console = spec, console
        self.provider = spec["provider"]
        self.spec_file = job_dir / "cluster-spec.yml"
        self.spec_file.write_text(yaml.safe_dump(spec["cloud_spec"], sort_keys=False))
        self.cluster = clouds.check_spec(str(self.spec_file), self.provider, project_root())
        self.env = {}
        self.inventory = str(cloud_inventory.path(project_root(), self.provider, self.cluster["name"]))
        self.node_shared_dir = spec["job"]["shared_dir"]
        self.down_command = f"tfprov down {self.provider} --spec {self.spec_file}"

    def planned(self) -> list[str]:
        return [node["name"] for node in self.cluster["nodes"]]

    def up(self) -> None:
        clouds.run("up", self.provider, str(self.spec_file), self.console)

    def down(self) -> None:
        clouds.run("down", self.provider, str(self.spec_file), self.console)

    def states(self, hosts: list[str]) -> dict[str, str]:
        """From the cloud's API now (the inventory plugin, its cache flushed): running, pending, stopping, stopped
        (GCP: TERMINATED, SUSPENDED), and terminated for an instance the cloud no longer lists."""
        listed = inventory_hostvars(self.inventory, self.env)
        found = {}
        for host in hosts:
            hostvars = listed.get(host)
            if hostvars is None:
                found[host] = "terminated"
                continue
            state = _plain(hostvars.get("state"))
            state = _plain(state.get("name")) if isinstance(state, dict) else (_plain(hostvars.get("status")) or state)
            state = str(state or "").lower()
            found[host] = {"terminated": "stopped", "suspended": "stopped", "staging": "pending",
                           "provisioning": "pending"}.get(state, state) if self.provider == "gcp" else state
        return found

    def hourly(self) -> float | None:
        return cost.spec_cost(self.cluster, cost.book())["hourly"]


def _plain(value):
    """A value of ansible-inventory's JSON: ansible-core 2.19+ writes an unsafe string as {"__ansible_unsafe": ...}."""
    if isinstance(value, dict) and set(value) == {"__ansible_unsafe"}:
        return value["__ansible_unsafe"]
    return value


def _ansible_tool(name: str) -> str:
    beside = Path(sys.executable).parent / name
    return str(beside) if beside.exists() else (shutil.which(name) or name)


def ping(inventory: str, env: dict[str, str], timeout: int = 10) -> dict[str, bool]:
    """{host: whether it answers Ansible's ping over its connection now} for every host of tfprov_nodes."""
    command = [_ansible_tool("ansible"), "tfprov_nodes", "-i", inventory, "-m", "ansible.builtin.ping", "-o",
               "-T", str(timeout)]
    try:
        proc = subprocess.run(command, cwd=project_root(), env={**os.environ, **env}, capture_output=True, text=True,
                              timeout=timeout * 6 + 30, check=False)
    except subprocess.TimeoutExpired:
        return {}
    found = {}
    for line in proc.stdout.splitlines():
        host, sep, rest = line.partition(" | ")
        if sep and rest.split(" ", 1)[0].rstrip("!:") in ("SUCCESS", "UNREACHABLE", "FAILED"):
            found[host.strip()] = rest.startswith("SUCCESS")
    return found


def inventory_hostvars(inventory: str, env: dict[str, str]) -> dict[str, dict]:
    """{host: its variables} as the inventory lists them now (its cache flushed: the cloud is asked)."""
    proc = subprocess.run([_ansible_tool("ansible-inventory"), "-i", inventory, "--list", "--flush-cache"],
                          cwd=project_root(), env={**os.environ, **env}, capture_output=True, text=True, timeout=120,
                          check=False)
    if proc.returncode != 0:
        raise TfprovError(f"could not ask the cloud for its instances (ansible-inventory -i {inventory}): "
                          f"{(proc.stderr.strip().splitlines() or ['no output'])[-1]}")
    return (json.loads(proc.stdout).get("_meta") or {}).get("hostvars") or {}


def nodes_for(spec: dict, job_dir: Path, console: Console) -> JobNodes:
    if spec["provider"] == "local":
        return LocalJobNodes(spec, console)
    return CloudJobNodes(spec, job_dir, console)
