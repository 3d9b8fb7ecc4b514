"""A throwaway tfprov checkout with tiny playbooks, run for real by ansible-runner against localhost (local
connection), so the CLI's exit codes, run directories and secret handling are tested on real events in seconds."""

from __future__ import annotations

from pathlib import Path

import pytest

from tfprov import plan as plan_mod

_PLAY = """\
- name: {name}
  hosts: {hosts}
  gather_facts: false
  connection: local
  vars:
    ansible_python_interpreter: "{{{{ ansible_playbook_python }}}}"
  tasks:
{tasks}
"""

PLAYBOOKS = {
    "ok.yml": _PLAY.format(name="Succeed", hosts="all", tasks="""\
    - name: Reach the host (debug and assert never connect)
      ansible.builtin.ping:
    - name: Use the extra vars without printing them
      ansible.builtin.assert:
        that: plain_value | default('') == expected_plain | default('')
        quiet: true
    - name: Print a secret-named variable, as a careless role might
      ansible.builtin.debug:
        msg: "token is {{ api_token | default('unset') }}"
"""),
    "slow.yml": _PLAY.format(name="Take a while", hosts="all", tasks="""\
    - name: Say the task started
      ansible.builtin.file:
        path: "{{ started_marker }}"
        state: touch
    - name: Wait long enough to be interrupted
      ansible.builtin.command: sleep 60
      changed_when: false
"""),
    "fail.yml": _PLAY.format(name="Fail", hosts="all", tasks="""\
    - name: Fail on purpose
      ansible.builtin.fail:
        msg: failed on purpose
"""),
    "group.yml": _PLAY.format(name="Only the group", hosts="tfprov_nodes", tasks="""\
    - name: Say hello
      ansible.builtin.debug:
        msg: hello
"""),
    # A refusal on one host with any_errors_fatal: the others are stopped "ok", and the second play never starts.
    "halt.yml": _PLAY.format(name="Refuse h1, halting all", hosts="all", tasks="""\
    - name: Refuse h1
      ansible.builtin.fail:
        msg: refused
      when: inventory_hostname == 'h1'
""").replace("  gather_facts: false\n", "  gather_facts: false\n  any_errors_fatal: true\n") + "\n" + _PLAY.format(
        name="Never reached", hosts="all", tasks="""\
    - name: Say hello
      ansible.builtin.debug:
        msg: hello
"""),
    # A checking play that refuses, then a play that would change: the plan says its first play only checks.
    "refuse.yml": _PLAY.format(name="Check the settings before anything changes", hosts="all", tasks="""\
    - name: Refuse a port out of range
      ansible.builtin.fail:
        msg: tiny_port 70000 is out of range 1-65535
""") + "\n" + _PLAY.format(name="Change", hosts="all", tasks="""\
    - name: Change something
      ansible.builtin.command: "true"
"""),
    # A role's argument spec refuses a variable in the checking play.
    "argspec.yml": _PLAY.format(name="Check the role's settings", hosts="all", tasks="""\
    - name: Validate the role's settings
      ansible.builtin.include_role:
        name: tiny_role
      vars:
        tiny_role_mode: bogus
"""),
    "cycle-a.yml": "- ansible.builtin.import_playbook: cycle-b.yml\n",
    "cycle-b.yml": "- ansible.builtin.import_playbook: cycle-a.yml\n",
    "missing-import.yml": "- ansible.builtin.import_playbook: not-there.yml\n",
}
PLANS = {
    "ok": {"description": "succeeds", "steps": ["ok.yml"]},
    "fail": {"description": "fails", "steps": ["fail.yml"]},
    "slow": {"description": "takes a minute, then succeeds", "steps": ["slow.yml", "ok.yml"]},
    "group": {"description": "plays on tfprov_nodes", "steps": ["group.yml"]},
    "halt": {"description": "halts every host at its first play", "steps": ["halt.yml"]},
    "cycle": {"description": "imports itself", "steps": ["cycle-a.yml"]},
    "missing-import": {"description": "imports what is not there", "steps": ["missing-import.yml"]},
    "refuse": {"description": "refuses in its checking play", "steps": ["refuse.yml"], "checks_first": 1},
    "fail-checked": {"description": "fails after its checking play", "steps": ["ok.yml", "fail.yml"],
                     "checks_first": 1},
    "argspec": {"description": "a role refuses its settings", "steps": ["argspec.yml"], "checks_first": 1},
}
ROLE_SPEC = """\
argument_specs:
  main:
    short_description: A tiny role.
    options:
      tiny_role_mode:
        type: str
        choices: [a, b]
        description: The mode.
"""
# unparsed_is_failed as in the real ansible.cfg: an inventory ansible cannot read stops the run.
ANSIBLE_CFG = "[defaults]\nretry_files_enabled = False\n[inventory]\nunparsed_is_failed = True\n"


def make(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Build the checkout under tmp_path and point tfprov at it (TFPROV_HOME, its plans, TMPDIR)."""
    root = tmp_path / "project"
    (root / "playbooks").mkdir(parents=True)
    (root / "galaxy.yml").write_text("namespace: tiny\nname: tiny\nversion: 1.0.0\n")
    (root / "ansible.cfg").write_text(ANSIBLE_CFG)
    for name, text in PLAYBOOKS.items():
        (root / "playbooks" / name).write_text(text)
    role = root / "playbooks" / "roles" / "tiny_role"
    (role / "meta").mkdir(parents=True)
    (role / "tasks").mkdir()
    (role / "meta" / "argument_specs.yml").write_text(ROLE_SPEC)
    (role / "tasks" / "main.yml").write_text(
        "- name: Say the mode\n  ansible.builtin.debug:\n    var: tiny_role_mode\n")
    (tmp_path / "tmp").mkdir()
    monkeypatch.setenv("TFPROV_HOME", str(root))
    monkeypatch.setenv("TFPROV_LOGS_DIR", str(root / ".tfprov" / "logs"))
    monkeypatch.delenv("TFPROV_RUNS_DIR", raising=False)
    monkeypatch.delenv("TFPROV_KEEP_RUNS", raising=False)
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    monkeypatch.setattr("tempfile.tempdir", None)  # re-read TMPDIR
    monkeypatch.setattr(plan_mod, "load_plans", lambda: PLANS)
    return root


def run_dirs(root: Path) -> list[Path]:
    return sorted(path for path in (root / ".tfprov" / "runs").iterdir() if path.is_dir())  # not index.html
