"""When the tensorflow_gpu role reuses its record of the last passing quick check instead of importing TensorFlow:
the role's own decision (vars/main.yml), evaluated by ansible-playbook on local hosts, one case per host. A record is
written as tasks/verify.yml writes it, under the facts of the run that checked; the decision is then read under the
facts of a later run. Only the node's answers (facts, what requirements_met.py printed) are made up."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(not (Path(sys.executable).parent / "ansible-playbook").exists(),
                                reason="no ansible-playbook")
FACTS = {"tfprov_boot_id": "boot-1:100", "nvidia_gpu": {"count": 1, "driver_version": "580.95.05"},
         "tfprov_stack": {"variant": "gpu", "tensorflow_version": "2.21.0"}}
ROLE_DEFAULTS = {"tensorflow_gpu_env": "/opt/tfprov/envs/tf", "tensorflow_gpu_require_gpu": True,
                 "tensorflow_gpu_system_cuda": False, "tensorflow_gpu_check_reuse_hours": 24}
PLAY = [{
    "hosts": "all", "gather_facts": False,
    "vars_files": [str(ROOT / "roles" / "tensorflow_gpu" / "vars" / "main.yml")],
    "tasks": [
        {"name": "Take the facts of the run that checked", "ansible.builtin.set_fact": {"ansible_facts": "{{ then }}"}},
        {"name": "Write the record as verify.yml does", "ansible.builtin.set_fact": {"record": {
            "key": "{{ __tensorflow_gpu_check_key }}", "digest": "D1", "result": {"problems": []},
            "checked_at": "then", "checked_epoch": "{{ (now().timestamp() - age) | int }}"}}},
        {"name": "Take the facts of the later run", "ansible.builtin.set_fact": {"ansible_facts": "{{ now_facts }}"}},
        {"name": "Read the environment as requirements_met.py prints it", "ansible.builtin.set_fact": {
            "__tensorflow_gpu_installed": {"stdout_lines": [
                "{{ {'met': met, 'digest': digest, 'last_check': record if has_record else none} | to_json }}"]}}},
        {"name": "Say the decision", "ansible.builtin.debug": {"msg": "{{ __tensorflow_gpu_check_reusable | bool }}"}},
    ],
}]

CASES = {  # host: (what differs from a converged node's later run, reused?)
    "unchanged": ({}, True),
    "rebooted": ({"now_facts": {**FACTS, "tfprov_boot_id": "boot-2:100"}}, False),
    "pip_install_since": ({"digest": "D2"}, False),
    "pip_runs_now": ({"met": False}, False),
    "other_driver": ({"now_facts": {**FACTS, "nvidia_gpu": {"count": 1, "driver_version": "590.44.01"}}}, False),
    "gpu_lost": ({"now_facts": {**FACTS, "nvidia_gpu": {"count": 0, "driver_version": "580.95.05"}}}, False),
    "other_tensorflow": ({"now_facts": {**FACTS, "tfprov_stack": {"variant": "gpu", "tensorflow_version": "2.20.0"}}},
                         False),
    "role_alone": ({"now_facts": {k: v for k, v in FACTS.items() if k != "tfprov_boot_id"}}, False),
    "too_old": ({"age": 25 * 3600}, False),
    "no_record": ({"has_record": False}, False),
    "reuse_off": ({"tensorflow_gpu_check_reuse_hours": "0"}, False),  # as -e gives it: a string
    "system_cuda": ({"tensorflow_gpu_system_cuda": True}, False),
    "ipykernel_installed_now": ({"__tensorflow_gpu_ipykernel": {"changed": True}}, False),
}


def test_the_last_passing_check_is_reused_only_while_nothing_it_depends_on_changed(tmp_path):
    hosts = {name: {"ansible_connection": "local", "ansible_python_interpreter": sys.executable, **ROLE_DEFAULTS,
                    "then": FACTS, "now_facts": FACTS, "met": True, "digest": "D1", "has_record": True, "age": 60,
                    **differs}
             for name, (differs, _) in CASES.items()}
    (tmp_path / "inventory.yml").write_text(yaml.safe_dump({"all": {"hosts": hosts}}))
    (tmp_path / "play.yml").write_text(yaml.safe_dump(PLAY, sort_keys=False))
    env = {**os.environ, "ANSIBLE_STDOUT_CALLBACK": "ansible.builtin.json", "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg")}
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(tmp_path / "inventory.yml"),
                           str(tmp_path / "play.yml")], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    said = json.loads(proc.stdout)["plays"][0]["tasks"][-1]["hosts"]
    assert {host: said[host]["msg"] for host in CASES} == {host: reused for host, (_, reused) in CASES.items()}
