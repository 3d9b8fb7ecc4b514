#!/usr/bin/python
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: gcp_network_check
short_description: Check, before anything is created, the VPC network a GCP cluster's nodes will join
description:
  - "A network the spec names must exist; a custom-mode one needs the spec's subnetwork, which must exist in the
    cluster's region and belong to it (Compute API networks.get, subnetworks.get)."
  - "Refuses when a firewall rule of the network (firewalls.list) opens SSH wider than operator_cidr, or the
    cluster port to anything but the members, to the cluster's nodes: rules targeting every instance or the
    cluster's tag. tfprov's own rules (tfprov-CLUSTER-*) are the spec's and are skipped."
  - "The same check runs on the network tfprov makes for a cluster (tfprov-CLUSTER) when it exists already."
  - Read only; fails with one line naming the rule and what to change.
options:
  project: {description: GCP project id., type: str, required: true}
  region: {description: The cluster's region., type: str, required: true}
  cluster: {description: The cluster name., type: str, required: true}
  network: {description: The network's name., type: str, required: true}
  subnetwork: {description: The subnetwork's name in the region ('' for an auto-mode network)., type: str, default: ''}
  own: {description: The network is tfprov's own for this cluster (may not exist yet)., type: bool, default: false}
  operator_cidr: {description: Where SSH may come from., type: str, required: true}
  cluster_port: {description: TensorFlow's port between the members., type: int, required: true}
author:
  - tfprov maintainers (@tfprov)
"""

EXAMPLES = r"""
- name: Check the network the cluster's nodes will join and its firewall rules
  tfprov.gpu.gcp_network_check:
    project: my-project
    region: us-central1
    cluster: train
    network: shared-vpc
    subnetwork: gpu-nodes
    operator_cidr: 203.0.113.7/32
    cluster_port: 2222
"""

RETURN = r"""
network: {description: "The network's URL.", type: str, returned: always}
subnetwork: {description: "The subnetwork's URL ('' when none is named).", type: str, returned: always}
exists: {description: The network exists already., type: bool, returned: always}
rules_checked: {description: How many firewall rules of the network were read., type: int, returned: always}
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.tfprov.gpu.plugins.module_utils.gcp_api import COMPUTE, GcpApi, GcpApiError
from ansible_collections.tfprov.gpu.plugins.module_utils.gcp_firewall import refusal, too_wide

# The form GCP answers in selfLinks; google.cloud's modules compare it as given, so it keeps them idempotent.
SELF_LINK = "https://www.googleapis.com/compute/v1/projects/%s"


class Refused(Exception):
    pass


def run(api, params):
    project, name = params["project"], params["network"]
    base = "%s/projects/%s" % (COMPUTE, project)
    network = api.get("%s/global/networks/%s" % (base, name), allow_404=True)
    subnet_url = ""
    if network is None and not params["own"]:
        raise Refused("network %s does not exist in project %s: create it, fix the name, or remove network from the "
                      "spec so tfprov makes the cluster a network of its own" % (name, project))
    if network is not None and not params["own"]:
        subnet = params["subnetwork"]
        if not subnet and not network.get("autoCreateSubnetworks"):
            raise Refused("network %s is a custom-mode network: add subnetwork: NAME, one of its subnets in %s"
                          % (name, params["region"]))
        if subnet:
            found = api.get("%s/regions/%s/subnetworks/%s" % (base, params["region"], subnet), allow_404=True)
            if found is None or not str(found.get("network", "")).endswith("/global/networks/" + name):
                raise Refused("subnetwork %s is not a subnet of network %s in %s: give one of its subnets in that "
                              "region (gcloud compute networks subnets list --network=%s)"
                              % (subnet, name, params["region"], name))
    if params["subnetwork"]:
        subnet_url = "%s/regions/%s/subnetworks/%s" % (SELF_LINK % project, params["region"], params["subnetwork"])
    rules = []
    if network is not None:
        rules = [rule for rule in api.get_all("%s/global/firewalls" % base)
                 if str(rule.get("network", "")).endswith("/global/networks/" + name)]
        found = too_wide(rules, params["cluster"], "tfprov-" + params["cluster"], params["operator_cidr"],
                         params["cluster_port"])
        if found:
            raise Refused(refusal(name, found, params["operator_cidr"]))
    return {"network": "%s/global/networks/%s" % (SELF_LINK % project, name), "subnetwork": subnet_url,
            "exists": network is not None, "rules_checked": len(rules)}


def main():
    module = AnsibleModule(
        argument_spec=dict(project=dict(type="str", required=True), region=dict(type="str", required=True),
                           cluster=dict(type="str", required=True), network=dict(type="str", required=True),
                           subnetwork=dict(type="str", default=""), own=dict(type="bool", default=False),
                           operator_cidr=dict(type="str", required=True),
                           cluster_port=dict(type="int", required=True)),
        supports_check_mode=True,
    )
    try:
        result = run(GcpApi(), module.params)
    except (Refused, GcpApiError) as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
