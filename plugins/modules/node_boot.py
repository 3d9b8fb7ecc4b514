#!/usr/bin/python
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: node_boot
short_description: Tell which boot of a node this is, so a run can see a reboot it did not ask for
version_added: 1.3.0
description:
  - Returns the fact C(tfprov_boot_id), one string per boot of the node, made of the kernel's boot id and the start
    time of process 1.
  - The kernel's boot id changes when a VM reboots; a container shares its host's kernel, so there it is the start
    time of its process 1 that changes when the container restarts (a local node's reboot).
  - A reboot that falls between two tasks is bridged by SSH's reconnect. Without this, the run would end C(ok) on
    a node that lost what the run put in memory, such as a loaded module or a started service.
  - Changes nothing.
author:
  - tfprov maintainers (@tfprov)
options: {}
extends_documentation_fragment:
  - tfprov.gpu.read_only
"""

EXAMPLES = r"""
- name: Record which boot of the node this run starts on
  tfprov.gpu.node_boot:
"""

RETURN = r"""
ansible_facts:
  description: C(tfprov_boot_id), e.g. C(6c1f0b7e-...:1234), the boot id and process 1's start in clock ticks.
  returned: always
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.tfprov.gpu.plugins.module_utils.node_boot import BOOT_ID, INIT_STAT, boot_id


def main():
    module = AnsibleModule(argument_spec={}, supports_check_mode=True)
    try:
        value = boot_id()
    except (OSError, IndexError) as exc:
        module.fail_json(msg="cannot tell which boot this is from %s and %s: %s" % (BOOT_ID, INIT_STAT, exc))
    module.exit_json(changed=False, ansible_facts={"tfprov_boot_id": value})


if __name__ == "__main__":
    main()
