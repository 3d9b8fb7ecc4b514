"""inventories/gcp.gcp_compute.yml run by ansible-inventory (the real google.cloud.gcp_compute plugin) against
hand-written Compute API answers injected at the HTTP layer: groups, GPU vars, no merged hosts, caching."""

import re

import pytest
import yaml

from conftest import ROOT, shapes

pytestmark = pytest.mark.cloud

ALPHA, BETA = "proj-alpha-1", "proj-beta-2"


def _vm(project, zone, name, role, machine, accels=(), ip="10.128.0.2", status="RUNNING"):
    return shapes.instance(project, zone, name, machine, accels, ip=ip, status=status,
                           labels={"tfprov-cluster": "demo", "tfprov-role": role},
                           hostname=f"{name}.{zone}.{project}")


def _listing(project, instances):
    return shapes.call("GET", f"{shapes.WWW}/projects/{project}/aggregated/instances",
                       shapes.aggregated(instances), query={"filter": "labels.tfprov-cluster:*"})


def _inventory(tmp_path, projects):
    config = yaml.safe_load((ROOT / "inventories" / "gcp.gcp_compute.yml").read_text())
    config["projects"] = projects
    config["cache_connection"] = str(tmp_path / "cache")
    path = tmp_path / "gcp.gcp_compute.yml"
    path.write_text(yaml.safe_dump(config))
    return str(path)


ALPHA_VMS = [
    _vm(ALPHA, "us-central1-a", "demo-chief-0", "chief", "n1-standard-8", [("nvidia-tesla-t4", 1)], "10.128.0.2"),
    _vm(ALPHA, "us-central1-a", "demo-worker-0", "worker", "a2-highgpu-2g",
        [("nvidia-tesla-a100", 2)], "10.128.0.3"),
    _vm(ALPHA, "us-central1-a", "demo-ps-0", "ps", "n1-standard-4", (), "10.128.0.4"),
]
# Same names in another project (and another zone): must stay separate hosts.
BETA_VMS = [
    _vm(BETA, "us-central1-b", "demo-chief-0", "chief", "g2-standard-8", [("nvidia-l4", 1)], "10.128.0.2"),
    _vm(BETA, "us-central1-b", "demo-worker-0", "worker", "a2-highgpu-1g", (), "10.128.0.3"),
]


# The cluster's package cache (spec role cache): listed, in tfprov_cache, and not one of the nodes the stack goes on.
CACHE_VM = _vm(BETA, "us-central1-b", "demo-cache-0", "cache", "e2-standard-2", (), "10.128.0.9")


def test_groups_gpu_vars_and_same_named_vms_in_two_projects(recorded, tmp_path):
    listing = [_listing(ALPHA, ALPHA_VMS), _listing(BETA, BETA_VMS + [CACHE_VM])]
    out = recorded.json_out(recorded.run(listing, "ansible-inventory", "-i", _inventory(tmp_path, [ALPHA, BETA]),
                                         "--list"))
    hostvars = out["_meta"]["hostvars"]
    assert sorted(hostvars) == sorted(vm["hostname"] for vm in ALPHA_VMS + BETA_VMS + [CACHE_VM])  # none merged
    chief_a = hostvars[f"demo-chief-0.us-central1-a.{ALPHA}"]
    chief_b = hostvars[f"demo-chief-0.us-central1-b.{BETA}"]
    assert (chief_a["tfprov_gpu_model"], chief_a["tfprov_gpu_family"], chief_a["tfprov_gpu_count"]) == ("t4", "t4", 1)
    assert chief_a["tfprov_gpu_nvlink"] is False  # no GCP row says NVLink yet (data/compat.yml conventions)
    assert (chief_b["tfprov_gpu_model"], chief_b["tfprov_gpu_count"], chief_b["tfprov_gcp_project"]) == ("l4", 1, BETA)
    worker_a = hostvars[f"demo-worker-0.us-central1-a.{ALPHA}"]
    assert (worker_a["tfprov_gpu_model"], worker_a["tfprov_gpu_count"]) == ("a100_40gb", 2)
    # An a2 VM listed without guestAccelerators: its machine type carries the GPU.
    worker_b = hostvars[f"demo-worker-0.us-central1-b.{BETA}"]
    assert (worker_b["tfprov_gpu_model"], worker_b["tfprov_gpu_count"]) == ("a100_40gb", 1)
    ps = hostvars[f"demo-ps-0.us-central1-a.{ALPHA}"]
    assert (ps["tfprov_gpu_model"], ps["tfprov_gpu_count"], ps["tfprov_node_role"]) == ("", 0, "ps")
    assert chief_a["tfprov_tf_address"] == "10.128.0.2" and chief_a["ansible_host"] == "203.0.113.10"
    assert chief_a["tfprov_zone"] == "us-central1-a" and chief_a["tfprov_instance_type"] == "n1-standard-8"
    assert chief_a["tfprov_provider"] == "gcp" and chief_a["tfprov_market"] == "on-demand"  # priced from these
    assert chief_a["tfprov_cluster"] == "demo" and chief_a["tfprov_booted_from_image"] == ""
    groups = {name: set(body.get("hosts", [])) for name, body in out.items() if name != "_meta"}
    assert len(groups["tfprov_chief"]) == 2 and len(groups["tfprov_worker"]) == 2 and len(groups["tfprov_ps"]) == 1
    assert len(groups["tfprov_nodes"]) == 5 and CACHE_VM["hostname"] not in groups["tfprov_nodes"]
    assert groups["tfprov_cache"] == {CACHE_VM["hostname"]}
    assert groups["gpu_t4"] == {f"demo-chief-0.us-central1-a.{ALPHA}"}
    assert groups["gpu_a100"] == groups["gpu_a100_40gb"] and len(groups["gpu_a100"]) == 2
    assert not any(re.search("demo-ps-0", host) for name, hosts in groups.items() if name.startswith("gpu_")
                   for host in hosts)
    assert recorded.unmatched() == []


def test_the_stock_name_hostname_would_merge_them(recorded, tmp_path):
    """Why the inventory names hosts by the qualified hostname: with the stock `name`, two VMs become one host."""
    listing = [_listing(ALPHA, ALPHA_VMS), _listing(BETA, BETA_VMS)]
    path = _inventory(tmp_path, [ALPHA, BETA])
    config = yaml.safe_load(open(path))
    config["hostnames"] = ["name"]
    open(path, "w").write(yaml.safe_dump(config))
    out = recorded.json_out(recorded.run(listing, "ansible-inventory", "-i", path, "--list"))
    assert len(out["_meta"]["hostvars"]) == 3  # 5 VMs, 3 hosts: what the shipped file prevents


def test_second_listing_comes_from_the_cache(recorded, tmp_path):
    listing = [_listing(ALPHA, ALPHA_VMS)]
    path = _inventory(tmp_path, [ALPHA])
    first = recorded.json_out(recorded.run(listing, "ansible-inventory", "-i", path, "--list"))
    asked = len(recorded.calls())
    second = recorded.json_out(recorded.run(listing, "ansible-inventory", "-i", path, "--list"))
    assert asked == 1 and len(recorded.calls()) == asked  # no API call the second time
    assert first["_meta"]["hostvars"] == second["_meta"]["hostvars"]


def test_a_stopped_vm_is_listed_with_its_state_so_a_run_refuses_it_by_name(recorded, tmp_path):
    stopped = _vm(ALPHA, "us-central1-a", "demo-worker-1", "worker", "n1-standard-8", [("nvidia-tesla-t4", 1)],
                  "10.128.0.5", status="TERMINATED")  # GCP's word for a stopped VM
    out = recorded.json_out(recorded.run([_listing(ALPHA, ALPHA_VMS + [stopped])], "ansible-inventory", "-i",
                                         _inventory(tmp_path, [ALPHA]), "--list"))
    states = {host: hv["tfprov_node_state"] for host, hv in out["_meta"]["hostvars"].items()}
    assert states.pop(f"demo-worker-1.us-central1-a.{ALPHA}") == "stopped"
    assert set(states.values()) == {"running"}
    assert f"demo-worker-1.us-central1-a.{ALPHA}" in out["tfprov_worker"]["hosts"]  # listed, not silently dropped

