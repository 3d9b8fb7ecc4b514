"""gcp_tpu_vm (TPU API v2 through google-auth) against hand-written TPU / Cloud Storage answers: create, wait for the
operation, idempotent, delete; and the region checks that refuse a TPU before anything is created."""

import cluster
import pytest
from ansible_collections.tfprov.gpu.plugins.module_utils import gcp_api
from ansible_collections.tfprov.gpu.plugins.modules import gcp_tpu_vm

from conftest import harness, shapes

pytestmark = pytest.mark.cloud

PROJECT, ZONE, NAME = cluster.PROJECT, "us-central1-b", "demo-tpu-a"
NODE = f"{shapes.TPU}/projects/{PROJECT}/locations/{ZONE}/nodes/{NAME}"
PARAMS = {"project": PROJECT, "zone": ZONE, "name": NAME, "accelerator_type": "v2-8",
          "runtime_version": "tpu-ubuntu2204-base", "labels": {"tfprov-cluster": "demo"}, "spot": False,
          "bucket": "gs://demo-bucket", "vm_region": "us-central1", "state": "present", "wait_timeout": 60,
          "network": "tfprov-demo", "subnetwork": "tfprov-demo", "external_ip": False, "tags": ["tfprov-demo"]}


def _tpu_lifecycle():
    return cluster.tpu_calls(zone=ZONE)[2:]


def _writes(tmp_path):
    return [(c["method"], c["url"].rsplit("/", 1)[-1]) for c in harness.calls(str(tmp_path))
            if c["method"] in ("POST", "DELETE") and c["matched"] != "token"]


def test_create_waits_for_the_operation_is_idempotent_and_delete_removes_it(answered, tmp_path):
    api = answered(_tpu_lifecycle())
    changed, node, region = gcp_tpu_vm.run(api, dict(PARAMS), check_mode=False)
    assert changed and node["state"] == "READY" and region == "us-central1"
    assert gcp_tpu_vm.run(api, dict(PARAMS), check_mode=False)[0] is False  # exists: no second create
    assert gcp_tpu_vm.run(api, dict(PARAMS, state="absent"), check_mode=False)[0] is True
    assert gcp_tpu_vm.run(api, dict(PARAMS, state="absent"), check_mode=False)[0] is False
    assert _writes(tmp_path) == [("POST", "nodes"), ("DELETE", NAME)]
    create = next(c for c in harness.calls(str(tmp_path)) if c["method"] == "POST" and c["matched"] != "token")
    assert create["body"]["networkConfig"] == {
        "enableExternalIps": False, "network": f"projects/{PROJECT}/global/networks/tfprov-demo",
        "subnetwork": f"projects/{PROJECT}/regions/us-central1/subnetworks/tfprov-demo"}
    assert create["body"]["tags"] == ["tfprov-demo"]
    assert [c for c in harness.calls(str(tmp_path)) if c["matched"] is None] == []


def test_check_mode_creates_nothing(answered, tmp_path):
    api = answered(_tpu_lifecycle())
    assert gcp_tpu_vm.run(api, dict(PARAMS), check_mode=True)[0] is True
    assert _writes(tmp_path) == []


def test_a_failed_operation_is_one_line(answered):
    op = shapes.tpu_operation(PROJECT, ZONE, done=False, name="op-create")
    api = answered([
        shapes.call("GET", NODE, shapes.error(404, "notFound", "not found"), status=404),
        shapes.call("POST", NODE.rsplit("/", 1)[0], op),
        shapes.call("GET", "{}/{}".format(shapes.TPU, op["name"]),
                    shapes.tpu_operation(PROJECT, ZONE, name="op-create", error="There is no more capacity")),
    ])
    with pytest.raises(gcp_api.GcpApiError, match="op-create failed: There is no more capacity"):
        gcp_tpu_vm.run(api, dict(PARAMS), check_mode=False)


def _offered():
    return shapes.call("GET", f"{shapes.TPU}/projects/{PROJECT}/locations/{ZONE}/acceleratorTypes/v2-8",
                       {"name": f"projects/{PROJECT}/locations/{ZONE}/acceleratorTypes/v2-8", "type": "v2-8"})


@pytest.mark.parametrize("location, refusal", [
    ("europe-west4", "bucket gs://demo-bucket is in EUROPE-WEST4 but the TPU is in region us-central1"),
    ("us", "bucket gs://demo-bucket is in US but the TPU is in region us-central1"),
])
def test_bucket_in_another_region_is_refused(answered, location, refusal):
    api = answered([_offered(), shapes.call("GET", f"{shapes.STORAGE}/b/demo-bucket",
                                            shapes.bucket("demo-bucket", location))])
    with pytest.raises(gcp_tpu_vm.Refused, match=refusal):
        gcp_tpu_vm.run(api, dict(PARAMS, state="checked"), check_mode=False)


def test_tpu_zone_outside_the_vms_region_is_refused_before_any_call(answered, tmp_path):
    api = answered([])
    with pytest.raises(gcp_tpu_vm.Refused, match="zone us-central1-b is in region us-central1 but the cluster's VMs "
                                                 "are in europe-west4"):
        gcp_tpu_vm.run(api, dict(PARAMS, state="checked", vm_region="europe-west4"), check_mode=False)
    assert [c for c in harness.calls(str(tmp_path)) if c["matched"] != "token"] == []


def test_tpu_type_not_offered_in_the_zone_is_refused(answered):
    api = answered([shapes.call("GET", _offered()["url"], shapes.error(404, "notFound", "nope"), status=404)])
    with pytest.raises(gcp_tpu_vm.Refused, match="TPU type v2-8 is not offered in zone us-central1-b"):
        gcp_tpu_vm.run(api, dict(PARAMS, state="checked"), check_mode=False)
