"""The check-reuse benchmark's bookkeeping: which checks were reused, and the ranges it reports per variant."""

import importlib.util
import sys
from pathlib import Path

BENCH = Path(__file__).parents[3] / "bench"
sys.path.insert(0, str(BENCH))
SPEC = importlib.util.spec_from_file_location("check_reuse", BENCH / "check_reuse.py")
check_reuse = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(check_reuse)


def test_reused_checks_are_counted_from_the_report():
    report = {"hosts": {"n1": {"data": {"gpu_check": {"reused_from": "2026-11-27T16:14:15Z"}}},
                        "n2": {"data": {"gpu_check": {"problems": []}}}, "n3": {"data": {}}, "n4": {}}}
    assert check_reuse.check_reused(report) == {"checks": 2, "checks_reused": 1}


def test_summary_gives_each_variant_its_range_and_leaves_out_failed_runs():
    runs = [{"run": "first", "rc": 0, "wall_s": 90.0, "controller_cpu_s": 60.0, "nodes_cpu_s": 100.0},
            {"run": "import", "rc": 0, "wall_s": 83.4, "controller_cpu_s": 50.9, "nodes_cpu_s": 82.6},
            {"run": "reuse", "rc": 0, "wall_s": 72.3, "controller_cpu_s": 49.9, "nodes_cpu_s": 63.0},
            {"run": "import", "rc": 0, "wall_s": 82.0, "controller_cpu_s": 49.5, "nodes_cpu_s": 81.0},
            {"run": "reuse", "rc": 4, "wall_s": 9.0, "controller_cpu_s": 5.0, "nodes_cpu_s": 1.0}]
    assert check_reuse.summary(runs) == {
        "import_wall_s": [82.0, 83.4], "import_controller_cpu_s": [49.5, 50.9], "import_nodes_cpu_s": [81.0, 82.6],
        "reuse_wall_s": [72.3, 72.3], "reuse_controller_cpu_s": [49.9, 49.9], "reuse_nodes_cpu_s": [63.0, 63.0]}


def test_container_cpu_is_read_from_cgroup_v2_when_v1_is_absent(tmp_path, monkeypatch):
    stat = tmp_path / "cpu.stat"
    stat.write_text("usage_usec 2500000\nuser_usec 2000000\n")
    absent = tmp_path / "none"
    monkeypatch.setattr(check_reuse, "Path", lambda text: stat if text.endswith("cpu.stat") else absent)
    assert check_reuse.container_cpu_seconds("abc") == 2.5
