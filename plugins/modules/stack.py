#!/usr/bin/python
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Documentation only: the action plugin plugins/action/stack.py does the work on the controller.

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: stack
short_description: Resolve a node's whole TensorFlow GPU stack before anything changes on it
version_added: 1.1.0
description:
  - Runs on the controller (action plugin); nothing is executed on the node.
  - Turns the compatibility matrix (C(data/compat.yml)), the node's facts (GPUs from
    M(tfprov.gpu.nvidia_gpu_facts), loaded driver, Python, distribution) and the user's settings into one fact,
    C(tfprov_stack), that the installing roles read.
  - Refuses an impossible stack with one line saying what is wrong and what to change, in this order so the
    most fundamental problem wins - unknown TensorFlow; a bad method, mode or variant; a CUDA or cuDNN of
    another major; a cuDNN without a build for the CUDA; a GPU too old for the TensorFlow (whatever its
    driver; the message names the newest TensorFlow and driver branch it can run); a pinned driver branch the
    oldest GPU cannot run or older than the CUDA needs; a Python outside the TensorFlow's range (venv); a
    distribution driver or CUDA toolkit that cannot serve the stack (distro methods); a cuDNN full version
    that is not the cuDNN asked for (tarball, nvidia_repo); a download without its URL, checksum or key
    fingerprint (only checked when those options are passed).
  - Mixed GPUs on one node - the oldest decides both the compute capability floor and the newest driver branch.
author:
  - tfprov maintainers (@tfprov)
options:
  tensorflow:
    description: C(latest), major.minor (its latest patch in the matrix) or an exact version.
    type: str
    default: latest
  cuda:
    description: Pinned CUDA major.minor; empty for TensorFlow's own.
    type: str
    default: ""
  cudnn:
    description: Pinned cuDNN major.minor; empty for TensorFlow's own.
    type: str
    default: ""
  cudnn_full:
    description: Full cuDNN version for the tarball and nvidia_repo methods; empty for the matrix's pip pin.
    type: str
    default: ""
  manager:
    description: Environment manager of TensorFlow.
    type: str
    choices: [venv, conda]
    default: venv
  python:
    description: The node's Python (checked for the venv manager; conda brings its own).
    type: str
    default: ""
  gpus:
    description: C(ansible_facts.nvidia_gpu.gpus) from M(tfprov.gpu.nvidia_gpu_facts).
    type: list
    elements: dict
    default: []
  loaded_driver:
    description: Version of the loaded NVIDIA driver; empty when none is loaded.
    type: str
    default: ""
  driver_mode:
    description: C(auto) (drivers only where GPUs are), C(install) or C(bake) (image baking without GPUs).
    type: str
    choices: [auto, install, bake]
    default: auto
  driver_method:
    description: How the driver is installed.
    type: str
    choices: [distro, cuda_repo, runfile]
    default: distro
  driver_branch:
    description: Pinned driver branch (e.g. C(580)); empty to let tfprov choose one all the GPUs can run.
    type: str
    default: ""
  driver_adopt:
    description: Keep a loaded driver that serves the stack and the GPUs instead of installing one.
    type: bool
    default: true
  cuda_method:
    description: How CUDA is installed.
    type: str
    choices: [pip, distro, nvidia_repo, conda]
    default: pip
  cudnn_method:
    description: How cuDNN is installed.
    type: str
    choices: [pip, tarball, nvidia_repo, conda]
    default: pip
  variant:
    description: TensorFlow build; C(auto) is C(gpu) on GPU nodes (and when baking), else C(cpu).
    type: str
    choices: [auto, gpu, cpu]
    default: auto
  distribution:
    description: C(ansible_distribution); empty = the node's, from its facts (with its version).
    type: str
    default: ""
  distribution_version:
    description: Major version for Debian and EL, full version (C(22.04)) for Ubuntu.
    type: str
    default: ""
  driver_runfile_url:
    description: Checked when passed and the runfile method installs - must not be empty.
    type: str
  driver_runfile_checksum:
    description: Checked when passed and the runfile method installs - C(sha256:<64 hex>).
    type: str
  cudnn_tarball_checksum:
    description: Checked when passed and cuDNN comes from a tarball - C(sha256:<64 hex>).
    type: str
  repo_key_fingerprint:
    description: Checked when passed and NVIDIA's repository is used - 40 hex digits, never empty.
    type: str
attributes:
  check_mode:
    description: Resolves the same way in check mode; it changes nothing in either mode.
    support: full
  facts:
    description: Sets C(tfprov_stack).
    support: full
notes:
  - Sets facts only; never reports a change.
"""

EXAMPLES = r"""
- name: Resolve the whole stack from the compatibility matrix
  tfprov.gpu.stack:
    tensorflow: "2.21"
    manager: venv
    python: "{{ ansible_python_version }}"
    gpus: "{{ ansible_facts.nvidia_gpu.gpus }}"
    loaded_driver: >-
      {{ ansible_facts.nvidia_gpu.driver_version if ansible_facts.nvidia_gpu.driver_state == 'loaded' else '' }}
    distribution: "{{ ansible_distribution }}"
    distribution_version: >-
      {{ ansible_distribution_version if ansible_distribution == 'Ubuntu' else ansible_distribution_major_version }}
"""

RETURN = r"""
ansible_facts:
  description: The resolved stack under C(tfprov_stack).
  returned: success
  type: dict
  contains:
    tfprov_stack:
      description: The stack of this node.
      type: dict
      returned: success
      contains:
        tensorflow: {description: TensorFlow major.minor., type: str}
        tensorflow_version: {description: Exact TensorFlow version to install., type: str}
        variant: {description: C(gpu) or C(cpu)., type: str}
        gpu_node: {description: "GPUs present, or driver_mode C(bake).", type: bool}
        cuda: {description: CUDA major.minor., type: str}
        cudnn: {description: cuDNN major.minor., type: str}
        cudnn_full: {description: Full cuDNN version (null where the matrix has no pin)., type: str}
        min_driver: {description: Lowest driver version the CUDA runs on., type: str}
        min_driver_branch: {description: Its branch., type: str}
        recommended_driver_branch: {description: "tfprov's branch for the CUDA, capped to the GPUs.", type: str}
        driver_branch: {description: "The pinned branch, or the one chosen that all the GPUs can run.", type: str}
        driver_action: {description: "C(skip), C(adopt) or C(install).", type: str}
        oldest_gpu:
          description: >-
            C(name), C(compute_capability), C(architecture), C(last_driver_branch) of the oldest GPU, or null.
          type: dict
        python_min: {description: Lowest Python the TensorFlow supports., type: str}
        python_max: {description: Highest Python the TensorFlow supports., type: str}
        python: {description: The node's Python (venv) or the newest the TensorFlow supports (conda)., type: str}
        pip_cuda_packages: {description: The nvidia-* wheels TensorFlow pins (name -> spec)., type: dict}
        pip_cuda_requirements: {description: "The same, each pinned to one version (C(name==version)).", type: list}
        distro_driver:
          description: What the distribution ships for the driver (distro method), else null.
          type: dict
        distro_cuda: {description: "The distribution's CUDA toolkit (distro method), else null.", type: dict}
        warnings: {description: What was resolved but deserves attention., type: list}
  sample:
    tfprov_stack:
      tensorflow: "2.14"
      tensorflow_version: "2.14.1"
      variant: gpu
      gpu_node: true
      cuda: "11.8"
      cudnn: "8.7"
      cudnn_full: "8.7.0.84"
      min_driver: "450.80.02"
      driver_branch: "470"
      driver_action: install
      oldest_gpu: {name: Tesla K80, compute_capability: "3.7", architecture: Kepler, last_driver_branch: "470"}
msg:
  description: The one-line reason, when the stack cannot work.
  returned: failure
  type: str
  sample: >-
    Tesla K80 (compute capability 3.7, Kepler) cannot run TensorFlow 2.21 (needs 6.0); newest for it:
    TensorFlow 2.14 with driver branch 470
"""
