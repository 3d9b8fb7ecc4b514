"""tfprov.gpu.docker_containers: the local cloud's containers through the docker CLI, a container removed between the
list and its inspection left out. A stand-in `docker` answers as Docker's CLI does (its JSON and exit codes)."""

import json

import pytest
from ansible.errors import AnsibleError
from ansible.inventory.data import InventoryData
from ansible.parsing.dataloader import DataLoader
from ansible.template import trust_as_template
from ansible_collections.tfprov.gpu.plugins.inventory.docker_containers import (
    InventoryModule,
    host_facts,
    inspections,
    natural_key,
    slug,
)

# `ps` prints $PS_IDS; `inspect` prints $INSPECT (a JSON list) and exits $INSPECT_RC, as the CLI does when one of
# the containers asked for was removed (the others printed, "No such object" on stderr, exit 1).
FAKE_DOCKER = """#!/bin/sh
echo "$*" >> "$CALLS"
case "$1" in
  --host) shift 2 ;;
esac
case "$1" in
  ps) printf '%s\\n' $PS_IDS ;;
  inspect) printf '%s' "$INSPECT"
    [ "$INSPECT_RC" = 0 ] || echo "Error: No such object: gone" >&2
    exit "$INSPECT_RC" ;;
esac
"""


def inspected(cid: str, name: str, labels: dict, running=True) -> dict:
    return {"Id": cid, "Name": f"/{name}", "State": {"Running": running}, "Config": {"Labels": labels},
            "NetworkSettings": {"Ports": {}}}


@pytest.fixture
def docker(tmp_path, monkeypatch, stand_in_docker):
    path = stand_in_docker(FAKE_DOCKER)

    def answer(ids, found, rc=0):
        monkeypatch.setenv("PS_IDS", " ".join(ids))
        monkeypatch.setenv("INSPECT", json.dumps(found))
        monkeypatch.setenv("INSPECT_RC", str(rc))

    answer.path = path
    answer.calls = lambda: (tmp_path / "calls").read_text().splitlines()
    return answer


def parse(docker_path, monkeypatch, **changes) -> InventoryData:
    """The plugin's parse with the settings of inventories/local.docker_containers.yml that matter here (the option
    loader reads a real file; here the options are given)."""
    settings = {"strict": True, "docker_host": "", "docker_command": docker_path, "cluster": "local", "timeout": 10,
                "leading_separator": True, "compose": {
                    "tfprov_node_state": trust_as_template("'running' if docker_state.Running else 'stopped'")},
                "groups": {"tfprov_nodes": trust_as_template("docker_config.Labels['tfprov.role'] != 'cache'")},
                "keyed_groups": [{"key": trust_as_template("docker_config.Labels['tfprov.role']"), "prefix": "tfprov",
                                  "separator": "_"}]} | changes
    plugin = InventoryModule()
    monkeypatch.setattr(plugin, "_read_config_data", lambda path: None)
    monkeypatch.setattr(plugin, "get_option", lambda name: settings.get(name), raising=False)
    inventory = InventoryData()
    plugin.parse(inventory, DataLoader(), "local.docker_containers.yml", cache=False)
    return inventory


def test_reads_only_files_named_for_it(tmp_path):
    plugin = InventoryModule()
    for name, accepted in (("local.docker_containers.yml", True), ("x.docker_containers.yaml", True),
                           ("stock.docker.yml", False), ("hosts.yml", False), ("aws.aws_ec2.yml", False)):
        path = tmp_path / name
        path.write_text("plugin: tfprov.gpu.docker_containers\n")
        assert plugin.verify_file(str(path)) is accepted, name
    assert not plugin.verify_file(str(tmp_path / "missing.docker_containers.yml"))


def test_the_clouds_nodes_get_the_group_contract_and_their_state(docker, monkeypatch):
    local = {"tfprov.cluster": "local"}
    docker(["a" * 64, "c" * 64], [inspected("a" * 64, "tfprov-local-1", {**local, "tfprov.role": "chief"}),
                                  inspected("c" * 64, "tfprov-local-2", {**local, "tfprov.role": "cache"}, False)])
    inventory = parse(docker.path, monkeypatch)
    assert sorted(inventory.hosts) == ["tfprov-local-1", "tfprov-local-2"]
    assert [h.name for h in inventory.groups["tfprov_chief"].get_hosts()] == ["tfprov-local-1"]
    assert [h.name for h in inventory.groups["tfprov_nodes"].get_hosts()] == ["tfprov-local-1"]  # not the cache
    one, two = inventory.get_host("tfprov-local-1").vars, inventory.get_host("tfprov-local-2").vars
    assert (one["tfprov_node_state"], two["tfprov_node_state"]) == ("running", "stopped")
    assert one["ansible_host"] == one["docker_name"] == "tfprov-local-1" and one["docker_short_id"] == "a" * 13
    assert "docker_config" not in one  # the inspection is compose's input, not a host var
    # One list of this cloud's containers, one inspection of them all.
    assert docker.calls() == ["ps --all --no-trunc --quiet --filter label=tfprov.cluster=local",
                              f"inspect --type container {'a' * 64} {'c' * 64}"]


def test_hosts_come_in_their_names_natural_order_as_a_fleets_batches_take_them(docker, monkeypatch):
    names = ["tfprov-local-10", "tfprov-local-2", "tfprov-local-1", "tfprov-local-9"]
    ids = [str(i) * 64 for i in range(len(names))]
    docker(ids, [inspected(cid, name, {"tfprov.role": "worker"}) for cid, name in zip(ids, names, strict=True)])
    inventory = parse(docker.path, monkeypatch)
    assert [h.name for h in inventory.groups["tfprov_worker"].get_hosts()] == [
        "tfprov-local-1", "tfprov-local-2", "tfprov-local-9", "tfprov-local-10"]
    assert sorted(["b-2", "a-10", "a-9", "a"], key=natural_key) == ["a", "a-9", "a-10", "b-2"]


def test_a_container_removed_before_its_inspection_is_left_out_not_fatal(docker, monkeypatch):
    docker(["a" * 64, "b" * 64], [inspected("a" * 64, "tfprov-local-1", {"tfprov.role": "worker"})], rc=1)
    assert sorted(parse(docker.path, monkeypatch).hosts) == ["tfprov-local-1"]


def test_another_cloud_and_another_engine_are_asked_for_by_name(docker, monkeypatch):
    docker([], [])
    assert not parse(docker.path, monkeypatch, cluster="itnet", docker_host="unix:///run/other.sock").hosts
    assert docker.calls() == ["--host unix:///run/other.sock ps --all --no-trunc --quiet --filter "
                              "label=tfprov.cluster=itnet"]


def test_an_engine_that_fails_fails_the_inventory_with_its_words(tmp_path, monkeypatch):
    broken = tmp_path / "docker"
    broken.write_text("#!/bin/sh\necho 'Cannot connect to the Docker daemon at unix:///var/run/docker.sock' >&2\n"
                      "exit 1\n")
    broken.chmod(0o755)
    with pytest.raises(AnsibleError, match="`docker ps` failed: Cannot connect to the Docker daemon"):
        parse(str(broken), monkeypatch)
    with pytest.raises(AnsibleError, match="no docker CLI"):
        parse(str(tmp_path / "nowhere"), monkeypatch)


def test_an_inspection_that_is_not_json_is_named(docker, monkeypatch):
    docker(["a" * 64], [])
    monkeypatch.setenv("INSPECT", "garbage")
    with pytest.raises(AnsibleError, match="gave no JSON: 'garbage'"):
        parse(docker.path, monkeypatch)


def test_inspection_keys_are_named_as_community_docker_names_them():
    assert slug("NetworkSettings") == "docker_networksettings" and slug("Config") == "docker_config"
    name, own, seen = host_facts({"Id": "f" * 64, "Name": "/n1", "Config": {"Labels": {}}})
    assert name == "n1" and set(own) == {"ansible_host", "docker_name", "docker_short_id"}
    assert seen["docker_config"] == {"Labels": {}}
    assert inspections("") == [] and inspections("[]\n") == []
