"""gcp_instance_stop (bake_image.yml: find the instance's boot disk, stop it before imaging) on the one GCP client,
against hand-written Compute API answers: read only, stop and wait, check mode, already stopped, not found."""

import cluster
import pytest
from ansible_collections.tfprov.gpu.plugins.module_utils.gcp_api import GcpApiError
from ansible_collections.tfprov.gpu.plugins.modules import gcp_instance_stop

from conftest import shapes

pytestmark = pytest.mark.cloud

URL = f"{cluster.BASE}/zones/us-central1-a/instances/demo-chief-0"
PARAMS = {"project": cluster.PROJECT, "zone": "us-central1-a", "name": "demo-chief-0", "state": "stopped",
          "wait_timeout": 60}


def _vm(status):
    return cluster._instance(*cluster.NODES[0], status=status)


def _stoppable(status="RUNNING"):
    return [
        shapes.call("GET", URL, _vm(status), unless=["stopped"]),
        shapes.call("POST", f"{URL}/stop", shapes.operation(cluster.PROJECT, URL, zone="us-central1-a",
                                                             status="RUNNING", name="op-stop")),
        shapes.call("GET", f"{cluster.BASE}/zones/us-central1-a/operations/op-stop",
                    shapes.operation(cluster.PROJECT, URL, zone="us-central1-a", name="op-stop"), sets=["stopped"]),
        shapes.call("GET", URL, _vm("TERMINATED"), when=["stopped"]),
    ]


def test_reads_the_instance_without_changing_anything(answered, tmp_path):
    api = answered(_stoppable())
    changed, instance = gcp_instance_stop.run(api, dict(PARAMS, state="present"), check_mode=False)
    assert changed is False and instance["status"] == "RUNNING"


def test_stops_a_running_instance_and_waits_for_the_operation(answered):
    api = answered(_stoppable())
    changed, instance = gcp_instance_stop.run(api, dict(PARAMS), check_mode=False)
    assert changed is True and instance["status"] == "TERMINATED"


@pytest.mark.parametrize("status, check_mode, changed", [("RUNNING", True, True), ("TERMINATED", False, False)])
def test_check_mode_and_a_stopped_instance_stop_nothing(answered, status, check_mode, changed):
    api = answered(_stoppable(status)[:1])  # no stop answer: a POST would be unmatched and fail
    assert gcp_instance_stop.run(api, dict(PARAMS), check_mode=check_mode)[0] is changed


def test_a_missing_instance_fails_in_one_line(answered):
    api = answered([shapes.call("GET", URL, shapes.error(404, "notFound", "not found"), status=404)])
    with pytest.raises(GcpApiError, match=r"^instance demo-chief-0: not found \(check the project, the zone and "
                                          r"the name\)$"):
        gcp_instance_stop.run(api, dict(PARAMS), check_mode=False)
