"""report.html: one self-contained page per run, from the same data as report.json.

No script, no network: the styles are inline, the plots are inline SVG, so the page reads the same opened from a
laptop, an artifact store or a browser without JavaScript. Each section reads the report with the helpers the
terminal's tables use (bench, gate, services, cluster, fleet, fleet_drift), so the page and the terminal agree.
"""

from __future__ import annotations

import math
import os
from datetime import datetime
from html import escape
from pathlib import Path

from . import bench, cluster, fleet, fleet_drift, gate, idle, services
from . import cost as cost_mod

PAGE = "report.html"
_PALETTE = ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3", "#8c8c8c", "#ccb974",
            "#64b5cd")
# Twenty distinct colours (matplotlib's tab20) for a timeline's steps: a cluster run has a dozen plays and roles.
_STEP_PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
                 "#17becf", "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94", "#f7b6d2", "#c7c7c7",
                 "#dbdb8d", "#9edae5")
STATUS_CLASS = {"ok": "good", "successful": "good", "changed": "changed", "admitted": "good", "failed": "bad",
                 "unreachable": "bad", "refused": "bad", "interrupted": "bad", "error": "bad", "bad input": "bad",
                 "no hosts": "bad", "not reached": "warn", "updated": "changed", "unchanged": "good",
                 "drift": "warn", "in sync": "good"}
CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;max-width:1200px;
padding:0 16px 48px;color:#222}
h1{font-size:22px;margin:18px 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #ddd}
h3{font-size:15px;margin:18px 0 6px}table{border-collapse:collapse;margin:6px 0 12px}
th,td{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}th{background:#f4f4f4}
td.n{text-align:right;font-variant-numeric:tabular-nums}code,pre{font:12px/1.4 ui-monospace,Menlo,Consolas,monospace}
pre{background:#f7f7f7;padding:6px;overflow-x:auto;white-space:pre-wrap}
.good{color:#1b7f3b;font-weight:600}.bad{color:#b3261e;font-weight:600}.warn{color:#9a6700;font-weight:600}
.changed{color:#1d5fb4;font-weight:600}.muted{color:#666}
.alert{border:2px solid #b3261e;background:#fdf1f0;padding:8px 12px;margin:12px 0}
.alert li{margin:2px 0}.lane{position:relative;height:18px;background:#f1f1f1;margin:2px 0 8px}
.seg{position:absolute;top:0;height:18px;min-width:1px}nav a{margin-right:12px}
.legend{font-size:12px;margin:0 0 6px}.key{margin-right:12px;white-space:nowrap}
.swatch{display:inline-block;width:10px;height:10px;margin-right:4px;vertical-align:baseline}
dl.run{display:grid;grid-template-columns:max-content auto;gap:2px 12px}dl.run dt{font-weight:600}dl.run dd{margin:0}
"""


def _e(value) -> str:
    return escape("" if value is None else str(value))


def _status(text) -> str:
    return f'<span class="{STATUS_CLASS.get(str(text), "")}">{_e(text)}</span>'


def number(value, fmt: str = "{:.1f}") -> str:
    return fmt.format(value) if isinstance(value, int | float) and not isinstance(value, bool) else "-"


def _table(columns: list[str], rows: list[list[str]], numeric: tuple[str, ...] = ()) -> str:
    """Cells are HTML already (callers escape); numeric columns are right-aligned."""
    head = "".join(f"<th>{_e(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f'<td class="n">{cell}</td>' if columns[i] in numeric else f"<td>{cell}</td>"
                                    for i, cell in enumerate(row)) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _color(name: str) -> str:
    return _PALETTE[sum(name.encode()) % len(_PALETTE)]


def _step_colours(report: dict) -> dict[str, str]:
    """One colour per play or role, the same on every host's bar, given in order of first appearance so that
    neighbouring steps differ (a hash of the name gave two adjacent roles the same blue)."""
    labels = dict.fromkeys(_label(seg) for host in report.get("hosts", {}).values()
                           for seg in host.get("timeline") or [])
    return {label: _STEP_PALETTE[i % len(_STEP_PALETTE)] for i, label in enumerate(labels)}


def _label(segment: dict) -> str:
    return f"role {segment['role']}" if segment.get("role") else f"play {segment['play']}"


def failures(report: dict) -> list[str]:
    """Every failure line, host first: what the top of the page shows (and `tfprov run` printed)."""
    lines = [f"{name}: {f.get('task')}: {f.get('message')}" for name, host in report.get("hosts", {}).items()
             for f in host.get("failed_tasks") or []]
    if not lines:
        lines = [f"{step['playbook']}: {line}" for step in report.get("steps", []) for line in step.get("errors", [])]
    return lines


def _run_section(report: dict) -> str:
    started = report.get("started")
    items = [("plan", _e(report.get("plan"))), ("result", _status(report.get("status"))),
             ("exit code", _e(report.get("rc"))), ("command", f"<code>{_e(report.get('command') or '-')}</code>"),
             ("started", _e(started)), ("duration", f"{number(report.get('seconds'))} s"),
             ("inventory", _e(report.get("inventory"))), ("limit", _e(report.get("limit") or "-")),
             ("check mode", "yes" if report.get("check") else "no"), ("run directory", _e(report.get("run_dir")))]
    body = "".join(f"<dt>{name}</dt><dd>{value}</dd>" for name, value in items)
    steps = _table(["playbook", "status", "rc"], [[_e(s["playbook"]), _status(s["status"]), _e(s["rc"])]
                                                   for s in report.get("steps", [])])
    return f'<h2 id="run">The run</h2><dl class="run">{body}</dl><h3>Playbooks</h3>{steps}'


def _alert(report: dict) -> str:
    lines = failures(report)
    if not lines:
        return ""
    items = "".join(f"<li>{_e(line)}</li>" for line in lines)
    return (f'<div class="alert" id="failures"><strong>{_e(report.get("status"))}: {len(lines)} failure(s)'
            f"</strong><ul>{items}</ul></div>")


def _hosts_section(report: dict) -> str:
    rows = []
    for name, host in report.get("hosts", {}).items():
        seconds = sum(seg.get("seconds") or 0 for seg in host.get("timeline") or [])
        first = (host.get("failed_tasks") or [{}])[0]
        reason = f"{first.get('task')}: {first.get('message')}" if first else ""
        rows.append([f'<a href="#host-{_e(name)}">{_e(name)}</a>', _status(host.get("status")), _e(host.get("ok")),
                     _e(host.get("changed")), _e(host.get("failures")), _e(host.get("dark")), _e(host.get("skipped")),
                     number(seconds), _e(reason)])
    table = _table(["host", "status", "ok", "changed", "failed", "unreachable", "skipped", "busy s", "first failure"],
                   rows, numeric=("ok", "changed", "failed", "unreachable", "skipped", "busy s"))
    return f'<h2 id="hosts">Hosts</h2>{table}'


def _timeline(report: dict, host: dict, colours: dict[str, str]) -> str:
    """One bar across the run: each play/role segment where it ran on this host, and a table of the same."""
    segments = host.get("timeline") or []
    if not segments:
        return '<p class="muted">no task ran on this host</p>'
    start = _when(report.get("started")) or _when(segments[0]["start"])
    total = max(report.get("seconds") or 0, 0.001)
    bars, rows, labels = [], [], {}
    for seg in segments:
        label = _label(seg)
        labels[label] = labels.get(label, 0) + (seg.get("seconds") or 0)
        offset = max(((_when(seg["start"]) or start) - start).total_seconds(), 0) if start else 0
        left, width = min(100 * offset / total, 100), max(100 * (seg.get("seconds") or 0) / total, 0.2)
        bars.append(f'<div class="seg" style="left:{left:.2f}%;width:{min(width, 100 - left):.2f}%;'
                    f'background:{colours[label]}" title="{_e(label)}: {number(seg.get("seconds"))} s"></div>')
        rows.append([_e(seg.get("play")), _e(seg.get("role") or "-"), number(offset), number(seg.get("seconds"))])
    table = _table(["play", "role", "starts at s", "seconds"], rows, numeric=("starts at s", "seconds"))
    return (f'<div class="lane" role="img" aria-label="timeline">{"".join(bars)}</div>{_legend(labels, colours)}'
            f"<details><summary>timeline: {len(segments)} step(s)</summary>{table}</details>")


def _legend(labels: dict[str, float], colours: dict[str, str]) -> str:
    """What each colour of the bar is, with its seconds summed: readable without hovering (or a mouse)."""
    keys = "".join(f'<span class="key"><span class="swatch" style="background:{colours[label]}"></span>'
                   f"{_e(label)} {number(seconds)} s</span>" for label, seconds in labels.items())
    return f'<p class="legend">{keys}</p>'


def _when(stamp) -> datetime | None:
    try:
        return datetime.fromisoformat(str(stamp))
    except ValueError:
        return None


def versions(host: dict) -> dict[str, str]:
    """What the node has after the run: the installed stack (read by tfprov.gpu.installed_stack), else what a
    fleet update left; the desired stack beside it where the run resolved one."""
    data = host.get("data") or {}
    installed = data.get("installed") or (data.get("drift") or {}).get("installed") or {}
    found = {}
    if installed:
        tf = installed.get("tensorflow") or {}
        found = {"driver": (installed.get("driver") or {}).get("version"),
                 "CUDA": (installed.get("cuda") or {}).get("version"),
                 "cuDNN": (installed.get("cudnn") or {}).get("version"),
                 "TensorFlow": " ".join(str(v) for v in (tf.get("version"), tf.get("variant")) if v) or None,
                 "Python": installed.get("python")}
    elif (data.get("fleet") or {}).get("after"):
        after = data["fleet"]["after"]
        found = {label: after.get(key) for key, label in fleet.COMPONENTS}
    return {name: str(value) for name, value in found.items() if value}


def _desired(host: dict) -> dict[str, str]:
    data = host.get("data") or {}
    stack = data.get("stack") or (data.get("drift") or {}).get("desired") or {}
    if not stack:
        return {}
    driver = {"install": f"branch {stack.get('driver_branch')}",  # as fleet drift words it (fleet_drift.components)
              "adopt": f">= {stack.get('min_driver')} (the loaded one kept)"}.get(stack.get("driver_action"))
    wanted = {"driver": driver,
              "CUDA": stack.get("cuda") if stack.get("gpu_node") else None,
              "cuDNN": (stack.get("cudnn_full") or stack.get("cudnn")) if stack.get("gpu_node") else None,
              "TensorFlow": " ".join(str(v) for v in (stack.get("tensorflow_version"), stack.get("variant")) if v),
              "Python": stack.get("python")}
    return {name: str(value) for name, value in wanted.items() if value}


def _host_details(report: dict) -> str:
    parts, colours = ['<h2 id="details">Each host</h2>'], _step_colours(report)
    for name, host in report.get("hosts", {}).items():
        parts.append(f'<h3 id="host-{_e(name)}">{_e(name)}: {_status(host.get("status"))}</h3>')
        parts.append(_timeline(report, host, colours))
        for failure in host.get("failed_tasks") or []:
            parts.append(f'<p class="bad">{_e(failure.get("outcome"))}: {_e(failure.get("task"))}: '
                         f'{_e(failure.get("message"))}</p>')
        stood = (host.get("data") or {}).get("converge") or {}
        if stood.get("current"):
            parts.append(f'<p class="muted">install skipped: the converge recorded at {_e(stood.get("recorded_at"))} '
                         "still stands (same inputs, same boot, nothing it installed changed since); the versions "
                         "below are that run's; the gate ran now</p>")
        elif stood.get("reason"):
            parts.append(f'<p class="muted">installed in full: {_e(stood["reason"])}</p>')
        have, want = versions(host), _desired(host)
        if have or want:
            rows = [[_e(part), _e(have.get(part, "-")), _e(want.get(part, "-"))] for part in
                    ("driver", "CUDA", "cuDNN", "TensorFlow", "Python") if part in have or part in want]
            parts.append(_table(["component", "installed", "desired (resolved stack)"], rows))
        changed = host.get("changed_tasks") or []
        verb = "would change (check mode)" if report.get("check") else "changed in this run"
        if changed:
            items = "".join(f"<li>{_e(task)}</li>" for task in changed)
            parts.append(f"<details><summary>{verb}: {len(changed)} task(s)"
                         f"{' (the first ones)' if len(changed) >= 200 else ''}</summary><ul>{items}</ul></details>")
        else:
            parts.append(f'<p class="muted">{verb}: nothing</p>')
    return "".join(parts)


def _bars_svg(bars: list[tuple[str, float, str]], unit: str, title: str) -> str:
    """Horizontal bars (label, value, colour), log scale when values differ by more than 50x."""
    bars = [(label, value, colour) for label, value, colour in bars if isinstance(value, int | float) and value > 0]
    if not bars:
        return ""
    high, low = max(v for _, v, _ in bars), min(v for _, v, _ in bars)
    log = high / low > 50

    def scale(value: float) -> float:
        return (math.log10(value / low * 10) / math.log10(high / low * 10)) if log else value / high

    row, left, width = 22, 260, 520
    height = row * len(bars) + 30
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 170}" height="{height}" role="img" '
           f'aria-label="{_e(title)}"><text x="0" y="14" font-size="13" font-weight="600">{_e(title)}'
           f'{" (log scale)" if log else ""}</text>']
    for i, (label, value, colour) in enumerate(bars):
        y = 24 + i * row
        length = max(scale(value) * width, 1)
        out.append(f'<text x="{left - 6}" y="{y + 14}" font-size="11" text-anchor="end">{_e(label)}</text>'
                   f'<rect x="{left}" y="{y}" width="{length:.1f}" height="{row - 6}" fill="{colour}"/>'
                   f'<text x="{left + length + 4:.1f}" y="{y + 13}" font-size="11">{value:,.1f} {_e(unit)}</text>')
    return "".join(out) + "</svg>"


def _bench_section(report: dict) -> str:
    benches = bench.results(report)
    if not benches:
        return ""
    rows, bars = [], []
    for host, result in sorted(benches.items()):
        numpy = {r["n"]: r["gflops"] for r in result.get("numpy") or []}
        for row in bench.table_rows(result):
            peak = f"{row['percent_of_peak']} % of {row.get('peak')}" if row.get("percent_of_peak") is not None \
                else "-"
            cpu = row["device"] == "/CPU:0"
            rows.append([_e(host), _e(f"{row['device']} {row.get('name', '')}"), _e(row["dtype"]), _e(row["n"]),
                         number(row["gflops"]), _e(peak), number(numpy.get(row["n"])) if cpu else ""])
        largest = bench.largest_rows(result)
        for row in largest:
            bars.append((f"{host} {row['device']} {row['dtype']}", row["gflops"], _color(row["dtype"])))
        if largest and largest[0]["n"] in numpy:  # the same product in NumPy, for scale
            bars.append((f"{host} NumPy float32", numpy[largest[0]["n"]], "#8c8c8c"))
        for problem in result.get("problems") or []:
            rows.append([_e(host), f'<span class="bad">{_e(problem)}</span>', "", "", "", "", ""])
    table = _table(["host", "device", "dtype", "N", "GFLOP/s", "% of peak", "NumPy GFLOP/s"], rows,
                   numeric=("N", "GFLOP/s", "NumPy GFLOP/s"))
    svg = _bars_svg(bars, "GFLOP/s", "matmul throughput at the largest size")
    return f'<h2 id="bench">Bench: matmul throughput</h2>{table}{svg}'


def _gpu_check_section(report: dict) -> str:
    found = bench.checks(report)
    if not found:
        return ""
    rows = []
    for host, check in sorted(found.items()):
        version = (check.get("tensorflow") or {}).get("version", "?")
        for row in check.get("results") or []:
            result = ('<span class="good">ok</span>' + _e(bench.reused_note(check)) if row.get("ok")
                      else _status_bad(row.get("error", "wrong")))
            rows.append([_e(host), _e(version), _e(f"{row.get('device')} {row.get('name', '')}"), _e(row.get("n")),
                         number(row.get("gflops")), result])
        for problem in check.get("problems") or []:
            rows.append([_e(host), _e(version), _status_bad(problem), "", "", ""])
    return ('<h2 id="gpu-check">GPU check: one matmul per device</h2>'
            + _table(["host", "TensorFlow", "device", "N", "GFLOP/s", "result"], rows, numeric=("N", "GFLOP/s")))


def _status_bad(text) -> str:
    return f'<span class="bad">{_e(text)}</span>'


def _gate_section(report: dict) -> str:
    found = gate.verdicts(report)
    if not found:
        return ""
    rows = []
    for host, verdict in sorted(found.items()):
        gpus = f"{verdict.get('gpu_count')} of {verdict.get('expected_gpu_count')}" if verdict.get("gpu_node") \
            else "none"
        said = "<br>".join(_e(line) for line in (verdict.get("lines") or []) + (verdict.get("notes") or [])) or "-"
        rows.append([_e(host), _e(verdict.get("level")), _e(gpus), _e(verdict.get("driver_version") or "-"),
                     _e(verdict.get("dcgm")), '<span class="good">admitted</span>' if verdict.get("healthy")
                     else _status_bad("not admitted"), said])
    return ('<h2 id="gate">Admission gate</h2>'
            + _table(["host", "level", "GPUs", "driver", "DCGM", "verdict", "problems and notes"], rows))


def _serving_section(report: dict) -> str:
    found = services.serving(report)
    if not found:
        return ""
    rows = []
    for host, models in sorted(found.items()):
        for row in models:
            state = row.get("state", "?")
            versions_seen = " ".join(f"{v}:{s}" for v, s in (row.get("versions") or {}).items())
            rows.append([_e(host), _e(row.get("model")), _e(row.get("version")),
                         f'<span class="{"good" if state == "AVAILABLE" else "bad"}">{_e(state)}</span>',
                         _e(row.get("predicts", "-")), number(row.get("p50_ms")), number(row.get("p99_ms")),
                         _e(versions_seen), _e(" ".join(f"{k} {row[k]}" for k in ("grpc", "rest") if row.get(k)))])
    return ('<h2 id="serving">Serving</h2>'
            + _table(["host", "model", "version", "state", "predicts", "p50 ms", "p99 ms", "all versions",
                      "endpoints"], rows, numeric=("version", "predicts", "p50 ms", "p99 ms")))


def _cluster_section(report: dict) -> str:
    rows = cluster.tasks(report)
    if not rows:
        return ""
    table = []
    for row in rows:
        text, verdict = cluster.state_text(row)
        table.append([_e(row.get("task")), _e(row["host"]), _e(cluster.runs_text(row)),
                      f'<span class="{verdict}">{_e(text)}</span>', _e(cluster.exit_text(row)),
                      number(row.get("seconds")), _e(row.get("restarts", "-")),
                      f"<code>{_e(cluster.last_line(row))}</code>"])
    out = ['<h2 id="cluster">Distributed job</h2>',
           _table(["task", "host", "runs", "result", "exit", "seconds", "restarts", "last log line"], table,
                  numeric=("seconds", "restarts"))]
    why = cluster.outcome_line(rows)
    if why:
        out.append(f"<p><strong>{_e(why)}</strong></p>")
    lines = cluster.failure_lines(rows)
    if lines:
        out.append(f"<pre>{_e(chr(10).join(lines))}</pre>")
    reports = cluster.check_reports(rows)
    if reports:
        out.append(_dist_check(cluster.summary(reports)))
    return "".join(out)


def _dist_check(found: dict) -> str:
    check = found["check"]
    allreduce = check.get("allreduce") or {}
    said = [("result", _status("successful" if found["ok"] else "failed")),
            ("strategy", _e(check.get("strategy"))), ("workers", _e(check.get("workers"))),
            ("steps", _e(check.get("steps"))),
            ("loss first -> last", f"{number(check.get('loss_first'), '{:.4f}')} -> "
                                   f"{number(check.get('loss_last'), '{:.4f}')}"),
            ("every task took part", _e(check.get("all_took_part"))),
            ("identical weights", _e(check.get("weights_identical"))),
            ("cluster examples/s", number(check.get("cluster_examples_per_s"))),
            ("single-worker examples/s", number(check.get("single_worker_examples_per_s"))),
            ("scaling efficiency", number(check.get("scaling_efficiency"), "{:.0%}")),
            ("all-reduce bus bandwidth", f"{number(allreduce.get('busbw_gbps'), '{:.3f}')} GB/s"
                                         + (f", {allreduce['percent_of_expected']:g} % of the "
                                            f"{allreduce.get('link_gbit')} Gbit/s link"
                                            if allreduce.get("percent_of_expected") is not None else ""))]
    rows = [[_e(name), value] for name, value in said]
    rows += [["problem", _status_bad(p)] for p in found["problems"]]
    per_worker = sorted((check.get("examples_per_s") or {}).items(), key=lambda item: cluster.task_key(item[0]))
    bars = [(task, value, _PALETTE[0]) for task, value in per_worker]
    single = check.get("single_worker_examples_per_s")
    if isinstance(single, int | float):
        bars.append(("one worker alone", single, "#8c8c8c"))
    bars.append(("cluster", check.get("cluster_examples_per_s"), _PALETTE[1]))
    return (f'<h3>Distributed check (the report of {_e(found["from_task"])})</h3>{_table(["check", "result"], rows)}'
            + _bars_svg(bars, "examples/s", "examples/s per worker and for the cluster"))


def _fleet_section(report: dict) -> str:
    if not any((host.get("data") or {}).get("fleet") for host in report.get("hosts", {}).values()):
        return ""
    found = fleet.rows(report)
    rows = [[_e(row["host"]), _e(row["batch"] or "-"), _status(row["result"]), _e(row.get("reason") or ""),
             _e(fleet.versions(row))] for row in found]
    stopped = fleet.stop_reason(found)
    return (f'<h2 id="fleet">Fleet update: {_e(fleet.summary(found))}</h2>'
            + (f'<p class="warn">stopped: {_e(stopped)}</p>' if stopped else "")
            + _table(["host", "batch", "result", "reason", "versions before -> after"], rows))


def _drift_section(report: dict) -> str:
    if not any((host.get("data") or {}).get("drift") for host in report.get("hosts", {}).values()):
        return ""
    changes = {name: {"": host.get("changed_tasks") or []} for name, host in report.get("hosts", {}).items()}
    found = fleet_drift.rows(report, changes)
    rows = []
    for row in found:
        cells = []
        for part in fleet_drift.COMPONENTS:
            component = row["components"].get(part)
            if not component:
                cells.append("-")
                continue
            text = f"{component['installed'] or 'none'} -> {component['desired']}" if component["differs"] else \
                (component["installed"] or "-")
            cells.append(f'<span class="{"warn" if component["differs"] else ""}">{_e(text)}</span>')
        rows.append([_e(row["host"]), _status(row["state"]), *cells, _e(row["changed_tasks"])])
    return (f'<h2 id="drift">Drift: {_e(fleet_drift.summary(found))}</h2>'
            + _table(["host", "state", "TensorFlow", "CUDA", "cuDNN", "driver", "tasks a run would change"], rows,
                     numeric=("tasks a run would change",)))


def _idle_section(report: dict) -> str:
    records = idle.found(report)
    if not records:
        return ""
    rows = [[_e(host), "idle" if r.get("idle") else "busy", number(r.get("idle_minutes")), _e(r.get("reason") or "")]
            for host, r in sorted(records.items())]
    return '<h2 id="idle">Idle nodes</h2>' + _table(["host", "state", "idle min", "reason"], rows,
                                                    numeric=("idle min",))


def _cost_section(report: dict) -> str:
    found = cost_mod.run_cost(report)
    if not found["nodes"]:
        return ""
    rows = [[_e(node["host"]), _e(node["provider"]), _e(node["type"]), _e(node.get("region") or "-"),
             _e(node["market"]), cost_mod.money(node["hourly"]), cost_mod.money(node["run"]), _e(node["source"])]
            for node in found["nodes"]]
    total = (f"<p>the run's nodes: {cost_mod.money(found['hourly'])} per hour; this run's "
             f"{number(report.get('seconds'))} s: {cost_mod.money(found['run'])}"
             f"{' (some prices unknown: not counted)' if found['unknown'] else ''}</p>")
    return ('<h2 id="cost">Cost</h2>' + total
            + _table(["host", "provider", "type", "region", "market", "per hour", "this run", "price from"], rows,
                     numeric=("per hour", "this run")))


def _durations_section(report: dict) -> str:
    plays = [[_e(p["name"]), number(p["seconds"])] for p in report.get("plays", [])]
    roles = [[_e(name), number(seconds)] for name, seconds in (report.get("roles") or {}).items()]
    if not plays and not roles:
        return ""
    return ('<h2 id="durations">Durations</h2>'
            + (_table(["play", "seconds"], plays, numeric=("seconds",)) if plays else "")
            + (_table(["role (all hosts, task time summed)", "seconds"], roles, numeric=("seconds",)) if roles else ""))


SECTIONS = (_hosts_section, _gpu_check_section, _gate_section, _bench_section, _serving_section, _cluster_section,
            _fleet_section, _drift_section, _idle_section, _cost_section, _host_details, _durations_section)


def render(report: dict) -> str:
    title = f"tfprov {report.get('plan')} run: {report.get('status')}"
    body = [f"<h1>{_e(title)}</h1>", _alert(report), _run_section(report)]
    body += [section(report) for section in SECTIONS]
    nav = " ".join(f'<a href="#{anchor}">{label}</a>' for anchor, label in _anchors(body))
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width,initial-scale=1">'
            f"<title>{_e(title)}</title><style>{CSS}</style></head><body>"
            f"<nav>{nav}</nav>{''.join(body)}"
            f'<p class="muted">report.json beside this page holds the same data.</p></body></html>\n')


def _anchors(body: list[str]) -> list[tuple[str, str]]:
    names = {"failures": "failures", "run": "run", "hosts": "hosts", "gpu-check": "GPU check", "gate": "gate",
             "bench": "bench", "serving": "serving", "cluster": "distributed job", "fleet": "fleet", "drift": "drift",
             "idle": "idle", "cost": "cost", "details": "each host", "durations": "durations"}
    html = "".join(body)
    return [(anchor, label) for anchor, label in names.items() if f'id="{anchor}"' in html]


def write_atomically(path: Path, text: str) -> Path:
    """Readers (a browser, another run's index) see the old file or the new one, never half of one."""
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, path)
    return path


def write(report: dict, run_dir: Path) -> Path:
    return write_atomically(run_dir / PAGE, render(report))
