import pytest
from ansible.errors import AnsibleError
from ansible.inventory.data import InventoryData
from ansible.parsing.dataloader import DataLoader
from ansible.template import trust_as_template
from ansible_collections.community.docker.plugins.inventory.docker_containers import (
    InventoryModule as StockInventoryModule,
)
from ansible_collections.community.docker.plugins.module_utils._api.errors import APIError, NotFound
from ansible_collections.tfprov.gpu.plugins.inventory.docker_containers import InventoryModule


def test_accepts_tfprov_and_stock_file_names_only(tmp_path):
    plugin = InventoryModule()
    for name, accepted in (("local.docker_containers.yml", True), ("x.docker_containers.yaml", True),
                           ("stock.docker.yml", True), ("hosts.yml", False), ("aws.aws_ec2.yml", False)):
        path = tmp_path / name
        path.write_text("plugin: tfprov.gpu.docker_containers\n")
        assert plugin.verify_file(str(path)) is accepted, name


def test_a_missing_file_is_not_accepted(tmp_path):
    assert not InventoryModule().verify_file(str(tmp_path / "local.docker_containers.yml"))


def container(cid: str, name: str, labels: dict) -> tuple[dict, dict]:
    listed = {"Id": cid, "Names": [f"/{name}"]}
    inspected = {"Id": cid, "Name": f"/{name}", "State": {"Running": True}, "Config": {"Labels": labels},
                 "NetworkSettings": {"Ports": {}}}
    return listed, inspected


class RemovingEngine:
    """A Docker engine on which `gone` is removed between the container list and its inspection."""

    def __init__(self, containers, gone):
        self.containers, self.gone, self.calls = containers, gone, []

    def get_json(self, pathfmt, *args, **kwargs):
        self.calls.append(pathfmt.format(*args))
        if pathfmt == "/containers/json":
            return [listed for listed, _ in self.containers]
        if args[0] == self.gone:
            raise NotFound(f"No such container: {args[0]}")
        return next(inspected for listed, inspected in self.containers if listed["Id"] == args[0])


def parse(engine, monkeypatch) -> InventoryData:
    """The plugin's parse over this engine, with the settings of inventories/local.docker_containers.yml that matter
    here (the option loader is Ansible's, outside a unit test's reach)."""
    settings = {"strict": True, "docker_host": "unix:///var/run/docker.sock", "connection_type": "docker-api",
                "configure_docker_daemon": False, "leading_separator": True, "compose": {}, "groups": {},
                "filters": [{"include": trust_as_template("'tfprov.cluster' in docker_config.Labels")},
                            {"exclude": True}],
                "keyed_groups": [{"key": trust_as_template("docker_config.Labels['tfprov.role']"), "prefix": "tfprov",
                                  "separator": "_"}]}
    monkeypatch.setattr(StockInventoryModule, "_create_client", lambda self: engine)
    plugin = InventoryModule()
    monkeypatch.setattr(plugin, "_read_config_data", lambda path: None)
    monkeypatch.setattr(plugin, "get_option", lambda name: settings.get(name), raising=False)
    inventory = InventoryData()
    plugin.parse(inventory, DataLoader(), "local.docker_containers.yml", cache=False)
    return inventory


def test_a_container_removed_before_its_inspection_is_left_out_not_fatal(monkeypatch):
    local = {"tfprov.cluster": "local"}
    engine = RemovingEngine([container("a" * 64, "tfprov-local-1", {**local, "tfprov.role": "chief"}),
                             container("b" * 64, "someone-elses", {}),
                             container("c" * 64, "tfprov-local-2", {**local, "tfprov.role": "worker"})],
                            gone="b" * 64)
    inventory = parse(engine, monkeypatch)
    assert sorted(inventory.hosts) == ["tfprov-local-1", "tfprov-local-2"]
    assert [h.name for h in inventory.groups["tfprov_worker"].get_hosts()] == ["tfprov-local-2"]
    assert len(engine.calls) == 4  # one list, one inspection per container: the engine is asked no more than before


def test_other_engine_errors_still_fail_the_inventory(monkeypatch):
    class Broken(RemovingEngine):
        def get_json(self, pathfmt, *args, **kwargs):
            if pathfmt != "/containers/json":
                raise APIError("500 Server Error: engine broken")
            return super().get_json(pathfmt, *args, **kwargs)

    engine = Broken([container("a" * 64, "tfprov-local-1", {"tfprov.cluster": "local"})], gone=None)
    with pytest.raises(AnsibleError, match="engine broken"):
        parse(engine, monkeypatch)
