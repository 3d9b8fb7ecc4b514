# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""community.docker.docker_containers, accepting tfprov's inventory file name.

The stock plugin only reads files named *docker.yml; tfprov's inventories are named after the plugin
that serves them (local.docker_containers.yml). Everything else is the stock plugin's.
"""

DOCUMENTATION = r"""
name: docker_containers
short_description: Docker containers as inventory, for files named C(*docker_containers.yml)
description:
  - The P(community.docker.docker_containers#inventory) inventory plugin, unchanged, except that it also reads
    configuration files whose name ends with V(docker_containers.yml) or V(docker_containers.yaml).
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

FILE_SUFFIXES = ("docker_containers.yml", "docker_containers.yaml", "docker.yml", "docker.yaml")


class InventoryModule(StockInventoryModule):
    NAME = "tfprov.gpu.docker_containers"

    def verify_file(self, path):
        return BaseInventoryPlugin.verify_file(self, path) and path.endswith(FILE_SUFFIXES)
