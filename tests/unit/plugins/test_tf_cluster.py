"""The TF cluster plan of an inventory (module_utils/tf_cluster.py) and the filters tf_cluster and tf_config."""

import random

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.tfprov.gpu.plugins.filter.tf_cluster import (
    FilterModule,
    tf_endpoint,
    tf_member_addresses,
    tf_member_names,
)
from ansible_collections.tfprov.gpu.plugins.module_utils.tf_cluster import TfClusterError, cluster_plan, tf_config

MWMS, PS = "multi_worker_mirrored", "parameter_server"


def local(*names):
    """hostvars of local container nodes: all on 127.0.0.1, port 22220 + N."""
    return {name: {"tfprov_tf_address": "127.0.0.1", "tfprov_tf_port": 22220 + int(name.rsplit("-", 1)[1])}
            for name in names}


def groups(chief=(), worker=(), ps=(), evaluator=()):
    result = {"tfprov_chief": list(chief), "tfprov_worker": list(worker), "tfprov_ps": list(ps)}
    if evaluator:
        result["tfprov_evaluator"] = list(evaluator)
    result["tfprov_nodes"] = [h for group in result.values() for h in group]
    return result


def refused(hostvars, layout, strategy=MWMS):
    with pytest.raises(TfClusterError) as info:
        cluster_plan(hostvars, layout, strategy)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_mwms_chief_and_workers_all_run_the_job():
    hosts = local("n-1", "n-2", "n-3")
    plan = cluster_plan(hosts, groups(["n-1"], ["n-2", "n-3"]), MWMS)
    assert plan["strategy"] == MWMS
    assert plan["cluster"] == {"chief": ["127.0.0.1:22221"], "worker": ["127.0.0.1:22222", "127.0.0.1:22223"]}
    assert plan["tasks"]["n-1"] == {"type": "chief", "index": 0, "address": "127.0.0.1:22221"}
    assert plan["tasks"]["n-3"] == {"type": "worker", "index": 1, "address": "127.0.0.1:22223"}
    assert plan["members"] == plan["job_hosts"] == ["n-1", "n-2", "n-3"]
    assert plan["server_hosts"] == [] and plan["ignored"] == [] and plan["warnings"] == []
    assert tf_config(plan, "n-2") == {"cluster": plan["cluster"], "task": {"type": "worker", "index": 0}}


def test_mwms_workers_only_has_no_chief_job():
    plan = cluster_plan(local("n-1", "n-2"), groups(worker=["n-2", "n-1"]), MWMS)
    assert plan["cluster"] == {"worker": ["127.0.0.1:22221", "127.0.0.1:22222"]}
    assert plan["job_hosts"] == ["n-1", "n-2"]
    assert tf_config(plan, "n-1")["task"] == {"type": "worker", "index": 0}


def test_mwms_ignores_parameter_servers_with_a_warning():
    plan = cluster_plan(local("n-1", "n-2", "n-3"), groups(["n-1"], ["n-2"], ["n-3"]), MWMS)
    assert "ps" not in plan["cluster"] and "n-3" not in plan["tasks"] and "n-3" not in plan["members"]
    assert plan["ignored"] == ["n-3"]
    assert plan["warnings"] == ["tfprov_ps hosts n-3 take no part under multi_worker_mirrored"]
    with pytest.raises(TfClusterError, match="n-3 is in tfprov_ps, which takes no part"):
        tf_config(plan, "n-3")


def test_parameter_server_chief_runs_the_job_and_the_others_serve():
    plan = cluster_plan(local("n-1", "n-2", "n-3", "n-4"), groups(["n-1"], ["n-3", "n-2"], ["n-4"]), PS)
    assert plan["cluster"] == {"chief": ["127.0.0.1:22221"], "worker": ["127.0.0.1:22222", "127.0.0.1:22223"],
                               "ps": ["127.0.0.1:22224"]}
    assert plan["members"] == ["n-1", "n-2", "n-3", "n-4"]
    assert plan["job_hosts"] == ["n-1"]
    assert plan["server_hosts"] == ["n-4", "n-2", "n-3"]
    assert tf_config(plan, "n-4")["task"] == {"type": "ps", "index": 0}
    assert plan["ignored"] == [] and plan["warnings"] == []


@pytest.mark.parametrize("strategy", [MWMS, PS])
def test_evaluator_has_a_task_but_stays_out_of_the_cluster(strategy):
    layout = groups(["n-1"], ["n-2"], ["n-3"], evaluator=["n-4"])
    plan = cluster_plan(local("n-1", "n-2", "n-3", "n-4"), layout, strategy)
    assert all("127.0.0.1:22224" not in addresses for addresses in plan["cluster"].values())
    assert "evaluator" not in plan["cluster"]
    assert plan["members"][-1] == plan["job_hosts"][-1] == "n-4"
    assert "n-4" not in plan["server_hosts"]
    assert tf_config(plan, "n-4") == {"cluster": plan["cluster"], "task": {"type": "evaluator", "index": 0}}


def test_cloud_layout_shares_the_default_port_on_distinct_addresses():
    hostvars = {"gpu-a": {"ansible_host": "10.0.0.5"}, "gpu-b": {"ansible_host": "10.0.0.6", "tfprov_tf_port": 2222},
                "gpu-c": {}}
    plan = cluster_plan(hostvars, groups(["gpu-a"], ["gpu-b", "gpu-c"]), MWMS)
    assert plan["cluster"] == {"chief": ["10.0.0.5:2222"], "worker": ["10.0.0.6:2222", "gpu-c:2222"]}


def test_tf_address_wins_over_ansible_host_and_ipv6_gets_brackets():
    hostvars = {"a": {"ansible_host": "203.0.113.1", "tfprov_tf_address": "10.0.0.1", "tfprov_tf_port": "2223"},
                "b": {"tfprov_tf_address": "fd00::2"}}
    plan = cluster_plan(hostvars, groups(worker=["a", "b"]), MWMS)
    assert plan["cluster"]["worker"] == ["10.0.0.1:2223", "[fd00::2]:2222"]


def test_natural_sort_with_ten_and_more_hosts_whatever_the_inventory_order():
    names = [f"tfprov-local-{n}" for n in range(1, 13)]
    shuffled = names[:]
    random.Random(9).shuffle(shuffled)
    plan = cluster_plan(local(*names), groups(worker=shuffled), MWMS)
    assert plan["job_hosts"] == names
    assert plan["tasks"]["tfprov-local-2"]["index"] == 1
    assert plan["tasks"]["tfprov-local-10"]["index"] == 9
    assert plan["cluster"]["worker"][9] == "127.0.0.1:22230"
    assert cluster_plan(local(*names), groups(worker=list(reversed(names))), MWMS) == plan


def test_unknown_strategy_names_both():
    message = refused(local("n-1"), groups(worker=["n-1"]), "mirrored")
    assert "'mirrored'" in message and MWMS in message and PS in message


def test_empty_cluster():
    message = refused({}, {"tfprov_nodes": ["n-1"], "tfprov_evaluator": ["n-1"]})
    assert "empty" in message and "tfprov_worker" in message


def test_two_chiefs_are_named():
    message = refused(local("n-1", "n-2"), groups(["n-2", "n-1"]))
    assert "n-1, n-2" in message and "one chief" in message and "workers (tfprov_worker)" in message


def test_parameter_server_needs_a_chief():
    message = refused(local("n-1", "n-2"), groups(worker=["n-1"], ps=["n-2"]), PS)
    assert message == "parameter_server needs a chief to coordinate: put one host in tfprov_chief"


def test_parameter_server_needs_a_ps():
    assert "put a host in tfprov_ps" in refused(local("n-1", "n-2"), groups(["n-1"], ["n-2"]), PS)


def test_parameter_server_needs_a_worker():
    assert "put a host in tfprov_worker" in refused(local("n-1", "n-2"), groups(["n-1"], ps=["n-2"]), PS)


def test_mwms_needs_a_chief_or_worker():
    message = refused(local("n-1"), groups(ps=["n-1"]), MWMS)
    assert "put hosts in tfprov_worker" in message and "n-1" in message


def test_one_evaluator_at_most():
    message = refused(local("n-1", "n-2", "n-3"), groups(worker=["n-1"], evaluator=["n-3", "n-2"]))
    assert "n-2, n-3" in message and "at most one evaluator" in message


def test_host_in_two_roles():
    message = refused(local("n-1", "n-2"), groups(["n-1"], ["n-1", "n-2"]))
    assert "n-1" in message and "tfprov_chief" in message and "tfprov_worker" in message
    assert "remove it from one" in message


def test_two_hosts_on_one_address_and_port():
    hostvars = {"a": {"tfprov_tf_address": "127.0.0.1"}, "b": {"tfprov_tf_address": "127.0.0.1"}}
    message = refused(hostvars, groups(worker=["b", "a"]))
    assert "a and b" in message and "127.0.0.1:2222" in message and "give each its own tfprov_tf_port" in message


def test_evaluator_may_share_an_endpoint():
    hostvars = {"a": {"tfprov_tf_address": "127.0.0.1"}, "b": {"tfprov_tf_address": "127.0.0.1"}}
    assert cluster_plan(hostvars, groups(worker=["a"], evaluator=["b"]))["tasks"]["b"]["type"] == "evaluator"


@pytest.mark.parametrize("port", [0, 70000, "http", True, 2222.5, ""])
def test_bad_port(port):
    message = refused({"a": {"tfprov_tf_port": port}}, groups(worker=["a"]))
    assert f"host a has tfprov_tf_port {port!r}" in message and "1 to 65535" in message


@pytest.mark.parametrize("address", ["", "  ", ["10.0.0.1"]])
def test_empty_address(address):
    message = refused({"a": {"tfprov_tf_address": address}}, groups(worker=["a"]))
    assert "host a has an empty TF address" in message and "set tfprov_tf_address" in message


def test_validation_happens_before_addresses_are_read():
    # A two-chief layout fails on its layout even when a host's port is bad too.
    message = refused({"a": {"tfprov_tf_port": "x"}, "b": {}}, groups(["a", "b"]))
    assert "one chief" in message


def test_tf_config_of_a_host_outside_the_cluster():
    plan = cluster_plan(local("n-1"), groups(worker=["n-1"]), MWMS)
    with pytest.raises(TfClusterError, match="host serving-1 has no TF task: put it in tfprov_chief"):
        tf_config(plan, "serving-1")
    with pytest.raises(TfClusterError, match="needs the plan"):
        tf_config("not a plan", "n-1")


def test_tf_config_copies_the_cluster():
    plan = cluster_plan(local("n-1"), groups(worker=["n-1"]), MWMS)
    tf_config(plan, "n-1")["cluster"]["worker"].append("x")
    assert plan["cluster"]["worker"] == ["127.0.0.1:22221"]


INVENTORY = """
tfprov_nodes:
  children:
    tfprov_chief:
      hosts:
        node-1: {tfprov_tf_address: 127.0.0.1, tfprov_tf_port: "{{ 22220 + 1 }}"}
    tfprov_worker:
      hosts:
        node-2: {ansible_host: 10.0.0.2}
        node-10: {ansible_host: 10.0.0.10, tfprov_tf_port: 2223}
"""


def ansible_hostvars(tmp_path):
    """Ansible's own lazy HostVars (values templated on access) and groups of a YAML inventory."""
    from ansible.inventory.manager import InventoryManager
    from ansible.parsing.dataloader import DataLoader
    from ansible.vars.hostvars import HostVars
    from ansible.vars.manager import VariableManager

    path = tmp_path / "hosts.yml"
    path.write_text(INVENTORY)
    loader = DataLoader()
    inventory = InventoryManager(loader=loader, sources=[str(path)])
    manager = VariableManager(loader=loader, inventory=inventory)
    return HostVars(inventory, manager, loader), inventory.get_groups_dict()


def test_filters_read_ansible_hostvars_and_refuse_with_ansible_filter_errors(tmp_path):
    filters = FilterModule().filters()
    hostvars, layout = ansible_hostvars(tmp_path)
    plan = filters["tf_cluster"](hostvars, layout, MWMS)
    assert plan["cluster"] == {"chief": ["127.0.0.1:22221"], "worker": ["10.0.0.2:2222", "10.0.0.10:2223"]}
    assert filters["tf_config"](plan, "node-10")["task"] == {"type": "worker", "index": 1}
    with pytest.raises(AnsibleFilterError, match="parameter_server needs at least one parameter server"):
        filters["tf_cluster"](hostvars, layout, PS)
    with pytest.raises(AnsibleFilterError, match="has no TF task"):
        filters["tf_config"](plan, "node-3")


def test_a_stopped_member_is_refused_by_its_task_not_left_out():
    hosts = local("n-1", "n-2", "n-3", "n-4")
    hosts["n-3"]["tfprov_node_state"] = "stopped"
    message = refused(hosts, groups(["n-1"], ["n-2", "n-3"], ["n-4"]), PS)
    assert message.startswith("worker:1 (n-3) is stopped: start it first (tfprov up starts stopped nodes)")
    for name in hosts:
        hosts[name]["tfprov_node_state"] = "running"
    assert cluster_plan(hosts, groups(["n-1"], ["n-2", "n-3"], ["n-4"]), PS)["cluster"]["worker"][1] == \
        "127.0.0.1:22223"


def test_a_stopped_ps_under_mwms_takes_no_part_and_is_not_refused():
    hosts = local("n-1", "n-2")
    hosts["n-2"]["tfprov_node_state"] = "stopped"
    assert cluster_plan(hosts, groups(["n-1"], [], ["n-2"]), MWMS)["ignored"] == ["n-2"]


@pytest.mark.parametrize("address, host, port", [("10.0.0.5:2222", "10.0.0.5", 2222),
                                                 ("[fd00::5]:2223", "fd00::5", 2223),
                                                 ("chief.lan:2222", "chief.lan", 2222)])
def test_an_endpoint_splits_into_host_and_port(address, host, port):
    assert tf_endpoint(address) == {"host": host, "port": port}


def test_an_endpoint_without_a_port_is_refused():
    with pytest.raises(AnsibleFilterError, match="is not host:port"):
        tf_endpoint("10.0.0.5")


def test_member_addresses_are_the_given_ones_then_the_resolved_names_once_each():
    tasks = {"a": "10.0.0.5:2222", "b": "[fd00::5]:2222", "c": "worker.lan:2222", "d": "10.0.0.5:2223", "e": "x:1"}
    plan = {"members": ["a", "b", "c", "d"], "tasks": {host: {"address": addr} for host, addr in tasks.items()}}
    assert tf_member_names(plan) == ["worker.lan"]
    getent = [{"stdout_lines": ["10.0.0.7      STREAM worker.lan", "10.0.0.7      DGRAM", "", "10.0.0.5      RAW"]},
              {"skipped": True}]
    assert tf_member_addresses(plan, getent) == ["10.0.0.5", "fd00::5", "10.0.0.7"]
    assert tf_member_addresses(plan) == ["10.0.0.5", "fd00::5"]
