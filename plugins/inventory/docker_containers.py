# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""community.docker.docker_containers, accepting tfprov's inventory file name and outliving a removed container.

The stock plugin only reads files named *docker.yml; tfprov's inventories are named after the plugin
that serves them (local.docker_containers.yml). It also lists every container of the engine, then inspects them one
by one: a container removed in between (anyone's: a CI job's, a test's, `docker run --rm`) fails the whole inventory
with a 404, and the run with it, before any task. Here a container that is gone by its inspection is left out, as if
listed a moment later. Everything else is the stock plugin's.
"""

DOCUMENTATION = r"""
name: docker_containers
short_description: Docker containers as inventory, for files named C(*docker_containers.yml)
description:
  - The P(community.docker.docker_containers#inventory) inventory plugin, unchanged, except that it also reads
    configuration files whose name ends with V(docker_containers.yml) or V(docker_containers.yaml), and leaves out
    a container removed between the engine's list and its inspection instead of failing the whole inventory.
  - tfprov's local cloud (C(tfprov up local)) labels each node container with its role; the
    inventory turns the labels into tfprov's group contract.
author:
  - tfprov maintainers
extends_documentation_fragment:
  - ansible.builtin.constructed
  - community.docker.docker.api_documentation
  - community.library_inventory_filtering_v1.inventory_filter
options:
  plugin:
    description: Must be V(tfprov.gpu.docker_containers).
    type: str
    required: true
    choices: [tfprov.gpu.docker_containers]
  connection_type:
    description: How Ansible reaches a container, as in the stock plugin.
    type: str
    default: docker-api
    choices: [ssh, docker-cli, docker-api]
  configure_docker_daemon:
    description: Pass the Docker daemon settings on to the docker_api connection.
    type: bool
    default: true
  verbose_output:
    description: Add all inspection data as C(docker_*) host variables.
    type: bool
    default: false
  default_ip:
    description: Address for C(ansible_host) when SSH is published on 0.0.0.0 (O(connection_type=ssh)).
    type: str
    default: 127.0.0.1
  private_ssh_port:
    description: SSH port inside the containers (O(connection_type=ssh)).
    type: int
    default: 22
  add_legacy_groups:
    description: Add the groups of the old docker inventory script.
    type: bool
    default: false
  filters:
    version_added: 1.0.0
"""

EXAMPLES = r"""
plugin: tfprov.gpu.docker_containers
filters:
  - include: "'tfprov.cluster' in docker_config.Labels"
  - exclude: true
keyed_groups:
  - key: docker_config.Labels['tfprov.role']
    prefix: tfprov
"""

from ansible.plugins.inventory import BaseInventoryPlugin
from ansible_collections.community.docker.plugins.inventory.docker_containers import (
    InventoryModule as StockInventoryModule,
)
from ansible_collections.community.docker.plugins.module_utils._api.errors import NotFound

FILE_SUFFIXES = ("docker_containers.yml", "docker_containers.yaml", "docker.yml", "docker.yaml")


class InventoryModule(StockInventoryModule):
    NAME = "tfprov.gpu.docker_containers"

    def verify_file(self, path):
        return BaseInventoryPlugin.verify_file(self, path) and path.endswith(FILE_SUFFIXES)

    def _create_client(self):
        return SkipsRemovedContainers(super()._create_client())


class SkipsRemovedContainers:
    """The stock plugin's Docker client, whose container list holds only containers that could still be inspected.

    Each is inspected while listing (the stock plugin inspects every listed container anyway) and that inspection
    is handed back when the plugin asks for it, so the engine is asked no more than before."""

    LIST, INSPECT = "/containers/json", "/containers/{0}/json"

    def __init__(self, client):
        self._client = client
        self._inspected = {}

    def get_json(self, pathfmt, *args, **kwargs):
        if pathfmt == self.LIST:
            listed = []
            for container in self._client.get_json(pathfmt, *args, **kwargs):
                try:
                    self._inspected[container["Id"]] = self._client.get_json(self.INSPECT, container["Id"])
                except NotFound:
                    continue  # removed since the list was made
                listed.append(container)
            return listed
        if pathfmt == self.INSPECT and args and args[0] in self._inspected:
            return self._inspected.pop(args[0])
        return self._client.get_json(pathfmt, *args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._client, name)
