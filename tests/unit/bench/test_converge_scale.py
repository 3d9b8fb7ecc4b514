"""The converge benchmark's bookkeeping: tasks counted from runner events, and the targets it reports."""

import importlib.util
import json
from pathlib import Path

SPEC = importlib.util.spec_from_file_location("converge_scale",
                                              Path(__file__).parents[3] / "bench" / "converge_scale.py")
converge_scale = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(converge_scale)


def test_tasks_and_results_are_counted_from_the_events_of_every_step(tmp_path):
    events = {"01-resolve": ["playbook_on_task_start", "runner_on_ok", "runner_on_ok", "runner_on_start"],
              "02-gpu_node": ["playbook_on_task_start", "runner_on_skipped", "runner_on_failed",
                              "playbook_on_task_start", "runner_on_unreachable", "runner_item_on_ok",
                              "playbook_on_stats"]}
    for step, kinds in events.items():
        folder = tmp_path / "artifacts" / step / "job_events"
        folder.mkdir(parents=True)
        for index, kind in enumerate(kinds):
            (folder / f"{index}-x.json").write_text(json.dumps({"event": kind}))
    assert converge_scale.task_counts(tmp_path) == {"tasks": 3, "task_results": 5}


def run(nodes, kind, wall, rc=0, cpu=None):
    return {"nodes": nodes, "run": kind, "wall_s": wall, "rc": rc, "controller_cpu_s": cpu}


def test_summary_takes_the_best_noop_and_compares_with_the_targets():
    runs = [run(1, "fresh", 120), run(1, "noop", 6.0), run(1, "noop", 4.5),
            run(4, "fresh", 300), run(4, "noop", 10.0), run(8, "noop", 90.0, rc=2)]
    assert converge_scale.summary(runs) == {
        "noop_1_node_s": 4.5, "noop_1_node_within_5_s": True,
        "noop_1_over_1": 1.0, "noop_4_over_1": 2.22, "noop_4_within_2x_1": False}


def test_summary_gives_the_controllers_cpu_per_node_beside_the_full_no_op():
    runs = [run(1, "noop", 2.2, cpu=1.4), run(1, "noop_full", 9.0, cpu=7.5), run(8, "noop", 5.0, cpu=7.2),
            run(8, "noop", 5.5, cpu=9.0), run(8, "noop_full", 60.0, cpu=75.0)]
    found = converge_scale.summary(runs)
    assert found["noop_controller_cpu_per_node_s"] == {1: 1.4, 8: 0.9}
    assert found["noop_full_controller_cpu_per_node_s"] == {1: 7.5, 8: 9.38}
    assert found["noop_8_controller_within_1_s_per_node"] is True
    assert found["noop_full_s"] == {1: 9.0, 8: 60.0}


def test_summary_without_a_one_node_noop_says_nothing():
    assert converge_scale.summary([run(2, "noop", 20.0), run(1, "noop", 9.0, rc=1)]) == {}
