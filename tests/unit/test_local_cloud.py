"""A local cloud's name and what derives from it: slots, subnets, and the refusals of bad names and subnets."""

import pytest

from tfprov.errors import TfprovError
from tfprov.local import cloud, faults, nodes


def test_the_default_cloud_is_local_unless_the_environment_names_another(monkeypatch):
    monkeypatch.delenv(cloud.NAME_ENV, raising=False)
    assert cloud.default_name() == "local"
    monkeypatch.setenv(cloud.NAME_ENV, "ci-a")
    assert cloud.default_name() == "ci-a"


@pytest.mark.parametrize("bad", ["", "Local", "1st", "a_b", "a.b", "trailing-", "x" * 21, "a b"])
def test_a_name_that_cannot_name_containers_and_a_namespace_is_refused(bad):
    with pytest.raises(TfprovError, match="^local cloud name .*: use 1-20 lower-case letters"):
        cloud.check_name(bad)


def test_local_keeps_slot_0_and_others_take_the_lowest_free_one():
    assert cloud.pick_slot("local", {}) == 0
    assert cloud.pick_slot("ci-a", {}) == 1  # slot 0 stays the user's, even while `local` is down
    assert cloud.pick_slot("ci-b", {"local": 0, "ci-a": 1, "x": 3}) == 2
    assert cloud.pick_slot("ci-a", {"ci-a": 4}) == 4  # a cloud that is up keeps its slot
    with pytest.raises(TfprovError, match="9 local clouds besides 'local' are up already"):
        cloud.pick_slot("new", {f"c{i}": i for i in range(1, 10)})


def test_subnets_must_be_private_ipv4_networks_with_room_for_the_nodes():
    assert str(cloud.check_subnet("10.210.3.0/24", 5)) == "10.210.3.0/24"
    assert cloud.default_subnet(3) == "10.210.3.0/24"
    with pytest.raises(TfprovError, match="not a private range"):
        cloud.check_subnet("8.8.8.0/24", 2)
    with pytest.raises(TfprovError, match="has host bits set"):
        cloud.check_subnet("10.210.0.5/24", 2)
    with pytest.raises(TfprovError, match="too small for 10 nodes"):
        cloud.check_subnet("10.210.0.0/28", 10)
    with pytest.raises(TfprovError, match="give an IPv4 network"):
        cloud.check_subnet("fd00::/64", 2)


def test_addresses_gateway_and_namespace_derive_from_the_cloud():
    lab = cloud.Cloud("ci-a", 1, "private", "10.210.1.0/24")
    assert (lab.gateway, lab.prefixlen, lab.namespace) == ("10.210.1.1", 24, "tfprov-ci-a")
    assert lab.address(1) == "10.210.1.11"
    assert cloud.Cloud("ci-a", 1).address(1) == "127.0.0.1"  # the host's network


def test_a_cloud_is_read_back_from_its_nodes_labels():
    node = nodes.Node(2, "worker", "bookworm", "", cloud.Cloud("ci-a", 1, "private", "10.210.1.0/24"))
    assert nodes.cloud_of({"labels": node.labels}) == node.cloud


def test_link_faults_on_a_host_network_node_are_refused_in_one_line(monkeypatch):
    node = nodes.Node(1, "chief", "bookworm")
    monkeypatch.setattr(faults, "local_nodes", lambda name: [{"name": node.name, "state": "running",
                                                              "labels": node.labels}])
    for action in faults.LINK_ACTIONS:
        with pytest.raises(TfprovError, match="^tfprov-local-1 is on the host's network, which has no link of its "
                                              f"own to {action}: make the cloud with --network private"):
            faults.apply(None, "1", action, console=None)


def test_an_unknown_node_names_the_cloud_and_its_nodes(monkeypatch):
    node = nodes.Node(1, "chief", "bookworm", "", cloud.Cloud("ci-a", 1))
    monkeypatch.setattr(faults, "local_nodes", lambda name: [{"name": node.name, "state": "running",
                                                              "labels": node.labels}])
    with pytest.raises(TfprovError, match=r"^no node '7' in the local cloud ci-a \(its nodes: tfprov-ci-a-1\)"):
        faults.apply("ci-a", "7", "stop", console=None)


def test_subnet_without_the_private_network_is_refused(monkeypatch):
    monkeypatch.setattr(nodes, "clouds_up", lambda: {})
    monkeypatch.setattr(nodes, "local_nodes", lambda name: [])
    with pytest.raises(TfprovError, match="^--subnet is for the private network: add --network private"):
        nodes.find_cloud("ci-a", "host", "10.1.0.0/24")
    assert nodes.find_cloud("ci-a", "private", None, 3) == cloud.Cloud("ci-a", 1, "private", "10.210.1.0/24")
