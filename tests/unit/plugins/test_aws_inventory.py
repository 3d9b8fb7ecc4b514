"""tfprov.gpu.aws_ec2: the host vars and groups it adds to amazon.aws.aws_ec2's, from an instance's host vars."""

from ansible_collections.tfprov.gpu.plugins.inventory.aws_ec2 import InventoryModule, tfprov_vars


def host(**changes):
    base = {"instance_type": "p4d.24xlarge", "private_ip_address": "10.0.0.5", "public_ip_address": "54.0.0.5",
            "placement": {"availability_zone": "us-east-1b"}, "state": {"code": 16, "name": "running"},
            "tags": {"tfprov:cluster": "demo", "tfprov:role": "worker", "Name": "demo-worker-0",
                     "tfprov:tf-port": "2300", "tfprov:image": "tfprov-node-2026"}}
    base.update(changes)
    return base


def test_a_tfprov_instance_gets_the_group_contract_and_gpu_vars():
    variables, groups = tfprov_vars(host())
    assert groups == ["tfprov_nodes", "tfprov_worker", "gpu_a100", "gpu_a100_40gb"]
    assert variables == {
        "ansible_host": "54.0.0.5", "tfprov_cluster": "demo", "tfprov_node_role": "worker",
        "tfprov_node_state": "running",
        "tfprov_tf_address": "10.0.0.5", "tfprov_tf_port": 2300, "tfprov_zone": "us-east-1b",
        "tfprov_instance_type": "p4d.24xlarge", "tfprov_booted_from_image": "tfprov-node-2026",
        "tfprov_gpu_model": "a100_40gb", "tfprov_gpu_family": "a100", "tfprov_gpu_count": 8,
        "tfprov_gpu_nvlink": True,  # p4d: NVSwitch, so the admission gate wants every NVLink link up
        "tfprov_provider": "aws", "tfprov_market": "on-demand"}  # what the run's cost is priced from


def test_a_spot_instance_is_priced_at_the_spot_market():
    variables, _ = tfprov_vars(host(instance_lifecycle="spot"))
    assert variables["tfprov_market"] == "spot"


def test_a_cpu_instance_without_public_address_and_an_untagged_one():
    variables, groups = tfprov_vars(host(instance_type="m5.xlarge", public_ip_address=None,
                                         tags={"tfprov:cluster": "demo", "tfprov:role": "ps"}))
    assert groups == ["tfprov_nodes", "tfprov_ps"]
    assert (variables["ansible_host"], variables["tfprov_gpu_model"], variables["tfprov_gpu_count"],
            variables["tfprov_gpu_nvlink"]) == ("10.0.0.5", "", 0, False)
    assert variables["tfprov_tf_port"] == 2222 and variables["tfprov_booted_from_image"] == ""
    assert tfprov_vars(host(tags={"Name": "someone-elses"})) is None


def test_the_cache_node_is_in_tfprov_cache_and_not_among_the_nodes_the_stack_goes_on():
    _, groups = tfprov_vars(host(instance_type="m5.large", tags={"tfprov:cluster": "demo", "tfprov:role": "cache"}))
    assert groups == ["tfprov_cache"]


def test_a_stopped_or_stopping_instance_is_listed_as_stopped():
    for ec2_state, state in (("stopped", "stopped"), ("stopping", "stopped"), ("pending", "pending")):
        assert tfprov_vars(host(state={"code": 80, "name": ec2_state}))[0]["tfprov_node_state"] == state


def test_the_plugin_reads_the_same_file_names_as_amazon_aws_ec2(tmp_path):
    from ansible_collections.amazon.aws.plugins.inventory.aws_ec2 import InventoryModule as Stock

    assert InventoryModule.INVENTORY_FILE_SUFFIXES == Stock.INVENTORY_FILE_SUFFIXES
    for name, expected in (("demo.aws_ec2.yml", True), ("demo.aws_ec2.yaml", True), ("demo.gcp_compute.yml", False)):
        (tmp_path / name).write_text("plugin: tfprov.gpu.aws_ec2\n")
        assert InventoryModule().verify_file(str(tmp_path / name)) is expected
    assert not InventoryModule().verify_file(str(tmp_path / "missing.aws_ec2.yml"))


def test_amazon_aws_ec2_lists_whole_under_tfprov_name_options_and_cache_key():
    # Not a subclass: no method of amazon.aws is overridden, and amazon.aws (boto3) is imported only to list.
    from ansible_collections.amazon.aws.plugins.inventory.aws_ec2 import InventoryModule as Stock

    plugin = InventoryModule()
    loaded = {"_original_path": "/c/aws_ec2.py", "_load_name": "tfprov.gpu.aws_ec2",
              "_redirected_names": ["tfprov.gpu.aws_ec2"], "ansible_aliases": ["tfprov.gpu.aws_ec2"],
              "ansible_name": "tfprov.gpu.aws_ec2"}
    for name, value in loaded.items():
        setattr(plugin, name, value)
    stock = plugin._stock_plugin()
    assert not issubclass(InventoryModule, Stock) and type(stock) is Stock
    assert stock.NAME == InventoryModule.NAME == "tfprov.gpu.aws_ec2" and Stock.NAME == "amazon.aws.aws_ec2"
    assert {name: getattr(stock, name) for name in loaded} == loaded
    assert stock.get_cache_key("inv/aws.aws_ec2.yml") == plugin.get_cache_key("inv/aws.aws_ec2.yml")


def test_the_documentation_parses_and_raw_hostvars_defaults_to_all():
    import yaml
    from ansible_collections.tfprov.gpu.plugins.inventory import aws_ec2

    options = yaml.safe_load(aws_ec2.DOCUMENTATION)["options"]
    assert options["raw_hostvars"]["default"] == [] and options["hostvars_prefix"]["type"] == "str"


def _parsed(monkeypatch, listed, group="aws_ec2", **options):
    """Our parse over what the stock parse would have added (listed: host name -> its host vars, each in group),
    beside a host of another inventory source, local-node."""
    from ansible.inventory.data import InventoryData
    from ansible_collections.amazon.aws.plugins.inventory.aws_ec2 import InventoryModule as Stock

    inventory = InventoryData()
    inventory.add_host("local-node")
    inventory.set_variable("local-node", "tags", {"tfprov:cluster": "other"})
    inventory.set_variable("local-node", "owner", "ml-team")

    def stock_parse(self, inventory, loader, path, cache=True):
        self.inventory = inventory
        inventory.add_group(group)
        for name, variables in listed.items():
            inventory.add_host(name, group=group)
            for key, value in variables.items():
                inventory.set_variable(name, key, value)

    monkeypatch.setattr(Stock, "parse", stock_parse)
    plugin = InventoryModule()
    settings = {"raw_hostvars": [], "compose": {}, "hostvars_prefix": "", "hostvars_suffix": ""} | options
    monkeypatch.setattr(plugin, "get_option", lambda name: settings.get(name), raising=False)
    monkeypatch.setattr(plugin, "_read_config_data", lambda path: {"plugin": "tfprov.gpu.aws_ec2"})
    monkeypatch.setattr(plugin, "_finished_key", lambda *args: None)  # caching off (tests/cloud: the cache)
    plugin.parse(inventory, None, "demo.aws_ec2.yml")
    return inventory


def test_parse_adds_the_contract_to_the_hosts_it_listed_only_and_trims_raw_vars(monkeypatch):
    inventory = _parsed(monkeypatch, {"demo-worker-0_i-1": host(), "plain_i-2": {"instance_type": "m5.large"}},
                        raw_hostvars=["instance_type"], compose={"my_var": "instance_type"})
    worker = inventory.get_host("demo-worker-0_i-1")
    assert worker.vars["tfprov_gpu_model"] == "a100_40gb" and worker.vars["tfprov_tf_port"] == 2300
    assert "tags" not in worker.vars and worker.vars["instance_type"] == "p4d.24xlarge"
    assert "demo-worker-0_i-1" in [h.name for h in inventory.groups["gpu_a100"].get_hosts()]
    assert "tfprov_cluster" not in inventory.get_host("plain_i-2").vars  # not tfprov's: untouched but trimmed
    assert "tfprov_cluster" not in inventory.get_host("local-node").vars  # another source's host: untouched
    assert inventory.get_host("local-node").vars["tags"] == {"tfprov:cluster": "other"}


def test_parse_reads_raw_vars_under_a_prefix_and_suffix_and_keeps_composed_ones(monkeypatch):
    listed = {"n_i-1": {f"ec2_{key}_x": value for key, value in host().items()} | {"mine": "kept"}}
    inventory = _parsed(monkeypatch, listed, hostvars_prefix="ec2_", hostvars_suffix="_x",
                        raw_hostvars=["ec2_placement_x"], compose={"mine": "1"})
    found = inventory.get_host("n_i-1").vars
    assert found["tfprov_node_role"] == "worker" and found["tfprov_zone"] == "us-east-1b"
    assert set(found) - {k for k in found if k.startswith("tfprov_")} == {"ec2_placement_x", "mine", "ansible_host"}


def test_a_host_another_source_listed_first_gets_the_contract_and_keeps_that_sources_vars(monkeypatch):
    inventory = _parsed(monkeypatch, {"local-node": host()}, raw_hostvars=["instance_type"])
    found = inventory.get_host("local-node").vars
    assert found["tfprov_node_role"] == "worker" and found["owner"] == "ml-team" and "tags" in found
    assert "local-node" in [h.name for h in inventory.groups["tfprov_worker"].get_hosts()]


def test_were_amazon_aws_group_renamed_its_new_hosts_would_still_get_the_contract(monkeypatch):
    inventory = _parsed(monkeypatch, {"demo-worker-0_i-1": host()}, group="ec2_hosts")
    assert inventory.get_host("demo-worker-0_i-1").vars["tfprov_node_role"] == "worker"
