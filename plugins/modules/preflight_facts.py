#!/usr/bin/python
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: preflight_facts
short_description: What blocks or slows GPU provisioning of a node, read without changing it
version_added: 1.0.0
description:
  - Lists the NVIDIA GPUs on the PCI bus (vendor C(0x10de), VGA or 3D controller class) from sysfs,
    so a GPU is found before any driver is installed.
  - Reads the UEFI Secure Boot state, which decides whether a DKMS-built NVIDIA module must be signed.
  - Lists the processes holding the package manager's locks (dpkg/apt, rpm, dnf, yum).
  - Sets the fact C(nvidia_gpu) as M(tfprov.gpu.nvidia_gpu_facts) does (the GPUs and the loaded driver, from
    C(nvidia-smi) or else the PCI bus), so that the plays that check a node before changing it read the node once.
  - Changes nothing; safe in check mode.
author:
  - tfprov maintainers (@tfprov)
extends_documentation_fragment:
  - tfprov.gpu.read_only
options:
  disk_path:
    description:
      - Where the software will be installed; free space is read on the filesystem that holds it
        (its nearest existing parent if it does not exist yet).
    type: path
    default: /opt
  sysfs_root:
    description: Where sysfs is mounted (tests point it at a recorded tree).
    type: path
    default: /sys
  nvidia_smi:
    description: The nvidia-smi program; looked up on PATH (and C(/usr/bin)) when not given.
    type: path
attributes:
  facts:
    description: Sets the fact C(nvidia_gpu).
    support: full
"""

EXAMPLES = r"""
- name: Read what blocks provisioning
  tfprov.gpu.preflight_facts:
  register: node

- name: Show the GPUs found
  ansible.builtin.debug:
    msg: "{{ node.pci_gpus | length }} NVIDIA GPU(s)"
"""

RETURN = r"""
disk:
  description: Free and total space of the filesystem holding O(disk_path), in GB (10^9 bytes).
  returned: always
  type: dict
  sample: {"path": "/opt", "free_gb": 81.2, "total_gb": 270.6}
pci_gpus:
  description: NVIDIA GPU functions on the PCI bus.
  returned: always
  type: list
  elements: dict
  sample: [{"pci_bus_id": "0000:00:04.0", "vendor_id": "0x10de", "device_id": "0x1eb8", "class": "0x030200",
            "driver": null}]
secure_boot:
  description: C(enabled), C(disabled), C(not_uefi) or C(unknown) (not readable, as in a container).
  returned: always
  type: str
  sample: disabled
memory_mb:
  description: Total memory (MemTotal of /proc/meminfo) in MiB, as ansible_memtotal_mb reports it; null if unreadable.
  returned: always
  type: int
  sample: 3840
ansible_facts:
  description: The fact C(nvidia_gpu), as M(tfprov.gpu.nvidia_gpu_facts) returns it.
  returned: always
  type: dict
  sample:
    nvidia_gpu: {source: pci, count: 1, driver_version: null, cuda_version: null, driver_state: not_installed,
                 error: null, gpus: [{pci_bus_id: "0000:00:04.0", vendor_id: "0x10de", device_id: "0x1eb8",
                                      class: "0x030200", driver: null}]}
package_locks:
  description: Package manager locks held by a live process.
  returned: always
  type: list
  elements: dict
  sample:
    - {"path": "/var/lib/dpkg/lock-frontend", "pid": 812, "command": "/usr/bin/python3 /usr/bin/unattended-upgrade"}
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.tfprov.gpu.plugins.module_utils.nvidia_gpu import find_nvidia_smi, gather
from ansible_collections.tfprov.gpu.plugins.module_utils.package_locks import lock_holders
from ansible_collections.tfprov.gpu.plugins.module_utils.pci import nvidia_gpus
from ansible_collections.tfprov.gpu.plugins.module_utils.secure_boot import secure_boot_state


def disk_space(path):
    """Free/total GB of the filesystem holding path, or of its nearest existing parent."""
    probe = path
    while not os.path.exists(probe):
        probe = os.path.dirname(probe) or "/"
    st = os.statvfs(probe)
    return {
        "path": path,
        "free_gb": round(st.f_bavail * st.f_frsize / 1e9, 1),
        "total_gb": round(st.f_blocks * st.f_frsize / 1e9, 1),
    }


def memory_mb(meminfo="/proc/meminfo"):
    """MemTotal in MiB, read directly: gathering Ansible's whole hardware subset for it costs seconds per node."""
    try:
        with open(meminfo) as handle:
            for line in handle:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) // 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def main():
    module = AnsibleModule(
        argument_spec={
            "disk_path": {"type": "path", "default": "/opt"},
            "sysfs_root": {"type": "path", "default": "/sys"},
            "nvidia_smi": {"type": "path"},
        },
        supports_check_mode=True,
    )
    sysfs_root = module.params["sysfs_root"]
    smi = find_nvidia_smi(module, module.params["nvidia_smi"])
    module.exit_json(
        changed=False,
        ansible_facts={"nvidia_gpu": gather(module, smi, sysfs_root)},
        disk=disk_space(module.params["disk_path"]),
        memory_mb=memory_mb(),
        pci_gpus=nvidia_gpus(sysfs_root),
        secure_boot=secure_boot_state(sysfs_root),
        package_locks=lock_holders(),
    )


if __name__ == "__main__":
    main()
