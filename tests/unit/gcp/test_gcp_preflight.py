"""gcp_gpu_preflight in process against hand-written Compute API answers: machine types that carry their GPUs,
zones kept per node, existing nodes, quota metric names, and the refusals' wording."""

import cluster
import pytest
from ansible_collections.tfprov.gpu.plugins.module_utils import gcp_api
from ansible_collections.tfprov.gpu.plugins.modules import gcp_gpu_preflight as preflight

from conftest import harness, shapes

pytestmark = pytest.mark.cloud

P, BASE = cluster.PROJECT, cluster.BASE
A100 = {"name": "demo-chief-0", "role": "chief", "type": "a2-highgpu-2g", "accelerator": "", "accelerator_count": 0}
T4 = {"name": "demo-worker-0", "role": "worker", "type": "n1-standard-8", "accelerator": "nvidia-tesla-t4",
      "accelerator_count": 1}


def _machine(zone, name, accels=()):
    return shapes.call("GET", f"{BASE}/zones/{zone}/machineTypes/{name}", shapes.machine_type(P, zone, name, accels))


def _missing(url):
    return shapes.call("GET", url, shapes.error(404, "notFound", "not found"), status=404)


def _listing(instances=()):
    return shapes.call("GET", f"{BASE}/aggregated/instances", shapes.aggregated(list(instances)))


def _quotas(rows, all_regions=64):
    return [shapes.call("GET", f"{BASE}/regions/us-central1", shapes.region(P, "us-central1", rows)),
            shapes.call("GET", BASE, shapes.project_info(P, {"GPUS_ALL_REGIONS": (all_regions, 0)}))]


def test_a2_machine_type_counts_its_own_gpus_against_the_a100_quota(answered):
    api = answered([_listing(), _machine("us-central1-a", "a2-highgpu-2g", [("nvidia-tesla-a100", 2)]),
                    _missing(f"{BASE}/zones/us-central1-b/machineTypes/a2-highgpu-2g"),
                    *_quotas({"NVIDIA_A100_GPUS": (4, 0)})])
    out = preflight.run(api, P, cluster.ZONES, [A100], "demo", False)
    assert out["zones_by_node"] == {"demo-chief-0": ["us-central1-a"]}  # b does not offer it: not tried
    assert out["quota"]["NVIDIA_A100_GPUS"] == {"needed": 2, "limit": 4.0, "usage": 0.0}


def test_an_existing_node_keeps_its_zone_and_needs_no_quota(answered):
    existing = shapes.instance(P, "us-central1-b", "demo-worker-0", "n1-standard-8", [("nvidia-tesla-t4", 1)])
    api = answered([_listing([existing]), _machine("us-central1-a", "n1-standard-8"),
                    shapes.call("GET", f"{BASE}/zones/us-central1-a/acceleratorTypes/nvidia-tesla-t4",
                                shapes.accelerator_type(P, "us-central1-a", "nvidia-tesla-t4")),
                    _machine("us-central1-b", "n1-standard-8"),
                    shapes.call("GET", f"{BASE}/zones/us-central1-b/acceleratorTypes/nvidia-tesla-t4",
                                shapes.accelerator_type(P, "us-central1-b", "nvidia-tesla-t4"))])
    out = preflight.run(api, P, cluster.ZONES, [T4], "demo", False)
    assert out["existing"] == {"demo-worker-0": "us-central1-b"}
    assert out["zones_by_node"] == {"demo-worker-0": ["us-central1-b"]} and out["quota"] == {}


def test_the_all_regions_gpu_quota_is_checked_too(answered):
    api = answered([_listing(), _machine("us-central1-a", "a2-highgpu-2g", [("nvidia-tesla-a100", 2)]),
                    _missing(f"{BASE}/zones/us-central1-b/machineTypes/a2-highgpu-2g"),
                    *_quotas({"NVIDIA_A100_GPUS": (8, 0)}, all_regions=1)])
    with pytest.raises(preflight.Refused, match="GPUS_ALL_REGIONS in all regions allows 1 more .* needs 2"):
        preflight.run(api, P, cluster.ZONES, [A100], "demo", False)


def test_a_missing_image_is_refused(answered):
    api = answered([_listing(), _missing(f"{shapes.COMPUTE}/projects/debian-cloud/global/images/family/debian-99")])
    with pytest.raises(preflight.Refused, match="image projects/debian-cloud/global/images/family/debian-99 does "
                                                "not exist"):
        preflight.run(api, P, cluster.ZONES, [], "demo", False, "projects/debian-cloud/global/images/family/debian-99")


def test_a_tfprov_image_is_reported_for_the_nodes_label(answered):
    api = answered([_listing(), shapes.call("GET", f"{BASE}/global/images/tfprov-t4-2-21", {
        "name": "tfprov-t4-2-21", "labels": {"tfprov-image": "tfprov-t4-2-21"}})])
    out = preflight.run(api, P, cluster.ZONES, [], "demo", False, f"projects/{P}/global/images/tfprov-t4-2-21")
    assert out["image"] == {"name": "tfprov-t4-2-21", "tfprov_image": "tfprov-t4-2-21"}


def test_gcp_errors_are_one_line_with_the_reason(answered, tmp_path):
    api = answered([shapes.call("GET", f"{BASE}/aggregated/instances",
                                shapes.error(403, "accessNotConfigured", "Compute Engine API has not been used in "
                                             "project 123 before or it is disabled."), status=403)])
    with pytest.raises(gcp_api.GcpApiError) as raised:
        preflight.run(api, P, cluster.ZONES, [], "demo", False)
    assert "GCP answered 403 to GET" in str(raised.value) and "accessNotConfigured" in str(raised.value)
    assert "\n" not in str(raised.value)
    assert harness.calls(str(tmp_path))[0]["matched"] == "token"
