"""fleet status: installed versions from the status run, the rest from fake run directories' report.json."""

import argparse
import json
from datetime import UTC, datetime

from rich.console import Console

from tfprov import fleet_status, terminal
from tfprov.commands import fleet_status as status_cmd

BENCH = {"results": [{"device": "/CPU:0", "dtype": "float32", "n": 512, "gflops": 56.2},
                     {"device": "/GPU:0", "dtype": "float32", "n": 4096, "gflops": 7100.0},
                     {"device": "/GPU:0", "dtype": "bfloat16", "n": 4096, "gflops": 21000.5},
                     {"device": "/GPU:0", "dtype": "float16", "n": 1024, "gflops": 90000.0}]}


def run_dir(base, name, plan, started, hosts, **extra):
    directory = base / name
    directory.mkdir(parents=True)
    report = {"plan": plan, "started": started, "status": "successful", "check": False, "hosts": hosts, **extra}
    (directory / "report.json").write_text(json.dumps(report))
    return directory


def entry(status="ok", **data):
    return {"status": status, "failed_tasks": [], "data": data}


def history(tmp_path):
    base = tmp_path / "runs"
    run_dir(base, "20261122T060000Z-node", "node", "2026-11-22T06:00:00+00:00",
            {"n1": entry("changed"), "n2": entry("changed")})
    run_dir(base, "20261122T061000Z-bench", "bench", "2026-11-22T06:10:00+00:00", {"n1": entry(bench=BENCH)})
    failed = entry("failed")
    failed["failed_tasks"] = [{"task": "Health gate", "message": "GPU check failed"}]
    run_dir(base, "20261122T062000Z-fleet", "fleet", "2026-11-22T06:20:00+00:00", {"n2": failed}, status="failed")
    # Read-only runs never count as the last run: they changed nothing.
    run_dir(base, "20261122T063000Z-drift", "drift", "2026-11-22T06:30:00+00:00", {"n1": entry(), "n2": entry()},
            check=True)
    run_dir(base, "20261122T063500Z-node", "node", "2026-11-22T06:35:00+00:00", {"n1": entry()}, check=True)
    run_dir(base, "20261122T064000Z-custom", "custom", "2026-11-22T06:40:00+00:00", {"n1": entry(idle={"minutes": 42})})
    (base / "20261122T065000Z-node").mkdir()  # a run still going: no report yet
    (base / "20261122T065500Z-node").mkdir()
    (base / "20261122T065500Z-node" / "report.json").write_text("{not json")
    (base / "notes").mkdir()
    return base


def test_load_reports_newest_first_skipping_unreadable(tmp_path):
    reports = fleet_status.load_reports(history(tmp_path))
    assert [r["plan"] for r in reports] == ["custom", "node", "drift", "fleet", "bench", "node"]
    assert fleet_status.load_reports(tmp_path / "absent") == []


def test_last_run_bench_and_idle_per_host(tmp_path):
    reports = fleet_status.load_reports(history(tmp_path))
    n1 = fleet_status.host_row("n1", entry(installed={"tensorflow": {"version": "2.21.0"}}), reports)
    assert n1["last_run"]["plan"] == "custom" and n1["last_run"]["host_status"] == "ok"
    bench_dir = str(tmp_path / "runs" / "20261122T061000Z-bench")
    assert n1["last_bench"] == {"gflops": 21000.5, "device": "/GPU:0", "dtype": "bfloat16", "n": 4096,
                                "started": "2026-11-22T06:10:00+00:00", "run_dir": bench_dir}
    assert n1["idle"] == {"minutes": 42.0, "as_of": "2026-11-22T06:40:00+00:00"}
    n2 = fleet_status.host_row("n2", entry(), reports)
    assert n2["last_run"]["plan"] == "fleet" and n2["last_run"]["host_status"] == "failed"
    assert n2["last_run"]["failed"] == ["Health gate: GPU check failed"]
    assert n2["last_bench"] is None and n2["idle"] is None
    assert fleet_status.host_row("n9", entry(), reports)["last_run"] is None


def test_idle_shapes():
    assert fleet_status.idle_minutes(12) == 12.0
    assert fleet_status.idle_minutes({"idle_minutes": 3}) == 3.0
    assert fleet_status.idle_minutes({"idle_seconds": 90}) == 1.5
    for unknown in (None, True, "soon", {"state": "busy"}, []):
        assert fleet_status.idle_minutes(unknown) is None


def test_table_shows_versions_and_history(tmp_path):
    reports = fleet_status.load_reports(history(tmp_path))
    installed = {"python": "3.11.2", "tensorflow": {"version": "2.21.0", "variant": "cpu"},
                 "cuda": {"version": None}, "cudnn": {"version": None}, "driver": {"version": "550.54.15"}}
    found = [fleet_status.host_row("n1", entry(installed=installed), reports),
             fleet_status.host_row("n2", entry("unreachable"), reports)]
    console = Console(record=True, width=250)
    console.print(terminal.status_table(found, now=datetime(2026, 11, 22, 7, 0, tzinfo=UTC)))
    text = console.export_text()
    assert "2.21.0 cpu" in text and "550.54.15" in text and "custom ok (20 min ago)" in text
    assert "21000.5 GFLOP/s /GPU:0 bfloat16 N=4096 (50 min ago)" in text and "42 min" in text
    assert "unreachable" in text and "fleet failed (40 min ago)" in text


def test_run_reads_history_before_its_own_run(monkeypatch, tmp_path):
    base = history(tmp_path)
    monkeypatch.setenv("TFPROV_RUNS_DIR", str(base))
    seen = {}
    own = tmp_path / "own"
    own.mkdir()

    def run_plan(plan, root, options, progress):
        seen["plan"], seen["check"] = plan.name, options.check
        return {"hosts": {"n1": entry(installed={"tensorflow": {"version": "2.21.0"}})}, "rc": 0, "steps": [],
                "status": "successful", "inventory": "inv", "limit": None}, own

    monkeypatch.setattr(status_cmd, "run_plan", run_plan)
    parser = argparse.ArgumentParser()
    status_cmd.add_arguments(parser)
    assert status_cmd.run(parser.parse_args([]), Console(record=True, width=250)) == 0
    assert seen == {"plan": "status", "check": True}
    record = json.loads((own / "fleet" / "status.json").read_text())
    assert record["hosts"]["n1"]["last_run"]["plan"] == "custom"
