"""src/tfprov/idle.py: the table of nodes running idle from a run's report."""

from rich.console import Console

from tfprov import idle, terminal


def record(**changes):
    base = {"idle": True, "idle_minutes": 42.0, "idle_since": "2026-11-22T07:00:00+00:00", "gpu_present": True,
            "gpus": [{"index": 0, "utilization": 0.0}, {"index": 1, "utilization": 2.0}], "sessions": 0,
            "enabled": True, "stop_after_minutes": 60, "dry_run": False, "reason": "every GPU below 5 % and no session"}
    return {**base, **changes}


def report(**hosts):
    return {"hosts": {name: {"status": "ok", "data": {"idle": rec} if rec is not None else {}}
                      for name, rec in hosts.items()}}


def render(rep) -> str:
    console = Console(width=200, record=True, color_system=None)
    terminal.show_idle(rep, console)
    return console.export_text()


def test_only_hosts_the_idle_report_read_are_found():
    assert set(idle.found(report(a=record(), b=None))) == {"a"}


def test_the_table_lists_idle_nodes_with_their_gpus_and_when_they_stop():
    text = render(report(**{"demo-chief-0": record(), "demo-worker-0": record(idle=False, idle_minutes=0,
                                                                               reason="1 session(s) open: alice")}))
    assert "nodes running idle: 1 of 2" in text
    chief = next(line for line in text.splitlines() if line.startswith("│ demo-chief-0") or "demo-chief-0" in line)
    assert "42 min" in chief and "0:0% 1:2%" in chief and "in 18 min" in chief
    assert "demo-worker-0: busy (1 session(s) open: alice)" in text


def test_a_node_without_the_timer_and_without_a_gpu_says_so():
    text = render(report(ps=record(enabled=False, stop_after_minutes=None, gpu_present=False, gpus=[],
                                   cpu_load_percent=1.5)))
    assert "no timer" in text and "none (CPU 1.5 %)" in text


def test_a_dry_run_timer_is_marked():
    assert "(dry run)" in render(report(a=record(dry_run=True, idle_minutes=70)))
    assert "in 0 min" in render(report(a=record(idle_minutes=70)))


def test_a_report_without_idle_records_prints_nothing():
    assert render(report(a=None)) == ""
