"""The view `status`: per host, what is installed (read by the plan `status`), the last run that could have changed
it and that run's result there, the last bench figure, how long the node has been idle, its uptime and cost so far;
the last ones from the run reports (.tfprov/runs/*/report.json), and their JSON (run_dir/fleet/status.json). The
command is commands/fleet_status.py.

Read-only runs (the plans status and drift, and any --check run) are not "the last run": they changed nothing.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from . import cost, rundirs
from .prices import PriceBook

READ_ONLY_PLANS = ("status", "drift")


def load_reports(base: Path, exclude: Path | None = None) -> list[dict]:
    """Every readable report.json under the runs directory, newest first (by its start, else the directory's name)."""
    return [report for directory, report in rundirs.reports(base) if directory != exclude]


def _changing(report: dict) -> bool:
    return report.get("plan") not in READ_ONLY_PLANS and not report.get("check")


def last_run(host: str, reports: list[dict]) -> dict | None:
    """The newest run that could have changed the host: its plan, start, run status and the host's own status."""
    for report in reports:
        if host in report["hosts"] and _changing(report):
            entry = report["hosts"][host]
            failed = [f"{f.get('task')}: {f.get('message')}" for f in entry.get("failed_tasks") or []]
            return {"plan": report.get("plan"), "started": report.get("started"), "run_status": report.get("status"),
                    "host_status": entry.get("status"), "failed": failed, "run_dir": report.get("run_dir")}
    return None


def bench_figure(bench: dict) -> dict | None:
    """The fastest device at the largest size the bench ran (GFLOP/s), as the bench table's headline."""
    rows = [row for row in bench.get("results") or [] if isinstance(row.get("gflops"), int | float)]
    if not rows:
        return None
    largest = max(row.get("n", 0) for row in rows)
    best = max((row for row in rows if row.get("n", 0) == largest), key=lambda row: row["gflops"])
    return {"gflops": best["gflops"], "device": best.get("device"), "dtype": best.get("dtype"), "n": largest}


def last_bench(host: str, reports: list[dict]) -> dict | None:
    for report in reports:
        bench = ((report["hosts"].get(host) or {}).get("data") or {}).get("bench")
        figure = bench_figure(bench) if isinstance(bench, dict) else None
        if figure:
            return {**figure, "started": report.get("started"), "run_dir": report.get("run_dir")}
    return None


def idle_minutes(idle) -> float | None:
    """The idle report's figure, whatever its shape: minutes as a number, or a mapping with minutes or seconds."""
    if isinstance(idle, bool):
        return None
    if isinstance(idle, int | float):
        return float(idle)
    if isinstance(idle, dict):
        for key in ("idle_minutes", "minutes", "idle_for_minutes"):
            if isinstance(idle.get(key), int | float) and not isinstance(idle.get(key), bool):
                return float(idle[key])
        for key in ("idle_seconds", "seconds"):
            if isinstance(idle.get(key), int | float) and not isinstance(idle.get(key), bool):
                return idle[key] / 60
    return None


def last_idle(host: str, reports: list[dict]) -> dict | None:
    for report in reports:
        minutes = idle_minutes(((report["hosts"].get(host) or {}).get("data") or {}).get("idle"))
        if minutes is not None:
            return {"minutes": round(minutes, 1), "as_of": report.get("finished") or report.get("started")}
    return None


def host_row(name: str, host: dict, history: list[dict], prices: PriceBook | None = None) -> dict:
    data = host.get("data") or {}
    row = {"host": name, "reachable": host.get("status") != "unreachable", "installed": data.get("installed"),
           "last_run": last_run(name, history), "last_bench": last_bench(name, history),
           "idle": last_idle(name, history), "uptime_s": data.get("uptime_s"), "hourly": None, "cost_so_far": None}
    item = cost.host_item(data.get("node") or {})
    if item:  # a cloud node: its price per hour, and what it has cost since it was started (its uptime)
        price = (prices or cost.book()).price(item)
        row.update(type=item.type, market=item.market, hourly=price.hourly, price_source=price.source)
        if price.hourly is not None and isinstance(row["uptime_s"], int | float):
            row["cost_so_far"] = round(price.hourly * row["uptime_s"] / 3600, 4)
    return row


def rows(report: dict, history: list[dict], prices: PriceBook | None = None) -> list[dict]:
    return [host_row(name, host, history, prices) for name, host in sorted(report["hosts"].items())]


def uptime(row: dict) -> str:
    """A cloud node's time up (its bill runs from its start); a local container shares the host's clock: '-'."""
    seconds = row.get("uptime_s")
    if not row.get("type") or not isinstance(seconds, int | float):
        return "-"
    hours = seconds / 3600
    return f"{seconds / 60:.0f} min" if hours < 2 else f"{hours:.1f} h" if hours < 48 else f"{hours / 24:.1f} d"


def ago(stamp: str | None, now: datetime | None = None) -> str:
    if not stamp:
        return "?"
    try:
        when = datetime.fromisoformat(stamp)
    except ValueError:
        return stamp
    minutes = int(((now or datetime.now(UTC)) - when).total_seconds() // 60)
    if minutes < 120:
        return f"{minutes} min ago"
    return f"{minutes // 60} h ago" if minutes < 48 * 60 else f"{minutes // 1440} d ago"


def write_json(found: list[dict], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"hosts": {row["host"]: row for row in found}}, indent=2) + "\n", encoding="utf-8")
    return path
