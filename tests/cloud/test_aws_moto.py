"""tfprov up / down aws for real against moto_server (behind tests/support/aws_capacity_proxy.py): never real AWS,
and nothing ever connects to moto's fake instance addresses."""

import json
import subprocess

import pytest

from tfprov import cli

pytestmark = pytest.mark.cloud

ROOT = cli.project_root()
INVENTORY = "inventories/aws.aws_ec2.yml"


def instances(ec2, cluster, states=("pending", "running", "stopping", "stopped", "shutting-down")):
    pages = ec2.describe_instances(Filters=[{"Name": "tag:tfprov:cluster", "Values": [cluster]},
                                            {"Name": "instance-state-name", "Values": list(states)}])
    return [i for r in pages["Reservations"] for i in r["Instances"]]


def tfprov(capsys, *argv):
    rc = cli.main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def error_line(err):
    lines = [line for line in err.splitlines() if line.startswith("tfprov: error:")]
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize(("changes", "words"), [
    ({"roles": {"chief": {"count": 1, "type": "g4dn.xlarge"}, "worker": {"count": 0, "type": "g4dn.xlarge"}}},
     "roles.worker.count is 0"),
    ({"roles": {"worker": {"count": 2, "type": "g4dn.xlarge"}}}, "roles has no chief"),
    ({"disk_gb": 10}, "disk_gb is 10: it must be at least 25"),
    ({"roles": {"chief": {"count": 1, "type": "g9x.xlarge"}}}, "roles.chief.type g9x.xlarge has no GPU"),
    ({"provider": "gcp"}, "provider is gcp but this is `aws`"),
])
def test_a_bad_spec_is_refused_in_one_line_before_anything_exists(capsys, ec2, write_spec, changes, words):
    rc, _, err = tfprov(capsys, "up", "aws", "--spec", write_spec("bad", **changes))
    assert rc == 2
    assert words in error_line(err)
    assert instances(ec2, "bad") == []


def test_missing_credentials_are_refused_naming_what_to_set(capsys, ec2, write_spec, monkeypatch, tmp_path):
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    rc, _, err = tfprov(capsys, "up", "aws", "--spec", write_spec("nocreds"))
    assert rc == 2
    report = json.loads(max((tmp_path / "runs").glob("*-nodes_up/report.json")).read_text())
    assert (report["status"], report["rc"]) == ("refused", 2)  # the report agrees with the exit code
    line = error_line(err)
    assert "AWS_PROFILE" in line and "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY" in line
    assert "nothing was created" in line
    assert instances(ec2, "nocreds") == []
    rc, _, err = tfprov(capsys, "down", "aws", "--spec", write_spec("nocreds"))
    assert rc == 2 and "AWS_PROFILE" in error_line(err) and "nothing was removed" in error_line(err)


def test_an_instance_type_the_zones_do_not_offer_is_refused(capsys, ec2, write_spec):
    # moto's offerings have no p3.2xlarge in us-east-1 (a GPU type the matrix knows).
    spec = write_spec("nooffer", roles={"chief": {"count": 1, "type": "g4dn.xlarge"},
                                        "worker": {"count": 1, "type": "p3.2xlarge"}})
    rc, _, err = tfprov(capsys, "up", "aws", "--spec", spec)
    assert rc == 2
    line = error_line(err)
    assert "roles.worker.type p3.2xlarge is not offered in us-east-1a, us-east-1b" in line
    assert "describe-instance-type-offerings" in line
    assert instances(ec2, "nooffer") == []


def test_a_spec_above_max_hourly_cost_creates_nothing(capsys, ec2, write_spec, tmp_path):
    # Priced from the dated table here (the tests never ask a price API): 3 x g4dn.xlarge + m5.xlarge = $1.770/h.
    rc, out, err = tfprov(capsys, "up", "aws", "--spec", write_spec("pricey"), "--max-hourly-cost", "1.50")
    assert rc == 2
    assert "cluster: $1.770 per hour" in out
    assert "above --max-hourly-cost $1.500: nothing was created" in error_line(err)
    assert instances(ec2, "pricey") == [] and not list((tmp_path / "runs").glob("*-nodes_up"))  # no plan ran


def test_a_gpu_quota_too_small_is_refused_saying_what_to_request(capsys, ec2, write_spec, aws_env):
    # moto's Service Quotas has no EC2 quotas: the proxy answers this one (3 x g4dn.xlarge = 12 vCPUs > 8).
    aws_env.quotas["L-DB2E81BA"] = 8
    rc, _, err = tfprov(capsys, "up", "aws", "--spec", write_spec("quota"))
    assert rc == 2
    line = error_line(err)
    assert "GPU quota too small" in line and "L-DB2E81BA" in line and "needs 12 more vCPUs" in line
    assert "--desired-value 12" in line
    assert instances(ec2, "quota") == []


def inventory_graph():
    proc = subprocess.run([str(ROOT / ".venv" / "bin" / "ansible-inventory") if (ROOT / ".venv").exists()
                           else "ansible-inventory", "-i", INVENTORY, "--graph", "--flush-cache"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def plain(value):
    """ansible-inventory --list writes strings from the plugin as {"__ansible_unsafe": ...}: read them back."""
    if isinstance(value, dict):
        if set(value) == {"__ansible_unsafe"}:
            return value["__ansible_unsafe"]
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain(item) for item in value]
    return value


def inventory_list():
    bindir = (ROOT / ".venv" / "bin") if (ROOT / ".venv").exists() else None
    proc = subprocess.run([str(bindir / "ansible-inventory") if bindir else "ansible-inventory", "-i", INVENTORY,
                           "--list"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return plain(json.loads(proc.stdout))


def test_up_creates_the_tagged_nodes_in_the_next_zone_then_nothing_more_and_down_removes_them(
        capsys, ec2, write_spec, aws_env):
    spec = write_spec("moto")
    aws_env.full_zones.add("us-east-1a")  # no capacity there: every node must land in us-east-1b
    rc, out, err = tfprov(capsys, "up", "aws", "--spec", spec)
    assert rc == 0, err
    made = instances(ec2, "moto")
    tags = sorted((t["Name"], t["tfprov:role"]) for t in
                  ({tag["Key"]: tag["Value"] for tag in i["Tags"]} for i in made))
    assert tags == [("moto-chief-0", "chief"), ("moto-ps-0", "ps"), ("moto-worker-0", "worker"),
                    ("moto-worker-1", "worker")]
    assert {i["Placement"]["AvailabilityZone"] for i in made} == {"us-east-1b"}
    assert {i["BlockDeviceMappings"][0]["DeviceName"] for i in made}  # a root volume was asked for
    assert {i["MetadataOptions"]["HttpTokens"] for i in made} == {"required"}  # IMDSv2 only
    volumes = ec2.describe_volumes(VolumeIds=[i["BlockDeviceMappings"][0]["Ebs"]["VolumeId"] for i in made])
    assert {v["Encrypted"] for v in volumes["Volumes"]} == {True}
    assert len(aws_env.refused) == 4 and {zone for _, zone in aws_env.refused} == {"us-east-1a"}
    assert "moto-chief-0: no capacity in us-east-1a: used zone us-east-1b" in out
    assert "zone(s) used: us-east-1b" in out

    graph = inventory_graph()
    for group in ("@tfprov_nodes:", "@tfprov_chief:", "@tfprov_worker:", "@tfprov_ps:", "@gpu_t4:"):
        assert group in graph
    listing = inventory_list()
    chief = listing["tfprov_chief"]["hosts"]
    assert len(chief) == 1 and chief[0].startswith("moto-chief-0_i-")
    assert len(listing["gpu_t4"]["hosts"]) == 3
    chief_vars = listing["_meta"]["hostvars"][chief[0]]
    assert (chief_vars["tfprov_gpu_model"], chief_vars["tfprov_gpu_family"], chief_vars["tfprov_gpu_count"]) == \
        ("t4", "t4", 1)
    assert chief_vars["tfprov_tf_port"] == 2222 and chief_vars["tfprov_zone"] == "us-east-1b"
    assert chief_vars["tfprov_node_role"] == "chief" and chief_vars["tfprov_cluster"] == "moto"

    groups = ec2.describe_security_groups(Filters=[{"Name": "group-name", "Values": ["tfprov-moto"]}])
    rules = groups["SecurityGroups"][0]["IpPermissions"]
    ssh = [r for r in rules if r["FromPort"] == 22][0]
    assert [r["CidrIp"] for r in ssh["IpRanges"]] == ["203.0.113.7/32"]
    tf = [r for r in rules if r["FromPort"] == 2222][0]
    assert tf["IpRanges"] == [] and tf["UserIdGroupPairs"][0]["GroupId"] == groups["SecurityGroups"][0]["GroupId"]

    aws_env.full_zones.clear()
    # A worker idle-stopped (or stopped by hand): listed as stopped, then started by the next up, not recreated.
    worker = next(i["InstanceId"] for i in made if {"Key": "Name", "Value": "moto-worker-1"} in i["Tags"])
    ec2.stop_instances(InstanceIds=[worker])
    inventory_graph()  # --flush-cache: the listing below is EC2's, not the cache's
    stopped = [h for h, hv in inventory_list()["_meta"]["hostvars"].items() if hv["tfprov_node_state"] == "stopped"]
    assert stopped == [f"moto-worker-1_{worker}"]
    rc, out, err = tfprov(capsys, "up", "aws", "--spec", spec)
    assert rc == 0, err
    assert sorted(i["InstanceId"] for i in instances(ec2, "moto")) == sorted(i["InstanceId"] for i in made)
    assert " yes " not in out  # the created column: no node created by the second up
    assert "moto-worker-1: it was stopped: started" in out
    assert ec2.describe_instances(InstanceIds=[worker])["Reservations"][0]["Instances"][0]["State"]["Name"] == \
        "running"

    # A second instance with a node's Name and tags (made by hand, or by a launch retried elsewhere): down removes it.
    copy = made[0]
    ec2.run_instances(ImageId=copy["ImageId"], InstanceType=copy["InstanceType"], MinCount=1, MaxCount=1,
                      Placement={"AvailabilityZone": "us-east-1b"},
                      TagSpecifications=[{"ResourceType": "instance", "Tags": copy["Tags"]}])
    rc, out, err = tfprov(capsys, "down", "aws", "--spec", spec)
    assert rc == 0, err
    assert instances(ec2, "moto", states=("pending", "running", "stopping", "stopped")) == []
    assert "5 node(s) removed" in out and f"{dict((t['Key'], t['Value']) for t in copy['Tags'])['Name']} (i-" in out
    assert ec2.describe_security_groups(Filters=[{"Name": "group-name", "Values": ["tfprov-moto"]}])[
        "SecurityGroups"] == []
    assert [k for k in ec2.describe_key_pairs()["KeyPairs"] if k["KeyName"] == "tfprov-moto"] == []


def test_serving_and_cache_ports_are_opened_on_their_nodes_only_to_the_operator_and_the_members(
        capsys, ec2, write_spec):
    spec = write_spec("serve", idle_stop_minutes=30, roles={"chief": {"count": 1, "type": "g4dn.xlarge"},
                                                            "serving": {"count": 1, "type": "m5.xlarge"},
                                                            "cache": {"count": 1, "type": "m5.large"}})
    rc, _, err = tfprov(capsys, "up", "aws", "--spec", spec)
    assert rc == 0, err
    groups = {g["GroupName"]: g for g in ec2.describe_security_groups(
        Filters=[{"Name": "group-name", "Values": ["tfprov-serve", "tfprov-serve-serving", "tfprov-serve-cache"]}])[
        "SecurityGroups"]}
    cluster, serving, cache = (groups["tfprov-serve"]["GroupId"], groups["tfprov-serve-serving"],
                               groups["tfprov-serve-cache"])
    opened = {(r["FromPort"], r["ToPort"]): r for r in serving["IpPermissions"]}
    assert set(opened) == {(8500, 8500), (8501, 8501)}
    for rule in opened.values():
        assert [r["CidrIp"] for r in rule["IpRanges"]] == ["203.0.113.7/32"]
        assert [pair["GroupId"] for pair in rule["UserIdGroupPairs"]] == [cluster]
    by_role = {next(t["Value"] for t in i["Tags"] if t["Key"] == "tfprov:role"):
               sorted(g["GroupId"] for g in i["NetworkInterfaces"][0]["Groups"]) for i in instances(ec2, "serve")}
    # The package cache's port: from the cluster's members only, never the operator or the world.
    [cache_rule] = cache["IpPermissions"]
    assert (cache_rule["FromPort"], cache_rule["ToPort"], cache_rule["IpRanges"], cache_rule.get("Ipv6Ranges")) == (
        3141, 3141, [], [])
    assert [pair["GroupId"] for pair in cache_rule["UserIdGroupPairs"]] == [cluster]
    assert by_role == {"chief": [cluster], "serving": sorted([cluster, serving["GroupId"]]),
                       "cache": sorted([cluster, cache["GroupId"]])}
    # The idle-stop guard's minutes: the chief's, and 0 on the serving node (idle on load by design).
    tags = [{t["Key"]: t["Value"] for t in i["Tags"]} for i in instances(ec2, "serve")]
    minutes = {t["tfprov:role"]: t["tfprov:idle-stop-minutes"] for t in tags}
    assert minutes == {"chief": "30", "serving": "0", "cache": "0"}
    # Another cluster in the account: the inventory `up` wrote for this one lists this one's nodes only.
    other = instances(ec2, "serve")[0]
    ec2.run_instances(ImageId=other["ImageId"], InstanceType="m5.xlarge", MinCount=1, MaxCount=1,
                      TagSpecifications=[{"ResourceType": "instance", "Tags": [
                          {"Key": "Name", "Value": "other-chief-0"}, {"Key": "tfprov:cluster", "Value": "other"},
                          {"Key": "tfprov:role", "Value": "chief"}]}])
    own = ROOT / ".tfprov/inventories/serve.aws_ec2.yml"
    listing = subprocess.run([str(ROOT / ".venv/bin/ansible-inventory"), "-i", str(own), "--list", "--flush-cache"],
                             cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert listing.returncode == 0, listing.stderr
    listed = plain(json.loads(listing.stdout))
    hosts = sorted(listed["_meta"]["hostvars"])
    assert [h.split("_")[0] for h in hosts] == ["serve-cache-0", "serve-chief-0", "serve-serving-0"], hosts
    # The cache node serves the nodes: in tfprov_cache, not among the nodes the stack goes on.
    assert [h.split("_")[0] for h in listed["tfprov_cache"]["hosts"]] == ["serve-cache-0"]
    assert sorted(h.split("_")[0] for h in listed["tfprov_nodes"]["hosts"]) == ["serve-chief-0", "serve-serving-0"]
    assert all({8500, 3141}.isdisjoint((r["FromPort"], r["ToPort"])) for r in groups["tfprov-serve"]["IpPermissions"])

    rc, _, err = tfprov(capsys, "down", "aws", "--spec", spec)
    assert rc == 0, err
    assert ec2.describe_security_groups(Filters=[{"Name": "group-name", "Values": [
        "tfprov-serve", "tfprov-serve-serving", "tfprov-serve-cache"]}])["SecurityGroups"] == []
    assert not own.exists()
