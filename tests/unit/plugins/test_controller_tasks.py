"""tfprov.gpu.controller_tasks: tasks that need no connection run in the controller's process, not in a forked
worker, with the same results. The end-to-end test runs one playbook on three local hosts with and without the
callback: every host's results must be the same, and Ansible's debug lines must show workers forked only for the
tasks that reach a host."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from ansible.plugins.strategy import StrategyBase
from ansible_collections.tfprov.gpu.plugins.callback import controller_tasks

ROOT = Path(__file__).resolve().parents[3]
CALLBACKS = "tfprov.gpu.payload_cache,tfprov.gpu.warm_loaders,tfprov.gpu.template_code"


CASES = [
    ({"ansible.builtin.set_fact": {"x": 1}}, True),
    ({"ansible.builtin.assert": {"that": "true"}, "when": "x is defined"}, True),
    ({"ansible.builtin.include_role": {"name": "r"}}, True),
    ({"ansible.builtin.include_tasks": "t.yml", "loop": [1, 2]}, True),
    ({"tfprov.gpu.nvidia_gpu_facts": {}}, False),  # a module: it reaches the node
    ({"ansible.builtin.command": "true"}, False),  # an action plugin that needs the connection
    ({"ansible.builtin.set_fact": {"x": 1}, "until": "x", "retries": 3}, False),  # would hold the controller
    ({"ansible.builtin.set_fact": {"x": 1}, "delegate_to": "other"}, False),
    ({"ansible.builtin.debug": {"msg": "x"}, "timeout": 5}, False),
    ({"ansible.builtin.debug": {"msg": "x"}, "loop": [1, 2], "loop_control": {"pause": 1}}, False),
]


def test_only_tasks_that_need_no_connection_and_never_wait_run_in_the_controller():
    """In a process of its own: the plugin loaders are global, and these need Ansible's collection finder."""
    code = (f"import json, sys\n"
            f"from ansible.plugins.loader import init_plugin_loader\n"
            f"init_plugin_loader([{str(ROOT / '.tfprov' / 'collections')!r}])\n"
            "from ansible.playbook.task import Task\n"
            "from ansible_collections.tfprov.gpu.plugins.callback.controller_tasks import runs_in_controller\n"
            "print(json.dumps([runs_in_controller(Task.load(fields)) for fields in json.load(sys.stdin)]))\n")
    proc = subprocess.run([sys.executable, "-c", code], input=json.dumps([fields for fields, _ in CASES]),
                          capture_output=True, text=True,
                          env={**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg")})
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == [here for _, here in CASES]


def test_without_the_internals_it_relies_on_nothing_is_changed(monkeypatch):
    monkeypatch.setattr(controller_tasks, "INTERNALS", False)
    before = StrategyBase._queue_task
    assert controller_tasks.install() is False
    assert StrategyBase._queue_task is before


INVENTORY = """[nodes]
h1 x=1
h2 x=2
h3 x=3
"""
INCLUDED = """- name: Set a fact per item
  ansible.builtin.set_fact:
    "inc_{{ item }}": "{{ inventory_hostname }}-{{ item }}"
"""
PLAY = """- hosts: nodes
  gather_facts: false
  tasks:
    - name: A fact templated for each host
      ansible.builtin.set_fact:
        me: "{{ inventory_hostname }}-{{ x }}"
    - name: Skipped on h2
      ansible.builtin.set_fact:
        not_h2: true
      when: x | int != 2
    - name: A registered debug
      ansible.builtin.debug:
        msg: "{{ me }}"
      register: said
    - name: A fact built over a loop
      ansible.builtin.set_fact:
        letters: "{{ (letters | default([])) + [item] }}"
      loop: [a, b, c]
    - name: An include over a loop
      ansible.builtin.include_tasks: included.yml
      loop: [p, q]
    - name: A failure rescued on h3
      block:
        - name: Fail the assertion on h3
          ansible.builtin.assert:
            that: x | int < 3
            fail_msg: "too big: {{ x }}"
      rescue:
        - name: Keep what failed
          ansible.builtin.set_fact:
            rescued: "{{ ansible_failed_result.msg }}"
    - name: A secret
      ansible.builtin.set_fact:
        secret: s3cr3t
      no_log: true
    - name: A group per host
      ansible.builtin.group_by:
        key: "x_{{ x }}"
    - name: A module run, in a worker
      ansible.builtin.ping:
    - name: Say what each host holds
      ansible.builtin.debug:
        msg: "RESULT {{ {'me': me, 'not_h2': not_h2 | default(false), 'said': said.msg, 'letters': letters,
               'inc': [inc_p, inc_q], 'rescued': rescued | default(''), 'groups': group_names} | to_json }}"
    - name: Fail h2 alone
      ansible.builtin.fail:
        msg: "h2 stops here"
      when: x | int == 2
    - name: Run on what is left
      ansible.builtin.debug:
        msg: "LEFT {{ inventory_hostname }}"
"""


def run(tmp_path: Path, callbacks: str) -> tuple[dict, list[str], int, str]:
    env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_CALLBACKS_ENABLED": callbacks,
           "ANSIBLE_DEBUG": "1", "ANSIBLE_HOME": str(tmp_path / "home"), "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_STDOUT_CALLBACK": "ansible.builtin.default", "ANSIBLE_CALLBACK_RESULT_FORMAT": "json"}
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", "inventory.ini", "-c",
                           "local", "-e", f"ansible_python_interpreter={sys.executable}", "play.yml"],
                          env=env, capture_output=True, text=True, cwd=tmp_path)
    out = proc.stdout + proc.stderr
    results = {}
    for host, body in re.findall(r"ok: \[(h\d)\] => (\{.*?\n\})", proc.stdout, re.S):
        message = json.loads(body).get("msg", "")
        if message.startswith("RESULT "):
            results[host] = json.loads(message[len("RESULT "):])
        elif message.startswith("LEFT "):
            results.setdefault("left", []).append(host)
    recap = sorted(re.findall(r"^(h\d\s+:.*)$", proc.stdout, re.M))
    return results, recap, len(re.findall(r"worker is \d+ \(out of", out)), out


def test_a_play_gives_every_host_the_same_results_with_workers_forked_only_for_the_module(tmp_path):
    (tmp_path / "inventory.ini").write_text(INVENTORY)
    (tmp_path / "included.yml").write_text(INCLUDED)
    (tmp_path / "play.yml").write_text(PLAY)
    forked_results, forked_recap, forked, out = run(tmp_path, CALLBACKS)
    assert len(forked_results) == 4, out[-3000:]
    here_results, here_recap, here, out = run(tmp_path, CALLBACKS + ",tfprov.gpu.controller_tasks")
    assert here_results == forked_results, out[-3000:]
    assert here_recap == forked_recap and len(here_recap) == 3
    assert forked_results["h1"]["me"] == "h1-1" and forked_results["h3"]["me"] == "h3-3"  # templated per host
    assert forked_results["h3"]["rescued"] == "too big: 3" and not forked_results["h2"]["not_h2"]
    assert sorted(forked_results["left"]) == ["h1", "h3"]
    assert "s3cr3t" not in out
    assert forked >= 30  # a worker for every task on every host
    assert here == 3  # the ping, once per host
