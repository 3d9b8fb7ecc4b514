# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The local cloud's node containers as inventory, read with the docker CLI.

tfprov's local cloud (`tfprov up local`) labels each node container with its cloud, role and settings; this plugin
lists the containers of one cloud (`docker ps --filter label=tfprov.cluster=NAME`), inspects them in one call, and
hands each container's inspection to ansible-core's constructed features (compose, groups, keyed_groups) as
`docker_<key>` variables, the names community.docker's inventory uses (`docker_config.Labels`, `docker_state`).

Why not community.docker.docker_containers: it fails the whole inventory, and the run with it, when any container of
the engine is removed between its list and its inspection (a CI job's, a test's, `docker run --rm`), and a wrapper
could only change that through its private methods. This one uses ansible-core's public inventory interfaces only,
and a container gone by its inspection is simply not listed, as if listed a moment later.
"""

DOCUMENTATION = r"""
name: docker_containers
short_description: The local cloud's node containers as inventory (files named C(*docker_containers.yml))
description:
  - Lists the Docker containers labelled C(tfprov.cluster=<cluster>) with the C(docker) CLI, inspects them in one call,
    and makes each a host named after its container. A container removed between the list and its inspection is left
    out, never an error.
  - Hosts are added in their names' natural order (C(tfprov-local-2) before C(tfprov-local-10)), the order a play's
    C(serial) batches, a fleet update's canary and batches included, take them in.
  - Each container's inspection is given to O(compose), O(groups) and O(keyed_groups) as C(docker_<key>) variables
    (C(docker_config), C(docker_state), C(docker_networksettings)...), with C(docker_name) and C(docker_short_id);
    the host itself gets C(ansible_host) (the container's name), C(docker_name) and C(docker_short_id), plus what
    O(compose) sets.
  - tfprov's local cloud (C(tfprov up local)) labels each node container with its role and settings; the shipped
    inventories turn the labels into tfprov's group contract.
author:
  - tfprov maintainers (@tfprov)
version_added: 1.1.0
extends_documentation_fragment:
  - ansible.builtin.constructed
options:
  plugin:
    description: Must be V(tfprov.gpu.docker_containers).
    type: str
    required: true
    choices: [tfprov.gpu.docker_containers]
  cluster:
    description:
      - The local cloud whose nodes are listed (the C(tfprov.cluster) label of its containers).
    type: str
    default: local
    env:
      - name: TFPROV_LOCAL_CLOUD
  docker_host:
    description: The Docker engine to ask (the C(docker) CLI's C(--host)); empty for the CLI's own default.
    type: str
    default: ''
    env:
      - name: DOCKER_HOST
  docker_command:
    description: The C(docker) CLI to run.
    type: str
    default: docker
  timeout:
    description: Seconds each C(docker) command may take before the inventory fails.
    type: int
    default: 60
requirements:
  - the C(docker) CLI on the controller
"""

EXAMPLES = r"""
# inventories/local.docker_containers.yml
plugin: tfprov.gpu.docker_containers
strict: true
keyed_groups:
  - key: docker_config.Labels['tfprov.role']
    prefix: tfprov
    separator: _
compose:
  ansible_connection: "'tfprov.gpu.docker_exec'"
  tfprov_node_state: "'running' if docker_state.Running else 'stopped'"
"""

import json
import re
import subprocess

from ansible.errors import AnsibleError
from ansible.module_utils.common.text.converters import to_text
from ansible.plugins.inventory import BaseInventoryPlugin, Constructable
from ansible_collections.tfprov.gpu.plugins.module_utils.tf_cluster import natural_key

FILE_SUFFIXES = ("docker_containers.yml", "docker_containers.yaml")


def slug(key: str) -> str:
    """An inspection key as a variable name, as community.docker's inventory names them (NetworkSettings ->
    docker_networksettings)."""
    return "docker_" + re.sub(r"[^A-Za-z0-9_]", "_", key).lower()


def host_facts(inspected: dict) -> tuple[str, dict, dict]:
    """(host name, the host's own vars, every var compose and groups see) for one container's inspection."""
    name = (inspected.get("Name") or "").lstrip("/") or inspected["Id"][:13]
    own = {"ansible_host": name, "docker_name": name, "docker_short_id": inspected["Id"][:13]}
    seen = dict(own)
    seen.update({slug(key): value for key, value in inspected.items()})
    return name, own, seen


def inspections(stdout: str) -> list[dict]:
    """`docker inspect`'s JSON list; [] for no output (every container asked for was gone)."""
    text = stdout.strip()
    if not text:
        return []
    found = json.loads(text)
    if not isinstance(found, list):
        raise ValueError("docker inspect did not answer a list")
    return [item for item in found if isinstance(item, dict) and item.get("Id")]


class InventoryModule(BaseInventoryPlugin, Constructable):
    NAME = "tfprov.gpu.docker_containers"

    def verify_file(self, path):
        return super().verify_file(path) and path.endswith(FILE_SUFFIXES)

    def _docker(self, *args: str, allow_fail: bool = False) -> str:
        command = [self.get_option("docker_command")]
        if self.get_option("docker_host"):
            command += ["--host", self.get_option("docker_host")]
        command += list(args)
        try:
            done = subprocess.run(command, capture_output=True, timeout=self.get_option("timeout"), check=False)
        except FileNotFoundError as exc:
            raise AnsibleError(f"tfprov.gpu.docker_containers: no docker CLI ({command[0]}): install Docker's CLI "
                               "or set docker_command") from exc
        except subprocess.TimeoutExpired as exc:
            raise AnsibleError(f"tfprov.gpu.docker_containers: `docker {args[0]}` did not answer in "
                               f"{self.get_option('timeout')} s") from exc
        if done.returncode != 0 and not allow_fail:
            said = to_text(done.stderr, errors="surrogate_or_replace").strip().splitlines()
            raise AnsibleError(f"tfprov.gpu.docker_containers: `docker {args[0]}` failed: "
                               + (said[-1] if said else f"exit {done.returncode}"))
        return to_text(done.stdout, errors="surrogate_or_replace")

    def containers(self) -> list[dict]:
        """The cloud's containers, inspected; those removed since the list are left out."""
        ids = self._docker("ps", "--all", "--no-trunc", "--quiet", "--filter",
                           f"label=tfprov.cluster={self.get_option('cluster')}").split()
        if not ids:
            return []
        # A container removed after the list: `docker inspect` prints the others and exits 1 with "No such object".
        stdout = self._docker("inspect", "--type", "container", *ids, allow_fail=True)
        try:
            return inspections(stdout)
        except ValueError as exc:
            raise AnsibleError("tfprov.gpu.docker_containers: `docker inspect` gave no JSON: "
                               f"{stdout[:200]!r}") from exc

    def parse(self, inventory, loader, path, cache=True):
        super().parse(inventory, loader, path, cache)
        self._read_config_data(path)
        strict = self.get_option("strict")
        for inspected in sorted(self.containers(), key=lambda item: natural_key(item.get("Name") or "")):
            name, own, seen = host_facts(inspected)
            self.inventory.add_host(name)
            for key, value in own.items():
                self.inventory.set_variable(name, key, value)
            self._set_composite_vars(self.get_option("compose"), seen, name, strict=strict)
            self._add_host_to_composed_groups(self.get_option("groups"), seen, name, strict=strict)
            self._add_host_to_keyed_groups(self.get_option("keyed_groups"), seen, name, strict=strict)
