"""The two inventories of the local cloud: the same nodes, groups and variables; only the way in differs."""

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
DOCKER = yaml.safe_load((ROOT / "inventories/local.docker_containers.yml").read_text())
SSH = yaml.safe_load((ROOT / "inventories/local_ssh.docker_containers.yml").read_text())


def test_same_nodes_and_group_contract():
    for key in ("plugin", "docker_host", "strict", "filters", "keyed_groups", "groups"):
        assert SSH[key] == DOCKER[key], key
    assert {k: v for k, v in SSH["compose"].items() if not k.startswith("ansible_")} == \
        {k: v for k, v in DOCKER["compose"].items() if not k.startswith("ansible_")}


def test_ssh_inventory_requires_the_recorded_host_keys():
    compose = SSH["compose"]
    assert SSH["connection_type"] == "ssh" and compose["ansible_connection"] == "'ssh'"
    # ansible.cfg's host_key_checking = False would put StrictHostKeyChecking=no first on ssh's command line.
    assert compose["ansible_ssh_host_key_checking"] == "true"
    args = compose["ansible_ssh_common_args"]
    assert "StrictHostKeyChecking=yes" in args and "StrictHostKeyChecking=no" not in args
    assert "UserKnownHostsFile=' + docker_config.Labels['tfprov.ssh_known_hosts']" in args
    assert compose["ansible_user"] == "docker_config.Labels['tfprov.ssh_user']"
    assert compose["ansible_ssh_private_key_file"] == "docker_config.Labels['tfprov.ssh_key']"
    assert compose["ansible_host"] == compose["ansible_ssh_host"] == \
        "docker_config.Labels['tfprov.address'] | default('127.0.0.1')"
    # A private node is reached through the jump its labels name; a host-network node directly.
    assert "'ProxyCommand=\" + docker_config.Labels['tfprov.ssh_proxy']" in args
    assert compose["ansible_port"] == compose["ansible_ssh_port"] == "docker_config.Labels['tfprov.ssh_port'] | int"
    assert "ansible_become" not in compose  # plays become root where they must, not every task


def test_both_inventories_list_the_cloud_the_environment_names():
    for inventory in (DOCKER, SSH):
        [include, exclude] = inventory["filters"]
        assert "lookup('ansible.builtin.env', 'TFPROV_LOCAL_CLOUD')" in include["include"]
        assert "or 'local'" in include["include"] and exclude == {"exclude": True}
