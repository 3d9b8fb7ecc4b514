"""inventories/aws.aws_ec2.yml: the stock amazon.aws.aws_ec2 plugin against moto_server gives tfprov's group contract
and host vars (compose, groups, keyed_groups and the tfprov.gpu.instance_gpu filter), cached and uncached."""

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.cloud
ROOT = Path(__file__).resolve().parents[2]
ANSIBLE_INVENTORY = str(Path(sys.executable).parent / "ansible-inventory")

NODES = (  # role, instance type, extra tags, spot
    ("chief", "p4d.24xlarge", {"tfprov:tf-port": "2300", "tfprov:image": "tfprov-node-2026"}, False),
    ("worker", "g4dn.xlarge", {"tfprov:idle-stop-minutes": "30"}, True),
    ("ps", "m5.xlarge", {"tfprov:tf-port": "not-a-port"}, False),
    ("cache", "m5.large", {}, False),
)


@pytest.fixture
def cluster(tmp_path, ec2):
    name = f"inv-{uuid.uuid4().hex[:8]}"  # moto lives for the session: each test lists its own instances
    image = ec2.describe_images(Owners=["amazon"], MaxResults=5)["Images"][0]["ImageId"]
    started = {}
    for role, kind, extra, spot in NODES:
        tags = [{"Key": "tfprov:cluster", "Value": name}, {"Key": "tfprov:role", "Value": role},
                {"Key": "Name", "Value": f"{name}-{role}"}, {"Key": "note", "Value": "{{ 6 * 7 }}"},
                *({"Key": key, "Value": value} for key, value in extra.items())]
        market = {"InstanceMarketOptions": {"MarketType": "spot"}} if spot else {}
        answer = ec2.run_instances(ImageId=image, InstanceType=kind, MinCount=1, MaxCount=1, Placement={
            "AvailabilityZone": "us-east-1b"}, TagSpecifications=[{"ResourceType": "instance", "Tags": tags}], **market)
        started[role] = answer["Instances"][0]["InstanceId"]
    # Someone else's instance in the same account: not tfprov's, never listed.
    untagged = [{"ResourceType": "instance", "Tags": [{"Key": "Name", "Value": name}]}]
    other = ec2.run_instances(ImageId=image, InstanceType="t3.micro", MinCount=1, MaxCount=1,
                              TagSpecifications=untagged)
    config = yaml.safe_load((ROOT / "inventories" / "aws.aws_ec2.yml").read_text())
    config["filters"]["tag:tfprov:cluster"] = name
    (tmp_path / "aws.aws_ec2.yml").write_text(yaml.safe_dump(config))
    yield tmp_path, started
    ec2.terminate_instances(InstanceIds=[*started.values(), other["Instances"][0]["InstanceId"]])


def plain(value):
    """A listing's value without ansible-inventory's marks of data from the cloud ({"__ansible_unsafe": text})."""
    if isinstance(value, dict):
        if set(value) == {"__ansible_unsafe"}:
            return value["__ansible_unsafe"]
        return {key: plain(item) for key, item in value.items()}
    return [plain(item) for item in value] if isinstance(value, list) else value


def listing(workdir, *extra):
    proc = subprocess.run([ANSIBLE_INVENTORY, "-i", "aws.aws_ec2.yml", "--list", *extra], cwd=workdir,
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg")})
    assert proc.returncode == 0, proc.stderr
    return plain(json.loads(proc.stdout))


def by_role(found):
    hosts = found["_meta"]["hostvars"]
    return {host.split("_")[0].rsplit("-", 1)[1]: (host, hostvars) for host, hostvars in hosts.items()}


def test_the_group_contract_and_gpu_vars_from_the_stock_plugin(cluster, ec2):
    workdir, started = cluster
    found = listing(workdir)
    nodes = by_role(found)
    assert sorted(nodes) == ["cache", "chief", "ps", "worker"]  # the untagged instance is not listed
    chief_host, chief = nodes["chief"]
    assert chief_host == f"{chief['tags']['Name']}_{started['chief']}"  # Name_instance-id: never merged
    assert {key: chief[key] for key in chief if key.startswith("tfprov_")} == {
        "tfprov_cluster": chief["tags"]["tfprov:cluster"], "tfprov_node_role": "chief", "tfprov_node_state": "running",
        "tfprov_tf_address": chief["private_ip_address"], "tfprov_tf_port": 2300, "tfprov_zone": "us-east-1b",
        "tfprov_instance_type": "p4d.24xlarge", "tfprov_provider": "aws", "tfprov_market": "on-demand",
        "tfprov_booted_from_image": "tfprov-node-2026", "tfprov_gpu_model": "a100_40gb", "tfprov_gpu_family": "a100",
        "tfprov_gpu_count": 8, "tfprov_gpu_nvlink": True}
    assert chief["ansible_host"] == chief.get("public_ip_address") or chief["private_ip_address"]
    worker, ps, cache = nodes["worker"][1], nodes["ps"][1], nodes["cache"][1]
    assert worker["tfprov_market"] == "spot" and worker["tfprov_idle_stop_minutes"] == "30"
    assert (worker["tfprov_gpu_family"], worker["tfprov_gpu_count"], worker["tfprov_gpu_nvlink"]) == ("t4", 1, False)
    assert (ps["tfprov_gpu_model"], ps["tfprov_gpu_count"], ps["tfprov_gpu_nvlink"]) == ("", 0, False)
    assert ps["tfprov_tf_port"] == 2222 and ps["tfprov_booted_from_image"] == ""  # an unreadable tag: the default
    assert "tfprov_idle_stop_minutes" not in ps  # no tag: left unset
    groups = {name: sorted(h.split("_")[0].rsplit("-", 1)[1] for h in group.get("hosts", []))
              for name, group in found.items() if name != "_meta"}
    assert groups["tfprov_nodes"] == ["chief", "ps", "worker"]  # the cache node serves the nodes: not among them
    assert groups["tfprov_cache"] == ["cache"] and groups["tfprov_chief"] == ["chief"]
    assert groups["gpu_a100"] == groups["gpu_a100_40gb"] == ["chief"] and groups["gpu_t4"] == ["worker"]
    assert cache["tfprov_node_role"] == "cache"
    assert chief["tags"]["note"] == "{{ 6 * 7 }}"  # tag values stay data, never templated


def test_a_stopped_node_is_listed_as_stopped_and_the_cache_serves_the_same_listing(cluster, ec2):
    workdir, started = cluster
    first = listing(workdir)
    assert listing(workdir) == first  # from the cache
    assert list((workdir / ".tfprov" / "cache" / "aws_ec2").iterdir())
    ec2.stop_instances(InstanceIds=[started["ps"]])
    assert by_role(listing(workdir))["ps"][1]["tfprov_node_state"] == "running"  # cached until flushed
    assert by_role(listing(workdir, "--flush-cache"))["ps"][1]["tfprov_node_state"] == "stopped"
