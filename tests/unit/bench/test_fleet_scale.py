"""The fleet benchmark's bookkeeping: the node layouts it starts and the summary of its runs."""

import importlib.util
from pathlib import Path

SPEC = importlib.util.spec_from_file_location("fleet_scale", Path(__file__).parents[3] / "bench" / "fleet_scale.py")
fleet_scale = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(fleet_scale)


def test_layouts_have_no_serving_node():
    assert fleet_scale.layout(1) == "chief"
    assert fleet_scale.layout(4) == "chief,worker,worker,ps"
    assert fleet_scale.layout(8).split(",") == ["chief"] + ["worker"] * 6 + ["ps"]


def test_summary_keeps_the_best_passing_run_and_compares_the_largest_with_one():
    runs = [{"nodes": 1, "run": "drift", "wall_s": 20.0, "rc": 0},
            {"nodes": 8, "run": "drift", "wall_s": 50.0, "rc": 0},
            {"nodes": 1, "run": "update_noop", "wall_s": 30.0, "rc": 0},
            {"nodes": 1, "run": "update_noop", "wall_s": 25.0, "rc": 0},
            {"nodes": 8, "run": "update_noop", "wall_s": 10.0, "rc": 4}, {"nodes": 4, "run": "up", "rc": 1}]
    assert fleet_scale.summary(runs) == {"drift_1_nodes_s": 20.0, "drift_8_nodes_s": 50.0, "drift_8_over_1": 2.5,
                                         "update_noop_1_nodes_s": 25.0}
