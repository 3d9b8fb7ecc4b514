"""The admission gate's verdicts (playbooks/tasks/gpu_gate.yml) in a run's report, as a table: one row per node."""

from rich.table import Table


def verdicts(report: dict) -> dict[str, dict]:
    """{host: gate verdict} for the hosts the gate judged in this run."""
    return {host: data["data"]["gate"] for host, data in report["hosts"].items()
            if "gate" in (data.get("data") or {})}


def table(found: dict[str, dict]) -> Table:
    """Per node: admitted or not, its GPUs against what it should have, and every problem or note in one line each
    (the failures are also the failed task's message)."""
    out = Table(title="admission gate (tfprov run gate --level quick|default|deep)", title_justify="left")
    for column in ("host", "level", "GPUs", "driver", "DCGM", "verdict", "problems and notes"):
        out.add_column(column)
    for host, gate in sorted(found.items()):
        gpus = f"{gate['gpu_count']} of {gate['expected_gpu_count']}" if gate["gpu_node"] else "none"
        verdict = "[green]admitted[/green]" if gate["healthy"] else "[red]not admitted[/red]"
        said = "\n".join(gate["lines"] + gate["notes"]) or "-"
        out.add_row(host, gate["level"], gpus, gate["driver_version"] or "-", gate["dcgm"], verdict, said)
    return out
