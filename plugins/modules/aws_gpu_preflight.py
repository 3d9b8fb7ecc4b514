#!/usr/bin/python
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: aws_gpu_preflight
short_description: Check AWS credentials, instance-type offerings per zone and GPU vCPU quotas before creating nodes
version_added: 1.3.0
description:
  - Credentials come only from boto3's standard places (AWS_PROFILE, AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, an
    instance role); AWS_ENDPOINT_URL is honoured (local test endpoints).
  - For every instance type of the nodes, the zones (in the spec's order) that offer it; a type offered in none of
    them is refused with the command that lists where it is offered.
  - The vCPU quotas of GPU instances (Running On-Demand G and VT / P instances, or the Spot ones) read from Service
    Quotas; when they are not readable (access denied, not available) the check says so and goes on.
  - The cluster's existing instances (tag C(tfprov:cluster)), the image's root device and the key pair's owner.
  - Changes nothing.
author:
  - tfprov maintainers (@tfprov)
options:
  region: {description: AWS region., type: str, required: true}
  zones: {description: "Zones to use, in the order to try them.", type: list, elements: str, required: true}
  nodes:
    description: The spec's nodes (C(name), C(role), C(type)).
    type: list
    elements: dict
    required: true
  cluster: {description: The cluster name (tag C(tfprov:cluster))., type: str, required: true}
  spot: {description: Check the Spot quotas instead of the On-Demand ones., type: bool, default: false}
  image: {description: AMI id to check (empty to skip)., type: str, default: ""}
  key_name: {description: Key pair name to look up (empty to skip)., type: str, default: ""}
extends_documentation_fragment:
  - tfprov.gpu.read_only
"""

EXAMPLES = r"""
- name: Check offerings and quotas for every node
  tfprov.gpu.aws_gpu_preflight:
    region: us-east-1
    zones: [us-east-1a, us-east-1b]
    cluster: demo
    nodes: [{name: demo-chief-0, role: chief, type: g4dn.xlarge}]
"""

RETURN = r"""
zones_by_type: {description: "Per instance type the spec's zones offering it, in order.", returned: success, type: dict}
quotas:
  description: One entry per GPU quota involved (code, name, needed, in_use, limit, readable).
  returned: success
  type: list
existing: {description: "The cluster's instances by Name tag (id, zone, state, type).", returned: success, type: dict}
instances:
  description: Every instance of the cluster (id, name, label, zone, state, type), two sharing a Name included.
  returned: success
  type: list
image: {description: "The AMI (id, root_device_name, tfprov_image tag).", returned: when image is set, type: dict}
key: {description: "The key pair (exists, imported_by_tfprov).", returned: when key_name is set, type: dict}
"""

import re

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

try:
    import boto3
    from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError
except ImportError:
    boto3 = None

# (family test, on-demand quota, spot quota): the vCPU quotas that cover GPU instance types.
QUOTAS = (
    (re.compile(r"^(g|vt)\d"), ("L-DB2E81BA", "Running On-Demand G and VT instances"),
     ("L-3819A6DF", "All G and VT Spot Instance Requests")),
    (re.compile(r"^p\d"), ("L-417A185B", "Running On-Demand P instances"),
     ("L-7212CCBC", "All P Spot Instance Requests")),
)
LIVE_STATES = ["pending", "running", "stopping", "stopped"]
NO_CREDENTIALS = ("no AWS credentials found: set AWS_PROFILE (a profile in ~/.aws/credentials) or "
                  "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")


class Refused(Exception):
    pass


def _code(exc):
    return exc.response.get("Error", {}).get("Code", "") if isinstance(exc, ClientError) else ""


def offered_zones(ec2, region, zones, types):
    found = {kind: set() for kind in types}
    pages = ec2.get_paginator("describe_instance_type_offerings").paginate(
        LocationType="availability-zone",
        Filters=[{"Name": "instance-type", "Values": list(types)}, {"Name": "location", "Values": list(zones)}])
    for page in pages:
        for offer in page["InstanceTypeOfferings"]:
            found.setdefault(offer["InstanceType"], set()).add(offer["Location"])
    return {kind: [zone for zone in zones if zone in found.get(kind, ())] for kind in types}


def vcpus(ec2, types):
    out = {}
    for kind in sorted(set(types)):
        try:
            info = ec2.describe_instance_types(InstanceTypes=[kind])["InstanceTypes"]
        except ClientError as exc:
            if _code(exc) != "InvalidInstanceType":
                raise
            info = []
        out[kind] = info[0]["VCpuInfo"]["DefaultVCpus"] if info else 0
    return out


def live_instances(ec2, filters):
    pages = ec2.get_paginator("describe_instances").paginate(Filters=filters)
    return [inst for page in pages for res in page["Reservations"] for inst in res["Instances"]]


def _tags(inst):
    return {tag["Key"]: tag["Value"] for tag in inst.get("Tags") or []}


def read_quota(sq, code):
    """The quota value, or None when it is not readable (no permission, not offered by the endpoint)."""
    try:
        return sq.get_service_quota(ServiceCode="ec2", QuotaCode=code)["Quota"]["Value"]
    except (ClientError, BotoCoreError):
        return None


def quota_checks(ec2, sq, region, nodes, existing, spot):
    missing = [node for node in nodes if node["name"] not in existing]
    running = live_instances(ec2, [{"Name": "instance-state-name", "Values": ["pending", "running"]}])
    sizes = vcpus(ec2, [n["type"] for n in nodes] + [i["InstanceType"] for i in running])
    results, refusals = [], []
    for family, on_demand, spot_quota in QUOTAS:
        code, name = spot_quota if spot else on_demand
        needed = sum(sizes[n["type"]] for n in missing if family.match(n["type"]))
        if not any(family.match(n["type"]) for n in nodes):
            continue
        in_use = sum(sizes.get(i["InstanceType"], 0) for i in running if family.match(i["InstanceType"])
                     and (i.get("InstanceLifecycle") == "spot") == spot)
        limit = read_quota(sq, code) if needed else None
        results.append({"code": code, "name": name, "needed": needed, "in_use": in_use, "limit": limit,
                        "readable": limit is not None})
        if limit is not None and in_use + needed > limit:
            want = in_use + needed
            refusals.append(
                "GPU quota too small in %s: the cluster needs %d more vCPUs of '%s' (%s), %d in use, quota %d: "
                "request at least %d in the Service Quotas console (https://console.aws.amazon.com/servicequotas/"
                "home/services/ec2/quotas/%s?region=%s) or with: aws service-quotas request-service-quota-increase "
                "--service-code ec2 --quota-code %s --desired-value %d --region %s"
                % (region, needed, name, code, in_use, int(limit), want, code, region, code, want, region))
    if refusals:
        raise Refused(refusals[0])
    return results


def check_offerings(ec2, region, zones, nodes):
    by_type = offered_zones(ec2, region, zones, sorted({n["type"] for n in nodes}))
    for node in nodes:
        if not by_type[node["type"]]:
            raise Refused(
                "roles.%s.type %s is not offered in %s (%s): pick zones that offer it (aws ec2 "
                "describe-instance-type-offerings --location-type availability-zone --filters "
                "Name=instance-type,Values=%s --region %s) or another instance type"
                % (node["role"], node["type"], ", ".join(zones), region, node["type"], region))
    return by_type


def check_image(ec2, region, image):
    try:
        found = ec2.describe_images(ImageIds=[image])["Images"]
    except ClientError as exc:
        if not _code(exc).startswith("InvalidAMIID"):
            raise
        found = []
    if not found:
        raise Refused("image %s is not an AMI of region %s: give an AMI id of that region" % (image, region))
    return {"id": image, "root_device_name": found[0].get("RootDeviceName") or "/dev/xvda",
            "tfprov_image": _tags(found[0]).get("tfprov:image", "")}


def check_key(ec2, key_name, cluster):
    try:
        pairs = ec2.describe_key_pairs(KeyNames=[key_name])["KeyPairs"]
    except ClientError as exc:
        if _code(exc) != "InvalidKeyPair.NotFound":
            raise
        pairs = []
    tags = _tags(pairs[0]) if pairs else {}
    return {"exists": bool(pairs), "imported_by_tfprov": tags.get("tfprov:cluster") == cluster}


def instance_list(cluster):
    """Every instance of the cluster, by id: `down` removes them all, also two that share a Name (`existing`, keyed
    by Name, keeps one of them). Each is labelled by its Name, and by Name and id when the Name is not unique."""
    names = [_tags(i).get("Name", i["InstanceId"]) for i in cluster]
    return [{"id": i["InstanceId"], "zone": i["Placement"]["AvailabilityZone"], "state": i["State"]["Name"],
             "type": i["InstanceType"], "name": name,
             "label": name if names.count(name) == 1 else "%s (%s)" % (name, i["InstanceId"])}
            for i, name in zip(cluster, names)]


def preflight(params, session):
    if session.get_credentials() is None:
        raise Refused(NO_CREDENTIALS)
    ec2 = session.client("ec2", region_name=params["region"])
    sq = session.client("service-quotas", region_name=params["region"])
    nodes, zones, region = params["nodes"], params["zones"], params["region"]
    # No nodes (nodes_down): only the credentials, the existing instances and the key pair.
    result = {"zones_by_type": check_offerings(ec2, region, zones, nodes) if nodes else {}}
    cluster = live_instances(ec2, [{"Name": "tag:tfprov:cluster", "Values": [params["cluster"]]},
                                   {"Name": "instance-state-name", "Values": LIVE_STATES}])
    result["existing"] = {
        _tags(i).get("Name", i["InstanceId"]): {"id": i["InstanceId"], "zone": i["Placement"]["AvailabilityZone"],
                                                "state": i["State"]["Name"], "type": i["InstanceType"]}
        for i in cluster}
    result["instances"] = instance_list(cluster)
    if params["image"]:
        result["image"] = check_image(ec2, region, params["image"])
    if params["key_name"]:
        result["key"] = check_key(ec2, params["key_name"], params["cluster"])
    result["quotas"] = quota_checks(ec2, sq, region, nodes, result["existing"], params["spot"]) if nodes else []
    return result


def main():
    module = AnsibleModule(
        argument_spec=dict(
            region=dict(type="str", required=True),
            zones=dict(type="list", elements="str", required=True),
            nodes=dict(type="list", elements="dict", required=True),
            cluster=dict(type="str", required=True),
            spot=dict(type="bool", default=False),
            image=dict(type="str", default=""),
            key_name=dict(type="str", default=""),
        ),
        supports_check_mode=True,
    )
    if boto3 is None:
        module.fail_json(msg=missing_required_lib("boto3"))
    try:
        result = preflight(module.params, boto3.session.Session())
    except Refused as exc:
        module.fail_json(msg=str(exc))
    except NoCredentialsError:
        module.fail_json(msg=NO_CREDENTIALS)
    except ClientError as exc:
        code = _code(exc)
        if code in ("AuthFailure", "UnauthorizedOperation", "InvalidClientTokenId", "SignatureDoesNotMatch"):
            module.fail_json(msg="AWS refused the credentials (%s): check AWS_PROFILE or AWS_ACCESS_KEY_ID and "
                                 "AWS_SECRET_ACCESS_KEY" % code)
        module.fail_json(msg="AWS answered %s: %s" % (code, exc.response.get("Error", {}).get("Message", "")))
    except BotoCoreError as exc:
        module.fail_json(msg="cannot reach AWS: %s" % exc)
    for q in result["quotas"]:
        if not q["readable"] and q["needed"]:
            module.warn("GPU quota %s (%s) is not readable here: make sure it covers %d more vCPUs"
                        % (q["code"], q["name"], q["needed"]))
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
