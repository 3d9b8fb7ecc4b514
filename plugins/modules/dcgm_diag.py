#!/usr/bin/python
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: dcgm_diag
short_description: Run NVIDIA DCGM's diagnostics (dcgmi diag) and report each test per GPU
version_added: 1.1.0
description:
  - Runs C(dcgmi diag -r LEVEL -j) and reads its JSON, in DCGM 3's layout and in DCGM 4's, into one result per test
    and GPU. A failed test fails the node with DCGM's own message and the action; a warning only warns.
  - Level 1 (seconds) checks the deployment (libraries, permissions, persistence, page retirement and row
    remapping, inforom); level 2 (about two minutes) adds PCIe and memory tests; level 3 (about 30 minutes) adds
    stress tests. They use the GPUs, so a running job slows them down and is slowed down by them.
  - Where DCGM is not installed, reports that and passes (C(installed) false). DCGM comes from NVIDIA's repository
    (C(datacenter-gpu-manager)); the gate does not install it.
  - Changes nothing on the node; safe in check mode, where it does not run the diagnostics.
author:
  - tfprov maintainers (@tfprov)
extends_documentation_fragment:
  - tfprov.gpu.read_only
options:
  level:
    description: The diagnostic level (1, 2 or 3).
    type: int
    choices: [1, 2, 3]
    default: 1
  dcgmi:
    description: The dcgmi program; looked up on PATH when not given.
    type: path
  timeout:
    description: Seconds to let the diagnostics run before calling them failed.
    type: int
    default: 3600
attributes:
  facts:
    description: Returns its findings; sets no facts.
    support: none
"""

EXAMPLES = r"""
- name: Run DCGM's level 1 diagnostics
  tfprov.gpu.dcgm_diag:
    level: 1
  become: true
  register: dcgm
"""

RETURN = r"""
installed:
  description: dcgmi was found.
  returned: always
  type: bool
passed:
  description: No test failed (warnings allowed); true where DCGM is not installed.
  returned: always
  type: bool
version:
  description: DCGM's version, as its report gives it.
  returned: when installed
  type: str
tests:
  description: One entry per test and result, C(category), C(name), C(gpus), C(status) (lower case), C(warnings).
  returned: always
  type: list
  elements: dict
problems:
  description: As gpu_health's, with check C(dcgm).
  returned: always
  type: list
  elements: dict
lines:
  description: "One line per problem, as gpu_health's: C(FAIL) or C(WARN), what is wrong, the action."
  returned: always
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.tfprov.gpu.plugins.module_utils.dcgm import DcgmOutputError, diag_problems, parse_diag
from ansible_collections.tfprov.gpu.plugins.module_utils.gpu_health import verdict_lines


def main():
    module = AnsibleModule(
        argument_spec={
            "level": {"type": "int", "choices": [1, 2, 3], "default": 1},
            "dcgmi": {"type": "path"},
            "timeout": {"type": "int", "default": 3600},
        },
        supports_check_mode=True,
    )
    level = module.params["level"]
    dcgmi = module.params["dcgmi"] or module.get_bin_path("dcgmi")
    if not dcgmi:
        module.exit_json(changed=False, installed=False, passed=True, tests=[], problems=[], lines=[])
    if module.check_mode:
        module.exit_json(changed=False, installed=True, passed=True, tests=[], problems=[], lines=[], skipped=True,
                         msg="the diagnostics load the GPUs: not run in check mode")
    timeout = module.get_bin_path("timeout")
    argv = ([timeout, str(module.params["timeout"])] if timeout else []) + [dcgmi, "diag", "-r", str(level), "-j"]
    rc, out, err = module.run_command(argv)
    if rc == 124:
        module.fail_json(msg="dcgmi diag -r %d ran past %d s" % (level, module.params["timeout"]))
    try:
        diag = parse_diag(out)
    except DcgmOutputError as exc:
        # dcgmi exits non-zero when a test fails, with its report on stdout; without one the failure is its own.
        module.fail_json(msg="dcgmi diag -r %d exited %d: %s" % (level, rc, (err or out).strip()[:300] or exc))
    problems = diag_problems(diag, level)
    module.exit_json(changed=False, installed=True, passed=not any(p["severity"] == "fail" for p in problems),
                     version=diag["version"], tests=diag["tests"], problems=problems, lines=verdict_lines(problems))


if __name__ == "__main__":
    main()
