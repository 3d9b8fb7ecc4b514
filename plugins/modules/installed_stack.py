#!/usr/bin/python
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: installed_stack
short_description: The driver, CUDA, cuDNN, TensorFlow and Python a node has installed, from its files
version_added: 1.0.0
description:
  - Reads what is installed, without importing TensorFlow (seconds) or loading a library, so that a fleet-wide
    report (C(tfprov fleet drift), C(tfprov fleet status)) costs a fraction of a second per node.
  - The driver from the loaded kernel module (C(/sys/module/nvidia/version)), the packages (dpkg's status file,
    rpm) and C(libnvidia-ml.so.<version>).
  - CUDA from NVIDIA's pip wheels in the environment (C(nvidia-cuda-runtime-cu12)), conda's packages, the toolkit's
    C(version.json) under C(/usr/local/cuda*) and the packages; cuDNN likewise (wheels, conda, C(cudnn_version.h),
    packages). The C(version) of each is the copy TensorFlow would load first; C(sources) lists every copy found.
  - TensorFlow and its variant from the C(*.dist-info) directories (or conda's records) of the environment O(env).
  - Changes nothing; safe in check mode.
author:
  - tfprov maintainers (@tfprov)
extends_documentation_fragment:
  - tfprov.gpu.read_only
options:
  env:
    description: The TensorFlow environment (the tensorflow_gpu role's C(tensorflow_gpu_env)).
    type: path
    default: /opt/tfprov/envs/tf
  root:
    description: Read the node's files under this directory (tests use a fake tree).
    type: path
    default: /
attributes:
  facts:
    description: Sets facts.
    support: full
"""

EXAMPLES = r"""
- name: Read what the node has installed
  tfprov.gpu.installed_stack:
    env: /opt/tfprov/envs/tf

- name: Say which TensorFlow is there
  ansible.builtin.debug:
    msg: "{{ __tf.package }} {{ __tf.version }}"
  vars:
    __tf: "{{ ansible_facts.tfprov_installed.tensorflow }}"
"""

RETURN = r"""
ansible_facts:
  description: Facts under C(tfprov_installed).
  returned: always
  type: dict
  contains:
    tfprov_installed:
      description: >-
        C(env), C(env_exists), C(python) (the environment's), C(interpreter) (the Python running this module),
        C(tensorflow) (C(version), C(package), C(variant) gpu, cpu or rocm), C(driver) (C(version), C(source)
        loaded, package or library, C(loaded), C(packages), C(library), C(reboot_needed)), C(cuda) and C(cudnn)
        (C(version), C(source) pip, conda, toolkit or header, package, and C(sources)); null where not installed.
      type: dict
      returned: always
  sample:
    tfprov_installed:
      env: /opt/tfprov/envs/tf
      env_exists: true
      python: "3.11.2"
      interpreter: "3.11.2"
      tensorflow: {version: "2.21.0", package: tensorflow, variant: gpu}
      driver: {version: "550.163.01", source: loaded, loaded: "550.163.01", packages: {nvidia-driver: "550.163.01"},
               library: "550.163.01", reboot_needed: false}
      cuda: {version: "12.5.82", source: pip, sources: {pip: {nvidia_cuda_runtime_cu12: "12.5.82"}}}
      cudnn: {version: "9.3.0.75", source: pip, sources: {pip: {nvidia_cudnn_cu12: "9.3.0.75"}}}
"""

import platform

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.tfprov.gpu.plugins.module_utils.installed_stack import gather


def main():
    module = AnsibleModule(
        argument_spec={
            "env": {"type": "path", "default": "/opt/tfprov/envs/tf"},
            "root": {"type": "path", "default": "/"},
        },
        supports_check_mode=True,
    )
    rpm = module.get_bin_path("rpm")
    # rpm is asked only on RPM systems; a missing program would end the module rather than return an error.
    run_command = (lambda argv: module.run_command([rpm] + argv[1:], check_rc=False)) if rpm else None
    facts = gather(module.params["root"], module.params["env"], run_command=run_command)
    facts["interpreter"] = platform.python_version()
    module.exit_json(changed=False, ansible_facts={"tfprov_installed": facts})


if __name__ == "__main__":
    main()
