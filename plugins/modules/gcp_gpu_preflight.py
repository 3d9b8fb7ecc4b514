#!/usr/bin/python
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: gcp_gpu_preflight
short_description: Check, before anything is created, that every GCP node of a cluster spec can be created
description:
  - For every node, finds the spec's zones that offer its machine type and accelerator
    (Compute API machineTypes.get, acceleratorTypes.get) and refuses when none does.
  - Checks that the region's GPU quota (regions.get, metric NVIDIA_<X>_GPUS or PREEMPTIBLE_NVIDIA_<X>_GPUS when spot)
    and the project's GPUS_ALL_REGIONS cover the GPUs of the nodes that do not exist yet.
  - Lists the cluster's existing instances (aggregatedList by the tfprov-cluster label) so nodes stay where they are,
    and says which of them are stopped (up starts them).
  - "With tpu_zones, lists the cluster's TPU VMs there by the same label (TPU API nodes.list), so `down` deletes
    one that is no longer in the spec."
  - Read only; fails with one line saying what to request and where.
  - Credentials from GCP_SERVICE_ACCOUNT_FILE or Application Default Credentials (GOOGLE_APPLICATION_CREDENTIALS).
options:
  project: {description: GCP project id., type: str, required: true}
  zones: {description: The spec's zones in the order to try., type: list, elements: str, required: true}
  nodes: {description: The spec's expanded nodes (tfprov.gpu.cloud_spec)., type: list, elements: dict, required: true}
  cluster: {description: The cluster name (label tfprov-cluster)., type: str, required: true}
  spot: {description: SPOT nodes use the PREEMPTIBLE_ quota metrics., type: bool, default: false}
  tpu_zones:
    description: Zones to list the cluster's TPU VMs in; the region's other zones are listed too.
    type: list
    elements: str
    default: []
  image:
    description:
      - Boot image URI or family (projects/debian-cloud/global/images/family/debian-12); checked to exist.
      - Its C(tfprov-image) label (set when tfprov baked it) is returned so nodes can be labelled as booted from it.
    type: str
author:
  - tfprov maintainers (@tfprov)
"""

EXAMPLES = r"""
- name: Check that the cluster's nodes can be created (zones, GPU quota, image)
  tfprov.gpu.gcp_gpu_preflight:
    project: my-project
    zones: [us-central1-a, us-central1-b]
    nodes: "{{ cluster.nodes }}"
    cluster: train
    spot: true
    image: projects/debian-cloud/global/images/family/debian-12
  register: gcp_preflight

- name: Find the cluster's existing instances and TPU VMs only
  tfprov.gpu.gcp_gpu_preflight:
    project: my-project
    zones: [us-central1-a]
    nodes: []
    cluster: train
    tpu_zones: [us-central1-a]
  register: gcp_found
"""

RETURN = r"""
region: {description: The zones' region., type: str, returned: always}
existing: {description: "Instance name -> zone for the cluster's instances that exist.", type: dict, returned: always}
stopped: {description: "The names of the existing instances that are stopped (TERMINATED, SUSPENDED, ...).",
          type: list, returned: always}
tpus: {description: "TPU node id -> zone for the cluster's TPU VMs (only with tpu_zones).", type: dict,
       returned: always}
zones_by_node: {description: "Node name -> the spec's zones offering its type, in order.", type: dict, returned: always}
quota: {description: "Metric -> {needed, limit, usage}.", type: dict, returned: always}
image: {description: "{name, tfprov_image} of the boot image ('' when not a tfprov image).", type: dict,
        returned: always}
auth_kind: {description: The google.cloud modules' auth_kind for these credentials., type: str, returned: always}
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.tfprov.gpu.plugins.module_utils.gcp_api import (
    COMPUTE,
    TPU,
    GcpApi,
    GcpApiError,
    auth_kind,
    region_of,
)

# Compute API reference, Quota.metric enum (regions.get / projects.get): accelerator type -> quota metric.
QUOTA_METRICS = {
    "nvidia-tesla-k80": "NVIDIA_K80_GPUS",
    "nvidia-tesla-p4": "NVIDIA_P4_GPUS",
    "nvidia-tesla-p100": "NVIDIA_P100_GPUS",
    "nvidia-tesla-v100": "NVIDIA_V100_GPUS",
    "nvidia-tesla-t4": "NVIDIA_T4_GPUS",
    "nvidia-tesla-a100": "NVIDIA_A100_GPUS",
    "nvidia-a100-80gb": "NVIDIA_A100_80GB_GPUS",
    "nvidia-l4": "NVIDIA_L4_GPUS",
    "nvidia-h100-80gb": "NVIDIA_H100_GPUS",
    "nvidia-h100-mega-80gb": "NVIDIA_H100_MEGA_GPUS",
    "nvidia-h200-141gb": "NVIDIA_H200_GPUS",
}
# Instance states of a VM that is not running and will not run again unless started.
STOPPED = ("STOPPING", "TERMINATED", "SUSPENDING", "SUSPENDED")
QUOTAS_PAGE = "https://console.cloud.google.com/iam-admin/quotas?project=%s"


class Refused(Exception):
    pass


def _last(url):
    return str(url).rstrip("/").rsplit("/", 1)[-1]


def offered_zones(api, project, zones, node, cache):
    """The zones offering the node's machine type and accelerator; the accelerator (name, count) it brings."""
    found, gpus = [], (node.get("accelerator") or "", int(node.get("accelerator_count") or 0))
    for zone in zones:
        base = "%s/projects/%s/zones/%s" % (COMPUTE, project, zone)
        key = (zone, node["type"], node.get("accelerator") or "")
        if key not in cache:
            machine = api.get("%s/machineTypes/%s" % (base, node["type"]), allow_404=True)
            accel = api.get("%s/acceleratorTypes/%s" % (base, node["accelerator"]), allow_404=True) \
                if node.get("accelerator") and machine else True
            cache[key] = (machine, accel)
        machine, accel = cache[key]
        if not machine or not accel:
            continue
        builtin = (machine.get("accelerators") or [{}])[0]
        if builtin.get("guestAcceleratorType"):  # a2/g2/a3: the machine type carries its GPUs
            gpus = (_last(builtin["guestAcceleratorType"]), int(builtin.get("guestAcceleratorCount") or 1))
        found.append(zone)
    return found, gpus


def not_offered(node, zones):
    what = node["accelerator"] or node["type"]
    listing = "accelerator-types" if node["accelerator"] else "machine-types"
    return ("roles.%s: %s is not offered in zone(s) %s: add a zone that offers it to zones (gcloud compute %s list "
            "--filter=name=%s) or pick another %s" % (node["role"], what, ", ".join(zones), listing, what,
                                                      "accelerator" if node["accelerator"] else "machine type"))


def check_quota(needed, quotas, where, project):
    report = {}
    for metric, count in sorted(needed.items()):
        row = quotas.get(metric, {"limit": 0.0, "usage": 0.0})
        report[metric] = {"needed": count, "limit": row["limit"], "usage": row["usage"]}
        if row["usage"] + count > row["limit"]:
            raise Refused("GPU quota too small: %s in %s allows %d more (limit %d, in use %d) but the spec needs %d: "
                          "request %s >= %d for %s in project %s (%s)"
                          % (metric, where, max(row["limit"] - row["usage"], 0), row["limit"], row["usage"], count,
                             metric, row["usage"] + count, where, project, QUOTAS_PAGE % project))
    return report


def boot_image(api, image):
    if not image:
        return {"name": "", "tfprov_image": ""}
    path = image.split("/compute/v1/", 1)[-1].lstrip("/")
    found = api.get("%s/%s" % (COMPUTE, path), allow_404=True)
    if found is None:
        raise Refused("image %s does not exist or is not visible to these credentials: give an existing image or "
                      "family (gcloud compute images list)" % image)
    return {"name": found.get("name", ""), "tfprov_image": (found.get("labels") or {}).get("tfprov-image", "")}


def cluster_tpus(api, project, region, zones, cluster):
    """TPU node id -> zone for the TPU VMs labelled with the cluster, in the given zones and the region's others."""
    info = api.get("%s/projects/%s/regions/%s" % (COMPUTE, project, region), allow_404=True) or {}
    every = list(dict.fromkeys(list(zones) + [_last(zone) for zone in info.get("zones") or []]))
    found = {}
    for zone in every:
        try:
            nodes = api.get_all("%s/projects/%s/locations/%s/nodes" % (TPU, project, zone), key="nodes")
        except GcpApiError as exc:
            if exc.status in (400, 404):  # a zone without Cloud TPU
                continue
            raise
        for node in nodes:
            if (node.get("labels") or {}).get("tfprov-cluster") == cluster:
                found[_last(node["name"])] = zone
    return found


def run(api, project, zones, nodes, cluster, spot, image=None, tpu_zones=()):
    region = region_of(zones[0])
    listing = api.get("%s/projects/%s/aggregated/instances" % (COMPUTE, project),
                      params={"filter": "labels.tfprov-cluster = %s" % cluster})
    existing, stopped = {}, []
    for scope in (listing.get("items") or {}).values():
        for instance in scope.get("instances") or []:
            existing[instance["name"]] = _last(instance["zone"])
            if instance.get("status") in STOPPED:
                stopped.append(instance["name"])
    zones_by_node, needed, cache = {}, {}, {}
    for node in nodes:
        found, (accel, count) = offered_zones(api, project, zones, node, cache)
        if not found:
            raise Refused(not_offered(node, zones))
        zones_by_node[node["name"]] = [existing[node["name"]]] if node["name"] in existing else found
        if accel and node["name"] not in existing:
            metric = QUOTA_METRICS.get(accel)
            if not metric:
                raise Refused("roles.%s: tfprov knows no quota metric for accelerator %s: use one of %s"
                              % (node["role"], accel, ", ".join(sorted(QUOTA_METRICS))))
            metric = ("PREEMPTIBLE_" if spot else "") + metric
            needed[metric] = needed.get(metric, 0) + count
    quota = {}
    if needed:
        regional = api.get("%s/projects/%s/regions/%s" % (COMPUTE, project, region))
        rows = {q["metric"]: q for q in regional.get("quotas") or []}
        quota = check_quota(needed, rows, "region " + region, project)
        info = api.get("%s/projects/%s" % (COMPUTE, project))
        rows = {q["metric"]: q for q in info.get("quotas") or []}
        if "GPUS_ALL_REGIONS" in rows:
            quota.update(check_quota({"GPUS_ALL_REGIONS": sum(needed.values())}, rows, "all regions", project))
    tpus = cluster_tpus(api, project, region, tpu_zones, cluster) if tpu_zones else {}
    return {"region": region, "existing": existing, "stopped": sorted(stopped), "zones_by_node": zones_by_node,
            "quota": quota, "image": boot_image(api, image), "tpus": tpus}


def main():
    module = AnsibleModule(
        argument_spec=dict(project=dict(type="str", required=True),
                           zones=dict(type="list", elements="str", required=True),
                           nodes=dict(type="list", elements="dict", required=True),
                           cluster=dict(type="str", required=True), spot=dict(type="bool", default=False),
                           image=dict(type="str"), tpu_zones=dict(type="list", elements="str", default=[])),
        supports_check_mode=True,
    )
    params = module.params
    try:
        result = run(GcpApi(), params["project"], params["zones"], params["nodes"], params["cluster"], params["spot"],
                     params["image"], params["tpu_zones"])
    except (Refused, GcpApiError) as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(changed=False, auth_kind=auth_kind(), **result)


if __name__ == "__main__":
    main()
