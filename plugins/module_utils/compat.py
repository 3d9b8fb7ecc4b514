# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Resolve a consistent TensorFlow / CUDA / cuDNN / driver / GPU stack from the compatibility matrix.

The data is data/compat.yml; this is the only code that interprets it (filters, roles and the bench use it).
Every refusal says what is wrong and what would work instead.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os


class CompatError(Exception):
    """The stack asked for cannot work; the message is one line a user can act on."""


def default_matrix_path():
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "data", "compat.yml")


def load_matrix(path=None):
    import yaml  # controller side only: modules never import this file's loader

    # libyaml's safe loader when PyYAML has it: the same data, parsed ~10x faster (every inventory run loads this).
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    with open(path or default_matrix_path()) as handle:
        return yaml.load(handle, Loader=loader)  # noqa: S506 - a safe loader, C or Python


def version_tuple(version):
    parts = []
    for piece in str(version).split("."):
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


def major(version):
    return str(version).split(".", 1)[0]


def _major_minor(version):
    return ".".join(str(version).split(".")[:2])


def pinned_version(spec):
    """The exact version to install for a requirement spec: '==9.3.0.75' and '<10.0,>=9.3.0.75' give 9.3.0.75.

    TensorFlow 2.20+ accepts ranges; tfprov installs the lowest version of the range, the one TensorFlow was
    built against, so that two runs months apart install the same stack.
    """
    for clause in str(spec).split(","):
        clause = clause.strip()
        for op in ("==", ">="):
            if clause.startswith(op):
                return clause[len(op):].strip()
    spec = str(spec).strip()
    return spec if spec[:1].isdigit() else None


def tf_versions(matrix):
    return sorted(matrix["tensorflow"], key=version_tuple)


def tf_entry(matrix, tf_version):
    """The matrix row of a TensorFlow version ('2.18', '2.18.1' or 'latest')."""
    known = tf_versions(matrix)
    if tf_version in (None, "", "latest"):
        key = known[-1]
    else:
        key = _major_minor(tf_version)
    if key not in matrix["tensorflow"]:
        raise CompatError("TensorFlow %s is not in the compatibility matrix (known: %s to %s)"
                          % (tf_version, known[0], known[-1]))
    return key, matrix["tensorflow"][key]


def min_driver(matrix, cuda_version):
    """Lowest Linux driver that runs this CUDA (minor-version compatibility within its major)."""
    row = matrix["cuda"].get(_major_minor(cuda_version))
    if row is None or not row.get("min_driver"):
        raise CompatError("CUDA %s is not in the compatibility matrix (known: %s)"
                          % (cuda_version, ", ".join(sorted(matrix["cuda"], key=version_tuple))))
    return row["min_driver"]


def gpu_model(matrix, name=None, device_id=None):
    """The GPU row matching an nvidia-smi name or a PCI device id, with its key under 'model'; or None."""
    for key, row in matrix["gpus"].items():
        names = [n.lower() for n in row.get("names", [])]
        ids = [str(i).lower() for i in row.get("pci_device_ids", [])]
        if (name and name.strip().lower() in names) or (device_id and str(device_id).lower() in ids):
            return dict(row, model=key)
    return None


def cloud_gpu(matrix, provider, machine):
    """{gpu, count, ...} for an AWS instance type or a GCP accelerator/machine type; None if unknown."""
    table = matrix.get("cloud", {}).get(provider) or {}
    for section in (table, table.get("accelerator_types") or {}, table.get("machine_types") or {}):
        row = section.get(machine)
        if isinstance(row, dict) and "gpu" in row:
            return dict(row)
    return None


def min_compute_capability(matrix, row):
    """TensorFlow's own floor, else the floor of the CUDA it is built with (CUDA 12 has no Kepler code)."""
    cuda_row = matrix["cuda"].get(_major_minor(row["cuda"])) or {}
    return row.get("min_compute_capability") or cuda_row.get("min_compute_capability")


def _newest_tf(matrix, accept):
    ok = [v for v in tf_versions(matrix) if accept(matrix["tensorflow"][v])]
    return ok[-1] if ok else None


def _check_driver(matrix, key, cuda, driver):
    needed = min_driver(matrix, cuda)
    if version_tuple(driver) >= version_tuple(needed):
        return
    newest = _newest_tf(matrix, lambda row: version_tuple(min_driver(matrix, row["cuda"])) <= version_tuple(driver))
    hint = ("pick TensorFlow <= %s (CUDA %s)" % (newest, major(matrix["tensorflow"][newest]["cuda"]))
            if newest else "no TensorFlow in the matrix runs on it")
    raise CompatError("TensorFlow %s needs CUDA %s (driver >= %s); driver %s is older. "
                      "Install a newer driver (nvidia_driver_branch >= %s) or %s"
                      % (key, cuda, needed, driver, major(needed), hint))


def architecture(matrix, compute_capability):
    """(key, row) of the GPU architecture of a compute capability: the one with the highest listed capability
    at or below it (6.2 is Pascal, 12.1 Blackwell); None when it is older than every listed one or unknown."""
    if not compute_capability:
        return None
    best = None
    for key, row in (matrix.get("gpu_architectures") or {}).items():
        for cc in row.get("compute_capabilities") or []:
            if version_tuple(cc) <= version_tuple(compute_capability) and (
                    best is None or version_tuple(cc) > version_tuple(best[0])):
                best = (cc, key, row)
    return (best[1], best[2]) if best else None


def describe_gpu(matrix, gpu):
    """{name, compute_capability, architecture, last_driver_branch} of an nvidia_gpu_facts GPU (from nvidia-smi
    or the PCI bus); the matrix fills what the GPU did not report. compute_capability is None when unknown."""
    known = gpu_model(matrix, gpu.get("name"), gpu.get("device_id"))
    cc = gpu.get("compute_capability") or (known and known.get("compute_capability")) or None
    name = gpu.get("name") or (known and known["names"][0]) or "GPU %s" % (gpu.get("device_id") or "?")
    arch = architecture(matrix, cc)
    return {
        "name": name,
        "compute_capability": cc,
        "architecture": arch[1].get("name", arch[0]) if arch else None,
        "last_driver_branch": arch[1].get("last_driver_branch") if arch else None,
    }


def oldest_gpu(matrix, gpus):
    """(the described GPU of lowest compute capability or None, names of GPUs whose generation is unknown)."""
    described = [describe_gpu(matrix, gpu) for gpu in gpus or []]
    known = [g for g in described if g["compute_capability"]]
    unknown = [g["name"] for g in described if not g["compute_capability"]]
    oldest = min(known, key=lambda g: version_tuple(g["compute_capability"])) if known else None
    return oldest, unknown


def cap_branch(branch, last_branch):
    """The driver branch, lowered to the last one a GPU generation can run (None = no limit)."""
    if last_branch and version_tuple(branch) > version_tuple(last_branch):
        return str(last_branch)
    return str(branch)


def recommended_branch(matrix, cuda_version, last_branch=None):
    """tfprov's branch for a CUDA major, capped to what the oldest GPU can run."""
    branch = (matrix.get("recommended_driver_branch") or {}).get(major(cuda_version)) or major(
        min_driver(matrix, cuda_version))
    return cap_branch(branch, last_branch)


def gpu_runs(matrix, row, gpu):
    """None when this described GPU can run the TensorFlow row, else the reason (a phrase)."""
    floor = min_compute_capability(matrix, row)
    if floor and version_tuple(gpu["compute_capability"]) < version_tuple(floor):
        return "needs %s" % floor
    needed = major(min_driver(matrix, row["cuda"]))
    last = gpu.get("last_driver_branch")
    if last and version_tuple(last) < version_tuple(needed):
        return "CUDA %s needs driver branch >= %s; the last for %s is %s" % (row["cuda"], needed,
                                                                             gpu["architecture"], last)
    return None


def check_gpu(matrix, key, row, gpu):
    """Refuse a GPU too old for the TensorFlow, whatever its driver; name what it can run instead."""
    reason = gpu_runs(matrix, row, gpu)
    if not reason:
        return
    newest = _newest_tf(matrix, lambda r: gpu_runs(matrix, r, gpu) is None)
    hint = ("newest for it: TensorFlow %s with driver branch %s"
            % (newest, recommended_branch(matrix, matrix["tensorflow"][newest]["cuda"], gpu["last_driver_branch"]))
            if newest else "no TensorFlow in the matrix runs on it")
    raise CompatError("%s (compute capability %s, %s) cannot run TensorFlow %s (%s); %s"
                      % (gpu["name"], gpu["compute_capability"], gpu["architecture"] or "unknown architecture",
                         key, reason, hint))


def distribution(matrix, name, version):
    """(row of the distribution, row of its version or None); (None, None) when the matrix does not know it."""
    rows = (matrix.get("distributions") or {}).get(name)
    if rows is None:
        return None, None
    return rows, rows.get(str(version))


def resolve_stack(matrix, tf_version=None, cuda=None, cudnn=None, driver=None, gpus=None, python=None):
    """The consistent stack for a TensorFlow version, checked against what the node has or the user pinned."""
    key, row = tf_entry(matrix, tf_version)
    warnings = []
    cuda = cuda or row["cuda"]
    if major(cuda) != major(row["cuda"]):
        raise CompatError("TensorFlow %s is built for CUDA %s; CUDA %s has another major version: use CUDA %s.x"
                          % (key, row["cuda"], cuda, major(row["cuda"])))
    if version_tuple(cuda) < version_tuple(row["cuda"]):
        warnings.append("CUDA %s is older than the %s TensorFlow %s was built with" % (cuda, row["cuda"], key))
    cudnn = cudnn or row["cudnn"]
    if major(cudnn) != major(row["cudnn"]):
        raise CompatError("TensorFlow %s is built for cuDNN %s; cuDNN %s has another major version: use cuDNN %s.x"
                          % (key, row["cudnn"], cudnn, major(row["cudnn"])))
    cudnn_row = matrix.get("cudnn", {}).get(_major_minor(cudnn))
    if cudnn_row and major(cuda) not in [str(m) for m in cudnn_row["cuda_majors"]]:
        raise CompatError("cuDNN %s has no build for CUDA %s (it has for CUDA %s)"
                          % (cudnn, major(cuda), ", ".join(str(m) for m in cudnn_row["cuda_majors"])))
    oldest, _unknown = oldest_gpu(matrix, gpus)
    if oldest:
        check_gpu(matrix, key, row, oldest)
    if driver:
        _check_driver(matrix, key, cuda, driver)
    py = row.get("python") or {}
    if python and py and not (version_tuple(py["min"]) <= version_tuple(_major_minor(python))
                              <= version_tuple(py["max"])):
        raise CompatError("TensorFlow %s supports Python %s to %s; the environment has Python %s"
                          % (key, py["min"], py["max"], python))
    return {
        "tensorflow": key,
        "tensorflow_patch": row.get("latest_patch") or key + ".0",
        "cuda": cuda,
        "cudnn": cudnn,
        "min_driver": min_driver(matrix, cuda),
        "recommended_driver_branch": recommended_branch(matrix, cuda, oldest and oldest["last_driver_branch"]),
        "python_min": py.get("min"),
        "python_max": py.get("max"),
        "min_compute_capability": min_compute_capability(matrix, row),
        "pip_cuda_packages": row.get("pip_cuda_packages") or {},
        "warnings": warnings,
    }


def legacy_keras_version(matrix, tf_version):
    """The tf_keras release for a TensorFlow version ('2.21', '2.21.0'), e.g. '2.21.0'; None before Keras 3
    became tf.keras (TF < 2.16, where tf.keras already is Keras 2) or for a TensorFlow the matrix does not list."""
    legacy = (matrix.get("distributed") or {}).get("legacy_keras") or {}
    if not tf_version or not legacy:
        return None
    if tf_version == "latest":
        tf_version = tf_versions(matrix)[-1]
    key = _major_minor(tf_version)
    if version_tuple(key) < version_tuple(legacy.get("since_tensorflow", "0")):
        return None
    return (legacy.get("releases") or {}).get(key)
