"""playbooks/nodes_up.yml and nodes_down.yml with provider gcp, run by ansible-playbook: the real
google.cloud modules and tfprov's GCP modules, answered by hand-written Compute API responses at the HTTP layer."""

import re

import cluster
import pytest

pytestmark = pytest.mark.cloud


def _play(recorded, interactions, playbook, spec, *extra, credentials=True):
    return recorded.run(interactions, "ansible-playbook", "-i", "localhost,", f"playbooks/{playbook}", "-e",
                        f"tfprov_cloud_spec_file={spec}", "-e", "tfprov_cloud_provider=gcp", *extra,
                        credentials=credentials)


def _recap(result):
    found = re.search(r"localhost\s+: ok=(\d+)\s+changed=(\d+)\s+unreachable=\d+\s+failed=(\d+)", result.stdout)
    assert found, result.stdout[-3000:] + result.stderr[-2000:]
    return {"ok": int(found.group(1)), "changed": int(found.group(2)), "failed": int(found.group(3))}


def _one_line_error(result):
    """The refusal as Ansible prints it: one line after `Task failed: Module failed:`."""
    lines = re.findall(r"\[ERROR\]: Task failed: (?:Module failed: )?(.*)", result.stdout + result.stderr)
    assert result.returncode != 0 and lines, result.stdout[-3000:]
    return lines[-1]


def test_up_creates_every_node_falls_back_a_zone_and_is_idempotent_then_down_removes_them(recorded, tmp_path):
    spec = cluster.spec(tmp_path, tpus=cluster.TPU_SPEC)
    interactions = cluster.full_run() + cluster.tpu_calls()
    first = _play(recorded, interactions, "nodes_up.yml", spec)
    assert first.returncode == 0, first.stdout[-4000:] + first.stderr[-2000:]
    assert recorded.unmatched() == []
    inserts = [c for c in recorded.inserts() if c["url"].endswith("/instances")]
    assert sorted(c["body"]["name"] for c in inserts) == sorted(
        ["demo-chief-0", "demo-worker-0", "demo-worker-1", "demo-worker-1", "demo-ps-0"])  # worker-1: a, then b
    chief = next(c["body"] for c in inserts if c["body"]["name"] == "demo-chief-0")
    assert chief["scheduling"]["onHostMaintenance"] == "TERMINATE"
    assert chief["guestAccelerators"][0]["acceleratorType"].endswith("/zones/us-central1-a/acceleratorTypes/"
                                                                     "nvidia-tesla-t4")
    assert chief["disks"][0]["initializeParams"]["diskSizeGb"] == 50
    assert chief["labels"] == {"tfprov-cluster": "demo", "tfprov-role": "chief", "tfprov-tf-port": "2222",
                              "tfprov-idle-stop-minutes": "0"}
    assert chief["hostname"] == "demo-chief-0.us-central1-a.demo-proj-1"
    assert [c["body"]["hostname"] for c in inserts if c["body"]["name"] == "demo-worker-1"] == [
        "demo-worker-1.us-central1-a.demo-proj-1", "demo-worker-1.us-central1-b.demo-proj-1"]  # each zone it tried
    nic = chief["networkInterfaces"][0]
    assert nic["network"] == cluster.NETWORK_URL and nic["subnetwork"].endswith("/regions/us-central1/subnetworks/"
                                                                                "tfprov-demo")
    assert all(not c["body"]["networkInterfaces"][0].get("accessConfigs") for c in inserts)  # no external address
    made = {c["url"].rsplit("/", 1)[-1]: c["body"] for c in recorded.inserts()}
    assert made["networks"]["autoCreateSubnetworks"] is False and made["subnetworks"]["ipCidrRange"] == "10.128.0.0/20"
    assert made["routers"]["nats"][0]["natIpAllocateOption"] == "AUTO_ONLY"
    ps = next(c["body"] for c in inserts if c["body"]["name"] == "demo-ps-0")
    assert "guestAccelerators" not in ps
    firewalls = {c["body"]["name"]: c["body"] for c in recorded.inserts() if c["url"].endswith("/firewalls")}
    assert firewalls["tfprov-demo-ssh"]["sourceRanges"] == ["203.0.113.7/32"]
    assert firewalls["tfprov-demo-cluster"]["sourceRanges"] == ["10.128.0.2/32", "10.128.0.3/32", "10.128.0.4/32",
                                                                "10.128.0.5/32"]
    assert firewalls["tfprov-demo-cluster"]["targetTags"] == ["tfprov-demo"]
    assert {rule["network"] for rule in firewalls.values()} == {cluster.NETWORK_URL}
    assert "tfprov-demo-serving" not in firewalls  # no serving node in the spec
    assert "the nodes have no external address (external_ip: false)" in first.stdout
    assert "demo-worker-1: us-central1-a had no capacity: used us-central1-b" in first.stdout
    stats = first.stdout.split("CUSTOM STATS", 1)[1]
    assert stats.count("state: RUNNING") == len(cluster.NODES) and stats.count("state: READY") == 1
    assert "private_address: 10.128.0.4" in stats and "zone: us-central1-b" in stats
    tpu = [c for c in recorded.inserts() if c["url"].endswith("/nodes")]
    assert len(tpu) == 1 and tpu[0]["query"] == {"nodeId": "demo-tpu-a"}
    assert tpu[0]["body"]["labels"] == {"tfprov-cluster": "demo", "tfprov-role": "tpu"}

    asked = len(recorded.calls())
    second = _play(recorded, interactions, "nodes_up.yml", spec)
    assert _recap(second)["changed"] == 0, second.stdout[-4000:]
    assert [c for c in recorded.calls()[asked:] if c["method"] != "GET"] == [] and recorded.unmatched() == []

    down = _play(recorded, interactions, "nodes_down.yml", spec)
    assert down.returncode == 0, down.stdout[-4000:]
    deleted = sorted(c["url"].rsplit("/", 1)[-1] for c in recorded.calls() if c["method"] == "DELETE")
    assert deleted == sorted([node[0] for node in cluster.NODES] + ["tfprov-demo-ssh", "tfprov-demo-cluster",
                                                                    "demo-tpu-a"] + ["tfprov-demo"] * 3)
    assert recorded.unmatched() == []


def test_accelerator_not_offered_in_any_zone_is_refused_before_any_insert(recorded, tmp_path):
    spec = cluster.spec(tmp_path)
    interactions = cluster.listing() + cluster.offerings(offered=()) + cluster.quotas() + cluster.resources()
    result = _play(recorded, interactions, "nodes_up.yml", spec)
    line = _one_line_error(result)
    assert "roles.chief: nvidia-tesla-t4 is not offered in zone(s) us-central1-a, us-central1-b" in line
    assert recorded.inserts() == [] and recorded.unmatched() == []


def test_gpu_quota_too_small_is_refused_with_what_to_request_and_where(recorded, tmp_path):
    spec = cluster.spec(tmp_path)
    interactions = (cluster.listing() + cluster.offerings() + cluster.quotas(t4_limit=2, t4_usage=1)
                    + cluster.resources())
    result = _play(recorded, interactions, "nodes_up.yml", spec)
    line = _one_line_error(result)
    assert "NVIDIA_T4_GPUS in region us-central1 allows 1 more (limit 2, in use 1) but the spec needs 3" in line
    assert "request NVIDIA_T4_GPUS >= 4 for region us-central1 in project demo-proj-1" in line
    assert recorded.inserts() == [] and recorded.unmatched() == []


def test_spot_nodes_are_checked_against_the_preemptible_quota(recorded, tmp_path):
    spec = cluster.spec(tmp_path, spot=True)
    interactions = cluster.listing() + cluster.offerings() + cluster.quotas() + cluster.resources()
    result = _play(recorded, interactions, "nodes_up.yml", spec)
    assert "PREEMPTIBLE_NVIDIA_T4_GPUS in region us-central1 allows 0 more" in _one_line_error(result)
    assert recorded.inserts() == []


def test_missing_credentials_name_the_variables_and_nothing_is_called(recorded, tmp_path):
    spec = cluster.spec(tmp_path)
    result = _play(recorded, cluster.full_run(), "nodes_up.yml", spec, credentials=False)
    line = _one_line_error(result)
    assert "no GCP credentials found: set GOOGLE_APPLICATION_CREDENTIALS (or GCP_SERVICE_ACCOUNT_FILE)" in line
    assert recorded.calls() == []


def test_check_mode_calls_nothing_that_writes(recorded, tmp_path):
    spec = cluster.spec(tmp_path)
    result = _play(recorded, cluster.full_run(), "nodes_up.yml", spec, "--check")
    assert result.returncode == 0, result.stdout[-4000:]
    assert [c for c in recorded.calls() if c["method"] != "GET"] == []
    stats = result.stdout.split("CUSTOM STATS", 1)[1]
    for node in cluster.NODES:
        assert node[0] in stats
    assert stats.count("would be created") == len(cluster.NODES) and "provider: gcp" in stats


def test_tpu_bucket_in_another_region_is_refused_before_any_insert(recorded, tmp_path):
    spec = cluster.spec(tmp_path, tpus=cluster.TPU_SPEC)
    interactions = cluster.full_run() + cluster.tpu_calls(bucket_location="europe-west4")
    line = _one_line_error(_play(recorded, interactions, "nodes_up.yml", spec))
    assert "tpus.demo-tpu-a: bucket gs://demo-bucket is in EUROPE-WEST4 but the TPU is in region us-central1" in line
    assert recorded.inserts() == [] and recorded.unmatched() == []


def test_tpu_entry_without_a_type_is_refused_before_any_call(recorded, tmp_path):
    spec = cluster.spec(tmp_path, tpus=[{"name": "tpu-a", "runtime_version": "tpu-ubuntu2204-base"}])
    line = _one_line_error(_play(recorded, cluster.full_run(), "nodes_up.yml", spec))
    assert "tpus[0] is" in line and "give {name: tpu-a, type: v4-8" in line
    assert recorded.calls() == []


def test_down_deletes_a_tpu_vm_dropped_from_the_spec_by_the_clusters_label(recorded, tmp_path):
    spec = cluster.spec(tmp_path)  # no tpus: the one made earlier is found by its label
    cluster.already_made(tmp_path, extra=["tpu-created"])
    down = _play(recorded, cluster.full_run() + cluster.tpu_calls(), "nodes_down.yml", spec)
    assert down.returncode == 0, down.stdout[-4000:]
    deleted = [c["url"].rsplit("/", 1)[-1] for c in recorded.calls() if c["method"] == "DELETE"]
    assert "demo-tpu-a" in deleted and recorded.unmatched() == []
