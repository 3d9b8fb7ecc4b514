#!/usr/bin/python
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: aws_node
short_description: Make sure one tfprov cluster node runs on EC2, trying the given zones in order
version_added: 1.3.0
description:
  - Finds the node by its tags (C(Name) and C(tfprov:cluster)); when it exists nothing is created, and when it is
    stopped (idle-stopped or by hand) it is started and RV(was_stopped) is true.
  - Otherwise runs one instance in the first zone, and on C(InsufficientInstanceCapacity) in the next one, and says
    which zone was used. M(amazon.aws.ec2_instance) is not used for this because it retries that error with a
    backoff of minutes in the same zone, and has no Spot market option.
  - Every instance requires IMDSv2 (session tokens, hop limit 2) and has an encrypted root volume (the account's
    default EBS key).
  - Credentials only from boto3's standard places; AWS_ENDPOINT_URL is honoured.
author:
  - tfprov maintainers (@tfprov)
options:
  region: {description: AWS region., type: str, required: true}
  zones: {description: Zones to try in order., type: list, elements: str, required: true}
  name: {description: Instance name (tag C(Name))., type: str, required: true}
  cluster: {description: Cluster name (tag C(tfprov:cluster))., type: str, required: true}
  role: {description: Node role (tag C(tfprov:role))., type: str, required: true}
  instance_type: {description: EC2 instance type., type: str, required: true}
  image: {description: AMI id., type: str, required: true}
  root_device_name: {description: The AMI's root device., type: str, default: /dev/xvda}
  disk_gb: {description: Root volume size in GB., type: int, required: true}
  key_name: {description: Key pair name., type: str, required: true}
  security_group_ids:
    description: The node's security groups (the cluster's, and the serving ports' on a serving node).
    type: list
    elements: str
    required: true
  spot: {description: Run as a Spot instance., type: bool, default: false}
  tags: {description: More tags., type: dict, default: {}}
  wait: {description: Wait until the instance runs., type: bool, default: true}
attributes:
  check_mode: {description: Says what it would create and creates nothing., support: full}
  diff_mode: {description: No diff., support: none}
"""

EXAMPLES = r"""
- name: Make sure the chief runs
  tfprov.gpu.aws_node:
    region: us-east-1
    zones: [us-east-1a, us-east-1b]
    name: demo-chief-0
    cluster: demo
    role: chief
    instance_type: g4dn.xlarge
    image: ami-0123456789abcdef0
    disk_gb: 100
    key_name: tfprov-demo
    security_group_ids: [sg-0123]
"""

RETURN = r"""
instance:
  description: The instance (id, zone, type, state, address, private_address).
  returned: success
  type: dict
zone: {description: The zone the node is in., returned: success, type: str}
full_zones: {description: Zones tried first that had no capacity., returned: success, type: list}
# Not `started`: async_status reserves that key (a result with it reads as a job still running).
was_stopped: {description: The node was stopped and has been started., returned: success, type: bool}
"""

import hashlib
import time
import uuid

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

try:
    import boto3
    from botocore.config import Config
    from botocore.exceptions import BotoCoreError, ClientError, WaiterError
except ImportError:
    boto3 = None

LIVE_STATES = ["pending", "running", "stopping", "stopped"]
NO_CAPACITY = ("InsufficientInstanceCapacity", "InsufficientCapacity")
THROTTLED = ("RequestLimitExceeded", "Throttling", "ThrottlingException")


def _code(exc):
    return exc.response.get("Error", {}).get("Code", "")


def summary(inst):
    return {"id": inst["InstanceId"], "zone": inst["Placement"]["AvailabilityZone"], "type": inst["InstanceType"],
            "state": inst["State"]["Name"], "address": inst.get("PublicIpAddress") or "",
            "private_address": inst.get("PrivateIpAddress") or ""}


def find(ec2, params):
    filters = [{"Name": "tag:Name", "Values": [params["name"]]},
               {"Name": "tag:tfprov:cluster", "Values": [params["cluster"]]},
               {"Name": "instance-state-name", "Values": LIVE_STATES}]
    found = [i for r in ec2.describe_instances(Filters=filters)["Reservations"] for i in r["Instances"]]
    return found[0] if found else None


def default_subnet(ec2, zone):
    subnets = ec2.describe_subnets(Filters=[{"Name": "availability-zone", "Values": [zone]},
                                            {"Name": "default-for-az", "Values": ["true"]}])["Subnets"]
    return subnets[0]["SubnetId"] if subnets else None


def launch_spec(params, zone, subnet, token=""):
    """RunInstances' arguments: IMDSv2 only (a process on the node cannot read the role's credentials with a bare GET,
    nor can a container behind one more hop), an encrypted root volume, and an idempotency token so that a call
    retried after a lost answer returns the instance it made instead of making a second one."""
    tags = dict(params["tags"], Name=params["name"])
    tags.update({"tfprov:cluster": params["cluster"], "tfprov:role": params["role"]})
    tag_list = [{"Key": k, "Value": str(v)} for k, v in sorted(tags.items())]
    spec = {
        "ImageId": params["image"], "InstanceType": params["instance_type"], "KeyName": params["key_name"],
        "MinCount": 1, "MaxCount": 1,
        "BlockDeviceMappings": [{"DeviceName": params["root_device_name"],
                                 "Ebs": {"VolumeSize": params["disk_gb"], "DeleteOnTermination": True,
                                         "VolumeType": "gp3", "Encrypted": True}}],
        # Hop limit 2: TF Serving in a bridged container still reaches the metadata service, with a token.
        "MetadataOptions": {"HttpTokens": "required", "HttpEndpoint": "enabled", "HttpPutResponseHopLimit": 2},
        "TagSpecifications": [{"ResourceType": "instance", "Tags": tag_list},
                              {"ResourceType": "volume", "Tags": tag_list}],
    }
    if token:
        # At most 64 characters: a digest, so that a long name never cuts the zone off.
        spec["ClientToken"] = hashlib.sha256(("%s/%s/%s" % (token, params["name"], zone)).encode()).hexdigest()
    if subnet:
        spec["NetworkInterfaces"] = [{"DeviceIndex": 0, "SubnetId": subnet, "AssociatePublicIpAddress": True,
                                      "Groups": list(params["security_group_ids"])}]
    else:
        spec["Placement"] = {"AvailabilityZone": zone}
        spec["SecurityGroupIds"] = list(params["security_group_ids"])
    if params["spot"]:
        spec["InstanceMarketOptions"] = {"MarketType": "spot",
                                         "SpotOptions": {"SpotInstanceType": "one-time",
                                                         "InstanceInterruptionBehavior": "terminate"}}
    return spec


def start(ec2, instance_id):
    """Start a stopped (or stopping) instance and wait until it runs: its addresses are new once it does."""
    ec2.get_waiter("instance_stopped").wait(InstanceIds=[instance_id], WaiterConfig={"Delay": 5, "MaxAttempts": 60})
    ec2.start_instances(InstanceIds=[instance_id])
    ec2.get_waiter("instance_running").wait(InstanceIds=[instance_id], WaiterConfig={"Delay": 5, "MaxAttempts": 60})
    return summary(ec2.describe_instances(InstanceIds=[instance_id])["Reservations"][0]["Instances"][0])


def run_once(runner, spec):
    """RunInstances without botocore's retries (a zone without capacity is left at once for the next one);
    only throttling is tried again."""
    for attempt in range(4):
        try:
            return runner.run_instances(**spec)["Instances"][0]
        except ClientError as exc:
            if _code(exc) not in THROTTLED or attempt == 3:
                raise
            time.sleep(2 ** attempt)


def place(module, ec2, runner):
    params = module.params
    full = []
    token = uuid.uuid4().hex[:16]  # one per placement; a zone's retries reuse it, the next zone gets its own
    for zone in params["zones"]:
        if module.check_mode:
            return None, zone, full
        try:
            inst = run_once(runner, launch_spec(params, zone, default_subnet(ec2, zone), token))
        except ClientError as exc:
            if _code(exc) in NO_CAPACITY:
                full.append(zone)
                continue
            raise
        return inst, zone, full
    module.fail_json(msg="no capacity for %s (%s) in any of the spec's zones %s: add zones to the spec's zones, "
                         "pick another instance type, or try again later" % (params["instance_type"], params["name"],
                                                                             ", ".join(params["zones"])),
                     full_zones=full)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            region=dict(type="str", required=True), zones=dict(type="list", elements="str", required=True),
            name=dict(type="str", required=True), cluster=dict(type="str", required=True),
            role=dict(type="str", required=True), instance_type=dict(type="str", required=True),
            image=dict(type="str", required=True), root_device_name=dict(type="str", default="/dev/xvda"),
            disk_gb=dict(type="int", required=True), key_name=dict(type="str", required=True),
            security_group_ids=dict(type="list", elements="str", required=True),
            spot=dict(type="bool", default=False),
            tags=dict(type="dict", default={}), wait=dict(type="bool", default=True),
        ),
        supports_check_mode=True,
    )
    if boto3 is None:
        module.fail_json(msg=missing_required_lib("boto3"))
    if module.params["disk_gb"] < 25:
        module.fail_json(msg="disk_gb is %d: it must be at least 25" % module.params["disk_gb"])
    session = boto3.session.Session()
    ec2 = session.client("ec2", region_name=module.params["region"])
    no_retries = Config(retries={"total_max_attempts": 1})
    runner = session.client("ec2", region_name=module.params["region"], config=no_retries)
    try:
        existing = find(ec2, module.params)
        if existing and existing["State"]["Name"] in ("stopping", "stopped"):
            # Idle-stopped or stopped by hand: a cluster built without it would silently be smaller.
            found = summary(existing)
            if module.check_mode:
                module.exit_json(changed=True, was_stopped=True, instance=found, zone=found["zone"], full_zones=[])
            module.exit_json(changed=True, was_stopped=True, instance=start(ec2, existing["InstanceId"]),
                             zone=found["zone"], full_zones=[])
        if existing:
            found = summary(existing)
            module.exit_json(changed=False, was_stopped=False, instance=found, zone=found["zone"], full_zones=[])
        inst, zone, full = place(module, ec2, runner)
        if inst is None:  # check mode
            module.exit_json(changed=True, was_stopped=False, instance={}, zone=zone, full_zones=full)
        if module.params["wait"]:
            ec2.get_waiter("instance_running").wait(InstanceIds=[inst["InstanceId"]],
                                                    WaiterConfig={"Delay": 5, "MaxAttempts": 60})
        inst = ec2.describe_instances(InstanceIds=[inst["InstanceId"]])["Reservations"][0]["Instances"][0]
    except ClientError as exc:
        module.fail_json(msg="EC2 refused %s: %s (%s)" % (module.params["name"], _code(exc),
                                                          exc.response.get("Error", {}).get("Message", "")))
    except (BotoCoreError, WaiterError) as exc:
        module.fail_json(msg="EC2 call for %s failed: %s" % (module.params["name"], exc))
    module.exit_json(changed=True, was_stopped=False, instance=summary(inst), zone=zone, full_zones=full)


if __name__ == "__main__":
    main()
