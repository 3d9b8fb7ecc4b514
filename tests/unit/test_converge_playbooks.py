"""converge_check.yml and converge_record.yml around a stand-in install, run by ansible-playbook on two local hosts
(each with its own environment and record directory): the first run installs and records both, the next skips
both, a file added to one's environment brings its install back alone, a changed variable brings both back, and
reuse turned off (--full) installs both and names why; the cache node (tfprov_cache) is set up only in a run where
some node installs. What the report gets comes from set_stats."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
pytestmark = pytest.mark.skipif(not (BIN / "ansible-playbook").exists(), reason="no ansible-playbook")
INSTALL = "Stand in for the install"
CACHE = "Stand in for the package cache"


@pytest.fixture
def site(tmp_path):
    hosts = {}
    for name in ("a", "b"):
        (tmp_path / name / "env" / "bin").mkdir(parents=True)
        hosts[name] = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                       "tfprov_tf_env": str(tmp_path / name / "env"),
                       "tfprov_converge_record_dir": str(tmp_path / name / "records")}
    cache = {"c": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}}
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump({"all": {"children": {"tfprov_nodes": {"hosts": hosts},
                                                                           "tfprov_cache": {"hosts": cache}}}}))
    playbook = [
        {"ansible.builtin.import_playbook": str(ROOT / "playbooks/converge_check.yml"),
         "vars": {"tfprov_converge_name": "node"}},
        {"name": CACHE, "hosts": "{{ groups['tfprov_cache_needed'] | default([]) }}", "gather_facts": False,
         "tasks": [{"name": "Stand in for the cache's setup", "ansible.builtin.debug": {"msg": "cache"}}]},
        {"name": INSTALL, "hosts": "{{ groups['tfprov_converging'] | default([]) }}", "gather_facts": False,
         "tasks": [{"name": "Read the GPUs", "tfprov.gpu.nvidia_gpu_facts": {}},
                   {"name": "Resolve a stack", "tfprov.gpu.stack": {"python": "3.11"}}]},
        {"ansible.builtin.import_playbook": str(ROOT / "playbooks/converge_record.yml"),
         "vars": {"tfprov_converge_name": "node"}},
    ]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(playbook, sort_keys=False))
    return tmp_path


def run(site, *extra, witnesses=True):
    env = {**os.environ, "ANSIBLE_STDOUT_CALLBACK": "ansible.builtin.json", "ANSIBLE_SHOW_CUSTOM_STATS": "1",
           "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg")}
    # Only each host's environment as witnesses: this machine's packages must not decide the test.
    only_env = json.dumps({"__tfprov_converge_witnesses": ["{{ __tfprov_converge_env }}",
                                                          "{{ __tfprov_converge_env }}/bin"]})
    proc = subprocess.run([str(BIN / "ansible-playbook"), "-i", str(site / "hosts.yml"), str(site / "play.yml"),
                           *(["-e", only_env] if witnesses else []), *extra],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = json.loads(proc.stdout[proc.stdout.index("{"):])
    ran = {name: sorted(host for play in out["plays"] if play["play"]["name"] == name
                        for task in play["tasks"][:1] for host in task["hosts"]) for name in (INSTALL, CACHE)}
    # The cache node is set up exactly when some node installs.
    assert ran[CACHE] == (["c"] if ran[INSTALL] else []), ran
    stats = out["global_custom_stats"]["tfprov_hosts"]
    return ran[INSTALL], {name: stats[name]["converge"] for name in stats}


def test_a_converge_stands_until_what_it_was_given_or_its_witnesses_change(site):
    installed, converge = run(site)
    assert installed == ["a", "b"]
    assert {name: c["reason"] for name, c in converge.items()} == {
        "a": "no record of a finished converge", "b": "no record of a finished converge"}
    record = json.loads((site / "a/records/node.json").read_text())
    assert record["report"]["stack"]["tensorflow_version"] and "tfprov_stack" in record["facts"]

    installed, converge = run(site)
    assert installed == [] and all(c["current"] for c in converge.values()), converge

    (site / "a/env/bin/pip").write_text("")  # someone installed into a's environment
    installed, converge = run(site)
    assert installed == ["a"] and converge["a"]["reason"] == f"{site}/a/env/bin changed since"
    assert converge["b"]["current"]

    installed, converge = run(site, "-e", "tensorflow_gpu_version=2.20")
    assert installed == ["a", "b"]
    assert {c["reason"] for c in converge.values()} == {
        "what the run is given changed (variables, extra vars or the collection)"}

    installed, converge = run(site, "-e", "tensorflow_gpu_version=2.20", "-e", "tfprov_converge_reuse_hours=0")
    assert installed == ["a", "b"] and all("--full" in c["reason"] for c in converge.values())
    # --full records too, and does not count among what the run is given: the next run stands.
    installed, _ = run(site, "-e", "tensorflow_gpu_version=2.20")
    assert installed == []


def test_check_mode_skips_what_stands_and_records_nothing(site):
    installed, _ = run(site, "--check")
    assert installed == ["a", "b"] and not (site / "a/records").exists()
