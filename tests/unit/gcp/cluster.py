"""A GCP cluster spec and the hand-written API answers nodes_up / nodes_down meet for it."""

import json

import yaml

from conftest import shapes

PROJECT, REGION, ZONES = "demo-proj-1", "us-central1", ["us-central1-a", "us-central1-b"]
BASE = f"{shapes.COMPUTE}/projects/{PROJECT}"
NETWORK = "tfprov-demo"  # the cluster's own network and subnet (tfprov-<cluster>)
NETWORK_URL = f"{shapes.WWW}/projects/{PROJECT}/global/networks/{NETWORK}"
PUBKEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFakeKeyForRecordedTestsOnly tfprov-test"
# name, role, machine type, accelerator, zone it lands in, private address
NODES = [
    ("demo-chief-0", "chief", "n1-standard-8", "nvidia-tesla-t4", "us-central1-a", "10.128.0.2"),
    ("demo-worker-0", "worker", "n1-standard-8", "nvidia-tesla-t4", "us-central1-a", "10.128.0.3"),
    ("demo-worker-1", "worker", "n1-standard-8", "nvidia-tesla-t4", "us-central1-b", "10.128.0.4"),
    ("demo-ps-0", "ps", "n1-standard-4", "", "us-central1-a", "10.128.0.5"),
]
FULL = "demo-worker-1"  # us-central1-a has no capacity for it: ZONE_RESOURCE_POOL_EXHAUSTED


def spec(tmp_path, **changes):
    key = tmp_path / "id_ed25519.pub"
    key.write_text(PUBKEY + "\n")
    data = {
        "name": "demo", "provider": "gcp", "project": PROJECT, "zones": ZONES,
        "image": "projects/debian-cloud/global/images/family/debian-12", "disk_gb": 50,
        "ssh": {"user": "debian", "public_key": str(key)}, "operator_cidr": "203.0.113.7/32", "cluster_port": 2222,
        "roles": {
            "chief": {"count": 1, "type": "n1-standard-8", "accelerator": "nvidia-tesla-t4", "accelerator_count": 1},
            "worker": {"count": 2, "type": "n1-standard-8", "accelerator": "nvidia-tesla-t4", "accelerator_count": 1},
            "ps": {"count": 1, "type": "n1-standard-4"},
        },
    }
    data.update(changes)
    path = tmp_path / "spec.yml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def _instance(name, role, machine, accel, zone, ip, status="RUNNING"):
    return shapes.instance(PROJECT, zone, name, machine, [(accel, 1)] if accel else (), ip=ip, nat=None,
                           network=NETWORK, subnetwork=NETWORK, status=status,
                           labels={"tfprov-cluster": "demo", "tfprov-role": role, "tfprov-tf-port": "2222",
                                   "tfprov-idle-stop-minutes": "0"}, tag="tfprov-demo",
                           hostname=f"{name}.{zone}.{PROJECT}", metadata={"ssh-keys": "debian:" + PUBKEY},
                           ident=str(abs(hash(name)) % 10 ** 12))


def offerings(offered=("nvidia-tesla-t4",), zones=ZONES):
    calls = []
    for zone in zones:
        for machine in ("n1-standard-8", "n1-standard-4"):
            calls.append(shapes.call("GET", f"{BASE}/zones/{zone}/machineTypes/{machine}",
                                     shapes.machine_type(PROJECT, zone, machine)))
        for accel in ("nvidia-tesla-t4", "nvidia-tesla-a100"):
            url = f"{BASE}/zones/{zone}/acceleratorTypes/{accel}"
            if accel in offered:
                calls.append(shapes.call("GET", url, shapes.accelerator_type(PROJECT, zone, accel)))
            else:
                calls.append(shapes.call("GET", url, shapes.error(404, "notFound", "not found"), status=404))
    return calls


IMAGE = f"{shapes.COMPUTE}/projects/debian-cloud/global/images/family/debian-12"


def quotas(t4_limit=8, t4_usage=0, all_regions=16, preemptible_t4=0):
    rows = {"NVIDIA_T4_GPUS": (t4_limit, t4_usage), "CPUS": (96, 0), "PREEMPTIBLE_NVIDIA_T4_GPUS": (preemptible_t4, 0)}
    return [
        shapes.call("GET", IMAGE, {"kind": "compute#image", "name": "debian-12-bookworm-v20261110", "labels": {}}),
        shapes.call("GET", f"{BASE}/regions/{REGION}", shapes.region(PROJECT, REGION, rows)),
        shapes.call("GET", BASE, shapes.project_info(PROJECT, {"GPUS_ALL_REGIONS": (all_regions, 0)})),
    ]


def listing(stopped=()):
    """The cluster's instances: all of them once created (those named in stopped: TERMINATED), none before or after."""
    url = f"{BASE}/aggregated/instances"
    made = shapes.aggregated([_instance(*node, status="TERMINATED" if node[0] in stopped else "RUNNING")
                              for node in NODES])
    return [
        shapes.call("GET", url, made, when=["created:demo-chief-0"]),
        shapes.call("GET", url, shapes.aggregated([])),
    ]


def _zone_op(zone, name="operation-1", **kw):
    return lambda target: shapes.operation(PROJECT, target, zone=zone, name=name, **kw)


def _global_op(target):
    return shapes.operation(PROJECT, target)


def _region_op(target):
    return shapes.operation(PROJECT, target, region=REGION)


RULES = (("ssh", ["22"], ["203.0.113.7/32"]), ("cluster", ["2222"], [f"{node[5]}/32" for node in NODES]))


def rules():
    return [shapes.firewall(PROJECT, "tfprov-demo-" + name, ports, sources, ["tfprov-demo"], network=NETWORK)
            for name, ports, sources in RULES]


def network(extra_rules=()):
    """The cluster's own network, subnet and Cloud NAT router from absent to made to removed; the firewall listing
    the network check reads once the network exists (the cluster's own rules, and extra_rules)."""
    regional = f"{BASE}/regions/{REGION}"
    return [
        *shapes.lifecycle(f"{BASE}/global/networks/{NETWORK}", f"{BASE}/global/networks",
                          shapes.network(PROJECT, NETWORK, description="tfprov cluster demo"), "net", _global_op,
                          create_body_has={"name": NETWORK, "autoCreateSubnetworks": False}),
        *shapes.lifecycle(f"{regional}/subnetworks/{NETWORK}", f"{regional}/subnetworks",
                          shapes.subnetwork(PROJECT, REGION, NETWORK, NETWORK, "10.128.0.0/20",
                                            description="tfprov cluster demo"), "subnet", _region_op,
                          create_body_has={"name": NETWORK, "ipCidrRange": "10.128.0.0/20"}),
        *shapes.lifecycle(f"{regional}/routers/{NETWORK}", f"{regional}/routers",
                          shapes.router(PROJECT, REGION, NETWORK, NETWORK), "router", _region_op,
                          create_body_has={"name": NETWORK, "network": NETWORK_URL}),
        shapes.call("GET", f"{BASE}/global/firewalls", {"items": rules() + list(extra_rules)},
                    when=["created:tfprov-demo-ssh"]),
        shapes.call("GET", f"{BASE}/global/firewalls", {"items": list(extra_rules)}),
    ]


def already_made(directory, extra=()):
    """Start a recorded run with the cluster's network, rules and instances made (and the flags in extra)."""
    made = ["net", "subnet", "router", "tfprov-demo-ssh", "tfprov-demo-cluster"] + [node[0] for node in NODES]
    (directory / "state.json").write_text(json.dumps({"flags": ["created:" + flag for flag in made] + list(extra),
                                                      "used": {}}))


def resources():
    calls = network()
    for rule in rules():
        fw = rule["name"]
        calls += shapes.lifecycle(f"{BASE}/global/firewalls/{fw}", f"{BASE}/global/firewalls", rule, fw, _global_op)
    for absent in ("serving", "cache"):  # no serving or cache node in the spec: `down` finds no such rule
        calls.append(shapes.call("GET", f"{BASE}/global/firewalls/tfprov-demo-{absent}",
                                 shapes.error(404, "notFound", "not found"), status=404))
    for node in NODES:
        name, zone = node[0], node[4]
        if name == FULL:  # first tried in us-central1-a: the insert's operation ends in ZONE_RESOURCE_POOL_EXHAUSTED
            url_a = f"{BASE}/zones/us-central1-a/instances/{name}"
            calls += [
                shapes.call("GET", url_a, shapes.error(404, "notFound", "not found"), status=404),
                shapes.call("POST", f"{BASE}/zones/us-central1-a/instances",
                            shapes.operation(PROJECT, url_a, zone="us-central1-a", status="RUNNING", name="op-full"),
                            body_has={"name": name}),
                shapes.call("GET", f"{BASE}/zones/us-central1-a/operations/op-full",
                            shapes.operation(PROJECT, url_a, zone="us-central1-a", name="op-full", error={
                                "code": "ZONE_RESOURCE_POOL_EXHAUSTED",
                                "message": "The zone 'projects/demo-proj-1/zones/us-central1-a' does not have enough "
                                           "resources available to fulfill the request."})),
            ]
        url = f"{BASE}/zones/{zone}/instances/{name}"
        calls += shapes.lifecycle(url, f"{BASE}/zones/{zone}/instances", _instance(*node), name, _zone_op(zone))
    return calls


def full_run():
    return listing() + offerings() + quotas() + resources() + tpu_listing()


TPU_SPEC = [{"name": "tpu-a", "type": "v2-8", "runtime_version": "tpu-ubuntu2204-base", "bucket": "gs://demo-bucket"}]


def tpu_listing(zones=ZONES, name="demo-tpu-a", zone="us-central1-a"):
    """What `down` lists in each zone: the TPU VM labelled with the cluster once created, in its zone."""
    calls = []
    for where in zones:
        url = f"{shapes.TPU}/projects/{PROJECT}/locations/{where}/nodes"
        if where == zone:
            node = shapes.tpu_node(PROJECT, zone, name, "v2-8", "tpu-ubuntu2204-base",
                                   labels={"tfprov-cluster": "demo", "tfprov-role": "tpu"})
            calls.append(shapes.call("GET", url, {"nodes": [node]}, when=["tpu-created"]))
        calls.append(shapes.call("GET", url, {}))
    return calls


def tpu_calls(zone="us-central1-a", name="demo-tpu-a", bucket_location="us-central1"):
    """TPU type offered, the bucket (in bucket_location), and the TPU node from absent to READY to deleted."""
    node = f"{shapes.TPU}/projects/{PROJECT}/locations/{zone}/nodes/{name}"
    create_op = shapes.tpu_operation(PROJECT, zone, done=False, name="op-create")
    delete_op = shapes.tpu_operation(PROJECT, zone, done=False, name="op-delete")
    kind = f"projects/{PROJECT}/locations/{zone}/acceleratorTypes/v2-8"
    return [
        shapes.call("GET", f"{shapes.TPU}/{kind}", {"name": kind, "type": "v2-8"}),
        shapes.call("GET", f"{shapes.STORAGE}/b/demo-bucket", shapes.bucket("demo-bucket", bucket_location)),
        shapes.call("GET", node, shapes.error(404, "notFound", "not found"), status=404, unless=["tpu-created"]),
        shapes.call("GET", node, shapes.tpu_node(PROJECT, zone, name, "v2-8", "tpu-ubuntu2204-base"),
                    when=["tpu-created"]),
        shapes.call("POST", node.rsplit("/", 1)[0], create_op, query={"nodeId": name},
                    body_has={"acceleratorType": "v2-8", "runtimeVersion": "tpu-ubuntu2204-base"}),
        shapes.call("GET", "{}/{}".format(shapes.TPU, create_op["name"]),
                    shapes.tpu_operation(PROJECT, zone, name="op-create"), sets=["tpu-created"]),
        shapes.call("DELETE", node, delete_op, when=["tpu-created"]),
        shapes.call("GET", "{}/{}".format(shapes.TPU, delete_op["name"]),
                    shapes.tpu_operation(PROJECT, zone, name="op-delete"), clears=["tpu-created"]),
    ]
