"""The two inventories of the local cloud: the same nodes, groups and variables; only the way in differs."""

from pathlib import Path

import jinja2
import yaml

ROOT = Path(__file__).resolve().parents[2]
DOCKER = yaml.safe_load((ROOT / "inventories/local.docker_containers.yml").read_text())
SSH = yaml.safe_load((ROOT / "inventories/local_ssh.docker_containers.yml").read_text())


def test_same_nodes_and_group_contract():
    for key in ("plugin", "strict", "keyed_groups", "groups"):
        assert SSH[key] == DOCKER[key], key
    assert {k: v for k, v in SSH["compose"].items() if not k.startswith("ansible_")} == \
        {k: v for k, v in DOCKER["compose"].items() if not k.startswith("ansible_")}


def test_ssh_inventory_requires_the_recorded_host_keys():
    compose = SSH["compose"]
    assert compose["ansible_connection"] == "'ssh'"
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
        # The plugin's `cluster` option: $TFPROV_LOCAL_CLOUD, else `local`; nothing in the file overrides it.
        assert "cluster" not in inventory and "filters" not in inventory


def composed(key: str, labels: dict, inventory: dict = SSH):
    """A compose expression evaluated on a node's labels (plain Jinja: these use no Ansible filter)."""
    return jinja2.Environment().compile_expression(inventory["compose"][key])(docker_config={"Labels": labels})


PRIVATE = {"tfprov.network": "private", "tfprov.address": "10.210.1.12", "tfprov.subnet": "10.210.1.0/24",
           "tfprov.http_proxy": "http://10.210.1.1:3128", "tfprov.wheelhouse": "http://10.210.1.1:8080/",
           "tfprov.pip_index": "http://10.210.1.1:3141/index/"}
HOST = {"tfprov.network": "host", "tfprov.address": "127.0.0.1"}


def test_private_nodes_go_out_only_through_the_gateway():
    assert composed("tfprov_http_proxy", PRIVATE) == "http://10.210.1.1:3128"
    assert composed("tfprov_no_proxy", PRIVATE) == "10.210.1.0/24"  # members and the wheelhouse: never the proxy
    assert composed("tfprov_local_wheelhouse", PRIVATE) == "http://10.210.1.1:8080/"
    assert composed("tfprov_pip_index_url", PRIVATE) == "http://10.210.1.1:3141/index/"  # the fleet's pip cache
    assert composed("tfprov_http_proxy", HOST) == composed("tfprov_local_wheelhouse", HOST) == ""
    assert composed("tfprov_pip_index_url", HOST) == ""  # the host's network: PyPI itself


def test_private_serving_nodes_publish_from_a_bridged_engine_on_their_address():
    assert composed("tfprov_docker_daemon_settings", PRIVATE) == {}  # the engine's own bridge, in the node
    assert composed("tfprov_serving_network_mode", PRIVATE) == "bridge"
    assert composed("tfprov_serving_bind_address", PRIVATE) == "10.210.1.12"


def test_host_network_serving_nodes_keep_the_hosts_network_untouched():
    assert composed("tfprov_docker_daemon_settings", HOST) == {
        "bridge": "none", "iptables": False, "ip-forward": False, "ip-masq": False}
    assert composed("tfprov_serving_network_mode", HOST) == "host"
    assert composed("tfprov_serving_bind_address", HOST) == "0.0.0.0"
    assert composed("tfprov_serving_network_mode", {}) == "host"  # a node made before the label existed


def test_modules_are_piped_through_the_exec_not_copied_into_the_node():
    assert DOCKER["compose"]["ansible_pipelining"] == "true"


def test_the_cache_node_is_in_tfprov_cache_and_not_among_the_nodes_the_stack_goes_on():
    for inventory in (DOCKER, SSH):
        is_node = jinja2.Environment().compile_expression(inventory["groups"]["tfprov_nodes"])
        assert not is_node(docker_config={"Labels": {"tfprov.role": "cache"}})
        assert all(is_node(docker_config={"Labels": {"tfprov.role": role}})
                   for role in ("chief", "worker", "ps", "evaluator", "serving"))
        assert {"key": "docker_config.Labels['tfprov.role']", "prefix": "tfprov", "separator": "_"} in \
            inventory["keyed_groups"]
