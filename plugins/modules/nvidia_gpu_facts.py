#!/usr/bin/python
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: nvidia_gpu_facts
short_description: NVIDIA GPUs, driver and CUDA version of a node, with or without a driver
version_added: 1.0.0
description:
  - Asks C(nvidia-smi) for every GPU (index, name, UUID, memory, compute capability, PCI bus, driver
    version) and reads the highest CUDA version the driver supports from its header.
  - Without a working driver (not installed, not loaded, version mismatch) it falls back to a PCI scan
    (vendor C(0x10de)) so the driver role knows a GPU is there.
  - Drivers older than 510 cannot report the compute capability; it is then left null, and the
    compatibility matrix (C(tfprov.gpu.gpu_model) filter) supplies it from the GPU name.
  - Changes nothing; safe in check mode.
author:
  - tfprov maintainers (@tfprov)
extends_documentation_fragment:
  - tfprov.gpu.read_only
options:
  nvidia_smi:
    description: The nvidia-smi program; looked up on PATH (and C(/usr/bin)) when not given.
    type: path
  sysfs_root:
    description: Where sysfs is mounted, for the PCI fallback.
    type: path
    default: /sys
attributes:
  facts:
    description: Sets facts.
    support: full
"""

EXAMPLES = r"""
- name: Find the GPUs
  tfprov.gpu.nvidia_gpu_facts:

- name: Say what was found
  ansible.builtin.debug:
    msg: "{{ ansible_facts.nvidia_gpu.count }} GPU(s) via {{ ansible_facts.nvidia_gpu.source }}"
"""

RETURN = r"""
ansible_facts:
  description: Facts under C(nvidia_gpu).
  returned: always
  type: dict
  contains:
    nvidia_gpu:
      description: What was found.
      type: dict
      returned: always
      contains:
        source:
          description: C(nvidia-smi), C(pci) (GPUs seen on the bus, no working driver) or C(none).
          type: str
        count:
          description: Number of GPUs.
          type: int
        gpus:
          description: >-
            One entry per GPU; from nvidia-smi C(index, name, uuid, memory_mib, compute_capability,
            pci_bus_id, driver_version), from the PCI scan C(pci_bus_id, vendor_id, device_id, class, driver).
          type: list
          elements: dict
        driver_version:
          description: Loaded driver version, or null.
          type: str
        cuda_version:
          description: Highest CUDA version the loaded driver supports, or null.
          type: str
        driver_state:
          description: >-
            C(loaded), C(not_installed) (no nvidia-smi), C(not_loaded), C(version_mismatch) (reboot needed),
            C(no_devices) or C(error).
          type: str
        error:
          description: nvidia-smi's own message when it failed, else null.
          type: str
  sample:
    nvidia_gpu:
      source: nvidia-smi
      count: 1
      driver_version: "535.183.01"
      cuda_version: "12.2"
      driver_state: loaded
      error: null
      gpus:
        - {index: 0, name: "Tesla T4", uuid: "GPU-5d5b2ef4-0c47-55bb-4bba-c7bd1b7a3a30", memory_mib: 15360,
           compute_capability: "7.5", pci_bus_id: "00000000:00:04.0", driver_version: "535.183.01"}
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.tfprov.gpu.plugins.module_utils.nvidia_gpu import find_nvidia_smi, gather


def main():
    module = AnsibleModule(
        argument_spec={
            "nvidia_smi": {"type": "path"},
            "sysfs_root": {"type": "path", "default": "/sys"},
        },
        supports_check_mode=True,
    )
    smi = find_nvidia_smi(module, module.params["nvidia_smi"])
    module.exit_json(changed=False, ansible_facts={"nvidia_gpu": gather(module, smi, module.params["sysfs_root"])})


if __name__ == "__main__":
    main()
