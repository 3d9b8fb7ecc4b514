"""The node-versus-script benchmark's bookkeeping: the script's settings from a node's labels, and its summary."""

import importlib.util
import subprocess
import sys
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
        "fresh_tfprov_over_script": [1.25, 1.21], "fresh_within_target": False}
    runs[2], runs[7] = run(1, "tfprov", "fresh", 40.0), run(2, "tfprov", "fresh", 40.0)
    assert node_vs_script.summary(runs)["fresh_tfprov_over_script"] == [1.11, 1.18]
    assert node_vs_script.summary(runs)["fresh_within_target"] is True
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
