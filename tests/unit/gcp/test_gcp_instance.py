"""tfprov.gpu.gcp_instance: one node made in the first zone with capacity, a stopped one started, Spot VMs of the
Spot provisioning model; and `up` making every node at once, where one node's failure does not stop the others."""

import re

import cluster
import pytest
from ansible_collections.tfprov.gpu.plugins.module_utils.gcp_api import GcpApiError
from ansible_collections.tfprov.gpu.plugins.modules import gcp_instance

from conftest import shapes

pytestmark = pytest.mark.cloud

BASE, PROJECT = cluster.BASE, cluster.PROJECT
ZONES = ["us-central1-a", "us-central1-b"]
PARAMS = {"project": PROJECT, "zones": ZONES, "name": "demo-worker-0", "hostname": "demo-worker-0.{zone}.y",
          "machine_type": "n1-standard-8", "image": cluster.IMAGE, "disk_gb": 50, "accelerator": "nvidia-tesla-t4",
          "accelerator_count": 1, "spot": False, "labels": {}, "ssh_keys": "debian:" + cluster.PUBKEY,
          "network": cluster.NETWORK_URL, "subnetwork": "", "external_ip": False, "tags": [], "wait_timeout": 60}


def _url(zone, name="demo-worker-0"):
    return f"{BASE}/zones/{zone}/instances/{name}"


def _vm(zone, status="RUNNING"):
    node = next(n for n in cluster.NODES if n[0] == "demo-worker-0")
    return cluster._instance(*node[:4], zone, node[5], status=status)


def test_a_spot_node_uses_the_spot_provisioning_model_and_is_stopped_not_deleted_when_preempted():
    spot = gcp_instance.body(dict(PARAMS, spot=True), "us-central1-b")["scheduling"]
    assert spot == {"onHostMaintenance": "TERMINATE", "automaticRestart": False, "provisioningModel": "SPOT",
                    "instanceTerminationAction": "STOP"}
    standard = gcp_instance.body(PARAMS, "us-central1-b")
    assert standard["scheduling"] == {"onHostMaintenance": "TERMINATE", "automaticRestart": True}
    assert "preemptible" not in str(standard)
    assert standard["guestAccelerators"][0]["acceleratorType"].endswith("/zones/us-central1-b/acceleratorTypes/"
                                                                        "nvidia-tesla-t4")
    assert "accessConfigs" not in standard["networkInterfaces"][0]  # no external address unless asked


@pytest.mark.parametrize("status, verb", [("TERMINATED", "start"), ("SUSPENDED", "resume")])
def test_a_stopped_or_suspended_node_is_brought_back_in_its_zone(answered, status, verb):
    url = _url("us-central1-a")
    api = answered([
        shapes.call("GET", url, _vm("us-central1-a", status), unless=["back"]),
        shapes.call("POST", f"{url}/{verb}", shapes.operation(PROJECT, url, zone="us-central1-a"), sets=["back"]),
        shapes.call("GET", url, _vm("us-central1-a")),
    ])
    changed, was_stopped, instance, zone, full = gcp_instance.run(api, dict(PARAMS), check_mode=False)
    assert (changed, was_stopped, instance["state"], zone, full) == (True, True, "RUNNING", "us-central1-a", [])


def test_no_zone_with_capacity_names_the_node_and_the_zones_tried(answered):
    calls = []
    for zone in ZONES:
        calls += [shapes.call("GET", _url(zone), shapes.error(404, "notFound", "not found"), status=404),
                  shapes.call("POST", f"{BASE}/zones/{zone}/instances",
                              shapes.error(403, "QUOTA_EXCEEDED", "Quota 'NVIDIA_T4_GPUS' exceeded."), status=403)]
    api = answered(calls)
    with pytest.raises(GcpApiError, match="demo-worker-0: no capacity for n1-standard-8 nvidia-tesla-t4 in "
                                          "us-central1-a, us-central1-b: add zones to the spec or try later"):
        gcp_instance.run(api, dict(PARAMS), check_mode=False)


def _play(recorded, interactions, spec):
    return recorded.run(interactions, "ansible-playbook", "-i", "localhost,", "playbooks/nodes_up.yml", "-e",
                        f"tfprov_cloud_spec_file={spec}", "-e", "tfprov_cloud_provider=gcp")


def test_up_of_a_spot_spec_makes_spot_vms(recorded, tmp_path):
    spec = cluster.spec(tmp_path, spot=True)
    interactions = (cluster.listing() + cluster.offerings() + cluster.quotas(preemptible_t4=8)
                    + cluster.resources() + cluster.tpu_listing())
    result = _play(recorded, interactions, spec)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    inserts = [c["body"] for c in recorded.inserts() if c["url"].endswith("/instances")]
    assert inserts and all(body["scheduling"]["provisioningModel"] == "SPOT" for body in inserts)
    assert recorded.unmatched() == []


def test_one_nodes_failure_does_not_stop_the_others_and_is_named(recorded, tmp_path):
    spec = cluster.spec(tmp_path)
    refused = shapes.call("POST", f"{BASE}/zones/us-central1-a/instances",
                          shapes.error(400, "invalid", "Invalid value for field 'resource.machineType'"),
                          status=400, body_has={"name": "demo-chief-0"})  # the first node
    result = _play(recorded, [refused] + cluster.full_run(), spec)
    assert result.returncode != 0
    made = sorted({c["body"]["name"] for c in recorded.inserts() if c["url"].endswith("/instances")})
    assert made == ["demo-chief-0", "demo-ps-0", "demo-worker-0", "demo-worker-1"]  # the others were all made
    failed = re.findall(r"failed: \[localhost\] \(item=(\S+)\)", result.stdout)
    assert failed == ["demo-chief-0"], result.stdout[-3000:]
    assert "GCP answered 400 to POST" in result.stdout and "resource.machineType" in result.stdout
