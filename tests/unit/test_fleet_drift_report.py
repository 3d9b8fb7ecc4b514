"""fleet drift: installed vs desired per host from a drift run's report and its changed tasks; the run is check mode."""

import argparse
import json

import pytest
from rich.console import Console

from tfprov import fleet_drift, terminal
from tfprov.commands import fleet_drift as drift_cmd

CPU_INSTALLED = {"python": "3.11.2", "tensorflow": {"version": "2.21.0", "package": "tensorflow-cpu", "variant": "cpu"},
                 "cuda": {"version": None}, "cudnn": {"version": None}, "driver": {"version": None}}
CPU_DESIRED = {"tensorflow_version": "2.21.0", "variant": "cpu", "gpu_node": False, "cuda": "12.5", "cudnn": "9.3",
               "cudnn_full": "9.3.0.75", "driver_action": "skip", "python": "3.11.2"}
GPU_INSTALLED = {"tensorflow": {"version": "2.20.0", "package": "tensorflow", "variant": "gpu"},
                 "cuda": {"version": "12.5.82"}, "cudnn": {"version": "9.3.0.75"}, "driver": {"version": "535.183.01"}}
GPU_DESIRED = {"tensorflow_version": "2.21.0", "variant": "gpu", "gpu_node": True, "cuda": "12.5", "cudnn": "9.3",
               "cudnn_full": "9.3.0.75", "driver_action": "install", "driver_branch": "580", "min_driver": "525.60.13"}


def host(installed=None, desired=None, status="ok", failed_tasks=()):
    entry = {"status": status, "failed_tasks": list(failed_tasks), "data": {}}
    if installed is not None:
        entry["data"]["drift"] = {"installed": installed, "desired": desired}
    return entry


def report(**hosts):
    return {"hosts": hosts, "inventory": "inv", "limit": None, "status": "successful", "run_dir": "/runs/x"}


def test_in_sync_cpu_node_needs_no_cuda_or_driver():
    row = fleet_drift.host_row("n1", host(CPU_INSTALLED, CPU_DESIRED), {})
    assert row["state"] == "in sync"
    assert not any(c["differs"] for c in row["components"].values())
    assert row["components"]["cuda"]["desired"] is None and row["components"]["driver"]["desired"] is None


def test_a_new_tensorflow_version_is_drift_with_old_and_new():
    desired = {**CPU_DESIRED, "tensorflow_version": "2.20.0"}
    changes = {"tensorflow_gpu": ["Install TensorFlow into the virtual environment /opt/tfprov/envs/tf"]}
    row = fleet_drift.host_row("n2", host(CPU_INSTALLED, desired), changes)
    assert row["state"] == "drift" and row["changed_tasks"] == 1
    tf = row["components"]["tensorflow"]
    assert (tf["installed"], tf["desired"], tf["differs"]) == ("2.21.0", "2.20.0", True)
    assert terminal.drift_cell(tf) == "[yellow]2.21.0 -> 2.20.0[/yellow]"


def test_gpu_node_compares_release_prefixes_and_the_driver_branch():
    comps = fleet_drift.components(GPU_INSTALLED, GPU_DESIRED)
    assert not comps["cuda"]["differs"] and not comps["cudnn"]["differs"]  # 12.5.82 is CUDA 12.5
    assert comps["tensorflow"]["differs"] and comps["driver"]["differs"]
    assert terminal.drift_cell(comps["driver"]) == "[yellow]535.183.01 -> branch 580[/yellow]"
    adopt = fleet_drift.components(GPU_INSTALLED, {**GPU_DESIRED, "driver_action": "adopt"})
    assert not adopt["driver"]["differs"]
    newer_cuda = fleet_drift.components(GPU_INSTALLED, {**GPU_DESIRED, "cuda": "12.8", "cudnn_full": "9.8.0.87"})
    assert newer_cuda["cuda"]["differs"] and newer_cuda["cudnn"]["differs"]


def test_variant_change_alone_is_drift():
    comps = fleet_drift.components(CPU_INSTALLED, {**CPU_DESIRED, "variant": "gpu"})
    assert comps["tensorflow"]["differs"]
    assert terminal.drift_cell(comps["tensorflow"]) == "[yellow]2.21.0 cpu -> 2.21.0 gpu[/yellow]"


def test_changed_tasks_alone_are_drift():
    """Versions may agree while the stack would still change something (a file, a package): that is drift too."""
    row = fleet_drift.host_row("n1", host(CPU_INSTALLED, CPU_DESIRED), {"tensorflow_gpu": ["Tell users"]})
    assert row["state"] == "drift"


def test_failed_unreachable_and_not_reached_hosts():
    failed = host(status="failed", failed_tasks=[{"task": "Resolve", "message": "unknown TensorFlow 9.9"}])
    hosts = {"a": failed, "b": host(status="unreachable"), "c": host(), "d": host(CPU_INSTALLED, CPU_DESIRED)}
    found = fleet_drift.rows(report(**hosts), {})
    assert [r["state"] for r in found] == ["failed", "unreachable", "not reached", "in sync"]
    assert found[0]["problems"] == ["Resolve: unknown TensorFlow 9.9"]
    assert fleet_drift.summary(found) == "0 of 4 hosts drift, 1 failed, 1 not reached, 1 unreachable"
    console = Console(record=True, width=200)
    console.print(terminal.drift_table(found, "t"))
    lines = console.export_text().splitlines()
    assert "nothing" not in next(line for line in lines if " b " in line)  # unreachable: unknown, not "nothing"
    assert "nothing" in next(line for line in lines if " d " in line)


def test_summary_json_and_table(tmp_path):
    desired = {**CPU_DESIRED, "tensorflow_version": "2.20.0"}
    rep = report(n1=host(CPU_INSTALLED, CPU_DESIRED), n2=host(CPU_INSTALLED, desired))
    found = fleet_drift.rows(rep, {"n2": {"tensorflow_gpu": ["a", "b"]}})
    assert fleet_drift.summary(found) == "1 of 2 hosts drift"
    record = json.loads(fleet_drift.write_json(found, rep, tmp_path / "fleet" / "drift.json").read_text())
    assert record["drifting"] == ["n2"] and record["hosts"]["n2"]["would_change"] == {"tensorflow_gpu": ["a", "b"]}
    console = Console(record=True, width=200)
    console.print(terminal.drift_table(found, "t"))
    text = console.export_text()
    assert "2.21.0 -> 2.20.0" in text and "tensorflow_gpu: 2 tasks" in text and "in sync" in text


def test_a_host_read_from_its_converge_record_says_so(monkeypatch, tmp_path):
    stood = host(CPU_INSTALLED, CPU_DESIRED)
    stood["data"]["drift"]["recorded_at"] = "2026-11-28T04:44:30Z"
    rep = {**report(n1=stood, n2=host(CPU_INSTALLED, CPU_DESIRED)), "rc": 0, "steps": [], "run_dir": str(tmp_path)}
    found = fleet_drift.rows(rep, {})
    assert [row.get("converge_recorded_at") for row in found] == ["2026-11-28T04:44:30Z", None]
    assert [row["state"] for row in found] == ["in sync", "in sync"]
    fake_run(monkeypatch, tmp_path, rep, {})
    parser = argparse.ArgumentParser()
    drift_cmd.add_arguments(parser)
    console = Console(record=True, width=250)
    assert drift_cmd.run(parser.parse_args([]), console) == 0
    text = console.export_text()
    assert "nothing: its converge of 2026-11-28T04:44:30Z stands" in text
    assert "1 host(s) read from their converge record" in text


def test_recorder_keeps_changed_tasks_by_role():
    recorder = drift_cmd.ChangeRecorder(Console(file=open("/dev/null", "w")))  # noqa: SIM115
    for changed, role in ((True, "tensorflow_gpu"), (False, "tensorflow_gpu"), (True, None)):
        recorder.on_event({"event": "runner_on_ok", "event_data": {"host": "n1", "task": "t", "role": role,
                                                                     "res": {"changed": changed}}})
    assert recorder.changes == {"n1": {"tensorflow_gpu": ["t"], "(play)": ["t"]}}


def fake_run(monkeypatch, tmp_path, rep, changes):
    """run() with run_plan replaced: records the options it was given."""
    seen = {}

    def run_plan(plan, root, options, progress):
        seen["plan"], seen["options"] = plan.name, options
        progress.changes.update(changes)
        return rep, tmp_path

    monkeypatch.setattr(drift_cmd, "run_plan", run_plan)
    return seen


@pytest.mark.parametrize(("flags", "expected"), [([], 0), (["--exit-code"], drift_cmd.EXIT_DRIFT)])
def test_run_is_check_mode_and_exit_codes(monkeypatch, tmp_path, flags, expected):
    rep = {**report(n1=host(CPU_INSTALLED, {**CPU_DESIRED, "tensorflow_version": "2.20.0"})), "rc": 0,
           "steps": [], "run_dir": str(tmp_path)}
    seen = fake_run(monkeypatch, tmp_path, rep, {})
    parser = argparse.ArgumentParser()
    drift_cmd.add_arguments(parser)
    console = Console(record=True, width=200)
    assert drift_cmd.run(parser.parse_args(["-i", "inv", "-e", "tfprov_tf_version=2.20.0", *flags]), console) \
        == expected
    assert seen["plan"] == "drift" and seen["options"].check is True
    assert seen["options"].extravars == {"tfprov_tf_version": "2.20.0"}
    assert "1 of 1 host drift" in console.export_text()
    assert (tmp_path / "fleet" / "drift.json").is_file()


def test_run_passes_a_failed_run_s_exit_code(monkeypatch, tmp_path):
    rep = {**report(n1=host(status="failed", failed_tasks=[{"task": "t", "message": "m"}])), "rc": 4,
           "steps": [], "status": "failed", "run_dir": str(tmp_path)}
    fake_run(monkeypatch, tmp_path, rep, {})
    parser = argparse.ArgumentParser()
    drift_cmd.add_arguments(parser)
    console = Console(record=True, width=200)
    assert drift_cmd.run(parser.parse_args(["--exit-code"]), console) == 4
    assert "n1: t: m" in console.export_text()
