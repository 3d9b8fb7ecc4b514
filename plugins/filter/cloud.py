# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters for the clouds: the validated cluster spec, and the GPUs of an instance for the inventories' compose."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.tfprov.gpu.plugins.module_utils import cloud_spec as spec_mod
from ansible_collections.tfprov.gpu.plugins.module_utils import compat

_MATRIX = {}
# instance_gpu runs once per host and variable in an inventory's compose (1,000 hosts): answers are memoized.
_GPU_CACHE = {}


def _matrix(path=None):
    key = path or compat.default_matrix_path()
    if key not in _MATRIX:
        try:
            _MATRIX[key] = compat.load_matrix(key)
        except (OSError, ValueError) as exc:
            raise AnsibleFilterError("cannot read the compatibility matrix %s: %s" % (key, exc)) from exc
    return _MATRIX[key]


def cloud_spec(path_or_dict, provider=None, matrix=None):
    """The validated, normalized cluster spec (a path to the YAML file, or the mapping itself)."""
    try:
        data = path_or_dict if isinstance(path_or_dict, dict) else spec_mod.load(path_or_dict)
        return spec_mod.normalize(data, _matrix(matrix), provider or None)
    except spec_mod.SpecError as exc:
        raise AnsibleFilterError("cluster spec: %s" % exc) from None


def _key(value):
    if isinstance(value, (list, tuple)):
        return tuple((str(a.get("acceleratorType") or a.get("type") or ""),
                      str(a.get("acceleratorCount") or a.get("count") or 1)) for a in value if isinstance(a, dict))
    return str(value or "")


def instance_gpu(value, provider, machine_type=None):
    """{model, family, count, groups} of an instance's GPUs: AWS instance type; GCP guestAccelerators list or
    machine type. model '' and groups [] when it has none (or the matrix does not know it)."""
    key = (provider, _key(value), str(machine_type or ""))
    found = _GPU_CACHE.get(key)
    if found is None:
        if isinstance(value, (list, tuple)):
            value = [a for a in value if isinstance(a, dict)]
        found = spec_mod.instance_gpu(_matrix(), value, provider, machine_type)
        found["groups"] = spec_mod.gpu_groups(found["model"])
        _GPU_CACHE[key] = found
    return dict(found, groups=list(found["groups"]))


def cloud_node_records(results, provider):
    """Node name -> the node table's record, from the per-node answers of `up` (async_status results of
    tfprov.gpu.aws_node / gcp_instance, each carrying its spec node): where it runs, its addresses, and whether this
    run created or started it."""
    records = {}
    for result in results:
        node = result["cloud_nodes_job"]["cloud_nodes_node"]
        instance = result.get("instance") or {}
        was_stopped = bool(result.get("was_stopped"))
        records[node["name"]] = {
            "id": str(instance.get("id", "")), "provider": provider, "zone": result.get("zone", ""),
            "full_zones": result.get("full_zones") or [], "type": node["type"], "role": node["role"],
            "address": instance.get("address", ""), "private_address": instance.get("private_address", ""),
            "gpu_model": node.get("gpu_model"), "gpu_count": node.get("gpu_count"),
            "state": instance.get("state") or "would be created",
            "created": bool(result.get("changed")) and not was_stopped, "started": was_stopped,
        }
    return records


class FilterModule(object):
    def filters(self):
        return {"cloud_spec": cloud_spec, "instance_gpu": instance_gpu, "cloud_node_records": cloud_node_records}
