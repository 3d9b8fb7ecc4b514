"""The finished inventory cached (inventories/aws.aws_ec2.yml against moto_server): a cached listing is the same
listing, served without amazon.aws's per-host work; an edited inventory file or --flush-cache reads EC2 again; tag
values stay untrusted data (never templated) after a trip through the cache."""

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


@pytest.fixture
def workdir(tmp_path, ec2):
    cluster = f"cache-{uuid.uuid4().hex[:8]}"  # moto lives for the session: each test lists its own instances
    image = ec2.describe_images(Owners=["amazon"], MaxResults=5)["Images"][0]["ImageId"]
    started = []
    for role, kind in (("chief", "g4dn.xlarge"), ("worker", "g4dn.xlarge"), ("ps", "m5.xlarge")):
        tags = [{"Key": "tfprov:cluster", "Value": cluster}, {"Key": "tfprov:role", "Value": role},
                {"Key": "Name", "Value": f"{cluster}-{role}"}, {"Key": "note", "Value": "{{ 6 * 7 }}"}]
        answer = ec2.run_instances(ImageId=image, InstanceType=kind, MinCount=1, MaxCount=1,
                                   TagSpecifications=[{"ResourceType": "instance", "Tags": tags}])
        started += [instance["InstanceId"] for instance in answer["Instances"]]
    config = yaml.safe_load((ROOT / "inventories" / "aws.aws_ec2.yml").read_text())
    config.update(filters={"tag:tfprov:cluster": cluster, "instance-state-name": ["pending", "running"]},
                  raw_hostvars=["instance_id", "instance_type", "placement", "tags"])
    (tmp_path / "aws.aws_ec2.yml").write_text(yaml.safe_dump(config))
    yield tmp_path
    ec2.terminate_instances(InstanceIds=started)  # the other cloud tests count tfprov's instances and GPU vCPUs


def listing(workdir, *extra, before=(), env=None, imported=None):
    """ansible-inventory --list of the workdir's inventory file, after the sources named in before; with a set as
    imported, it is filled with the names of the modules the command imported."""
    sources = [arg for source in (*before, "aws.aws_ec2.yml") for arg in ("-i", source)]
    python = [] if imported is None else [sys.executable, "-X", "importtime"]
    proc = subprocess.run([*python, ANSIBLE_INVENTORY, *sources, "--list", *extra], cwd=workdir,
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), **(env or {})})
    assert proc.returncode == 0, proc.stderr
    if imported is not None:
        imported.update(line.split("|")[-1].strip() for line in proc.stderr.splitlines()
                        if line.startswith("import time:"))
    return json.loads(proc.stdout)


def cache_files(workdir):
    return sorted(p.name for p in (workdir / ".tfprov" / "cache" / "aws_ec2").iterdir())


def test_a_cached_listing_is_the_same_listing_served_from_the_finished_inventory(workdir, ec2):
    first = listing(workdir)
    hosts = first["_meta"]["hostvars"]
    assert len(hosts) == 3 and sorted(first["tfprov_nodes"]["hosts"]) == sorted(hosts)
    files = cache_files(workdir)
    assert len(files) == 2 and any("_tfprov_" in name for name in files)  # amazon.aws's entry and the finished one
    assert listing(workdir) == first
    # Without amazon.aws's entry, the listing still comes whole from the finished inventory: it was read there.
    for name in files:
        if "_tfprov_" not in name:
            (workdir / ".tfprov" / "cache" / "aws_ec2" / name).unlink()
    assert listing(workdir) == first


def test_a_listing_from_the_finished_inventory_imports_neither_amazon_aws_nor_boto3(workdir):
    cold, cached = set(), set()
    first = listing(workdir, imported=cold)
    assert listing(workdir, imported=cached) == first
    assert {"boto3", "ansible_collections.amazon.aws.plugins.inventory.aws_ec2"} <= cold  # listing EC2 needs them
    assert not {name for name in cached if name.startswith(("boto3", "botocore", "ansible_collections.amazon"))}


def test_tag_values_stay_untrusted_through_the_cache(workdir):
    first, cached = listing(workdir), listing(workdir)
    for found in (first, cached):
        note = next(iter(found["_meta"]["hostvars"].values()))["tags"]["note"]
        assert note == {"__ansible_unsafe": "{{ 6 * 7 }}"}, note  # marked as data, not a template


def test_a_terminated_node_stays_cached_until_the_cache_is_flushed(workdir, ec2):
    first = listing(workdir)
    gone = next(name for name, host in first["_meta"]["hostvars"].items() if name.split("_")[0].endswith("-ps"))
    instance = first["_meta"]["hostvars"][gone]["instance_id"]
    ec2.terminate_instances(InstanceIds=[instance if isinstance(instance, str) else instance["__ansible_unsafe"]])
    assert gone in listing(workdir)["_meta"]["hostvars"]  # cached, as amazon.aws's cache would have it
    fresh = listing(workdir, "--flush-cache")
    assert gone not in fresh["_meta"]["hostvars"] and len(fresh["_meta"]["hostvars"]) == 2
    assert listing(workdir) == fresh  # and the fresh listing is what the cache now holds


def test_an_edited_inventory_file_is_not_answered_from_the_old_listing(workdir):
    listing(workdir)
    config = yaml.safe_load((workdir / "aws.aws_ec2.yml").read_text())
    (workdir / "aws.aws_ec2.yml").write_text(yaml.safe_dump({**config, "compose": {"my_type": "instance_type"}}))
    hosts = listing(workdir)["_meta"]["hostvars"]
    assert all("my_type" in host for host in hosts.values())


def test_a_host_another_source_lists_first_gets_tfprovs_vars_and_keeps_its_own_with_a_cache_or_without(workdir):
    # A static file names the same host first. Under hash_behaviour=merge a dict listed by both sources is merged
    # key by key; a listing read back from the finished inventory would replace the static file's value, so such a
    # listing is always made by the full parse, with or without the cache.
    name = sorted(listing(workdir)["_meta"]["hostvars"])[0]
    (workdir / "static.yml").write_text(yaml.safe_dump({"all": {"hosts": {name: {
        "owner": "ml-team", "tags": {"team": "vision"}}}}}))
    merge = {"ANSIBLE_HASH_BEHAVIOUR": "merge"}
    first = listing(workdir, "--flush-cache", before=["static.yml"], env=merge)
    cached = listing(workdir, before=["static.yml"], env=merge)
    assert cached == first
    host = cached["_meta"]["hostvars"][name]
    assert host["owner"] == "ml-team" and host["tfprov_node_role"] in ("chief", {"__ansible_unsafe": "chief"})
    assert host["tags"]["team"] == "vision" and "tfprov:role" in host["tags"], host["tags"]
    assert name in cached["tfprov_chief"]["hosts"]
