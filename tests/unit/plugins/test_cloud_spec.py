"""The cluster spec (both clouds) and the instance_gpu filter the inventories' compose uses."""

import copy
import time

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.tfprov.gpu.plugins.filter.cloud import (
    FilterModule,
    cloud_node_records,
    cloud_spec,
    instance_gpu,
)
from ansible_collections.tfprov.gpu.plugins.module_utils.cloud_spec import SpecError, load, normalize
from ansible_collections.tfprov.gpu.plugins.module_utils.compat import load_matrix

MATRIX = load_matrix()
KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIE1234567890abcdefghijklmnopqrstuvwxyzABCDEF test"
AWS = {"name": "demo", "provider": "aws", "region": "us-east-1", "zones": ["us-east-1a", "us-east-1b"],
       "image": "ami-0123456789abcdef0", "disk_gb": 100, "ssh": {"user": "admin", "public_key": KEY},
       "operator_cidr": "203.0.113.7/32",
       "roles": {"chief": {"count": 1, "type": "g4dn.xlarge"}, "worker": {"count": 2, "type": "p4d.24xlarge"},
                 "ps": {"count": 1, "type": "m5.xlarge"}}}
GCP = {"name": "demo", "provider": "gcp", "project": "my-project", "zones": ["us-central1-a", "us-central1-b"],
       "image": "projects/debian-cloud/global/images/family/debian-12", "ssh": {"user": "debian", "public_key": KEY},
       "operator_cidr": "203.0.113.7/32",
       "roles": {"chief": {"count": 1, "type": "n1-standard-8", "accelerator": "nvidia-tesla-t4",
                           "accelerator_count": 2},
                 "worker": {"count": 1, "type": "a2-highgpu-2g"}, "ps": {"count": 1, "type": "n2-standard-4"}}}


def spec(base, **changes):
    out = copy.deepcopy(base)
    out.update(changes)
    return out


def test_a_gcp_cluster_gets_a_network_of_its_own_without_external_addresses_unless_the_spec_says_otherwise():
    assert normalize(GCP, MATRIX, "gcp")["gcp_network"] == {
        "network": "tfprov-demo", "subnetwork": "tfprov-demo", "subnet_cidr": "10.128.0.0/20", "own": True,
        "external_ip": False}
    named = normalize(spec(GCP, network="shared", subnetwork="shared-us", external_ip=True), MATRIX, "gcp")
    assert named["gcp_network"] == {"network": "shared", "subnetwork": "shared-us", "subnet_cidr": "", "own": False,
                                    "external_ip": True}
    assert normalize(AWS, MATRIX, "aws")["gcp_network"] == {}


def test_aws_spec_expands_nodes_with_their_gpus():
    out = normalize(AWS, MATRIX, "aws")
    assert [n["name"] for n in out["nodes"]] == ["demo-chief-0", "demo-worker-0", "demo-worker-1", "demo-ps-0"]
    worker = out["nodes"][1]
    assert (worker["gpu_model"], worker["gpu_family"], worker["gpu_count"]) == ("a100_40gb", "a100", 8)
    assert out["nodes"][3]["gpu_model"] == "" and out["ssh"]["key_name"] == "tfprov-demo"
    assert out["region"] == "us-east-1" and out["cluster_port"] == 2222 and out["spot"] is False


def test_gcp_spec_derives_the_region_and_reads_accelerators_and_gpu_machine_types():
    out = normalize(GCP, MATRIX, "gcp")
    assert out["region"] == "us-central1"
    chief, worker, ps = out["nodes"]
    assert (chief["accelerator"], chief["gpu_model"], chief["gpu_count"]) == ("nvidia-tesla-t4", "t4", 2)
    assert (worker["accelerator"], worker["gpu_model"], worker["gpu_count"]) == ("", "a100_40gb", 2)
    assert ps["gpu_count"] == 0


@pytest.mark.parametrize(("base", "changes", "words"), [
    (AWS, {"roles": {"chief": {"count": 1, "type": "g4dn.xlarge"}, "worker": {"count": 0, "type": "g4dn.xlarge"}}},
     "roles.worker.count is 0: it must be at least 1"),
    (AWS, {"roles": {"chief": {"count": 1, "type": "g4dn.xlarge"}, "worker": {"count": -2, "type": "g4dn.xlarge"}}},
     "roles.worker.count is -2"),
    (AWS, {"roles": {"chief": {"count": "two", "type": "g4dn.xlarge"}}}, "roles.chief.count is 'two'"),
    (AWS, {"roles": {"worker": {"count": 1, "type": "g4dn.xlarge"}}}, "roles has no chief"),
    (AWS, {"roles": {"chief": {"count": 2, "type": "g4dn.xlarge"}}}, "exactly one chief"),
    (AWS, {"roles": {"chief": {"count": 1, "type": "g4dn.xlarge"}, "trainer": {"count": 1}}},
     "roles.trainer is not a role"),
    (AWS, {"disk_gb": 10}, "disk_gb is 10: it must be at least 25"),
    (AWS, {"name": "Demo_1"}, "name is 'Demo_1'"),
    (AWS, {"provider": "azure"}, "provider is 'azure'"),
    (AWS, {"zones": ["us-west-2a"]}, "us-west-2a is not a zone of region us-east-1"),
    (AWS, {"zones": []}, "zones is empty"),
    (AWS, {"zones": None}, "zones is missing"),
    (AWS, {"serving_ports": [8500, 2222]}, "serving_ports: 2222 is not free for TF Serving"),
    (AWS, {"serving_ports": []}, "serving_ports is []"),
    (AWS, {"idle_stop_roles": ["trainer"]}, "idle_stop_roles is ['trainer']"),
    (AWS, {"serving_ports": [8500, 8500]}, "serving_ports lists a port twice"),
    (AWS, {"operator_cidr": "0.0.0.0/1"}, "opens SSH to 2,147,483,648 addresses"),
    (AWS, {"operator_cidr": "::/1"}, "operator_cidr ::/1 opens SSH to"),
    (AWS, {"operator_cidr": "198.51.0.0/15"}, "at most /16"),
    (AWS, {"operator_cidr": "2600::/32"}, "at most /48"),
    (AWS, {"labels": {"Name": "mine"}}, "labels.Name is a key tfprov sets itself"),
    (GCP, {"labels": {"tfprov_cluster": "other"}}, "labels.tfprov_cluster is a key tfprov sets itself"),
    (AWS, {"roles": {"chief": {"count": 1, "type": "g4dn.xlarge"}, "evaluator": {"count": 2, "type": "m5.xlarge"}}},
     "roles.evaluator.count is 2: TensorFlow runs at most one evaluator"),
    (AWS, {"image": "debian-12"}, "image is 'debian-12'"),
    (AWS, {"roles": {"chief": {"count": 1, "type": "g4dn.xlarge"}, "cache": {"count": 2, "type": "m5.large"}}},
     "roles.cache.count is 2: one cache node serves the whole cluster"),
    (AWS, {"cluster_port": 3141}, "port 3141 is the package cache's"),
    (GCP, {"serving_ports": [3141, 8501]}, "port 3141 is the package cache's"),
    (AWS, {"operator_cidr": "0.0.0.0/0"}, "would open SSH to everyone"),
    (AWS, {"operator_cidr": "my-laptop"}, "operator_cidr is 'my-laptop'"),
    (AWS, {"roles": {"chief": {"count": 1, "type": "m5.xlarge"}}}, "roles.chief.type m5.xlarge has no GPU"),
    (AWS, {"roles": {"chief": {"count": 1, "type": "g4dn.xlarge", "accelerator": "nvidia-tesla-t4"}}},
     "GCP only"),
    (AWS, {"tpus": [{"name": "t"}]}, "tpus are GCP only"),
    (AWS, {"colour": "blue"}, "colour is not a spec setting"),
    (GCP, {"project": None}, "project is None"),
    (GCP, {"zones": ["us-central1-a", "europe-west4-a"]}, "zones span regions"),
    (GCP, {"roles": {"chief": {"count": 1, "type": "n1-standard-8", "accelerator": "nvidia-tesla-z9"}}},
     "roles.chief.accelerator 'nvidia-tesla-z9' is unknown"),
    (GCP, {"roles": {"chief": {"count": 1, "type": "a2-highgpu-3g"}}}, "a2-highgpu-3g is not a GPU machine type"),
    (GCP, {"roles": {"chief": {"count": 1, "type": "n1-standard-8"}}}, "roles.chief needs a GPU"),
    (GCP, {"roles": {"chief": {"count": 1, "type": "a2-highgpu-1g", "accelerator": "nvidia-tesla-a100"}}},
     "carries its own GPUs"),
    (GCP, {"network": "Default Net"}, "network is 'Default Net'"),
    (GCP, {"subnetwork": "sub-a"}, "subnetwork sub-a needs its network"),
    (GCP, {"network": "shared", "subnet_cidr": "10.1.0.0/24"}, "subnet_cidr is for the network tfprov makes"),
    (GCP, {"subnet_cidr": "34.1.0.0/24"}, "subnet_cidr is '34.1.0.0/24': give a private IPv4 range"),
    (GCP, {"subnet_cidr": "10.0.0.0/30"}, "between /8 and /29"),
    (GCP, {"external_ip": "yes"}, "external_ip is 'yes'"),
    (AWS, {"external_ip": True}, "external_ip is GCP only"),
])
def test_a_bad_spec_is_refused_in_one_line_naming_the_field(base, changes, words):
    with pytest.raises(SpecError) as err:
        normalize(spec(base, **changes), MATRIX, base["provider"])
    assert words in str(err.value)
    assert "\n" not in str(err.value)


def test_a_cache_node_has_no_gpu_needs_none_and_is_never_stopped_as_idle():
    roles = {"chief": {"count": 1, "type": "g4dn.xlarge"}, "cache": {"count": 1, "type": "m5.large"}}
    out = normalize(spec(AWS, roles=roles, idle_stop_minutes=30), MATRIX, "aws")
    cache = out["nodes"][-1]
    assert (cache["name"], cache["role"], cache["gpu_model"]) == ("demo-cache-0", "cache", "")
    assert out["cache_port"] == 3141 and "cache" not in out["idle_stop_roles"]
    gcp = normalize(spec(GCP, roles=dict(GCP["roles"], cache={"count": 1, "type": "e2-standard-4"})), MATRIX, "gcp")
    assert gcp["nodes"][-1]["role"] == "cache" and gcp["nodes"][-1]["accelerator"] == ""


def test_the_provider_must_match_the_command():
    with pytest.raises(SpecError, match="provider is aws but this is `gcp`"):
        normalize(AWS, MATRIX, "gcp")


def test_a_public_key_is_read_from_its_file_and_a_private_key_is_refused(tmp_path):
    pub = tmp_path / "id.pub"
    pub.write_text(KEY + "\n")
    out = normalize(spec(AWS, ssh={"user": "admin", "public_key": str(pub)}), MATRIX, "aws")
    assert out["ssh"]["public_key_text"] == KEY
    private = tmp_path / "id"
    private.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n")
    with pytest.raises(SpecError, match="looks like a private key"):
        normalize(spec(AWS, ssh={"user": "admin", "public_key": str(private)}), MATRIX, "aws")
    with pytest.raises(SpecError, match="cannot be read"):
        normalize(spec(AWS, ssh={"user": "admin", "public_key": str(tmp_path / "none.pub")}), MATRIX, "aws")


def test_load_refuses_bad_yaml_with_its_line(tmp_path):
    bad = tmp_path / "bad.yml"
    bad.write_text("name: demo\nroles: [\n")
    with pytest.raises(SpecError, match="not valid YAML at line"):
        load(str(bad))


def test_the_filter_takes_a_path_and_says_cluster_spec_on_refusal(tmp_path):
    import yaml

    path = tmp_path / "aws.yml"
    path.write_text(yaml.safe_dump(AWS))
    assert len(cloud_spec(str(path), "aws")["nodes"]) == 4
    with pytest.raises(AnsibleFilterError, match="cluster spec: disk_gb is 10"):
        cloud_spec(spec(AWS, disk_gb=10))
    assert set(FilterModule().filters()) == {"cloud_spec", "instance_gpu", "cloud_node_records"}


@pytest.mark.parametrize(("value", "provider", "expected"), [
    ("g4dn.xlarge", "aws", ("t4", "t4", 1, ["gpu_t4"])),
    ("p4d.24xlarge", "aws", ("a100_40gb", "a100", 8, ["gpu_a100", "gpu_a100_40gb"])),
    ("p5.48xlarge", "aws", ("h100_sxm", "h100", 8, ["gpu_h100", "gpu_h100_sxm"])),
    ("m5.xlarge", "aws", ("", "", 0, [])),
    ("", "aws", ("", "", 0, [])),
    ([{"acceleratorType": "projects/p/zones/us-central1-a/acceleratorTypes/nvidia-tesla-t4", "acceleratorCount": 4}],
     "gcp", ("t4", "t4", 4, ["gpu_t4"])),
    ([], "gcp", ("", "", 0, [])),
    ("a2-ultragpu-8g", "gcp", ("a100_80gb", "a100", 8, ["gpu_a100", "gpu_a100_80gb"])),
    ("zones/us-central1-a/machineTypes/g2-standard-24", "gcp", ("l4", "l4", 2, ["gpu_l4"])),
    ("n1-standard-8", "gcp", ("", "", 0, [])),
])
def test_instance_gpu(value, provider, expected):
    found = instance_gpu(value, provider)
    assert (found["model"], found["family"], found["count"], found["groups"]) == expected


def test_instance_gpu_falls_back_to_the_machine_type_and_is_fast_for_a_thousand_hosts():
    assert instance_gpu([], "gcp", "a2-highgpu-4g")["count"] == 4
    started = time.perf_counter()
    for index in range(3000):
        instance_gpu(("g4dn.xlarge", "m5.large", "p4d.24xlarge")[index % 3], "aws")
    assert time.perf_counter() - started < 0.5
    found = instance_gpu("g4dn.xlarge", "aws")
    found["groups"].append("mutated")
    assert instance_gpu("g4dn.xlarge", "aws")["groups"] == ["gpu_t4"]  # callers cannot spoil the memo


@pytest.mark.parametrize("cidr", ["203.0.113.7/32", "198.51.0.0/16", "10.0.0.0/8", "172.16.0.0/12", "2001:db8:1::/48",
                                  "fd00::/8"])
def test_an_office_network_or_a_private_range_is_a_fine_operator_cidr(cidr):
    assert normalize(spec(AWS, operator_cidr=cidr), MATRIX, "aws")["operator_cidr"] == cidr


def test_idle_stop_leaves_ps_and_serving_nodes_alone_unless_the_spec_asks():
    assert normalize(AWS, MATRIX, "aws")["idle_stop_roles"] == ["chief", "worker", "evaluator"]
    asked = normalize(spec(AWS, idle_stop_roles=["serving", "ps", "ps"]), MATRIX, "aws")
    assert asked["idle_stop_roles"] == ["ps", "serving"]



def _answer(name, **result):
    node = {"name": name, "type": "g4dn.xlarge", "role": "worker", "gpu_model": "t4", "gpu_count": 1}
    return dict(result, cloud_nodes_job={"cloud_nodes_node": node})


def test_cloud_node_records_tell_made_started_existing_and_planned_nodes_apart():
    running = {"id": "i-1", "state": "running", "address": "", "private_address": "10.0.0.5"}
    records = cloud_node_records([
        _answer("made", changed=True, was_stopped=False, instance=running, zone="us-east-1b",
                full_zones=["us-east-1a"]),
        _answer("woken", changed=True, was_stopped=True, instance=running, zone="us-east-1a", full_zones=[]),
        _answer("kept", changed=False, was_stopped=False, instance=running, zone="us-east-1a", full_zones=[]),
        _answer("planned", changed=True, was_stopped=False, instance={}, zone="us-east-1a", full_zones=[]),
    ], "aws")
    assert [(r["created"], r["started"]) for r in records.values()] == [(True, False), (False, True), (False, False),
                                                                         (True, False)]
    assert records["made"]["full_zones"] == ["us-east-1a"] and records["made"]["private_address"] == "10.0.0.5"
    assert records["planned"]["state"] == "would be created" and records["planned"]["id"] == ""
    assert records["kept"]["provider"] == "aws" and records["kept"]["gpu_model"] == "t4"


@pytest.mark.parametrize(("kind", "nvlink"), [("p3.16xlarge", True), ("p4d.24xlarge", True), ("p3.2xlarge", False),
                                              ("g4dn.12xlarge", False), ("m5.xlarge", False)])
def test_the_matrix_says_which_instance_types_join_their_gpus_by_nvlink(kind, nvlink):
    assert instance_gpu(kind, "aws")["nvlink"] is nvlink
