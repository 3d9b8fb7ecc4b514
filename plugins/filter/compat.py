# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters over the compatibility matrix (data/compat.yml): pick a stack, refuse an impossible one."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from urllib.parse import urlsplit

from ansible.errors import AnsibleFilterError
from ansible_collections.tfprov.gpu.plugins.module_utils import compat

_CACHE = {}


def _matrix(path=None):
    key = path or compat.default_matrix_path()
    if key not in _CACHE:
        try:
            _CACHE[key] = compat.load_matrix(key)
        except (OSError, ValueError) as exc:
            raise AnsibleFilterError("cannot read the compatibility matrix %s: %s" % (key, exc)) from exc
    return _CACHE[key]


def tf_stack(tf_version, cuda=None, cudnn=None, driver=None, gpus=None, python=None, matrix=None):
    """The stack for a TensorFlow version; fails with the reason when it cannot work on this node."""
    try:
        return compat.resolve_stack(_matrix(matrix), tf_version, cuda=cuda or None, cudnn=cudnn or None,
                                    driver=driver or None, gpus=gpus, python=python or None)
    except compat.CompatError as exc:
        raise AnsibleFilterError(str(exc)) from None


def gpu_model(name_or_id, matrix=None):
    """The matrix row of a GPU by nvidia-smi name or PCI device id (with its key as 'model'), or None."""
    data = _matrix(matrix)
    return compat.gpu_model(data, name=name_or_id) or compat.gpu_model(data, device_id=name_or_id)


def cloud_gpu(machine, provider, matrix=None):
    """{model, count} of the GPUs an AWS instance type or GCP accelerator type carries, or None."""
    return compat.cloud_gpu(_matrix(matrix), provider, machine)


def allreduce_expected(instance_type, matrix=None):
    """The all-reduce bus bandwidth (GB/s) the GPUs of one instance should reach together, or None when the matrix
    has no sourced figure for its GPU model on its board (today: eight GPUs on an NVSwitch board)."""
    data = _matrix(matrix)
    row = compat.cloud_gpu(data, "aws", str(instance_type or "")) or \
        compat.cloud_gpu(data, "gcp", str(instance_type or "").rstrip("/").rsplit("/", 1)[-1])
    if not row or row.get("interconnect") != "nvswitch":
        return None
    figures = (data.get("gpus", {}).get(row["gpu"]) or {}).get("nccl_allreduce_busbw_gbps") or {}
    return figures.get("nvswitch_%d" % int(row.get("count", 1)))


def cuda_min_driver(cuda_version, matrix=None):
    try:
        return compat.min_driver(_matrix(matrix), cuda_version)
    except compat.CompatError as exc:
        raise AnsibleFilterError(str(exc)) from None


def matrix_section(name, matrix=None):
    """A whole section of the matrix (e.g. 'miniconda'), for data that is not a TensorFlow stack."""
    data = _matrix(matrix)
    if name not in data:
        raise AnsibleFilterError("the compatibility matrix has no section %r" % name)
    return data[name]


def gpu_peaks(gpus, matrix=None):
    """{nvidia-smi name: peak TFLOP/s by precision} for the GPUs of a node the matrix knows (for the bench)."""
    data = _matrix(matrix)
    peaks = {}
    for gpu in gpus or []:
        row = compat.gpu_model(data, name=gpu.get("name"), device_id=gpu.get("device_id"))
        if row and gpu.get("name"):
            peaks[gpu["name"]] = row.get("peak_tflops") or {}
    return peaks


def pip_requirements(packages, only=None, exclude=None):
    """['name==1.2', ...] pinned exactly (see pinned_version), keeping `only` names, dropping `exclude` matches."""
    result = []
    for name, spec in sorted((packages or {}).items()):
        if (only and name not in only) or (exclude and exclude in name):
            continue
        version = compat.pinned_version(spec)
        if not version:
            raise AnsibleFilterError("cannot pin %s%s to one version" % (name, spec))
        result.append("%s==%s" % (name, version))
    return result


def pip_args(ca_bundle=None, find_links=None, no_index=False, index_url=None):
    """pip options for TLS-inspecting proxies (--cert), offline wheelhouses (--find-links, --no-index) and a package
    cache or mirror in place of PyPI (--index-url).

    A wheelhouse or an index given as an http:// URL (a controller's or a private network's server) is used as given:
    pip ignores plain-HTTP sources of any host but localhost unless told to trust that host (--trusted-host).
    """
    args = ["--cert", ca_bundle] if ca_bundle else []
    args += ["--index-url", index_url] if index_url else []
    args += ["--find-links", find_links] if find_links else []
    for url in (index_url, find_links):
        host = urlsplit(str(url)).hostname if str(url or "").startswith("http://") else None
        trusted = ["--trusted-host", host]
        if host and host not in ("localhost", "127.0.0.1", "::1") and trusted[1] not in args:
            args += trusted
    return args + (["--no-index"] if str(no_index).lower() in ("true", "yes", "1") else [])


def pinned_version(spec):
    return compat.pinned_version(spec)


def legacy_keras(tf_version, matrix=None):
    """The tf_keras version to install beside this TensorFlow (Keras 2 for multi-worker fit), or None."""
    return compat.legacy_keras_version(_matrix(matrix), tf_version)


class FilterModule(object):
    def filters(self):
        return {
            "tf_stack": tf_stack,
            "gpu_model": gpu_model,
            "cloud_gpu": cloud_gpu,
            "allreduce_expected": allreduce_expected,
            "cuda_min_driver": cuda_min_driver,
            "pip_requirements": pip_requirements,
            "pip_args": pip_args,
            "pinned_version": pinned_version,
            "matrix_section": matrix_section,
            "gpu_peaks": gpu_peaks,
            "legacy_keras": legacy_keras,
        }
