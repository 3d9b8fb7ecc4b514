"""`tfprov fleet status`: per host, what is installed (read from the nodes by the read-only plan `status`), the last
run that could have changed it, that run's result there, the last bench figure and, where the idle report recorded
it, how long the node has been idle; the last three come from the run reports (.tfprov/runs/*/report.json).

Read-only runs (the plans status and drift, and any --check run) are not "the last run": they changed nothing.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from . import plan as plan_mod
from . import rundirs
from .fleet_drift import show_problems
from .options import DEFAULT_INVENTORY, positive
from .progress import Progress
from .project import project_root
from .runner import RunOptions, run_plan

PLAN = "status"
READ_ONLY_PLANS = ("status", "drift")
_RUN_DIR = re.compile(r"^\d{8}T\d{6}Z-")  # runner.new_run_dir's names


def load_reports(base: Path, exclude: Path | None = None) -> list[dict]:
    """Every readable report.json under the runs directory, newest first (by its start, else the directory's name)."""
    found = []
    if not base.is_dir():
        return found
    for directory in base.iterdir():
        if not _RUN_DIR.match(directory.name) or directory == exclude:
            continue
        try:
            report = json.loads((directory / "report.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):  # a run still going, or killed before its report
            continue
        if isinstance(report, dict) and isinstance(report.get("hosts"), dict):
            report.setdefault("run_dir", str(directory))
            found.append((str(report.get("started") or ""), directory.name, report))
    return [report for _, _, report in sorted(found, key=lambda item: item[:2], reverse=True)]


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


def host_row(name: str, host: dict, history: list[dict]) -> dict:
    installed = (host.get("data") or {}).get("installed")
    return {"host": name, "reachable": host.get("status") != "unreachable", "installed": installed,
            "last_run": last_run(name, history), "last_bench": last_bench(name, history),
            "idle": last_idle(name, history)}


def rows(report: dict, history: list[dict]) -> list[dict]:
    return [host_row(name, host, history) for name, host in sorted(report["hosts"].items())]


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


def _version(installed: dict | None, part: str) -> str:
    value = ((installed or {}).get(part) or {}).get("version")
    if part == "tensorflow" and value:
        variant = installed["tensorflow"].get("variant")
        return f"{value} {variant}" if variant else value
    return value or "-"


def table(found: list[dict], now: datetime | None = None) -> Table:
    out = Table(title=f"tfprov fleet status: {len(found)} host{'s' if len(found) != 1 else ''}", title_justify="left")
    for column in ("host", "TensorFlow", "Python", "CUDA", "cuDNN", "driver", "last run", "last bench", "idle"):
        out.add_column(column)
    style = {"ok": "green", "changed": "yellow", "failed": "red", "unreachable": "red", "not reached": "yellow"}
    for row in found:
        run = row["last_run"]
        run_text = "-"
        if run:
            status = run.get("host_status") or "?"
            run_text = (f"{escape(str(run['plan']))} [{style.get(status, '')}]{status}[/{style.get(status, '')}] "
                        f"({ago(run['started'], now)})")
        bench = row["last_bench"]
        bench_text = (f"{bench['gflops']:.1f} GFLOP/s {escape(str(bench['device']))} {bench['dtype']} N={bench['n']} "
                      f"({ago(bench['started'], now)})") if bench else "-"
        idle = f"{row['idle']['minutes']:g} min" if row["idle"] else "-"
        installed = row["installed"]
        if not row["reachable"] or installed is None:
            cells = ["[red]unreachable[/red]" if not row["reachable"] else "?"] + ["-"] * 4
        else:
            cells = [_version(installed, "tensorflow"), installed.get("python") or "-",
                     *(_version(installed, part) for part in ("cuda", "cudnn", "driver"))]
        out.add_row(row["host"], *cells, run_text, bench_text, idle)
    return out


def write_json(found: list[dict], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"hosts": {row["host"]: row for row in found}}, indent=2) + "\n", encoding="utf-8")
    return path


def add_arguments(parser) -> None:
    parser.add_argument("-i", "--inventory", default=DEFAULT_INVENTORY,
                        help=f"inventory file or directory, or 'host1,host2,' (default {DEFAULT_INVENTORY})")
    parser.add_argument("-l", "--limit", help="limit to hosts or groups (Ansible pattern)")
    parser.add_argument("-f", "--forks", type=positive, help="hosts worked on in parallel")


def run(args, out: Console) -> int:
    root = project_root()
    plan = plan_mod.resolve(PLAN, root)
    # Check mode as well as a read-only playbook: status can never change a node.
    options = RunOptions(inventory=args.inventory, limit=args.limit, check=True, forks=args.forks,
                         keep_runs=getattr(args, "keep_runs", None))
    # Read the history first: this run's own rotation (--keep-runs) may remove the oldest run directories.
    history = load_reports(rundirs.runs_dir(root))
    report, run_dir = run_plan(plan, root, options, Progress())
    found = rows(report, history)
    if found:
        out.print(table(found))
    show_problems(report, out)
    out.print(f"status: {write_json(found, run_dir / 'fleet' / 'status.json')}", highlight=False)
    return report["rc"]
