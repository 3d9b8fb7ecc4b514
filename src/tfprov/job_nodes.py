"""The nodes of one `tfprov job run`: up (which also replaces a lost node: same name, role and task index), lost,
down, and the inventory the job's runs use. Local container nodes, or a cloud spec's instances."""

from __future__ import annotations

import os
from pathlib import Path

import yaml
from rich.console import Console

from . import cloud_inventory, clouds, cost
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

    def hourly(self) -> float | None:
        return cost.spec_cost(self.cluster, cost.book())["hourly"]


def nodes_for(spec: dict, job_dir: Path, console: Console) -> JobNodes:
    if spec["provider"] == "local":
        return LocalJobNodes(spec, console)
    return CloudJobNodes(spec, job_dir, console)
