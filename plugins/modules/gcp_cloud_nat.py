#!/usr/bin/python
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: gcp_cloud_nat
short_description: A Cloud Router with one Cloud NAT, so nodes without an external address reach package mirrors
description:
  - "google.cloud.gcp_compute_router has no NAT settings: this module creates or deletes a router whose one NAT
    (automatic addresses, every range of every subnet of the region) gives outbound access only; nothing can
    connect in through it. Compute API routers.get/insert/delete. Idempotent; check mode changes nothing."
  - Credentials from GCP_SERVICE_ACCOUNT_FILE or Application Default Credentials (GOOGLE_APPLICATION_CREDENTIALS).
options:
  project: {description: GCP project id., type: str, required: true}
  region: {description: The router's region., type: str, required: true}
  name: {description: "The router's name (its NAT has the same name).", type: str, required: true}
  network: {description: "The network's URL (required for present).", type: str}
  state: {description: present or absent., type: str, default: present, choices: [present, absent]}
author:
  - tfprov maintainers (@tfprov)
"""

EXAMPLES = r"""
- name: Give the cluster's nodes outbound access without external addresses
  tfprov.gpu.gcp_cloud_nat:
    project: my-project
    region: us-central1
    name: tfprov-train
    network: https://www.googleapis.com/compute/v1/projects/my-project/global/networks/tfprov-train

- name: Remove the router and its NAT
  tfprov.gpu.gcp_cloud_nat:
    project: my-project
    region: us-central1
    name: tfprov-train
    state: absent
"""

RETURN = r"""
router: {description: "The router (name, network, nats); {} when absent.", type: dict, returned: always}
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.tfprov.gpu.plugins.module_utils.gcp_api import COMPUTE, GcpApi, GcpApiError


def body(params):
    return {"name": params["name"], "network": params["network"],
            "description": "tfprov: outbound access for nodes without an external address",
            "nats": [{"name": params["name"], "natIpAllocateOption": "AUTO_ONLY",
                      "sourceSubnetworkIpRangesToNat": "ALL_SUBNETWORKS_ALL_IP_RANGES"}]}


def run(api, params, check_mode):
    routers = "%s/projects/%s/regions/%s/routers" % (COMPUTE, params["project"], params["region"])
    url = "%s/%s" % (routers, params["name"])
    router = api.get(url, allow_404=True)
    if params["state"] == "absent":
        if router is None:
            return False, {}
        if not check_mode:
            api.wait_compute_operation(api.delete(url))
        return True, {}
    if router is not None and router.get("nats"):
        return False, router
    if check_mode:
        return True, {}
    if router is None:
        api.wait_compute_operation(api.post(routers, body(params)))
    else:  # a router of that name without its NAT (one left by hand): add the NAT
        api.wait_compute_operation(api.patch(url, {"nats": body(params)["nats"]}))
    return True, api.get(url)


def main():
    module = AnsibleModule(
        argument_spec=dict(project=dict(type="str", required=True), region=dict(type="str", required=True),
                           name=dict(type="str", required=True), network=dict(type="str"),
                           state=dict(type="str", default="present", choices=["present", "absent"])),
        required_if=[("state", "present", ("network",))],
        supports_check_mode=True,
    )
    try:
        changed, router = run(GcpApi(), module.params, module.check_mode)
    except GcpApiError as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(changed=changed, router=router)


if __name__ == "__main__":
    main()
