# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A node's NVIDIA GPUs and driver state, as tfprov.gpu.nvidia_gpu_facts and tfprov.gpu.preflight_facts report them
(the fact ansible_facts.nvidia_gpu): nvidia-smi when a driver answers, else the PCI bus."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.tfprov.gpu.plugins.module_utils.nvidia_smi import (
    LEGACY_QUERY_FIELDS,
    QUERY_FIELDS,
    NvidiaSmiError,
    classify_failure,
    parse_query,
    parse_versions,
)
from ansible_collections.tfprov.gpu.plugins.module_utils.pci import nvidia_gpus


def find_nvidia_smi(module, path):
    """The nvidia-smi to ask: the given path (which must be executable), else the one on PATH or in /usr/bin."""
    if path and not os.access(path, os.X_OK):
        module.fail_json(msg="nvidia_smi %s is not an executable file" % path)
    return path or module.get_bin_path("nvidia-smi", opt_dirs=["/usr/bin"])


def _query(module, smi, fields):
    rc, out, err = module.run_command([smi, "--query-gpu=" + ",".join(fields), "--format=csv,noheader,nounits"])
    text = out + err
    if rc != 0 and not classify_failure(text):
        raise NvidiaSmiError("nvidia-smi exited %d: %s" % (rc, text.strip()[:300]))
    return parse_query(text, fields)


def from_nvidia_smi(module, smi):
    """(gpus, driver_version, cuda_version) or NvidiaSmiError."""
    try:
        gpus = _query(module, smi, QUERY_FIELDS)
    except NvidiaSmiError as exc:
        if str(exc) != "unknown_field":
            raise
        gpus = [dict(g, compute_capability=None) for g in _query(module, smi, LEGACY_QUERY_FIELDS)]
    rc, out, err = module.run_command([smi])
    driver, cuda = parse_versions(out)
    return gpus, driver or (gpus[0]["driver_version"] if gpus else None), cuda


def gather(module, smi, sysfs_root):
    """The fact: nvidia-smi's GPUs and driver when it answers, else the GPUs on the PCI bus and the driver's state."""
    facts = {"source": "none", "count": 0, "gpus": [], "driver_version": None, "cuda_version": None,
             "driver_state": "not_installed", "error": None}
    if smi:
        try:
            gpus, driver, cuda = from_nvidia_smi(module, smi)
            facts.update(driver_state="loaded", driver_version=driver, cuda_version=cuda)
            if gpus:
                facts.update(source="nvidia-smi", gpus=gpus, count=len(gpus))
                return facts
            facts["driver_state"] = "no_devices"
        except NvidiaSmiError as exc:
            reason = str(exc)
            states = {"driver_not_loaded": "not_loaded", "version_mismatch": "version_mismatch",
                      "no_devices": "no_devices"}
            facts.update(driver_state=states.get(reason, "error"), error=reason)
    pci = nvidia_gpus(sysfs_root)
    if pci:
        facts.update(source="pci", gpus=pci, count=len(pci))
    return facts
