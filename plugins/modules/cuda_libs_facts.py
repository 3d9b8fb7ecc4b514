#!/usr/bin/python
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: cuda_libs_facts
short_description: Load the CUDA runtime and cuDNN as TensorFlow would, and report their versions
version_added: 1.0.0
description:
  - Opens C(libcudart) and C(libcudnn) with the dynamic loader (no GPU needed) and calls
    C(cudaRuntimeGetVersion) and C(cudnnGetVersion).
  - Looks in O(search_paths) first; without them, relies on the system linker (C(ld.so.conf.d)), which is
    how a user's program finds them.
  - Changes nothing; safe in check mode.
author:
  - tfprov maintainers (@tfprov)
extends_documentation_fragment:
  - tfprov.gpu.read_only
options:
  libraries:
    description: Which libraries to probe.
    type: list
    elements: str
    choices: [cudart, cudnn]
    default: [cudart, cudnn]
  search_paths:
    description: Directories to look in before the system linker's paths.
    type: list
    elements: path
    default: []
"""

EXAMPLES = r"""
- name: Check the CUDA runtime loads through the system linker
  tfprov.gpu.cuda_libs_facts:
    libraries: [cudart]
  register: libs
"""

RETURN = r"""
libraries:
  description: Per library, C(path) and C(version) when it loaded, else C(error).
  returned: always
  type: dict
  sample: {"cudart": {"path": "/opt/tfprov/envs/tf/.../libcudart.so.12", "version": "12.5"},
           "cudnn": {"error": "libcudnn.so: cannot open shared object file"}}
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.tfprov.gpu.plugins.module_utils.cuda_libs import probe


def main():
    module = AnsibleModule(
        argument_spec={
            "libraries": {"type": "list", "elements": "str", "choices": ["cudart", "cudnn"],
                          "default": ["cudart", "cudnn"]},
            "search_paths": {"type": "list", "elements": "path", "default": []},
        },
        supports_check_mode=True,
    )

    def run_command(argv):
        return module.run_command(argv, errors="surrogate_then_replace")

    found = {lib: probe(lib, module.params["search_paths"], run_command) for lib in module.params["libraries"]}
    module.exit_json(changed=False, libraries=found)


if __name__ == "__main__":
    main()
