"""The terminal renderer's run output (what `tfprov run` prints): the views the plan names (plans.yml), in the
terminal's order, and nothing of the views it does not name, whatever the report holds."""

from rich.console import Console

from tfprov import plan, terminal

GATE = {"level": "quick", "healthy": True, "gpu_node": False, "gpu_count": 0, "expected_gpu_count": 0,
        "driver_version": None, "dcgm": "absent", "lines": [], "notes": []}
BENCH = {"results": [{"device": "/CPU:0", "name": "x86_64", "dtype": "float32", "n": 64, "gflops": 1.0}],
         "numpy": [], "problems": []}


def _report(tmp_path, **data) -> dict:
    host = {"status": "ok", "ok": 3, "changed": 0, "failures": 0, "dark": 0, "skipped": 0, "failed_tasks": [],
            "data": data}
    return {"plan": "p", "status": "successful", "rc": 0, "seconds": 1.5, "inventory": "inv", "limit": None,
            "run_dir": str(tmp_path), "steps": [], "hosts": {"n1": host}, "plays": [], "roles": {}}


def _shown(report, tmp_path, views) -> str:
    console = Console(width=300, record=True)
    terminal.show_run(report, tmp_path, views, console)
    return console.export_text()


def test_only_the_views_the_plan_names_are_drawn(tmp_path):
    report = _report(tmp_path, gate=GATE, bench=BENCH,
                     converge={"current": True, "recorded_at": "2026-11-22T07:00:00+00:00"})
    text = _shown(report, tmp_path, ("gate",))
    assert "admission gate" in text and "bench: matmul" not in text and "install skipped" not in text
    assert not (tmp_path / "bench").exists()
    text = _shown(report, tmp_path, ())
    assert "tfprov run p: successful in 1.5 s" in text and "admission gate" not in text
    assert text.splitlines()[-2:] == [f"report: {tmp_path / 'report.json'}",
                                      f"page: {tmp_path / 'report.html'} (tfprov report latest)"]


def test_the_views_come_in_the_terminals_order_whatever_the_plans_order(tmp_path):
    report = _report(tmp_path, gate=GATE, bench=BENCH,
                     converge={"current": True, "recorded_at": "2026-11-22T07:00:00+00:00"})
    text = _shown(report, tmp_path, ("gate", "bench", "converge"))
    assert text.index("install skipped on 1 node(s)") < text.index("bench: matmul") < text.index("admission gate")
    assert f"bench: 1 JSON file(s) and {tmp_path / 'bench' / 'throughput.png'}" in text


def test_every_view_a_plan_may_name_is_drawn():
    assert ["converge", *terminal.RUN_VIEWS] == list(plan.VIEWS)  # converge: the line before the failures
