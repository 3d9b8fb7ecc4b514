"""Builders of GCP API answers, shaped after the public API references (Compute Engine v1 Instance, Operation,
MachineType, AcceleratorType, Region/Project quotas; Cloud TPU v2 Node and Operation; Cloud Storage v1 Bucket).
Hand-written, not captured from GCP: tests assemble them into recordings (see gcp_recorded_harness)."""

import yaml

COMPUTE = "https://compute.googleapis.com/compute/v1"
WWW = "https://www.googleapis.com/compute/v1"  # the host GCP uses in selfLinks
TPU = "https://tpu.googleapis.com/v2"
STORAGE = "https://storage.googleapis.com/storage/v1"


def zone_url(project, zone):
    return f"{WWW}/projects/{project}/zones/{zone}"


def instance(project, zone, name, machine, accels=(), labels=None, ip="10.128.0.2", nat="203.0.113.10",
             status="RUNNING", hostname=None, tag=None, ident="1000", metadata=None, network="default",
             subnetwork=None):
    body = {
        "kind": "compute#instance", "id": ident, "name": name, "status": status,
        "zone": zone_url(project, zone), "machineType": f"{zone_url(project, zone)}/machineTypes/{machine}",
        "selfLink": f"{zone_url(project, zone)}/instances/{name}",
        "labels": labels or {},
        "networkInterfaces": [{
            "name": "nic0", "networkIP": ip,
            "network": f"{WWW}/projects/{project}/global/networks/{network}",
            "accessConfigs": [{"type": "ONE_TO_ONE_NAT", "name": "External NAT", "natIP": nat}] if nat else [],
        }],
        "disks": [{"boot": True, "autoDelete": True, "deviceName": "persistent-disk-0",
                   "source": f"{zone_url(project, zone)}/disks/{name}"}],
        "scheduling": {"onHostMaintenance": "TERMINATE", "automaticRestart": True, "preemptible": False},
        "tags": {"items": [tag]} if tag else {},
    }
    if accels:
        body["guestAccelerators"] = [{"acceleratorType": f"{zone_url(project, zone)}/acceleratorTypes/{kind}",
                                      "acceleratorCount": count} for kind, count in accels]
    if subnetwork:
        region = zone.rsplit("-", 1)[0]
        subnet_url = f"{WWW}/projects/{project}/regions/{region}/subnetworks/{subnetwork}"
        body["networkInterfaces"][0]["subnetwork"] = subnet_url
    if hostname:
        body["hostname"] = hostname
    if metadata:
        body["metadata"] = {"fingerprint": "recorded", "items": [{"key": k, "value": v} for k, v in metadata.items()]}
    return body


def network(project, name, auto=False, description=""):
    return {"kind": "compute#network", "name": name, "description": description, "autoCreateSubnetworks": auto,
            "routingConfig": {"routingMode": "REGIONAL"}, "mtu": 1460,
            "selfLink": f"{WWW}/projects/{project}/global/networks/{name}"}


def subnetwork(project, region, name, network_name, cidr, description=""):
    return {"kind": "compute#subnetwork", "name": name, "description": description, "ipCidrRange": cidr,
            "network": f"{WWW}/projects/{project}/global/networks/{network_name}",
            "region": f"{WWW}/projects/{project}/regions/{region}", "privateIpGoogleAccess": True,
            "selfLink": f"{WWW}/projects/{project}/regions/{region}/subnetworks/{name}"}


def router(project, region, name, network_name):
    return {"kind": "compute#router", "name": name, "region": f"{WWW}/projects/{project}/regions/{region}",
            "network": f"{WWW}/projects/{project}/global/networks/{network_name}",
            "nats": [{"name": name, "natIpAllocateOption": "AUTO_ONLY",
                      "sourceSubnetworkIpRangesToNat": "ALL_SUBNETWORKS_ALL_IP_RANGES"}],
            "selfLink": f"{WWW}/projects/{project}/regions/{region}/routers/{name}"}


def firewall(project, name, ports, source_ranges, target_tags, network="default", **extra):
    return {"kind": "compute#firewall", "name": name, "priority": 1000, "direction": "INGRESS",
            "network": f"{WWW}/projects/{project}/global/networks/{network}",
            "allowed": [{"IPProtocol": "tcp", "ports": ports}], "sourceRanges": source_ranges,
            "targetTags": target_tags, "selfLink": f"{WWW}/projects/{project}/global/firewalls/{name}", **extra}


def lifecycle(url, collection, body, flag, operation_of, create_body_has=None, create=None):
    """A resource's answers over a run: 404 until created, the body until deleted, 404 after.
    create: interactions replacing the default successful insert (e.g. a failed one)."""
    name = url.rsplit("/", 1)[-1]
    created, deleted = "created:" + flag, "deleted:" + flag
    return [
        call("GET", url, error(404, "notFound", f"The resource '{name}' was not found"), status=404,
             unless=[created]),
        call("GET", url, error(404, "notFound", f"The resource '{name}' was not found"), status=404,
             when=[deleted]),
        call("GET", url, body, when=[created]),
        *(create if create is not None else [
            call("POST", collection, operation_of(url), body_has=create_body_has or {"name": name}, sets=[created])]),
        call("DELETE", url, operation_of(url), when=[created], sets=[deleted], clears=[created]),
    ]


def aggregated(instances):
    items = {}
    for item in instances:
        scope = "zones/" + item["zone"].rsplit("/", 1)[-1]
        items.setdefault(scope, {"instances": []})["instances"].append(item)
    return {"kind": "compute#instanceAggregatedList", "items": items}


def operation(project, target, zone=None, status="DONE", error=None, name="operation-1", region=None):
    where = (zone_url(project, zone) if zone else f"{WWW}/projects/{project}/regions/{region}" if region
             else f"{WWW}/projects/{project}/global")
    body = {"kind": "compute#operation", "name": name, "status": status, "targetLink": target,
            "selfLink": f"{where}/operations/{name}"}
    if zone:
        body["zone"] = zone_url(project, zone)
    if error:
        body["error"] = {"errors": [error]}
    return body


def machine_type(project, zone, name, accelerators=()):
    body = {"kind": "compute#machineType", "name": name, "zone": zone,
            "selfLink": f"{zone_url(project, zone)}/machineTypes/{name}"}
    if accelerators:
        body["accelerators"] = [{"guestAcceleratorType": kind, "guestAcceleratorCount": count}
                                for kind, count in accelerators]
    return body


def accelerator_type(project, zone, name):
    return {"kind": "compute#acceleratorType", "name": name, "zone": zone_url(project, zone),
            "maximumCardsPerInstance": 8, "selfLink": f"{zone_url(project, zone)}/acceleratorTypes/{name}"}


def quotas(rows):
    return [{"metric": metric, "limit": float(limit), "usage": float(usage)} for metric, (limit, usage) in rows.items()]


def region(project, name, rows):
    return {"kind": "compute#region", "name": name, "status": "UP", "quotas": quotas(rows),
            "selfLink": f"{WWW}/projects/{project}/regions/{name}"}


def project_info(project, rows):
    return {"kind": "compute#project", "name": project, "quotas": quotas(rows)}


def error(code, reason, message):
    return {"error": {"code": code, "message": message, "errors": [{"reason": reason, "message": message}]}}


def tpu_node(project, zone, name, kind, runtime, state="READY", labels=None, ip="10.128.0.9", nat="203.0.113.90"):
    return {"name": f"projects/{project}/locations/{zone}/nodes/{name}", "acceleratorType": kind,
            "runtimeVersion": runtime, "state": state, "labels": labels or {},
            "networkEndpoints": [{"ipAddress": ip, "port": 8470, "accessConfig": {"externalIp": nat}}]}


def tpu_operation(project, zone, done=True, error=None, name="operation-tpu-1"):
    body = {"name": f"projects/{project}/locations/{zone}/operations/{name}", "done": done}
    if error:
        body["error"] = {"code": 8, "message": error}
    return body


def bucket(name, location):
    return {"kind": "storage#bucket", "id": name, "name": name, "location": location.upper(),
            "locationType": "region" if "-" in location else "multi-region"}


def call(method, url, body=None, status=200, **extra):
    item = {"method": method, "url": url, "status": status, "body": body if body is not None else {}}
    item.update({k: v for k, v in extra.items() if v})
    return item


def write(path, interactions):
    with open(path, "w") as handle:
        yaml.safe_dump({"note": "hand-written after the GCP API references; not captured from GCP",
                        "interactions": interactions}, handle, sort_keys=False)
    return str(path)
