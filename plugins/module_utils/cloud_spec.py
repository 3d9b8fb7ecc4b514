# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cluster spec (one YAML file per cluster) for AWS and GCP: static checks and the expanded node list.

Static only: nothing here calls a cloud. Each refusal is one line naming the field and what to change.
Instance types: chief and worker need a GPU the compatibility matrix knows (data/compat.yml `cloud`);
ps, evaluator and serving may use any well-formed type (a CPU parameter server is the usual layout).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ipaddress
import os
import re

from ansible_collections.tfprov.gpu.plugins.module_utils.compat import cloud_gpu

# The cluster's package cache node (group tfprov_cache): it serves the nodes, it is not one of them (tfprov_nodes).
CACHE_ROLE = "cache"
ROLES = ("chief", "worker", "ps", "evaluator", "serving", CACHE_ROLE)
GPU_ROLES = ("chief", "worker")
PROVIDERS = ("aws", "gcp")
MIN_DISK_GB = 25
_NAME = re.compile(r"^[a-z][a-z0-9-]{0,30}$")
_AWS_TYPE = re.compile(r"^[a-z][a-z0-9-]*\.[a-z0-9-]+$")
_AWS_AMI = re.compile(r"^ami-[0-9a-f]{8,17}$")
_AWS_REGION = re.compile(r"^[a-z]{2}(-gov)?-[a-z]+-\d$")
_GCP_TYPE = re.compile(r"^[a-z][a-z0-9]*-[a-z0-9-]+$")
_GCP_ZONE = re.compile(r"^[a-z]+-[a-z]+\d+-[a-z]$")
_GCP_PROJECT = re.compile(r"^[a-z][a-z0-9-]{4,28}[a-z0-9]$")
# GCP machine families whose machine type carries its GPUs (no accelerator key): a type here must be in the matrix.
_GCP_GPU_FAMILIES = ("a2-", "a3-", "a4-", "g2-", "g4-")
_KNOWN_KEYS = {"name", "provider", "region", "project", "zones", "image", "disk_gb", "spot", "ssh", "operator_cidr",
               "cluster_port", "serving_ports", "roles", "tpus", "idle_stop_minutes", "idle_stop_roles", "labels",
               "network", "subnetwork", "subnet_cidr", "external_ip"}
_GCP_ONLY = ("network", "subnetwork", "subnet_cidr", "external_ip")
_GCP_RESOURCE = re.compile(r"^[a-z]([a-z0-9-]{0,61}[a-z0-9])?$")
# The subnet tfprov gives a cluster's own VPC network when the spec names none (the default network's range in
# us-central1: private, and a /20 holds 4,092 nodes).
DEFAULT_SUBNET_CIDR = "10.128.0.0/20"
# The roles the idle-stop guard applies to by default: a ps or a serving node waits at no load by design.
DEFAULT_IDLE_STOP_ROLES = ["chief", "worker", "evaluator"]
# The package cache's port (the package_cache role's package_cache_port), opened on the cache node to the members.
CACHE_PORT = 3141
# TF Serving's gRPC and REST ports (tf_serving's defaults), opened on serving nodes to the operator and the cluster.
DEFAULT_SERVING_PORTS = [8500, 8501]
_NO_GPU = {"model": "", "family": "", "count": 0, "nvlink": False}
# The widest public operator_cidr by IP version: an office's network, not a provider's block.
_WIDEST_OPERATOR_PREFIX = {4: 16, 6: 48}
# Tag and label keys tfprov sets itself: a user's value would hide the node from tfprov (Name finds it on AWS).
_RESERVED_LABELS = ("Name", "name")


class SpecError(Exception):
    """A refused spec; the message is one line naming the field and what to change."""


def _int(value, field, minimum):
    if isinstance(value, bool) or not isinstance(value, int):
        raise SpecError("%s is %r: give a whole number of at least %d" % (field, value, minimum))
    if value < minimum:
        raise SpecError("%s is %d: it must be at least %d" % (field, value, minimum))
    return value


def gpu_family(model):
    """Matrix key -> family: a100_40gb -> a100, h100_sxm -> h100, t4 -> t4."""
    return model.split("_", 1)[0] if model else ""


def gpu_groups(model):
    """Inventory groups of a GPU model: gpu_<family>, and gpu_<model> when it differs."""
    if not model:
        return []
    family = gpu_family(model)
    return ["gpu_" + family] + (["gpu_" + model] if model != family else [])


def _gpu(model, count, row=None):
    """The GPUs of one instance; nvlink: the matrix's row says NVLink joins them (the gate wants every link up)."""
    if not model:
        return dict(_NO_GPU)
    return {"model": model, "family": gpu_family(model), "count": int(count),
            "nvlink": (row or {}).get("interconnect") in ("nvlink", "nvswitch")}


def _last(value):
    """A GCP resource URL's last segment (zones/.../acceleratorTypes/nvidia-tesla-t4 -> nvidia-tesla-t4)."""
    return str(value).rstrip("/").rsplit("/", 1)[-1]


def instance_gpu(matrix, value, provider, machine_type=None):
    """{model, family, count, nvlink} of the GPUs of an instance: an AWS instance type; for GCP a list of
    guestAccelerators ({acceleratorType, acceleratorCount}) or a machine type (a2/g2/a3 carry their GPUs). No GPU:
    model ''."""
    if provider == "aws":
        row = cloud_gpu(matrix, "aws", str(value or ""))
        return _gpu(row["gpu"], row.get("count", 1), row) if row else dict(_NO_GPU)
    if isinstance(value, (list, tuple)) and value:
        first = value[0]
        row = cloud_gpu(matrix, "gcp", _last(first.get("acceleratorType") or first.get("type") or ""))
        count = sum(int(a.get("acceleratorCount") or a.get("count") or 1) for a in value)
        return _gpu(row["gpu"], count) if row else dict(_NO_GPU)
    machine = value if isinstance(value, str) and value else machine_type
    row = cloud_gpu(matrix, "gcp", _last(machine)) if machine else None
    return _gpu(row["gpu"], row.get("count", 1), row) if row and "count" in row else dict(_NO_GPU)


def _role_gpu_aws(matrix, role, entry, field):
    kind = entry.get("type")
    if not isinstance(kind, str) or not _AWS_TYPE.match(kind):
        raise SpecError("%s.type is %r: give an EC2 instance type such as g4dn.xlarge" % (field, kind))
    for key in ("accelerator", "accelerator_count"):
        if key in entry:
            raise SpecError("%s.%s is GCP only: on AWS the instance type carries the GPUs; remove it" % (field, key))
    gpu = instance_gpu(matrix, kind, "aws")
    if role in GPU_ROLES and not gpu["model"]:
        known = ", ".join(sorted(matrix.get("cloud", {}).get("aws", {}))[:6])
        raise SpecError("%s.type %s has no GPU the compatibility matrix knows: a %s needs a GPU instance type "
                        "(e.g. %s; the list is data/compat.yml cloud.aws)" % (field, kind, role, known))
    return {"type": kind, "accelerator": "", "accelerator_count": 0}, gpu


def _role_gpu_gcp(matrix, role, entry, field):
    kind = entry.get("type")
    if not isinstance(kind, str) or not _GCP_TYPE.match(kind):
        raise SpecError("%s.type is %r: give a Compute Engine machine type such as n1-standard-8" % (field, kind))
    table = matrix.get("cloud", {}).get("gcp", {})
    machines = table.get("machine_types") or {}
    accelerators = table.get("accelerator_types") or {}
    accel = entry.get("accelerator")
    if kind in machines:
        if accel:
            raise SpecError("%s.accelerator: machine type %s carries its own GPUs (%d x %s); remove accelerator"
                            % (field, kind, machines[kind]["count"], machines[kind]["accelerator"]))
        return ({"type": kind, "accelerator": "", "accelerator_count": 0},
                _gpu(machines[kind]["gpu"], machines[kind]["count"]))
    if kind.startswith(_GCP_GPU_FAMILIES):
        raise SpecError("%s.type %s is not a GPU machine type the compatibility matrix knows: use one of %s"
                        % (field, kind, ", ".join(sorted(machines))))
    if not accel:
        if role in GPU_ROLES:
            raise SpecError("%s needs a GPU: add accelerator (e.g. nvidia-tesla-t4) and accelerator_count, or use an "
                            "a2/g2/a3 machine type" % field)
        return {"type": kind, "accelerator": "", "accelerator_count": 0}, dict(_NO_GPU)
    if accel not in accelerators:
        raise SpecError("%s.accelerator %r is unknown: use one of %s" % (field, accel, ", ".join(sorted(accelerators))))
    count = _int(entry.get("accelerator_count", 1), field + ".accelerator_count", 1)
    return {"type": kind, "accelerator": accel, "accelerator_count": count}, _gpu(accelerators[accel]["gpu"], count)


def _nodes(spec, matrix, provider):
    roles = spec.get("roles")
    if not isinstance(roles, dict) or not roles:
        raise SpecError("roles is missing: give at least chief: {count: 1, type: ...}")
    unknown = sorted(set(roles) - set(ROLES))
    if unknown:
        raise SpecError("roles.%s is not a role: use %s" % (unknown[0], ", ".join(ROLES)))
    if "chief" not in roles:
        raise SpecError("roles has no chief: add chief: {count: 1, type: ...} (the chief is required)")
    nodes = []
    for role in ROLES:
        if role not in roles:
            continue
        field = "roles." + role
        entry = roles[role]
        if not isinstance(entry, dict):
            raise SpecError("%s must be a mapping such as {count: 1, type: ...}" % field)
        extra = sorted(set(entry) - {"count", "type", "accelerator", "accelerator_count"})
        if extra:
            raise SpecError("%s.%s is not a setting: use count, type, accelerator, accelerator_count"
                            % (field, extra[0]))
        count = _int(entry.get("count", 1), field + ".count", 1)
        if role == "chief" and count != 1:
            raise SpecError("roles.chief.count is %d: a cluster has exactly one chief; set it to 1" % count)
        if role == "evaluator" and count != 1:
            raise SpecError("roles.evaluator.count is %d: TensorFlow runs at most one evaluator; set it to 1" % count)
        if role == CACHE_ROLE and count != 1:
            raise SpecError("roles.cache.count is %d: one cache node serves the whole cluster; set it to 1" % count)
        machine, gpu = (_role_gpu_aws if provider == "aws" else _role_gpu_gcp)(matrix, role, entry, field)
        for index in range(count):
            nodes.append(dict(machine, name="%s-%s-%d" % (spec["name"], role, index), role=role, index=index,
                              gpu_model=gpu["model"], gpu_family=gpu["family"], gpu_count=gpu["count"]))
    return nodes


def _ssh(spec):
    ssh = spec.get("ssh")
    if not isinstance(ssh, dict):
        raise SpecError("ssh is missing: give ssh: {user: debian, public_key: ~/.ssh/id_ed25519.pub}")
    user = ssh.get("user")
    if not isinstance(user, str) or not re.match(r"^[a-z_][a-z0-9_-]{0,31}$", user):
        raise SpecError("ssh.user is %r: give the image's login user (e.g. debian, ubuntu, ec2-user)" % (user,))
    key = ssh.get("public_key")
    if not isinstance(key, str) or not key.strip():
        raise SpecError("ssh.public_key is missing: give the path of your public key (e.g. ~/.ssh/id_ed25519.pub)")
    if key.strip().startswith(("ssh-", "ecdsa-")):
        text, path = key.strip(), ""
    else:
        path = os.path.expanduser(key)
        if path.endswith(".pub") is False and os.path.exists(path + ".pub"):
            raise SpecError("ssh.public_key %s looks like a private key: give %s.pub" % (key, key))
        try:
            with open(path) as handle:
                text = handle.read().strip()
        except OSError:
            raise SpecError("ssh.public_key %s cannot be read: give the path of an existing public key" % key) from None
        if not text.startswith(("ssh-", "ecdsa-")):
            raise SpecError("ssh.public_key %s is not an OpenSSH public key (ssh-ed25519 ...): give the .pub file"
                            % key)
    key_name = ssh.get("key_name") or "tfprov-" + spec["name"]
    return {"user": user, "public_key": path, "public_key_text": text, "key_name": str(key_name)}


def _zones(spec, provider):
    zones = spec.get("zones")
    example = "[us-east-1a, us-east-1b]" if provider == "aws" else "[us-central1-a, us-central1-b]"
    if zones == []:
        raise SpecError("zones is empty: list the zones to try in order, e.g. zones: %s" % example)
    if not isinstance(zones, list) or not zones or not all(isinstance(z, str) and z for z in zones):
        raise SpecError("zones is missing: give the zones to try in order, e.g. zones: %s" % example)
    if len(set(zones)) != len(zones):
        raise SpecError("zones lists a zone twice: list each zone once, in the order to try them")
    if provider == "aws":
        region = spec.get("region")
        if not isinstance(region, str) or not _AWS_REGION.match(region):
            raise SpecError("region is %r: give the AWS region of the zones, e.g. region: us-east-1" % (region,))
        for zone in zones:
            if not zone.startswith(region) or not re.match(r"^[a-z]$", zone[len(region):]):
                raise SpecError("zones: %s is not a zone of region %s: give zones such as %sa" % (zone, region, region))
        return region, zones
    for zone in zones:
        if not _GCP_ZONE.match(zone):
            raise SpecError("zones: %r is not a Compute Engine zone such as us-central1-a" % zone)
    regions = sorted({zone.rsplit("-", 1)[0] for zone in zones})
    if len(regions) > 1:
        raise SpecError("zones span regions %s: list zones of one region (GPU quota and TPUs are regional)"
                        % ", ".join(regions))
    if spec.get("region") not in (None, regions[0]):
        raise SpecError("region %s does not match the zones (%s): remove region (GCP derives it)"
                        % (spec["region"], regions[0]))
    return regions[0], zones


def _operator_cidr(value):
    try:
        network = ipaddress.ip_network(str(value), strict=False)
    except ValueError:
        raise SpecError("operator_cidr is %r: give your own address as a network, e.g. 203.0.113.7/32"
                        % (value,)) from None
    if value is None or network.prefixlen == 0:
        raise SpecError("operator_cidr %s would open SSH to everyone: give your own address, e.g. 203.0.113.7/32"
                        % value)
    # A private range opens SSH to a network of one's own; a public one wider than an office's is near everyone.
    widest = _WIDEST_OPERATOR_PREFIX[network.version]
    if network.prefixlen < widest and not network.is_private:
        raise SpecError("operator_cidr %s opens SSH to %s addresses: give your own address or your office's network "
                        "(at most /%d), e.g. 203.0.113.7/32" % (network, "{:,}".format(network.num_addresses), widest))
    return str(network)


def _gcp_network(spec):
    """{network, subnetwork, subnet_cidr, own, external_ip}: the cluster's own network (tfprov-<name>, made by `up`,
    removed by `down`) unless the spec names an existing one, which preflight checks before use."""
    named, subnet = spec.get("network"), spec.get("subnetwork")
    for field, value in (("network", named), ("subnetwork", subnet)):
        if value is not None and not (isinstance(value, str) and _GCP_RESOURCE.match(value)):
            raise SpecError("%s is %r: give the name of an existing VPC %s, or remove it (tfprov then makes the "
                            "cluster its own)" % (field, value, field))
    if subnet is not None and named is None:
        raise SpecError("subnetwork %s needs its network: add network: NAME (or remove subnetwork)" % subnet)
    if named is not None and "subnet_cidr" in spec:
        raise SpecError("subnet_cidr is for the network tfprov makes: remove it (network %s has its own subnets)"
                        % named)
    cidr = spec.get("subnet_cidr", DEFAULT_SUBNET_CIDR)
    try:
        range_ = ipaddress.ip_network(str(cidr))
    except ValueError:
        range_ = None
    if range_ is None or range_.version != 4 or not range_.is_private or not 8 <= range_.prefixlen <= 29:
        raise SpecError("subnet_cidr is %r: give a private IPv4 range between /8 and /29, e.g. %s"
                        % (cidr, DEFAULT_SUBNET_CIDR))
    external = spec.get("external_ip", False)
    if not isinstance(external, bool):
        raise SpecError("external_ip is %r: set external_ip: true (a public address per node) or false" % (external,))
    own = named is None
    return {"network": named or "tfprov-" + spec["name"], "subnetwork": subnet or ("tfprov-" + spec["name"] if own
                                                                                   else ""),
            "subnet_cidr": str(range_) if own else "", "own": own, "external_ip": external}


def _idle_stop_roles(value):
    if not isinstance(value, list) or not all(role in ROLES for role in value):
        raise SpecError("idle_stop_roles is %r: list roles among %s, e.g. idle_stop_roles: [chief, worker]"
                        % (value, ", ".join(ROLES)))
    return sorted(set(value), key=ROLES.index)


def _serving_ports(value, cluster_port):
    if not isinstance(value, list) or not value:
        raise SpecError("serving_ports is %r: give TF Serving's ports as a list, e.g. serving_ports: [8500, 8501]"
                        % (value,))
    ports = [_int(port, "serving_ports", 1) for port in value]
    for port in ports:
        if port > 65535 or port in (22, cluster_port):
            raise SpecError("serving_ports: %d is not free for TF Serving (SSH is 22, cluster_port %d): give other "
                            "ports, e.g. [8500, 8501]" % (port, cluster_port))
    if len(set(ports)) != len(ports):
        raise SpecError("serving_ports lists a port twice: list each port once")
    return ports


def _image(spec, provider):
    image = spec.get("image")
    if provider == "aws":
        if not isinstance(image, str) or not _AWS_AMI.match(image):
            raise SpecError("image is %r: give an AMI id of the region, e.g. image: ami-0123456789abcdef0" % (image,))
    elif not isinstance(image, str) or not image.startswith(("projects/", "https://")):
        raise SpecError("image is %r: give an image URI or family, e.g. projects/debian-cloud/global/images/family/"
                        "debian-12" % (image,))
    return image


def _labels(value):
    if value in (None, {}):
        return {}
    if not isinstance(value, dict):
        raise SpecError("labels must be a mapping such as {team: ml}")
    for key in value:
        if str(key).lower().startswith("tfprov") or str(key) in _RESERVED_LABELS:
            raise SpecError("labels.%s is a key tfprov sets itself (Name and keys starting with tfprov): pick another "
                            "key" % key)
    return {str(k): str(v) for k, v in value.items()}


def normalize(spec, matrix, provider=None):
    """The validated spec with defaults filled in and `nodes` expanded ({name, role, index, type, accelerator,
    accelerator_count, gpu_model, gpu_family, gpu_count}); SpecError names the first thing to change."""
    if not isinstance(spec, dict):
        raise SpecError("the cluster spec must be a YAML mapping (name, provider, zones, roles, ...)")
    unknown = sorted(set(spec) - _KNOWN_KEYS)
    if unknown:
        raise SpecError("%s is not a spec setting: use %s" % (unknown[0], ", ".join(sorted(_KNOWN_KEYS))))
    name = spec.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        raise SpecError("name is %r: give a lowercase name of letters, digits and '-' starting with a letter "
                        "(at most 31), e.g. name: demo" % (name,))
    kind = spec.get("provider")
    if kind not in PROVIDERS:
        raise SpecError("provider is %r: set provider: aws or provider: gcp" % (kind,))
    if provider and kind != provider:
        raise SpecError("provider is %s but this is `%s`: run it with %s or set provider: %s"
                        % (kind, provider, kind, provider))
    if kind == "gcp" and not (isinstance(spec.get("project"), str) and _GCP_PROJECT.match(spec["project"])):
        raise SpecError("project is %r: give the GCP project id, e.g. project: my-project" % (spec.get("project"),))
    if kind == "aws" and spec.get("tpus"):
        raise SpecError("tpus are GCP only: remove tpus or use provider: gcp")
    if kind == "aws" and "project" in spec:
        raise SpecError("project is GCP only: remove it (AWS takes the account from the credentials)")
    gcp_only = [key for key in _GCP_ONLY if key in spec]
    if kind == "aws" and gcp_only:
        raise SpecError("%s is GCP only: remove it (on AWS nodes join the region's default VPC behind the cluster's "
                        "security group)" % gcp_only[0])
    region, zones = _zones(spec, kind)
    spot = spec.get("spot", False)
    if not isinstance(spot, bool):
        raise SpecError("spot is %r: set spot: true or spot: false" % (spot,))
    out = {
        "name": name, "provider": kind, "region": region, "project": spec.get("project", ""), "zones": zones,
        "image": _image(spec, kind),
        "disk_gb": _int(spec.get("disk_gb", 100), "disk_gb", MIN_DISK_GB),
        "spot": spot, "ssh": _ssh(spec), "operator_cidr": _operator_cidr(spec.get("operator_cidr")),
        "cluster_port": _int(spec.get("cluster_port", 2222), "cluster_port", 1),
        "idle_stop_minutes": _int(spec.get("idle_stop_minutes", 0), "idle_stop_minutes", 0),
        "labels": _labels(spec.get("labels")), "tpus": spec.get("tpus") or [],
    }
    if out["cluster_port"] > 65535 or out["cluster_port"] == 22:
        raise SpecError("cluster_port is %d: give a free TCP port other than 22, e.g. 2222" % out["cluster_port"])
    out["idle_stop_roles"] = _idle_stop_roles(spec.get("idle_stop_roles", DEFAULT_IDLE_STOP_ROLES))
    out["serving_ports"] = _serving_ports(spec.get("serving_ports", DEFAULT_SERVING_PORTS), out["cluster_port"])
    if out["cluster_port"] == CACHE_PORT or CACHE_PORT in out["serving_ports"]:
        raise SpecError("port %d is the package cache's: give cluster_port and serving_ports other ports"
                        % CACHE_PORT)
    out["cache_port"] = CACHE_PORT
    out["gcp_network"] = _gcp_network(spec) if kind == "gcp" else {}
    if not isinstance(out["tpus"], list):
        raise SpecError("tpus must be a list of {name, type, runtime_version, bucket}")
    out["nodes"] = _nodes(spec, matrix, kind)
    out["types"] = sorted({node["type"] for node in out["nodes"]})
    return out


def load(path):
    import yaml  # controller side only

    try:
        with open(os.path.expanduser(str(path))) as handle:
            return yaml.safe_load(handle)
    except OSError as exc:
        raise SpecError("cluster spec %s cannot be read (%s): give the path of your spec file"
                        % (path, exc.strerror)) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = " at line %d, column %d" % (mark.line + 1, mark.column + 1) if mark else ""
        problem = getattr(exc, "problem", None)
        raise SpecError("cluster spec %s is not valid YAML%s%s: fix the file"
                        % (path, where, ": " + problem if problem else "")) from None
