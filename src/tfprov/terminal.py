"""The terminal renderer: the views of a run (bench, check, gate, serving, notebook, cluster, idle, fleet, drift,
status) drawn with rich, and what `tfprov run` prints after a run. It reads reports only through the views (and
report.converged); it runs nothing."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from . import bench as bench_mod
from . import cluster, fleet, fleet_drift, fleet_status, gate, idle, services
from . import report as report_mod
from .cost import money
from .options import print_playbook_stopped, print_refused

# What to say where a PNG could not be drawn: matplotlib is the optional extra tfprov[local].
NO_PLOT = "no plot: pip install 'tfprov[local]'"

_STATUS_STYLE = {"ok": "green", "changed": "yellow", "failed": "red", "unreachable": "red", "not reached": "yellow"}


def summary_table(report: dict) -> Table:
    table = Table(title=f"tfprov run {report['plan']}: {report['status']} in {report['seconds']} s",
                  title_justify="left")
    for column in ("host", "status", "ok", "changed", "failed", "unreachable", "skipped"):
        table.add_column(column)
    for name, host in report["hosts"].items():
        style = _STATUS_STYLE.get(host["status"], "")
        table.add_row(name, f"[{style}]{host['status']}[/{style}]", str(host["ok"]), str(host["changed"]),
                      str(host["failures"]), str(host["dark"]), str(host["skipped"]))
    return table


def durations_table(report: dict) -> Table:
    table = Table(title="durations", title_justify="left")
    table.add_column("play / role")
    table.add_column("seconds", justify="right")
    for play in report["plays"]:
        table.add_row(f"play: {play['name']}", f"{play['seconds']:.1f}")
    for role, seconds in report["roles"].items():
        table.add_row(f"role: {role}", f"{seconds:.1f}")
    return table


def check_table(found: dict[str, dict]) -> Table:
    """One row per device: what TensorFlow ran there, how fast, and how close to NumPy's product."""
    out = Table(title="GPU check: one matmul per device TensorFlow sees (the full sweep: tfprov bench)",
                title_justify="left")
    for column in ("host", "TensorFlow", "device", "N", "GFLOP/s", "error vs NumPy (relative)", "result"):
        out.add_column(column, justify="right" if column in ("N", "GFLOP/s", "error vs NumPy (relative)") else "left")
    for host, check in sorted(found.items()):
        version = check.get("tensorflow", {}).get("version", "?")
        for row in check.get("results", []):
            measured = f"{row['gflops']:.1f}" if "gflops" in row else "-"
            error = f"{row['relative_error']:.1e}" if "relative_error" in row else "-"
            result = "[green]ok[/green]" if row.get("ok") else f"[red]{row.get('error', 'wrong')}[/red]"
            out.add_row(host, version, f"{row['device']} {row['name']}", str(row["n"]), measured, error,
                        result + bench_mod.reused_note(check))
        for problem in check.get("problems", []):
            out.add_row(host, version, f"[red]{problem}[/red]", "", "", "", "")
    return out


def bench_table(benches: dict[str, dict]) -> Table:
    out = Table(title="bench: matmul throughput (CPU at every size, GPUs at the largest)", title_justify="left")
    for column in ("host", "device", "dtype", "N", "GFLOP/s", "% of peak", "NumPy GFLOP/s", "TF/NumPy"):
        out.add_column(column, justify="right" if column not in ("host", "device", "dtype") else "left")
    for host, bench in sorted(benches.items()):
        numpy = {r["n"]: r["gflops"] for r in bench.get("numpy", [])}
        ratios = {int(n): ratio for n, ratio in bench.get("cpu_vs_numpy_by_size", {}).items()}  # JSON keys: str
        for row in bench_mod.table_rows(bench):
            cpu = row["device"] == "/CPU:0"
            peak = f"{row['percent_of_peak']}% ({row['peak']})" if row.get("percent_of_peak") is not None else "-"
            out.add_row(host, f"{row['device']} {row['name']}", row["dtype"], str(row["n"]), f"{row['gflops']:.1f}",
                        peak, f"{numpy[row['n']]:.1f}" if cpu and row["n"] in numpy else "",
                        f"{ratios[row['n']]:.2f}" if cpu and row["n"] in ratios else "")
        for problem in bench.get("problems", []):
            out.add_row(host, f"[red]{problem}[/red]", "", "", "", "", "", "")
    return out


def gate_table(found: dict[str, dict]) -> Table:
    """Per node: admitted or not, its GPUs against what it should have, and every problem or note in one line each
    (the failures are also the failed task's message)."""
    out = Table(title="admission gate (tfprov run gate --level quick|default|deep)", title_justify="left")
    for column in ("host", "level", "GPUs", "driver", "DCGM", "verdict", "problems and notes"):
        out.add_column(column)
    for host, judged in sorted(found.items()):
        gpus = f"{judged['gpu_count']} of {judged['expected_gpu_count']}" if judged["gpu_node"] else "none"
        verdict = "[green]admitted[/green]" if judged["healthy"] else "[red]not admitted[/red]"
        said = "\n".join(judged["lines"] + judged["notes"]) or "-"
        out.add_row(host, judged["level"], gpus, judged["driver_version"] or "-", judged["dcgm"], verdict, said)
    return out


def _ms(value) -> str:
    return f"{value:.1f}" if isinstance(value, int | float) else "-"


def serving_table(found: dict[str, list[dict]]) -> Table:
    out = Table(title="TF Serving: each model's served version, the latency of its predicts over REST, every version "
                      "the server tracks", title_justify="left")
    for column in ("host", "model", "version", "state", "predicts", "p50 ms", "p99 ms", "all versions", "endpoints"):
        out.add_column(column, justify="right" if column in ("version", "predicts", "p50 ms", "p99 ms") else "left")
    for host, rows in sorted(found.items()):
        for row in rows:
            state = row.get("state", "?")
            style = "green" if state == "AVAILABLE" else "red"
            endpoints = " ".join(f"{kind} {row[kind]}" for kind in ("grpc", "rest") if row.get(kind))
            versions = " ".join(f"{v}:{state}" for v, state in (row.get("versions") or {}).items())
            out.add_row(host, str(row.get("model", "?")), str(row.get("version", "?")), f"[{style}]{state}[/{style}]",
                        str(row.get("predicts", "-")), _ms(row.get("p50_ms")), _ms(row.get("p99_ms")), versions,
                        endpoints)
    return out


def _state(row: dict) -> str:
    text, verdict = cluster.state_text(row)
    style = {"good": "green", "bad": "red", "warn": "yellow"}.get(verdict)
    return f"[{style}]{escape(text)}[/{style}]" if style else escape(text)


def task_table(rows: list[dict]) -> Table:
    out = Table(title="distributed job: every task of the cluster", title_justify="left")
    for column in ("task", "host", "runs", "result", "exit", "seconds", "restarts", "last log line"):
        # The last log line whole, folded over as many lines as it needs: a printed digest must stay readable.
        out.add_column(column, justify="right" if column in ("seconds", "restarts") else "left",
                       overflow="fold" if column == "last log line" else "ellipsis")
    for row in rows:
        runs = cluster.runs_text(row)
        seconds = f"{row['seconds']:.1f}" if isinstance(row.get("seconds"), int | float) else "-"
        out.add_row(escape(str(row.get("task", "?"))), row["host"], escape(runs), _state(row), cluster.exit_text(row),
                    seconds, str(row.get("restarts", "-")), escape(cluster.last_line(row)))
    return out


def _yes(value) -> str:
    if value is None:
        return "-"
    return "[green]yes[/green]" if value else "[red]no[/red]"


def _number(value, fmt: str = "{:.1f}") -> str:
    return fmt.format(value) if isinstance(value, int | float) else "-"


def _bandwidth(allreduce: dict | None) -> str:
    """The timed all-reduce: GB/s as nccl-tests count them, and against the link's figure when there is one."""
    if not allreduce:
        return "-"
    said = f"{allreduce['busbw_gbps']:.3f} GB/s ({allreduce['megabytes']:g} MB, median of {allreduce['reps']})"
    if allreduce.get("percent_of_expected") is None:
        return said + ", no link figure to compare with (dist_tf_cluster_check_link_gbit)"
    style = "red" if allreduce.get("problem") else "green"
    return (f"{said}, [{style}]{allreduce['percent_of_expected']:g} %[/{style}] of the "
            f"{allreduce['link_gbit']:g} Gbit/s link ({allreduce['expected_busbw_gbps']:.3f} GB/s; fails below "
            f"{100 * allreduce['min_fraction']:g} %)")


def dist_check_table(found: dict) -> Table:
    check = found["check"]
    verdict = "[green]ok[/green]" if found["ok"] else "[red]failed[/red]"
    out = Table(title=f"distributed check: {verdict} (the report of {found['from_task']})", title_justify="left")
    out.add_column("check")
    out.add_column("result")
    identical = check.get("weights_identical")
    per_worker = check.get("examples_per_s") or {}
    loss_style = "green" if check.get("loss_decreased") else "red"
    participants = ", ".join(check.get("participants") or [])
    rows = [
        ("strategy", escape(str(check.get("strategy", "?")))),
        ("workers", str(check.get("workers", "- (the check ended before it counted them)"))),
        ("steps", f"{check.get('steps', '?')} (batch {check.get('batch_per_worker', '?')} per worker)"),
        ("loss first -> last", f"[{loss_style}]{_number(check.get('loss_first'), '{:.4f}')} -> "
                               f"{_number(check.get('loss_last'), '{:.4f}')}[/{loss_style}]"),
        ("every task took part", f"{_yes(check.get('all_took_part'))} ({escape(participants)})"),
        ("identical weights", _yes(identical) if identical is not None else "- (the parameter servers hold them)"),
        ("examples/s per worker", ", ".join(f"{t} {_number(v)}" for t, v in sorted(
            per_worker.items(), key=lambda item: cluster.task_key(item[0]))) or "-"),
        ("cluster examples/s", _number(check.get("cluster_examples_per_s"))),
        ("single-worker examples/s", _number(check.get("single_worker_examples_per_s"))),
        ("scaling efficiency", _number(check.get("scaling_efficiency"), "{:.0%}")),
        ("all-reduce bus bandwidth", _bandwidth(check.get("allreduce"))),
    ]
    for name, value in rows:
        out.add_row(name, value)
    for problem in found["problems"] or ["none"]:
        out.add_row("problems", escape(problem) if problem == "none" else f"[red]{escape(problem)}[/red]")
    return out


def show_cluster(report: dict, directory: Path, out: Console) -> None:
    """Every task of the cluster and the distributed check (a table, a PNG and dist_check.json under directory);
    nothing when the run started no distributed task."""
    rows = cluster.tasks(report)
    if not rows:
        return
    out.print(task_table(rows))
    why = cluster.outcome_line(rows)
    if why:
        out.print(why, style="bold", highlight=False, markup=False, soft_wrap=True)
    for line in cluster.failure_lines(rows):
        out.print(line, highlight=False, markup=False, soft_wrap=True)
    reports = cluster.check_reports(rows)
    if not reports:
        return
    found = cluster.summary(reports)
    out.print(dist_check_table(found))
    png = cluster.plot(found, directory / "dist_check.png")
    path = cluster.write_json(rows, found, directory / "dist_check.json")
    out.print(f"distributed check: {path} {f'and {png}' if png else f'({escape(NO_PLOT)})'}", highlight=False)


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


def idle_table(records: dict[str, dict]) -> Table:
    idle = {host: record for host, record in records.items() if record.get("idle")}
    out = Table(title=f"nodes running idle: {len(idle)} of {len(records)}", title_justify="left")
    for column in ("host", "idle for", "GPU utilization", "sessions", "stops", "since"):
        out.add_column(column, justify="right" if column in ("idle for", "sessions") else "left")
    for host, record in sorted(idle.items(), key=lambda item: -(item[1].get("idle_minutes") or 0)):
        out.add_row(escape(host), f"{record.get('idle_minutes') or 0:g} min", _gpus(record),
                    str(record.get("sessions", 0)), _stop(record), str(record.get("idle_since") or "-"))
    return out


def show_idle(report: dict, out: Console) -> None:
    """The table when this run read any node's idleness; the busy nodes say why in one line each."""
    records = idle.found(report)
    if not records:
        return
    out.print(idle_table(records))
    for host, record in sorted(records.items()):
        if not record.get("idle"):
            out.print(f"{host}: busy ({record.get('reason', '?')})", highlight=False)


_STYLE = {"updated": "green", "unchanged": "", "failed": "red", "not reached": "yellow"}


def fleet_table(found: list[dict], title: str) -> Table:
    out = Table(title=title, title_justify="left")
    for column in ("host", "batch", "result", "reason", "versions before -> after"):
        out.add_column(column)
    for row in found:
        style = _STYLE.get(row["result"], "")
        result = f"[{style}]{row['result']}[/{style}]" if style else row["result"]
        out.add_row(row["host"], str(row["batch"] or "-"), result, escape(row["reason"] or ""),
                    escape(fleet.versions(row)))
    return out


def drift_cell(component: dict | None) -> str:
    """'2.21.0 -> 2.20.0' where it differs, '2.21.0' where it matches, '-' where nothing is there or wanted."""
    if not component:
        return "-"
    have, want = component["installed"] or "none", component["desired"]
    if "installed_variant" in component and component["differs"] and component["installed_variant"] and \
            component["installed_variant"] != component["desired_variant"]:
        have, want = f"{have} {component['installed_variant']}", f"{want} {component['desired_variant']}"
    if component["differs"]:
        return f"[yellow]{escape(have)} -> {escape(str(want))}[/yellow]"
    return escape(have) if component["installed"] else ("-" if want is None else escape(f"none ({want})"))


def drift_table(found: list[dict], title: str) -> Table:
    out = Table(title=title, title_justify="left")
    for column in ("host", "state", "TensorFlow", "CUDA", "cuDNN", "driver", "would change (check mode)"):
        out.add_column(column)
    style = {"drift": "yellow", "in sync": "green", "failed": "red", "unreachable": "red", "not reached": "dim"}
    for row in found:
        state = row["state"]
        changes = ", ".join(f"{role}: {len(tasks)} task{'s' if len(tasks) != 1 else ''}"
                            for role, tasks in sorted(row["would_change"].items()))
        if not changes and row.get("converge_recorded_at"):
            changes = f"nothing: its converge of {row['converge_recorded_at']} stands"
        changes = changes or ("nothing" if state in ("drift", "in sync") else "-")
        out.add_row(row["host"], f"[{style[state]}]{state}[/{style[state]}]",
                    *(drift_cell(row["components"].get(name)) for name in fleet_drift.COMPONENTS), escape(changes))
    return out


def show_problems(report: dict, out: Console) -> None:
    for name, host in report["hosts"].items():
        for failure in host["failed_tasks"]:
            out.print(f"[red]{name}[/red]: {escape(failure['task'] or '')}: {escape(failure['message'])}",
                      highlight=False)
    if report["status"] == "no hosts":
        out.print(f"[red]no host matched[/red] in {report['inventory']}"
                  f"{' with --limit ' + report['limit'] if report['limit'] else ''}", highlight=False)
    print_playbook_stopped(report)


def cost_cell(row: dict) -> str:
    if not row.get("type"):
        return "-"
    if row.get("hourly") is None:
        return f"unknown ({escape(str(row.get('type')))})"
    so_far = money(row["cost_so_far"]) if row.get("cost_so_far") is not None else "?"
    spot = " spot" if row.get("market") == "spot" else ""
    return f"{so_far} ({money(row['hourly'])}/h {escape(str(row.get('type')))}{spot})"


def _version(installed: dict | None, part: str) -> str:
    value = ((installed or {}).get(part) or {}).get("version")
    if part == "tensorflow" and value:
        variant = installed["tensorflow"].get("variant")
        return f"{value} {variant}" if variant else value
    return value or "-"


def status_table(found: list[dict], now: datetime | None = None) -> Table:
    out = Table(title=f"tfprov fleet status: {len(found)} host{'s' if len(found) != 1 else ''}", title_justify="left")
    for column in ("host", "TensorFlow", "Python", "CUDA", "cuDNN", "driver", "last run", "last bench", "idle",
                   "up for", "cost so far"):
        out.add_column(column)
    style = {"ok": "green", "changed": "yellow", "failed": "red", "unreachable": "red", "not reached": "yellow"}
    for row in found:
        run = row["last_run"]
        run_text = "-"
        if run:
            status = run.get("host_status") or "?"
            run_text = (f"{escape(str(run['plan']))} [{style.get(status, '')}]{status}[/{style.get(status, '')}] "
                        f"({fleet_status.ago(run['started'], now)})")
        bench = row["last_bench"]
        bench_text = (f"{bench['gflops']:.1f} GFLOP/s {escape(str(bench['device']))} {bench['dtype']} N={bench['n']} "
                      f"({fleet_status.ago(bench['started'], now)})") if bench else "-"
        idle = f"{row['idle']['minutes']:g} min" if row["idle"] else "-"
        installed = row["installed"]
        if not row["reachable"] or installed is None:
            cells = ["[red]unreachable[/red]" if not row["reachable"] else "?"] + ["-"] * 4
        else:
            cells = [_version(installed, "tensorflow"), installed.get("python") or "-",
                     *(_version(installed, part) for part in ("cuda", "cudnn", "driver"))]
        out.add_row(row["host"], *cells, run_text, bench_text, idle, fleet_status.uptime(row), cost_cell(row))
    return out



def show_bench(report: dict, directory: Path, out: Console) -> None:
    """The bench table, one JSON per node and the throughput plot under directory (the run's bench/)."""
    benches = bench_mod.results(report)
    if not benches:
        return
    out.print(bench_table(benches))
    paths = bench_mod.write_json(benches, directory)
    png = bench_mod.plot(benches, directory / "throughput.png")
    out.print(f"bench: {len(paths)} JSON file(s) {f'and {png}' if png else f'({escape(NO_PLOT)})'}", highlight=False)


def show_check(report: dict, out: Console) -> None:
    found = bench_mod.checks(report)
    if found:
        out.print(check_table(found))


def show_gate(report: dict, out: Console) -> None:
    judged = gate.verdicts(report)
    if judged:
        out.print(gate_table(judged))


def show_serving(report: dict, out: Console) -> None:
    models = services.serving(report)
    if models:
        out.print(serving_table(models))


def show_notebook(report: dict, out: Console) -> None:
    for line in services.notebook_lines(services.notebooks(report)):
        out.print(line, highlight=False, soft_wrap=True)


def show_converge(report: dict, out: Console) -> None:
    stood = report_mod.converged(report)
    if stood:
        out.print(f"install skipped on {len(stood)} node(s) whose last converge still stands (same inputs, same boot, "
                  f"nothing it installed changed since; --full runs it all): "
                  f"{', '.join(f'{name} ({when})' for name, when in stood.items())}", highlight=False, soft_wrap=True)


# The views `tfprov run` draws after its failures, in this order, whatever the order plans.yml gives them in
# (converge, the line of nodes whose install was skipped, comes before the failures: see show_run).
RUN_VIEWS = {
    "bench": lambda report, run_dir, out: show_bench(report, run_dir / "bench", out),
    "check": lambda report, run_dir, out: show_check(report, out),
    "gate": lambda report, run_dir, out: show_gate(report, out),
    "serving": lambda report, run_dir, out: show_serving(report, out),
    "notebook": lambda report, run_dir, out: show_notebook(report, out),
    "cluster": lambda report, run_dir, out: show_cluster(report, run_dir / "cluster", out),
    "idle": lambda report, run_dir, out: show_idle(report, out),
}


def show_run(report: dict, run_dir: Path, views: tuple[str, ...], out: Console) -> None:
    """What `tfprov run` prints once a plan has run: the hosts, the durations, every failure in one line, then the
    views the plan names (plans.yml), then where the report and the page are."""
    out.print(summary_table(report))
    if report["plays"]:
        out.print(durations_table(report))
    if "converge" in views:
        show_converge(report, out)
    for name, host in report["hosts"].items():
        for failure in host["failed_tasks"]:
            out.print(f"[red]{name}[/red]: {failure['task']}: {failure['message']}", highlight=False)
    host_failures = any(host["failed_tasks"] for host in report["hosts"].values())
    for step in report["steps"] if not host_failures else []:
        for line in step.get("errors", []):
            out.print(f"[red]{step['playbook']}[/red]: {line}", highlight=False)
    if report["status"] == "no hosts":
        out.print(f"[red]no host matched[/red] in {report['inventory']}"
                  f"{' with --limit ' + report['limit'] if report['limit'] else ''}: "
                  "is the local cloud up (tfprov up local)?", highlight=False)
    print_playbook_stopped(report)
    print_refused(report)
    for view, show in RUN_VIEWS.items():
        if view in views:
            show(report, run_dir, out)
    out.print(f"report: {run_dir / 'report.json'}", highlight=False)
    out.print(f"page: {run_dir / 'report.html'} (tfprov report latest)", highlight=False)
