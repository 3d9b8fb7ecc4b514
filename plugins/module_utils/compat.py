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

    with open(path or default_matrix_path()) as handle:
        return yaml.safe_load(handle)


def version_tuple(version):
    parts = []
    for piece in str(version).split("."):
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


def major(version):
    return str(version).split(".")[0]


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


def _check_gpus(matrix, key, row, gpus):
    floor = min_compute_capability(matrix, row)
    if not floor:
        return
    for gpu in gpus or []:
        cc = gpu.get("compute_capability")
        name = gpu.get("name") or gpu.get("device_id") or "GPU"
        if not cc:
            known = gpu_model(matrix, gpu.get("name"), gpu.get("device_id"))
            cc = known and known["compute_capability"]
            name = gpu.get("name") or (known and known["names"][0]) or name
        if not cc or version_tuple(cc) >= version_tuple(floor):
            continue
        newest = _newest_tf(matrix, lambda r, cc=cc: version_tuple(cc) >= version_tuple(
            min_compute_capability(matrix, r) or 99))
        hint = "newest TensorFlow for it: %s" % newest if newest else "no TensorFlow in the matrix supports it"
        raise CompatError("%s (compute capability %s) is too old for TensorFlow %s, which needs >= %s; %s"
                          % (name, cc, key, floor, hint))


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
    if driver:
        _check_driver(matrix, key, cuda, driver)
    _check_gpus(matrix, key, row, gpus)
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
        "recommended_driver_branch": (matrix.get("recommended_driver_branch") or {}).get(major(cuda))
        or major(min_driver(matrix, cuda)),
        "python_min": py.get("min"),
        "python_max": py.get("max"),
        "min_compute_capability": min_compute_capability(matrix, row),
        "pip_cuda_packages": row.get("pip_cuda_packages") or {},
        "warnings": warnings,
    }
