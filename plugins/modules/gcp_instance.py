#!/usr/bin/python
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: gcp_instance
short_description: Make sure one tfprov cluster node runs on Compute Engine, trying the given zones in order
version_added: 1.4.0
description:
  - Looks for the node in each zone in order; when it exists nothing is created, and when it is stopped
    (idle-stopped, preempted, or stopped by hand) it is started (resumed when suspended) and RV(was_stopped) is true.
  - Otherwise inserts the VM in the first zone, and when the zone has no capacity (C(ZONE_RESOURCE_POOL_EXHAUSTED),
    an in-zone quota) in the next one, and says which zone was used.
  - M(google.cloud.gcp_compute_instance) is not used because it has no C(provisioningModel) (its C(spot) is the
    legacy preemptible VM, stopped after 24 h; google.cloud issue 646) and needs one task per zone tried, so nodes
    could not be made in parallel.
  - >-
    GPU VMs cannot live-migrate, so C(onHostMaintenance) is TERMINATE. A Spot VM is stopped, not deleted, when
    preempted, so the next C(tfprov up) starts it again.
  - Credentials from GCP_SERVICE_ACCOUNT_FILE or Application Default Credentials (GOOGLE_APPLICATION_CREDENTIALS).
author:
  - tfprov maintainers (@tfprov)
options:
  project: {description: GCP project id., type: str, required: true}
  zones: {description: Zones to try in order (the node's own zone when it exists)., type: list, elements: str,
          required: true}
  name: {description: The VM's name., type: str, required: true}
  hostname:
    description: >-
      The VM's hostname (the inventory names hosts by it); C({zone}) in it becomes the zone the VM is made in.
    type: str
    required: true
  machine_type: {description: "Machine type, e.g. n1-standard-8.", type: str, required: true}
  image: {description: "Source image (selfLink, or projects/P/global/images/[family/]NAME).", type: str, required: true}
  disk_gb: {description: Boot disk size in GB., type: int, required: true}
  accelerator: {description: "GPU type, e.g. nvidia-tesla-t4; none when empty.", type: str, default: ""}
  accelerator_count: {description: GPUs of that type., type: int, default: 0}
  spot: {description: "Run as a Spot VM (provisioningModel SPOT, stopped when preempted).", type: bool, default: false}
  labels: {description: Labels of the VM., type: dict, default: {}}
  ssh_keys: {description: "The C(ssh-keys) metadata value (user:public key).", type: str, required: true}
  network: {description: The network's selfLink., type: str, required: true}
  subnetwork: {description: The subnetwork's selfLink (none for an auto-mode network)., type: str, default: ""}
  external_ip: {description: Give the VM an external address., type: bool, default: false}
  tags: {description: Network tags (the cluster's firewall rules target them)., type: list, elements: str, default: []}
  wait_timeout: {description: Seconds to wait for each insert or start operation., type: int, default: 600}
attributes:
  check_mode: {description: Says what it would create or start and changes nothing., support: full}
  diff_mode: {description: No diff., support: none}
"""

EXAMPLES = r"""
- name: Make sure the chief runs
  tfprov.gpu.gcp_instance:
    project: demo-proj-1
    zones: [us-central1-a, us-central1-b]
    name: demo-chief-0
    hostname: "demo-chief-0.{zone}.demo-proj-1"
    machine_type: n1-standard-8
    image: projects/debian-cloud/global/images/family/debian-12
    disk_gb: 100
    accelerator: nvidia-tesla-t4
    accelerator_count: 1
    ssh_keys: "debian:ssh-ed25519 AAAA... me"
    network: https://www.googleapis.com/compute/v1/projects/demo-proj-1/global/networks/tfprov-demo
"""

RETURN = r"""
instance:
  description: >-
    The VM (id, name, zone, state (its status), address, private_address); {} when check mode would create it.
  returned: success
  type: dict
zone: {description: The zone the node is in (or would be made in)., returned: success, type: str}
full_zones: {description: Zones tried first that had no capacity., returned: always, type: list}
was_stopped: {description: The node was stopped and has been started., returned: success, type: bool}
"""

import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.tfprov.gpu.plugins.module_utils.gcp_api import COMPUTE, GcpApi, GcpApiError

# Answers meaning "not in this zone now": another zone may have room.
CAPACITY = ("ZONE_RESOURCE_POOL_EXHAUSTED", "ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS", "QUOTA_EXCEEDED",
            "does not have enough resources")
STOPPED = {"TERMINATED": "start", "STOPPED": "start", "SUSPENDED": "resume"}
SETTLING = ("PROVISIONING", "STAGING", "STOPPING", "SUSPENDING", "REPAIRING")


def zone_url(params, zone):
    return "%s/projects/%s/zones/%s" % (COMPUTE, params["project"], zone)


def body(params, zone):
    scheduling = {"onHostMaintenance": "TERMINATE", "automaticRestart": not params["spot"]}
    if params["spot"]:
        scheduling.update(provisioningModel="SPOT", instanceTerminationAction="STOP")
    nic = {"network": params["network"]}
    if params["subnetwork"]:
        nic["subnetwork"] = params["subnetwork"]
    if params["external_ip"]:
        nic["accessConfigs"] = [{"name": "External NAT", "type": "ONE_TO_ONE_NAT"}]
    image = params["image"]
    made = {
        "name": params["name"],
        "hostname": params["hostname"].replace("{zone}", zone),
        "machineType": "zones/%s/machineTypes/%s" % (zone, params["machine_type"]),
        "disks": [{"boot": True, "autoDelete": True,
                   "initializeParams": {"sourceImage": image, "diskSizeGb": params["disk_gb"]}}],
        "scheduling": scheduling,
        "labels": params["labels"],
        "metadata": {"items": [{"key": "ssh-keys", "value": params["ssh_keys"]}]},
        "networkInterfaces": [nic],
        "tags": {"items": params["tags"]},
    }
    if params["accelerator"]:
        made["guestAccelerators"] = [{
            "acceleratorType": "%s/acceleratorTypes/%s" % (zone_url(params, zone), params["accelerator"]),
            "acceleratorCount": params["accelerator_count"]}]
    return made


def summary(instance):
    nic = (instance.get("networkInterfaces") or [{}])[0]
    return {"id": str(instance.get("id", "")), "name": instance.get("name", ""),
            "zone": instance.get("zone", "").rsplit("/", 1)[-1], "state": instance.get("status", ""),
            "address": ((nic.get("accessConfigs") or [{}])[0]).get("natIP", ""),
            "private_address": nic.get("networkIP", "")}


def settled(api, url, instance, timeout, interval=5):
    """The VM once it is no longer between states (a stopping VM cannot be started yet)."""
    deadline = time.time() + timeout
    while instance.get("status") in SETTLING and time.time() < deadline:
        api.sleep(interval)
        instance = api.get(url)
    return instance


def ensure_running(api, url, instance, params, check_mode):
    """(changed, was_stopped, instance) for a VM that exists."""
    instance = settled(api, url, instance, params["wait_timeout"])
    verb = STOPPED.get(instance.get("status"))
    if verb is None:
        return False, False, instance
    if not check_mode:
        api.wait_compute_operation(api.post("%s/%s" % (url, verb), {}), params["wait_timeout"])
        instance = api.get(url)
    return True, True, instance


def is_capacity(exc):
    return exc.reason in CAPACITY or any(word in str(exc) for word in CAPACITY)


def run(api, params, check_mode):
    """(changed, was_stopped, instance summary, zone, full zones)."""
    full = []
    for zone in params["zones"]:
        url = "%s/instances/%s" % (zone_url(params, zone), params["name"])
        found = api.get(url, allow_404=True)
        if found is not None:
            changed, was_stopped, instance = ensure_running(api, url, found, params, check_mode)
            return changed, was_stopped, summary(instance), zone, full
        if check_mode:
            return True, False, {}, zone, full
        try:
            api.wait_compute_operation(api.post("%s/instances" % zone_url(params, zone), body(params, zone)),
                                       params["wait_timeout"])
        except GcpApiError as exc:
            if is_capacity(exc):
                full.append(zone)
                continue
            raise
        return True, False, summary(api.get(url)), zone, full
    raise GcpApiError("%s: no capacity for %s %s in %s: add zones to the spec or try later"
                      % (params["name"], params["machine_type"], params["accelerator"], ", ".join(full)))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            project=dict(type="str", required=True), zones=dict(type="list", elements="str", required=True),
            name=dict(type="str", required=True), hostname=dict(type="str", required=True),
            machine_type=dict(type="str", required=True), image=dict(type="str", required=True),
            disk_gb=dict(type="int", required=True), accelerator=dict(type="str", default=""),
            accelerator_count=dict(type="int", default=0), spot=dict(type="bool", default=False),
            labels=dict(type="dict", default={}), ssh_keys=dict(type="str", required=True, no_log=False),
            network=dict(type="str", required=True), subnetwork=dict(type="str", default=""),
            external_ip=dict(type="bool", default=False), tags=dict(type="list", elements="str", default=[]),
            wait_timeout=dict(type="int", default=600),
        ),
        supports_check_mode=True,
    )
    if not module.params["zones"]:
        module.fail_json(msg="%s: no zone to try: give the spec zones that offer %s"
                             % (module.params["name"], module.params["machine_type"]))
    try:
        changed, was_stopped, instance, zone, full = run(GcpApi(), module.params, module.check_mode)
    except GcpApiError as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(changed=changed, was_stopped=was_stopped, instance=instance, zone=zone, full_zones=full)


if __name__ == "__main__":
    main()
