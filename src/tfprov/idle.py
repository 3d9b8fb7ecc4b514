"""The table of nodes running idle, from a run's report: the idle report (plan `idle`, playbooks/idle_report.yml)
records per host `idle` (the node's checker in --report mode: a fresh reading plus the idle-stop timer's state)."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table


def found(report: dict) -> dict[str, dict]:
    """{host: its idle record} for the hosts the idle report read in this run."""
    return {host: data["data"]["idle"] for host, data in report["hosts"].items()
            if isinstance((data.get("data") or {}).get("idle"), dict)}


def _gpus(record: dict) -> str:
    if not record.get("gpu_present"):
        return f"none (CPU {record.get('cpu_load_percent', '?')} %)"
    return " ".join(f"{gpu.get('index')}:{gpu.get('utilization', 0):g}%" for gpu in record.get("gpus") or []) or "?"


def _stop(record: dict) -> str:
    minutes = record.get("stop_after_minutes")
    if not record.get("enabled") or minutes is None:
        return "no timer"
    left = max(0.0, minutes - (record.get("idle_minutes") or 0))
    return f"in {left:g} min{' (dry run)' if record.get('dry_run') else ''}"


def table(records: dict[str, dict]) -> Table:
    idle = {host: record for host, record in records.items() if record.get("idle")}
    out = Table(title=f"nodes running idle: {len(idle)} of {len(records)}", title_justify="left")
    for column in ("host", "idle for", "GPU utilization", "sessions", "stops", "since"):
        out.add_column(column, justify="right" if column in ("idle for", "sessions") else "left")
    for host, record in sorted(idle.items(), key=lambda item: -(item[1].get("idle_minutes") or 0)):
        out.add_row(escape(host), f"{record.get('idle_minutes') or 0:g} min", _gpus(record),
                    str(record.get("sessions", 0)), _stop(record), str(record.get("idle_since") or "-"))
    return out


def show(report: dict, out: Console) -> None:
    """The table when this run read any node's idleness; the busy nodes say why in one line each."""
    records = found(report)
    if not records:
        return
    out.print(table(records))
    for host, record in sorted(records.items()):
        if not record.get("idle"):
            out.print(f"{host}: busy ({record.get('reason', '?')})", highlight=False)
