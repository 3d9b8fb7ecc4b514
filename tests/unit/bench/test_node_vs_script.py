"""The node-versus-script benchmark's bookkeeping: the script's settings from a node's labels, and its summary."""

import importlib.util
import json
import shlex
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).parents[3] / "bench"
sys.path.insert(0, str(BENCH))  # it imports its sibling converge_scale
SPEC = importlib.util.spec_from_file_location("node_vs_script", BENCH / "node_vs_script.py")
node_vs_script = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(node_vs_script)


def test_the_script_uses_the_nodes_proxy_and_pip_cache_as_the_inventory_gives_them():
    env = node_vs_script.script_env({"tfprov.pip_index": "http://10.210.1.1:3141/index/",
                                     "tfprov.http_proxy": "http://10.210.1.1:3128", "tfprov.subnet": "10.210.1.0/24"},
                                    "tensorflow-cpu==2.21.0")
    assert env["INDEX"] == "http://10.210.1.1:3141/index/" and env["INDEX_HOST"] == "10.210.1.1"
    assert env["PROXY"] == "http://10.210.1.1:3128" and env["SUBNET"] == "10.210.1.0/24"
    assert env["REQ"] == "tensorflow-cpu==2.21.0"


def test_the_script_is_valid_shell():
    assert subprocess.run(["sh", "-n", "-c", node_vs_script.SCRIPT]).returncode == 0


def test_over_ssh_the_script_runs_as_root_with_its_settings_quoted_for_the_remote_shell():
    labels = {"tfprov.ssh_port": "22", "tfprov.ssh_key": "/k", "tfprov.ssh_known_hosts": "/kh",
              "tfprov.ssh_user": "debian", "tfprov.address": "10.210.1.12",
              "tfprov.ssh_proxy": "nsenter --net=/var/run/netns/x socat STDIO TCP:%h:%p"}
    ssh = node_vs_script.ssh_command(labels)
    assert ssh[0] == "ssh" and ssh[-1] == "debian@10.210.1.12" and "StrictHostKeyChecking=yes" in ssh
    assert "ProxyCommand=nsenter --net=/var/run/netns/x socat STDIO TCP:%h:%p" in ssh
    env = {"PROXY": "http://10.210.1.1:3128", "ODD": "a b'c"}
    command = node_vs_script.script_command("node-2", env, ssh)
    assert command[:-1] == ssh  # ssh gets one line for the remote shell, which splits it as shlex does
    assert shlex.split(command[-1]) == ["sudo", "env", "PROXY=http://10.210.1.1:3128", "ODD=a b'c", "sh", "-c",
                                        node_vs_script.SCRIPT]
    assert node_vs_script.script_command("node-2", {"A": "1"}) == ["docker", "exec", "-e", "A=1", "node-2", "sh",
                                                                    "-c", node_vs_script.SCRIPT]


def test_both_nodes_apt_lists_are_made_a_day_old_so_both_variants_update_them(tmp_path):
    root = tmp_path / "a root"  # quoted for the shell
    lists, stamp = root / "var/lib/apt/lists", root / "var/lib/apt/periodic/update-success-stamp"
    lists.mkdir(parents=True)
    subprocess.run(["sh", "-c", node_vs_script.age_apt_lists(str(root))], check=True)
    assert time.time() - lists.stat().st_mtime > 23 * 3600  # apt's module falls back to the lists' directory
    stamp.parent.mkdir()
    stamp.touch()
    subprocess.run(["sh", "-c", node_vs_script.age_apt_lists(str(root))], check=True)
    assert time.time() - stamp.stat().st_mtime > 23 * 3600  # and reads the stamp first where there is one


def run(number, variant, kind, wall, rc=0):
    return {"round": number, "variant": variant, "kind": kind, "wall_s": wall, "rc": rc}


def test_summary_leaves_out_the_warm_up_round_and_pairs_each_rounds_fresh_runs():
    runs = [run(0, "tfprov", "fresh", 200.0), run(0, "script", "fresh", 100.0),  # filling the caches
            run(1, "tfprov", "fresh", 45.0), run(1, "script", "fresh", 36.0),
            run(1, "tfprov", "noop", 9.8), run(1, "script", "noop", 6.1),
            run(2, "script", "fresh", 34.0), run(2, "tfprov", "fresh", 41.0),
            run(2, "script", "noop", 5.9), run(2, "tfprov", "noop", 10.3)]
    assert node_vs_script.summary(runs) == {
        "tfprov_fresh_wall_s": [41.0, 45.0], "tfprov_noop_wall_s": [9.8, 10.3],
        "script_fresh_wall_s": [34.0, 36.0], "script_noop_wall_s": [5.9, 6.1],
        "fresh_tfprov_over_script": [1.25, 1.21], "fresh_within_target": True,  # the median, 1.23, within 1.25
        "fresh_median_tfprov_over_script": 1.23}  # 43 s over 35 s
    slower = [run(1, "tfprov", "fresh", 50.0) if i == 2 else run(2, "tfprov", "fresh", 45.0) if i == 7 else r
              for i, r in enumerate(runs)]
    assert node_vs_script.summary(slower)["fresh_within_target"] is False  # 1.39 and 1.32
    runs[2], runs[7] = run(1, "tfprov", "fresh", 40.0), run(2, "tfprov", "fresh", 40.0)
    assert node_vs_script.summary(runs)["fresh_tfprov_over_script"] == [1.11, 1.18]
    assert node_vs_script.summary(runs)["fresh_within_target"] is True
    assert node_vs_script.summary(runs)["fresh_median_tfprov_over_script"] == 1.14
    assert node_vs_script.summary([run(1, "tfprov", "fresh", 40.0, rc=1), run(1, "script", "fresh", 34.0)]) == {
        "script_fresh_wall_s": [34.0, 34.0]}  # a failed run is no figure


def test_summary_sets_tfprovs_node_and_controller_cpu_against_the_scripts_node_cpu():
    def timed(number, variant, kind, wall, node_cpu, controller_cpu=None):
        found = run(number, variant, kind, wall) | {"node_cpu_s": node_cpu}
        return found | ({"controller_cpu_s": controller_cpu} if controller_cpu is not None else {})

    runs = [timed(1, "tfprov", "fresh", 50.0, 30.0, 10.0), timed(1, "script", "fresh", 40.0, 32.0),
            timed(1, "tfprov", "noop", 9.0, 2.2, 6.5), timed(1, "script", "noop", 4.2, 1.5),
            timed(2, "script", "fresh", 30.0, 33.0), timed(2, "tfprov", "fresh", 55.0, 31.0, 11.0)]
    found = node_vs_script.summary(runs)
    assert found["fresh_tfprov_over_script"] == [1.25, 1.83]
    assert found["fresh_cpu_tfprov_over_script"] == [1.25, 1.27]  # node and controller over the script's node
    assert found["tfprov_fresh_cpu_s"] == [40.0, 42.0] and found["script_fresh_cpu_s"] == [32.0, 33.0]
    assert found["tfprov_noop_cpu_s"] == [8.7, 8.7] and found["script_noop_cpu_s"] == [1.5, 1.5]


def test_the_scripts_steps_come_from_its_stamps_and_its_own_time_is_the_rest_of_its_wall():
    stdout = ("step start 100.00\nstep apt 102.50\nstep venv 105.00\n"
              "step pip 125.00\n2.21.0 1234.5\nstep import 128.25\n")
    assert node_vs_script.script_steps(stdout, 28.5) == {
        "apt": 2.5, "venv": 2.5, "pip": 20.0, "import": 3.25, "own_s": 0.2}
    assert node_vs_script.script_steps("no stamps here\n", 3.0) == {}


def test_the_script_stamps_every_step_it_runs():
    assert [line.split()[2] for line in node_vs_script.SCRIPT.splitlines() if line.startswith('echo "step ')] == [
        "start", "apt", "venv", "pip", "import"]


def write_event(directory, number, event, task, action, duration, role="tensorflow_gpu"):
    path = directory / "artifacts" / "01-gpu_node" / "job_events" / f"{number}-x.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"event": event, "event_data": {
        "role": role, "task": task, "task_action": action, "duration": duration}}))


def test_tfprovs_steps_are_the_roles_matching_tasks_and_its_own_cost_the_rest(tmp_path):
    write_event(tmp_path, 1, "runner_on_ok", "Install python3-venv, python3-packaging", "ansible.builtin.apt", 3.8)
    write_event(tmp_path, 2, "runner_on_ok", "Install TensorFlow into the virtual environment /x",
                "ansible.builtin.pip", 17.6)
    write_event(tmp_path, 3, "runner_on_ok", "Compile the installed packages' bytecode", "ansible.builtin.command",
                5.4)
    write_event(tmp_path, 4, "runner_on_ok", "Import TensorFlow in the environment", "ansible.builtin.script", 3.2)
    write_event(tmp_path, 5, "runner_on_start", "Import TensorFlow in the environment", "ansible.builtin.script",
                None)  # a start is no result
    write_event(tmp_path, 6, "runner_on_skipped", "Read whether the environment already holds x",
                "ansible.builtin.script", 0.4)
    write_event(tmp_path, 7, "runner_on_ok", "Install NVIDIA's driver", "ansible.builtin.apt", 9.0,
                role="nvidia_driver")  # another role's
    assert node_vs_script.tfprov_steps(tmp_path, 40.0) == {
        "apt": 3.8, "pip": 17.6, "compile": 5.4, "check": 3.2, "own_s": 10.0}


def test_the_step_summary_gives_tfprovs_own_cost_and_its_install_steps_over_the_scripts():
    runs = [run(1, "tfprov", "fresh", 40.0) | {"steps": {"apt": 4.0, "pip": 18.0, "compile": 5.0, "check": 3.0,
                                                          "own_s": 10.0}},
            run(1, "script", "fresh", 29.0) | {"steps": {"apt": 2.5, "venv": 2.5, "pip": 20.0, "import": 3.0,
                                                          "own_s": 1.0}},
            run(2, "tfprov", "fresh", 45.0) | {"steps": {"apt": 4.0, "pip": 20.0, "compile": 6.0, "check": 3.0,
                                                          "own_s": 12.0}}]
    found = node_vs_script.summary(runs)
    assert found["fresh_tfprov_own_s"] == [10.0, 12.0]
    assert found["fresh_steps_tfprov_over_script"] == [1.07]  # (4+18+5+3) / (2.5+2.5+20+3); round 2 has no script
