"""The gcp_instance_stop module against a fake Compute API session (no GCP): read, stop and wait, check mode,
an instance already stopped, a missing instance in one line."""

import json

import pytest
from ansible.module_utils.testing import patch_module_args
from ansible_collections.tfprov.gpu.plugins.modules import gcp_instance_stop

LINK = "https://compute.googleapis.com/compute/v1/projects/p/zones/z/instances/demo-chief-0"
DISK = "https://compute.googleapis.com/compute/v1/projects/p/zones/z/disks/demo-chief-0"


class Response:
    def __init__(self, body, status=200):
        self.body, self.status_code = body, status

    def json(self):
        return self.body


class FakeCompute:
    def __init__(self, status="RUNNING", exists=True):
        self.status, self.exists, self.calls = status, exists, []

    def __call__(self, module, product):  # stands in for GcpSession(module, "compute")
        return self

    def get(self, url):
        self.calls.append(("GET", url))
        if url.endswith("/operations/op-1"):
            self.status = "TERMINATED"
            return Response({"status": "DONE", "selfLink": url})
        if not self.exists:
            return Response({"error": {"message": "not found"}}, 404)
        return Response({"id": 42, "status": self.status, "disks": [{"boot": True, "source": DISK}]})

    def post(self, url):
        self.calls.append(("POST", url))
        return Response({"status": "RUNNING", "selfLink": f"{LINK}/operations/op-1"})


def run(capsys, monkeypatch, compute, **args):
    monkeypatch.setattr(gcp_instance_stop, "GcpSession", compute)
    monkeypatch.setattr(gcp_instance_stop.time, "sleep", lambda s: None)
    base = {"project": "p", "zone": "z", "name": "demo-chief-0", "auth_kind": "application"}
    with patch_module_args({**base, **args}), pytest.raises(SystemExit):
        gcp_instance_stop.main()
    return json.loads(capsys.readouterr().out)


def test_reads_the_boot_disk_without_changing_anything(capsys, monkeypatch):
    compute = FakeCompute()
    result = run(capsys, monkeypatch, compute)
    assert result["changed"] is False and result["boot_disk"] == DISK and result["status"] == "RUNNING"
    assert [method for method, _ in compute.calls] == ["GET"]


def test_stops_a_running_instance_and_waits_for_the_operation(capsys, monkeypatch):
    compute = FakeCompute()
    result = run(capsys, monkeypatch, compute, state="stopped")
    assert result["changed"] is True and result["status"] == "TERMINATED" and result["id"] == "42"
    assert ("POST", f"{LINK}/stop") in compute.calls


def test_check_mode_and_a_stopped_instance_post_nothing(capsys, monkeypatch):
    compute = FakeCompute()
    assert run(capsys, monkeypatch, compute, state="stopped", _ansible_check_mode=True)["changed"] is True
    stopped = FakeCompute(status="TERMINATED")
    assert run(capsys, monkeypatch, stopped, state="stopped")["changed"] is False
    assert not [call for call in compute.calls + stopped.calls if call[0] == "POST"]


def test_a_missing_instance_fails_in_one_line(capsys, monkeypatch):
    result = run(capsys, monkeypatch, FakeCompute(exists=False), state="stopped")
    assert result["failed"] and result["msg"] == (
        "instance demo-chief-0: not found (check the project, the zone and the name)")
