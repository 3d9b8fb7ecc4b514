"""playbooks/boot_check.yml, run by ansible-playbook on three local hosts: one whose recorded boot is this one,
one whose recorded boot is another (it rebooted since), one the run never resolved."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(not (Path(sys.executable).parent / "ansible-playbook").exists(),
                                reason="no ansible-playbook")

# Stands in for the boot recorded before a reboot: a module that returns the fact with another boot's value.
EARLIER_BOOT = """#!/usr/bin/python
from ansible.module_utils.basic import AnsibleModule
AnsibleModule(argument_spec={}).exit_json(changed=False, ansible_facts={"tfprov_boot_id": "an-earlier-boot:17"})
"""


def test_only_the_node_whose_boot_changed_fails_and_says_to_run_again(tmp_path):
    (tmp_path / "library").mkdir()
    (tmp_path / "library" / "earlier_boot.py").write_text(EARLIER_BOOT)
    record = {"name": "Record the boots as resolve.yml does", "hosts": "tfprov_nodes", "gather_facts": False,
              "tasks": [{"tfprov.gpu.node_boot": None, "when": "inventory_hostname == 'same'"},
                        {"earlier_boot": None, "when": "inventory_hostname == 'rebooted'"}]}
    playbook = tmp_path / "toy.yml"
    playbook.write_text(yaml.safe_dump([record, {"ansible.builtin.import_playbook":
                                                 str(ROOT / "playbooks/boot_check.yml")}], sort_keys=False))
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(yaml.safe_dump({"tfprov_nodes": {"hosts": {"same": {}, "rebooted": {}, "unresolved": {}}}}))
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(inventory), "-c", "local",
         "-e", f"ansible_python_interpreter={sys.executable}", str(playbook)],
        cwd=ROOT, capture_output=True, text=True,
        env={**os.environ, "ANSIBLE_LIBRARY": str(tmp_path / "library"), "ANSIBLE_STDOUT_CALLBACK": "default"})
    out = proc.stdout
    assert proc.returncode == 2, out + proc.stderr
    assert "rebooted rebooted during the run, unasked" in out and "run it again to converge the node" in out
    recap = {line.split()[0]: line for line in out.split("PLAY RECAP")[1].splitlines() if ":" in line}
    assert "failed=1" in recap["rebooted"] and "failed=0" in recap["same"] and "failed=0" in recap["unresolved"]
    assert "ok=4" in recap["same"]  # recorded, remembered, read again, checked: the same boot passes
