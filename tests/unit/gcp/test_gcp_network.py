"""The network a GCP cluster joins: the firewall audit (gcp_firewall), the network check before anything is created
(gcp_network_check, against hand-written Compute API answers), and `up` refusing the project's stock `default`
network or starting a stopped node."""

import re

import cluster
import pytest
from ansible_collections.tfprov.gpu.plugins.module_utils import gcp_firewall
from ansible_collections.tfprov.gpu.plugins.modules import gcp_cloud_nat, gcp_network_check

from conftest import harness, shapes

pytestmark = pytest.mark.cloud

BASE, PROJECT = cluster.BASE, cluster.PROJECT
OPERATOR = "203.0.113.7/32"


def _rule(name, ports, sources, protocol="tcp", **extra):
    rule = {"name": name, "direction": "INGRESS", "allowed": [{"IPProtocol": protocol, "ports": ports}]}
    if sources is not None:
        rule["sourceRanges"] = sources
    rule.update(extra)
    return rule


# The rules GCP creates with a project's `default` network.
STOCK = [
    _rule("default-allow-ssh", ["22"], ["0.0.0.0/0"]),
    _rule("default-allow-internal", ["0-65535"], ["10.128.0.0/9"]),
    _rule("default-allow-rdp", ["3389"], ["0.0.0.0/0"]),
    {"name": "default-allow-icmp", "allowed": [{"IPProtocol": "icmp"}], "sourceRanges": ["0.0.0.0/0"]},
]


def _too_wide(rules):
    return gcp_firewall.too_wide(rules, "demo", "tfprov-demo", OPERATOR, 2222)


def test_the_default_networks_stock_rules_open_ssh_to_everyone_and_the_cluster_port_to_every_vm():
    assert _too_wide(STOCK) == [("default-allow-internal", 22, ["10.128.0.0/9"]),
                                ("default-allow-internal", 2222, ["10.128.0.0/9"]),
                                ("default-allow-ssh", 22, ["0.0.0.0/0"])]


@pytest.mark.parametrize("rule", [
    _rule("office-ssh", ["22"], ["203.0.113.7/32"]),                       # the operator itself
    _rule("web", ["80", "443"], ["0.0.0.0/0"]),                            # neither port
    _rule("ssh-others", ["22"], ["0.0.0.0/0"], targetTags=["bastion"]),    # another tag's VMs
    _rule("ssh-off", ["22"], ["0.0.0.0/0"], disabled=True),
    _rule("ssh-deny", ["22"], ["0.0.0.0/0"]) | {"allowed": [], "denied": [{"IPProtocol": "tcp"}]},
    _rule("tfprov-demo-cluster", ["2222"], ["10.0.0.2/32"]),               # the cluster's own rule
    _rule("ssh-sa", ["22"], ["0.0.0.0/0"], targetServiceAccounts=["ci@demo-proj-1.iam.gserviceaccount.com"]),
])
def test_rules_that_do_not_reach_the_nodes_wider_than_the_spec_pass(rule):
    assert _too_wide([rule]) == []


@pytest.mark.parametrize("rule, ports", [
    (_rule("all-tcp", [], ["198.51.100.0/24"]), [22, 2222]),               # no ports: every port
    (_rule("any-proto", None, ["0.0.0.0/0"], protocol="all"), [22, 2222]),
    (_rule("range", ["2000-3000"], ["10.0.0.0/8"]), [2222]),
    (_rule("no-source", ["22"], None), [22]),                             # no source: everywhere
    (_rule("from-tag", ["22"], None, sourceTags=["web"]), [22]),          # other VMs, not the operator
    (_rule("v6", ["22"], ["::/0"]), [22]),
    (_rule("tagged", ["2222"], ["10.1.0.0/16"], targetTags=["tfprov-demo"]), [2222]),
])
def test_rules_that_open_ssh_or_the_cluster_port_too_wide_are_found(rule, ports):
    assert [found[1] for found in _too_wide([rule])] == ports


def test_the_refusal_names_the_rule_the_port_and_what_to_do():
    line = gcp_firewall.refusal("default", _too_wide(STOCK), OPERATOR)
    assert line.startswith("network default: firewall rule default-allow-internal opens tcp:22 to 10.128.0.0/9, "
                           "wider than operator_cidr 203.0.113.7/32: disable or narrow that rule")
    assert "remove network from the spec so tfprov makes the cluster a network of its own" in line


PARAMS = {"project": PROJECT, "region": "us-central1", "cluster": "demo", "network": "shared", "subnetwork": "",
          "own": False, "operator_cidr": OPERATOR, "cluster_port": 2222}


def _network(auto, rules=()):
    return [shapes.call("GET", f"{BASE}/global/networks/shared", shapes.network(PROJECT, "shared", auto=auto)),
            shapes.call("GET", f"{BASE}/global/firewalls", {"items": [dict(rule, network=cluster.NETWORK_URL.replace(
                "tfprov-demo", "shared")) for rule in rules] + [dict(STOCK[0], network="x/global/networks/other")]})]


def test_a_named_network_that_does_not_exist_is_refused(answered):
    api = answered([shapes.call("GET", f"{BASE}/global/networks/shared", shapes.error(404, "notFound", "no"),
                                status=404)])
    with pytest.raises(gcp_network_check.Refused, match="network shared does not exist in project demo-proj-1"):
        gcp_network_check.run(api, dict(PARAMS))


def test_a_custom_mode_network_needs_a_subnetwork_of_the_region(answered):
    api = answered(_network(auto=False) + [shapes.call(
        "GET", f"{BASE}/regions/us-central1/subnetworks/other-net-sub",
        shapes.subnetwork(PROJECT, "us-central1", "other-net-sub", "other", "10.9.0.0/24"))])
    with pytest.raises(gcp_network_check.Refused, match="custom-mode network: add subnetwork: NAME"):
        gcp_network_check.run(api, dict(PARAMS))
    with pytest.raises(gcp_network_check.Refused, match="subnetwork other-net-sub is not a subnet of network shared"):
        gcp_network_check.run(api, dict(PARAMS, subnetwork="other-net-sub"))


def test_a_named_network_with_narrow_rules_is_used_and_other_networks_rules_are_ignored(answered):
    api = answered(_network(auto=True, rules=[_rule("office-ssh", ["22"], [OPERATOR])]))
    result = gcp_network_check.run(api, dict(PARAMS))
    assert result == {"network": f"{shapes.WWW}/projects/{PROJECT}/global/networks/shared", "subnetwork": "",
                      "exists": True, "rules_checked": 1}


def test_a_named_network_whose_rule_opens_ssh_to_everyone_is_refused(answered):
    api = answered(_network(auto=True, rules=STOCK))
    with pytest.raises(gcp_network_check.Refused, match="firewall rule default-allow-internal opens tcp:22"):
        gcp_network_check.run(api, dict(PARAMS))


def test_the_clusters_own_network_is_not_required_to_exist(answered):
    api = answered([shapes.call("GET", f"{BASE}/global/networks/tfprov-demo", shapes.error(404, "notFound", "no"),
                                status=404)])
    result = gcp_network_check.run(api, dict(PARAMS, network="tfprov-demo", subnetwork="tfprov-demo", own=True))
    assert result["exists"] is False and result["subnetwork"].endswith("/regions/us-central1/subnetworks/tfprov-demo")


def _play(recorded, interactions, spec, *extra):
    return recorded.run(interactions, "ansible-playbook", "-i", "localhost,", "playbooks/nodes_up.yml", "-e",
                        f"tfprov_cloud_spec_file={spec}", "-e", "tfprov_cloud_provider=gcp", *extra)


def test_up_into_the_projects_default_network_is_refused_before_anything_is_created(recorded, tmp_path):
    spec = cluster.spec(tmp_path, network="default")
    stock = [dict(rule, network=f"{shapes.WWW}/projects/{PROJECT}/global/networks/default") for rule in STOCK]
    interactions = [
        shapes.call("GET", f"{BASE}/global/networks/default", shapes.network(PROJECT, "default", auto=True)),
        shapes.call("GET", f"{BASE}/global/firewalls", {"items": stock}),
    ] + cluster.full_run()
    result = _play(recorded, interactions, spec)
    lines = re.findall(r"\[ERROR\]: Task failed: (?:Module failed: )?(.*)", result.stdout + result.stderr)
    assert result.returncode != 0 and lines, result.stdout[-3000:]
    assert lines[-1].startswith("network default: firewall rule default-allow-internal opens tcp:22 to 10.128.0.0/9")
    assert recorded.inserts() == [] and recorded.unmatched() == []


def test_up_starts_a_stopped_node_and_says_so(recorded, tmp_path):
    spec = cluster.spec(tmp_path)
    stopped = "demo-worker-1"
    url = f"{BASE}/zones/us-central1-b/instances/{stopped}"
    node = next(item for item in cluster.NODES if item[0] == stopped)
    start = [
        shapes.call("GET", url, cluster._instance(*node, status="TERMINATED"), unless=["started"]),
        shapes.call("POST", url + "/start", shapes.operation(PROJECT, url, zone="us-central1-b"), sets=["started"]),
    ]
    interactions = start + cluster.listing(stopped=[stopped]) + cluster.full_run()[2:]
    cluster.already_made(tmp_path)
    result = _play(recorded, interactions, spec)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert [(c["method"], c["url"].rsplit("/", 2)[-2:]) for c in recorded.inserts()] == [
        ("POST", [stopped, "start"])]
    stats = result.stdout.split("CUSTOM STATS", 1)[1]
    assert stats.count("started: true") == 1 and stats.count("created: false") == len(cluster.NODES)
    assert re.search(r"localhost\s+: ok=\d+\s+changed=1\s", result.stdout), result.stdout[-3000:]
    assert recorded.unmatched() == []


NAT = {"project": PROJECT, "region": "us-central1", "name": "tfprov-demo", "network": cluster.NETWORK_URL,
       "state": "present"}
ROUTER = f"{BASE}/regions/us-central1/routers/tfprov-demo"


def test_cloud_nat_is_made_once_and_removed(answered):
    api = answered(shapes.lifecycle(ROUTER, ROUTER.rsplit("/", 1)[0], shapes.router(
        PROJECT, "us-central1", "tfprov-demo", "tfprov-demo"), "router", cluster._region_op))
    assert gcp_cloud_nat.run(api, dict(NAT), check_mode=True) == (True, {})
    changed, router = gcp_cloud_nat.run(api, dict(NAT), check_mode=False)
    assert changed and router["nats"][0]["sourceSubnetworkIpRangesToNat"] == "ALL_SUBNETWORKS_ALL_IP_RANGES"
    assert gcp_cloud_nat.run(api, dict(NAT), check_mode=False)[0] is False
    assert gcp_cloud_nat.run(api, dict(NAT, state="absent"), check_mode=False) == (True, {})
    assert gcp_cloud_nat.run(api, dict(NAT, state="absent"), check_mode=False) == (False, {})


def test_a_router_left_without_its_nat_gets_it(answered, tmp_path):
    bare = dict(shapes.router(PROJECT, "us-central1", "tfprov-demo", "tfprov-demo"), nats=[])
    api = answered([
        shapes.call("GET", ROUTER, bare, unless=["patched"]),
        shapes.call("PATCH", ROUTER, cluster._region_op(ROUTER), sets=["patched"]),
        shapes.call("GET", ROUTER, shapes.router(PROJECT, "us-central1", "tfprov-demo", "tfprov-demo")),
    ])
    changed, router = gcp_cloud_nat.run(api, dict(NAT), check_mode=False)
    assert changed and router["nats"]
    patch = next(c for c in harness.calls(str(tmp_path)) if c["method"] == "PATCH")
    assert patch["body"] == {"nats": [{"name": "tfprov-demo", "natIpAllocateOption": "AUTO_ONLY",
                                       "sourceSubnetworkIpRangesToNat": "ALL_SUBNETWORKS_ALL_IP_RANGES"}]}
