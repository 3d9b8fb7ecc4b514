#!/usr/bin/python
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: gcp_tpu_vm
short_description: Create, check or delete a Cloud TPU VM (TPU API v2) through google-auth
description:
  - "No stock module manages TPU VMs: this one calls the TPU API v2 (projects.locations.nodes create/get/delete)
    and waits for the long-running operation. Idempotent; check mode changes nothing."
  - "C(state=checked) creates nothing: it refuses when the TPU type is not offered in the zone, or when the bucket's
    location (Cloud Storage JSON API buckets.get), the TPU zone and the VMs' region are not one region."
  - Credentials from GCP_SERVICE_ACCOUNT_FILE or Application Default Credentials (GOOGLE_APPLICATION_CREDENTIALS).
options:
  project: {description: GCP project id., type: str, required: true}
  zone: {description: The TPU's zone., type: str, required: true}
  name: {description: The TPU node id., type: str, required: true}
  accelerator_type: {description: "TPU type, e.g. v4-8 (required for present and checked).", type: str}
  runtime_version: {description: "TPU VM software version, e.g. tpu-ubuntu2204-base.", type: str}
  labels: {description: Labels of the node., type: dict, default: {}}
  spot: {description: Create a Spot TPU VM., type: bool, default: false}
  network: {description: "The VPC network's name (the project's default network when omitted).", type: str}
  subnetwork: {description: "The subnetwork's name, in the TPU's region.", type: str}
  external_ip: {description: Give the TPU VM an external address., type: bool, default: false}
  tags: {description: Network tags (the cluster's firewall rules target them)., type: list, elements: str, default: []}
  bucket: {description: "gs:// bucket the TPU reads and writes; checked to be in the TPU's region.", type: str}
  vm_region: {description: The region of the cluster's VMs; checked to match the TPU's., type: str}
  state:
    description: C(present), C(absent) or C(checked).
    type: str
    default: present
    choices: [present, absent, checked]
  wait_timeout: {description: Seconds to wait for the create or delete operation., type: int, default: 1800}
author:
  - tfprov maintainers (@tfprov)
"""

EXAMPLES = r"""
- name: Check that the TPU type is offered in the zone and the bucket is in its region
  tfprov.gpu.gcp_tpu_vm:
    project: my-project
    zone: us-central2-b
    name: train-tpu0
    accelerator_type: v4-8
    bucket: gs://my-training-data
    vm_region: us-central2
    state: checked

- name: Create a Spot TPU VM
  tfprov.gpu.gcp_tpu_vm:
    project: my-project
    zone: us-central2-b
    name: train-tpu0
    accelerator_type: v4-8
    runtime_version: tpu-ubuntu2204-base
    spot: true
    labels:
      tfprov-cluster: train

- name: Delete it
  tfprov.gpu.gcp_tpu_vm:
    project: my-project
    zone: us-central2-b
    name: train-tpu0
    state: absent
"""

RETURN = r"""
node: {description: "The TPU node (name, state, acceleratorType, networkEndpoints...); {} when absent.", type: dict,
       returned: always}
region: {description: The TPU's region., type: str, returned: always}
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.tfprov.gpu.plugins.module_utils.gcp_api import STORAGE, TPU, GcpApi, GcpApiError, region_of


class Refused(Exception):
    pass


def check(api, params):
    zone, region = params["zone"], region_of(params["zone"])
    if params.get("vm_region") and params["vm_region"] != region:
        raise Refused("tpus.%s: zone %s is in region %s but the cluster's VMs are in %s: put the TPU in a zone of %s"
                      % (params["name"], zone, region, params["vm_region"], params["vm_region"]))
    kind = params.get("accelerator_type")
    url = "%s/projects/%s/locations/%s/acceleratorTypes/%s" % (TPU, params["project"], zone, kind)
    if api.get(url, allow_404=True) is None:
        raise Refused("tpus.%s: TPU type %s is not offered in zone %s: pick a zone that offers it (gcloud compute tpus "
                      "accelerator-types list --zone=%s) or another type" % (params["name"], kind, zone, zone))
    bucket = params.get("bucket")
    if bucket:
        name = bucket[len("gs://"):] if bucket.startswith("gs://") else bucket
        found = api.get("%s/b/%s" % (STORAGE, name.split("/")[0]), allow_404=True)
        if found is None:
            raise Refused("tpus.%s: bucket %s does not exist or is not visible to these credentials: create it in "
                          "region %s or fix the name" % (params["name"], bucket, region))
        location = str(found.get("location", "")).lower()
        if location != region:
            raise Refused("tpus.%s: bucket %s is in %s but the TPU is in region %s: use a bucket in %s (gcloud "
                          "storage buckets create gs://NAME --location=%s)"
                          % (params["name"], bucket, location.upper() or "an unknown location", region, region, region))
    return region


def node_url(params):
    return "%s/projects/%s/locations/%s/nodes/%s" % (TPU, params["project"], params["zone"], params["name"])


def network_config(params):
    config = {"enableExternalIps": params["external_ip"]}
    if params.get("network"):
        config["network"] = "projects/%s/global/networks/%s" % (params["project"], params["network"])
    if params.get("subnetwork"):
        config["subnetwork"] = "projects/%s/regions/%s/subnetworks/%s" % (params["project"], region_of(params["zone"]),
                                                                          params["subnetwork"])
    return config


def run(api, params, check_mode):
    region = region_of(params["zone"])
    if params["state"] == "checked":
        check(api, params)
        return False, api.get(node_url(params), allow_404=True) or {}, region
    node = api.get(node_url(params), allow_404=True)
    if params["state"] == "absent":
        if node is None:
            return False, {}, region
        if not check_mode:
            api.wait_operation(api.delete(node_url(params)), params["wait_timeout"])
        return True, {}, region
    if node is not None:
        return False, node, region
    if check_mode:
        return True, {}, region
    body = {
        "acceleratorType": params["accelerator_type"],
        "runtimeVersion": params["runtime_version"],
        "labels": params["labels"],
        "networkConfig": network_config(params),
        "tags": params["tags"],
    }
    if params["spot"]:
        body["schedulingConfig"] = {"spot": True}
    parent = "%s/projects/%s/locations/%s/nodes" % (TPU, params["project"], params["zone"])
    api.wait_operation(api.post(parent, body, params={"nodeId": params["name"]}), params["wait_timeout"])
    return True, api.get(node_url(params)), region


def main():
    module = AnsibleModule(
        argument_spec=dict(
            project=dict(type="str", required=True), zone=dict(type="str", required=True),
            name=dict(type="str", required=True), accelerator_type=dict(type="str"), runtime_version=dict(type="str"),
            labels=dict(type="dict", default={}), spot=dict(type="bool", default=False), bucket=dict(type="str"),
            vm_region=dict(type="str"), wait_timeout=dict(type="int", default=1800),
            network=dict(type="str"), subnetwork=dict(type="str"), external_ip=dict(type="bool", default=False),
            tags=dict(type="list", elements="str", default=[]),
            state=dict(type="str", default="present", choices=["present", "absent", "checked"]),
        ),
        required_if=[("state", "present", ("accelerator_type", "runtime_version")),
                     ("state", "checked", ("accelerator_type",))],
        supports_check_mode=True,
    )
    try:
        changed, node, region = run(GcpApi(), module.params, module.check_mode)
    except (Refused, GcpApiError) as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(changed=changed, node=node, region=region)


if __name__ == "__main__":
    main()
