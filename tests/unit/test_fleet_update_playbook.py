"""The budget logic of playbooks/fleet_update.yml, run by ansible-playbook on six local hosts (connection local):
the real update play with its node work replaced by a task that fails on the hosts named, so that the rescue,
both budgets and end_play are the playbook's own."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
PLAYBOOK = ROOT / "playbooks" / "fleet_update.yml"
HOSTS = "a,b,c,d,e,f,"
pytestmark = pytest.mark.skipif(not (Path(sys.executable).parent / "ansible-playbook").exists(),
                                reason="no ansible-playbook")


def toy_playbook(path: Path) -> Path:
    plays = yaml.safe_load(PLAYBOOK.read_text())
    index = next(i for i, play in enumerate(plays) if play.get("serial"))
    update, report = plays[index], plays[index + 1]
    for key in ("become", "environment", "vars_files"):  # no root, no proxy on the toy hosts
        update.pop(key, None)
    update["tasks"][0]["block"] = [
        {"name": "Stand in for the update", "ansible.builtin.fail": {"msg": "import of tensorflow halted"},
         "when": "inventory_hostname in bad"},
        {"name": "Stand in for the versions after", "ansible.builtin.set_fact": {"__fleet_after": {"tf": "2.20.0"}}}]
    update["tasks"][0]["rescue"] = update["tasks"][0]["rescue"][:1]
    before = {"name": "Before", "hosts": "tfprov_nodes", "gather_facts": False, "tasks": [
        {"name": "Stand in for the versions before", "ansible.builtin.set_fact": plays[index - 1]["tasks"][1]
         ["ansible.builtin.set_fact"] | {"__fleet_before": {"tf": "2.21.0"}}}]}
    report["tasks"].insert(1, {"name": "Show", "ansible.builtin.debug": {
        "msg": "RESULT {{ inventory_hostname }}={{ __result }}|{{ __reason }}"}, "vars": report["tasks"][0]["vars"]})
    path.write_text(yaml.safe_dump([before, update, report], sort_keys=False))
    return path


def run(tmp_path, bad, *extra):
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(yaml.safe_dump({"tfprov_nodes": {"hosts": {h: {} for h in HOSTS.strip(",").split(",")}}}))
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(inventory), "-c", "local",
         "-e", f"ansible_python_interpreter={sys.executable}", "-e", f"{{'bad': {bad!r}}}",
         "-e", "tfprov_fleet_batch=2", *extra, str(toy_playbook(tmp_path / "toy.yml"))],
        cwd=ROOT, capture_output=True, text=True, env={**os.environ, "ANSIBLE_STDOUT_CALLBACK": "default",
                                                             "ANSIBLE_CALLBACK_RESULT_FORMAT": "json"})
    results = {}
    for line in proc.stdout.splitlines():
        if "RESULT " in line and "{{" not in line:
            host, _, rest = line.split("RESULT ", 1)[1].partition("=")
            results[host] = rest.rstrip("'\"")
    return proc, results


def test_a_failed_host_stops_the_update_after_its_batch(tmp_path):
    proc, results = run(tmp_path, ["c"])
    assert proc.returncode == 2, proc.stdout[-2000:]  # c is failed by the last play
    assert results["a"].startswith("updated") and results["b"].startswith("updated")
    assert results["c"].startswith("failed|Stand in for the update: import of tensorflow halted")
    for host in "def":
        assert results[host].startswith("not reached|the update stopped after batch 2: 1 host(s) failed")


def test_a_failed_canary_within_both_budgets_goes_on(tmp_path):
    # ansible#82267: a batch whose every host failed stops Ansible's play whatever max_fail_percentage says.
    proc, results = run(tmp_path, ["a"], "-e", "tfprov_fleet_max_fail=1", "-e", "tfprov_fleet_batch_max_fail=100")
    assert results["a"].startswith("failed|")
    assert all(results[host] == "updated|" for host in "bcdef"), results


def test_the_batch_budget_stops_what_the_fleet_budget_allows(tmp_path):
    _, results = run(tmp_path, ["b", "c"], "-e", "tfprov_fleet_max_fail=2", "-e", "tfprov_fleet_batch_max_fail=50")
    assert results["d"].startswith("not reached|the update stopped after batch 2: 2 of 2 host(s) of this batch")
