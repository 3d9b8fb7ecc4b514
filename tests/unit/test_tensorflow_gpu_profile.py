"""The tensorflow_gpu role rewrites /etc/profile.d/tfprov-tensorflow.sh only where it differs from what it would write:
the environment's read (files/requirements_met.py --file=PATH) hashes it on the node, and the role's decision
(vars/main.yml) compares that with its own content, in ansible-playbook on local hosts, one case per host. The file
is first written by ansible.builtin.copy, as tasks/main.yml writes it."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
ROLE = ROOT / "roles" / "tensorflow_gpu"
pytestmark = pytest.mark.skipif(not (Path(sys.executable).parent / "ansible-playbook").exists(),
                                reason="no ansible-playbook")
AS_THE_ROLE = {"__tensorflow_gpu_profile_path": "{{ profile }}"}
PLAY = [{
    "hosts": "all", "gather_facts": False,
    "vars_files": [str(ROLE / "vars" / "main.yml")],
    "tasks": [
        {"name": "Write the file as tasks/main.yml does",
         "vars": {**AS_THE_ROLE, "tensorflow_gpu_env": "{{ written_for | default('/opt/tfprov/envs/tf') }}"},
         "ansible.builtin.copy": {
            "dest": "{{ __tensorflow_gpu_profile_path }}", "content": "{{ __tensorflow_gpu_profile }}",
            "mode": "0644"}},
        {"name": "Change it as the case says", "ansible.builtin.shell": "{{ change }}", "when": "change != ''"},
        {"name": "Read the environment as install-venv.yml does", "vars": AS_THE_ROLE, "ansible.builtin.script": {
            "cmd": f"{ROLE / 'files' / 'requirements_met.py'} --file={{{{ __tensorflow_gpu_profile_path | quote }}}}",
            "executable": sys.executable}, "register": "__tensorflow_gpu_installed"},
        {"name": "Say the decision", "vars": AS_THE_ROLE,
         "ansible.builtin.debug": {"msg": "{{ __tensorflow_gpu_profile_current | bool }}"}},
    ],
}]
CASES = {  # host: (shell run on the file after copy wrote it, still current?)
    "as_written": ("", True),
    "edited": ("echo 'export PATH=/tmp:$PATH' >> {{ profile }}", False),
    "mode_changed": ("chmod 0600 {{ profile }}", False),
    "removed": ("rm {{ profile }}", False),
    "a_link": ("mv {{ profile }} {{ profile }}.real && ln -s {{ profile }}.real {{ profile }}", False),
    "other_env": ("", False),  # written for another environment than the one asked for now
}


def test_the_profile_file_is_rewritten_only_where_it_differs_from_what_the_role_writes(tmp_path):
    hosts = {name: {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                    "tensorflow_gpu_env": "/opt/tfprov/envs/tf", "profile": str(tmp_path / f"{name}.sh"),
                    "change": change} for name, (change, _) in CASES.items()}
    hosts["other_env"]["written_for"] = "/opt/other"  # the file was written for another environment than now's
    (tmp_path / "inventory.yml").write_text(yaml.safe_dump({"all": {"hosts": hosts}}))
    (tmp_path / "play.yml").write_text(yaml.safe_dump(PLAY, sort_keys=False))
    env = {**os.environ, "ANSIBLE_STDOUT_CALLBACK": "ansible.builtin.json", "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg")}
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(tmp_path / "inventory.yml"),
                           "-e", "__tensorflow_gpu_requirement=tensorflow-cpu==2.21.0", str(tmp_path / "play.yml")],
                          capture_output=True, text=True, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    said = json.loads(proc.stdout)["plays"][0]["tasks"][-1]["hosts"]
    assert {host: said[host]["msg"] for host in CASES} == {host: current for host, (_, current) in CASES.items()}
