"""The budget logic of playbooks/fleet_update.yml, run by ansible-playbook on six local hosts (connection local):
the real update play with its node work replaced by a task that fails on the hosts named, so that the rescue,
both budgets and end_play are the playbook's own."""

import os
import re
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
    answer = next(play for play in plays if play["name"].startswith("Find the nodes that answer"))
    batches, update, report = plays[index - 1], plays[index], plays[index + 1]
    for key in ("become", "environment", "vars_files"):  # no root, no proxy on the toy hosts
        update.pop(key, None)
    block = update["tasks"][0]["block"]
    # The playbook's own first steps (a node that did not answer, reaching the node), then stand-ins for the work.
    update["tasks"][0]["block"] = block[:2] + [
        {"name": "Stand in for the update", "ansible.builtin.fail": {"msg": "import of tensorflow halted"},
         "when": "inventory_hostname in bad"},
        # A script over SSH with a terminal: its last words in stdout, only ssh's own line in stderr.
        {"name": "Stand in for a script over SSH", "ansible.builtin.shell": (
            "echo 'Traceback ...'; echo 'ModuleNotFoundError: import of tensorflow halted'; "
            "printf 'Shared connection to 10.210.1.14 closed.\\r\\n' >&2; exit 1"),
         "when": "inventory_hostname in ssh_bad | default([])"},
        {"name": "Stand in for the versions after", "ansible.builtin.set_fact": {"__fleet_after": {"tf": "2.20.0"}}}]
    rescue = update["tasks"][0]["rescue"]
    # The rescue's own first steps: the reason, then TF Serving put back (its role stood in for: the restore fails
    # on the hosts in restore_bad) and the note when its own gate was what failed.
    put_back = next(task for task in rescue if task["name"] == "Put TF Serving back after the failed update")
    put_back["block"][0] = {"name": "Stand in for the restore",
                            "ansible.builtin.fail": {"msg": "model demo version 2 not AVAILABLE after 300 s"},
                            "when": "inventory_hostname in restore_bad | default([])"}
    update["tasks"][0]["rescue"] = rescue[:rescue.index(put_back) + 2]
    serving = [{"name": "Stand in for the drain", "ansible.builtin.set_fact": {"__fleet_drained": True},
                "when": "inventory_hostname in groups['tfprov_serving'] | default([])"},
               {"name": "Stand in for the serving gate starting", "ansible.builtin.set_fact": {
                   "__fleet_serving_gate": True}, "when": "inventory_hostname in gate_bad | default([])"},
               {"name": "Stand in for the serving gate", "ansible.builtin.fail": {"msg": "the models never answered"},
                "when": "inventory_hostname in gate_bad | default([])"}]
    update["tasks"][0]["block"][2:2] = serving
    before = {"name": "Before", "hosts": "tfprov_fleet_answering", "gather_facts": False, "tasks": [
        {"name": "Stand in for the versions before",
         "ansible.builtin.set_fact": {"__fleet_before": {"tf": "2.21.0"}}}]}
    report["tasks"].insert(1, {"name": "Show", "ansible.builtin.debug": {
        "msg": "RESULT {{ inventory_hostname }}={{ __result }}|{{ __reason }}"}, "vars": report["tasks"][0]["vars"]})
    path.write_text(yaml.safe_dump([answer, before, batches, update, report], sort_keys=False))
    return path


def run(tmp_path, bad, *extra, down=(), serving=()):
    inventory = tmp_path / "hosts.yml"
    # A host in `down` is reached over SSH at a loopback port where nothing listens: unreachable, at once.
    hosts = {h: ({"ansible_connection": "ssh", "ansible_host": "127.0.0.1", "ansible_port": 1} if h in down else {})
             for h in HOSTS.strip(",").split(",")}
    inventory.write_text(yaml.safe_dump({"tfprov_nodes": {"hosts": hosts, "children": {
        "tfprov_serving": {"hosts": dict.fromkeys(serving)}}}}))
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(inventory), "-c", "local",
         "-e", f"ansible_python_interpreter={sys.executable}", "-e", f"{{'bad': {bad!r}}}",
         "-e", "tfprov_fleet_batch=2", "-e", "tfprov_fleet_connect_timeout=2", *extra,
         str(toy_playbook(tmp_path / "toy.yml"))],
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


def test_an_unreachable_canary_is_a_failed_canary_and_the_report_still_comes(tmp_path):
    proc, results = run(tmp_path, [], down=["a"])
    assert proc.returncode != 0, proc.stdout[-2000:]
    assert results["a"].startswith("failed|"), results  # the report play ran, and names the canary
    assert "unreachable: it did not answer before the update" in results["a"]
    for host in "bcdef":
        assert results[host].startswith("not reached|the update stopped after batch 1: 1 host(s) failed"), results


def test_an_unreachable_host_counts_against_the_budget_of_its_batch(tmp_path):
    _, results = run(tmp_path, [], "-e", "tfprov_fleet_max_fail=1", "-e", "tfprov_fleet_batch_max_fail=100",
                     down=["c"])
    assert results["c"].startswith("failed|Check the node answered before the update: unreachable:"), results
    assert all(results[host] == "updated|" for host in "abdef"), results


def test_a_whole_batch_unreachable_stops_the_update_and_the_report_names_every_host(tmp_path):
    proc, results = run(tmp_path, [], down=["b", "c"])  # batches: [a] (the canary), [b, c], [d, e], [f]
    assert proc.returncode != 0, proc.stdout[-2000:]
    assert results["a"] == "updated|", results
    for host in "bc":
        assert results[host].startswith("failed|Check the node answered before the update: unreachable:"), results
    for host in "def":
        assert results[host].startswith("not reached|the update stopped after batch 2: 2 host(s) failed"), results


def test_a_whole_batch_unreachable_within_both_budgets_goes_on(tmp_path):
    # ansible#82267 again: every host of the batch unreachable must not end the play when the budgets allow it.
    _, results = run(tmp_path, [], "-e", "tfprov_fleet_max_fail=2", "-e", "tfprov_fleet_batch_max_fail=100",
                     down=["b", "c"])
    assert results["b"].startswith("failed|") and results["c"].startswith("failed|"), results
    assert all(results[host] == "updated|" for host in "adef"), results


def test_a_scripts_own_last_words_are_the_reason_not_the_ssh_line(tmp_path):
    _, results = run(tmp_path, [], "-e", "{'ssh_bad': ['a']}")
    # Ansible's own words for the failed command between the task and the script's: ansible-core 2.19 says
    # "non-zero return code", 2.21 "The command exited with a non-zero return code."
    assert re.fullmatch(r"failed\|Stand in for a script over SSH: (non-zero return code|The command exited with a "
                        r"non-zero return code\.): ModuleNotFoundError: import of tensorflow halted", results["a"]), \
        results


def test_a_serving_node_whose_update_failed_is_put_back_in_service_and_the_reason_says_so(tmp_path):
    _, results = run(tmp_path, ["a", "b", "c"], "-e", "tfprov_fleet_max_fail=100", "-e",
                     "tfprov_fleet_batch_max_fail=100", "-e", "{'restore_bad': ['b'], 'gate_bad': ['d']}",
                     serving=["a", "b", "d"])
    assert results["a"] == "failed|Stand in for the update: import of tensorflow halted; TF Serving restored"
    assert results["b"] == ("failed|Stand in for the update: import of tensorflow halted; TF Serving left stopped: "
                            "model demo version 2 not AVAILABLE after 300 s"), results
    assert results["c"] == "failed|Stand in for the update: import of tensorflow halted", results  # not serving
    assert results["d"] == ("failed|Stand in for the serving gate: the models never answered; TF Serving left "
                            "stopped (its health gate is what failed)"), results

