"""The tfprov.gpu.stack action plugin: called as Ansible calls it, and run by ansible-playbook against localhost."""

import json
import os
import subprocess
import sys
from pathlib import Path
from unittest.mock import MagicMock

import pytest
from ansible.playbook.play_context import PlayContext
from ansible_collections.tfprov.gpu.plugins.action.stack import ActionModule

ROOT = Path(__file__).resolve().parents[4]
K80 = {"name": "Tesla K80", "compute_capability": None}


def run_action(args, task_vars=None):
    task = MagicMock(args=args, async_val=0, check_mode=False, diff=False)
    action = ActionModule(task, MagicMock(), PlayContext(), loader=None, templar=None, shared_loader_obj=None)
    return action.run(task_vars=task_vars or {})


def test_sets_the_fact_and_changes_nothing():
    result = run_action({"tensorflow": "2.14", "gpus": [K80], "driver_method": "cuda_repo"})
    assert result["changed"] is False and not result.get("failed")
    stack = result["ansible_facts"]["tfprov_stack"]
    assert (stack["tensorflow_version"], stack["driver_branch"]) == ("2.14.1", "470")


def test_a_refusal_is_one_line_in_msg():
    result = run_action({"tensorflow": "2.21", "gpus": [K80], "loaded_driver": "580.95.05"})
    assert result["failed"] is True and result["changed"] is False and "ansible_facts" not in result
    assert result["msg"] == ("Tesla K80 (compute capability 3.7, Kepler) cannot run TensorFlow 2.21 (needs 6.0); "
                             "newest for it: TensorFlow 2.14 with driver branch 470")


def test_an_unreadable_matrix_is_one_line(monkeypatch):
    from ansible_collections.tfprov.gpu.plugins.action import stack as plugin

    monkeypatch.setattr(plugin, "_MATRIX", {})
    monkeypatch.setattr(plugin.compat, "load_matrix", MagicMock(side_effect=OSError("No such file")))
    result = run_action({})
    assert result["failed"] and result["msg"].startswith("cannot read the compatibility matrix ")
    assert "\n" not in result["msg"]


PLAYBOOK = """
- name: Resolve on the controller
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Resolve the stack
      tfprov.gpu.stack:
        tensorflow: "{{ tf }}"
        gpus: [{name: Tesla K80, compute_capability: null}]
        loaded_driver: "580.95.05"
        driver_adopt: "{{ true }}"
        driver_method: cuda_repo
    - name: Show it
      ansible.builtin.debug:
        msg: "RESOLVED {{ __s.tensorflow_version }} branch {{ __s.driver_branch }} {{ __s.driver_action }}"
      vars:
        __s: "{{ ansible_facts.tfprov_stack }}"
"""


def playbook(tmp_path, tf):
    (tmp_path / "pb.yml").write_text(PLAYBOOK)
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(ROOT / ".tfprov" / "collections"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"), ANSIBLE_CONFIG=str(tmp_path / "none.cfg"))
    return subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,", "-c", "local",
                           "-e", "tf=" + tf, "pb.yml"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)


@pytest.fixture(scope="module")
def module_tmp(tmp_path_factory):
    return tmp_path_factory.mktemp("stackpb")


def test_ansible_playbook_refusal_is_the_one_line_msg_without_wrapping(module_tmp):
    done = playbook(module_tmp, "2.21")
    assert done.returncode == 2, done.stdout + done.stderr
    fatal = [line for line in done.stdout.splitlines() if line.startswith("fatal: [localhost]: FAILED! => ")]
    assert len(fatal) == 1
    result = json.loads(fatal[0].split("=> ", 1)[1])
    assert result["msg"] == ("Tesla K80 (compute capability 3.7, Kepler) cannot run TensorFlow 2.21 (needs 6.0); "
                             "newest for it: TensorFlow 2.14 with driver branch 470")
    output = done.stdout + done.stderr
    assert "Finalization" not in output and "Traceback" not in output and "tf_stack" not in output


def test_ansible_playbook_sets_the_fact(module_tmp):
    done = playbook(module_tmp, "2.14")
    assert done.returncode == 0, done.stdout + done.stderr
    assert '"msg": "RESOLVED 2.14.1 branch 470 install"' in done.stdout


def test_the_distribution_comes_from_the_nodes_facts_unless_given():
    debian12 = {"ansible_facts": {"distribution": "Debian", "distribution_major_version": "12",
                                  "distribution_version": "12.5"}}
    result = run_action({"tensorflow": "2.21", "cuda_method": "distro", "driver_mode": "bake"}, debian12)
    assert result["msg"].startswith("Debian 12 ships CUDA 11.8")
    given = run_action({"tensorflow": "2.21", "cuda_method": "distro", "driver_mode": "bake", "distribution": "Debian",
                        "distribution_version": "13"}, debian12)
    assert not given.get("failed"), given
