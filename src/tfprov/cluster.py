"""The view `cluster`: the distributed TensorFlow cluster a run left behind, read from its report: every task's
outcome (and the last log lines of a failed one), and the built-in distributed check (its summary, a PNG when
matplotlib is there, dist_check.json)."""

from __future__ import annotations

import json
from pathlib import Path

from . import job_outcome
from .bench import pyplot

TYPE_ORDER = ("chief", "worker", "ps", "evaluator")
REPORT_PREFIX = '{"tfprov_dist_check"'
FAILED_LOG_LINES = 10


def task_key(task: str) -> tuple[int, int, str]:
    kind, _, index = str(task).partition(":")
    order = TYPE_ORDER.index(kind) if kind in TYPE_ORDER else len(TYPE_ORDER)
    return order, int(index) if index.isdigit() else 0, str(task)


def tasks(report: dict) -> list[dict]:
    """One row per job or server unit the run looked at, chief first, then workers, ps and evaluator by index."""
    rows = []
    for host, data in report["hosts"].items():
        found = data.get("data") or {}
        for kind, key in (("job", "dist_job"), ("server", "dist_server")):
            if isinstance(found.get(key), dict):
                rows.append({**found[key], "host": host, "kind": kind})
    return sorted(rows, key=lambda row: (task_key(row.get("task", "?")), row["kind"]))


def failed(row: dict) -> bool:
    return row.get("state") in ("failed", "never_run")


def state_text(row: dict) -> tuple[str, str]:
    """(what happened, how it reads: good, bad, warn or ''): 'failed (exit-code)', 'succeeded', 'running'."""
    state = row.get("state", "?")
    verdict = {"succeeded": "good", "failed": "bad", "never_run": "bad"}.get(state, "")
    if state == "running":  # a server's job is to keep running; a job still running when the run ended is news
        verdict = "good" if row["kind"] == "server" else "warn"
    result = row.get("result")
    return (f"{state} ({result})" if failed(row) and result and result != "success" else state), verdict


def exit_text(row: dict) -> str:
    if row.get("signal"):
        return f"signal {row['signal']}"
    return f"exit {row['exit_status']}" if row.get("exit_status") is not None else "-"


def last_line(row: dict) -> str:
    """The newest log line that is not the check's JSON report (that one has a table of its own); of a job that
    succeeded, the job's own newest line, not TensorFlow's shutdown noise after it (a worker that outlived the
    chief logs gRPC's "Connection refused" on its way out)."""
    if row.get("kind") == "job" and row.get("state") == "succeeded":
        return job_outcome.job_last_line(row.get("log_tail") or [], skip=(REPORT_PREFIX,))
    lines = [line for line in row.get("log_tail") or [] if line.strip() and not line.startswith(REPORT_PREFIX)]
    return lines[-1] if lines else ""


def outcome_line(rows: list[dict]) -> str:
    """Why a job failed, when one did: by itself (its own error: running it again will not help), from the network
    or a node (an infrastructure error: running it again can help); with the line and the task that say so."""
    jobs = [row for row in rows if row["kind"] == "job"]
    if not any(failed(row) or row.get("state") == "timed_out" for row in jobs):
        return ""
    found = job_outcome.classify(jobs, {}, run_failed=True)
    if found["cause"] in (job_outcome.SUCCEEDED, job_outcome.SETUP_FAILED):
        return ""
    return f"why the job failed: {found['summary']}"


def runs_text(row: dict) -> str:
    return f"job {row.get('job') or ''}".strip() if row["kind"] == "job" else "tf.distribute.Server"


def failure_lines(rows: list[dict], limit: int = FAILED_LOG_LINES) -> list[str]:
    """For each failed task: what it is, and its last log lines, so the reason shows without opening a file."""
    out = []
    for row in filter(failed, rows):
        tail = [line for line in row.get("log_tail") or [] if not line.startswith(REPORT_PREFIX)][-limit:]
        unit = row.get("unit") or row["kind"]
        what = f"{row.get('task', '?')} on {row['host']} ({unit}): {row.get('state')}, {exit_text(row)}"
        out.append(f"{what}; its last {len(tail)} log line(s):" if tail else f"{what}; no log lines")
        out += [f"  {line}" for line in tail]
    return out


def check_reports(rows: list[dict]) -> dict[str, dict]:
    """{task: the built-in check's report} for the job tasks that printed one."""
    return {row.get("task", row["host"]): row["report"] for row in rows
            if row["kind"] == "job" and isinstance(row.get("report"), dict)}


def summary(reports: dict[str, dict]) -> dict:
    """The cluster's check: the chief's report (else the first task's), with every task's problems, and the
    weights' digests compared across tasks (MWMS keeps one copy per worker: they must agree)."""
    task = next(iter(sorted(reports, key=task_key)))
    chosen = reports[task]
    problems = [f"{t}: {p}" for t, r in sorted(reports.items(), key=lambda item: task_key(item[0]))
                for p in r.get("problems") or []]
    digests = {t: r["weights_digest"] for t, r in reports.items() if r.get("weights_digest")}
    differ = chosen.get("weights_identical") is not None and len(set(digests.values())) > 1
    if differ:
        problems.append("the weights differ between tasks: " + ", ".join(
            f"{t} {d[:12]}" for t, d in sorted(digests.items(), key=lambda item: task_key(item[0]))))
    ok = all(r.get("ok") for r in reports.values()) and not differ
    return {"from_task": task, "ok": ok, "check": chosen, "problems": problems}


def plot(found: dict, path: Path) -> Path | None:
    """Examples/s of each worker and of the cluster, beside the ideal: each worker as fast as one alone, the
    cluster as fast as all of them together (workers x single-worker). None where matplotlib is not installed."""
    plt = pyplot()
    if plt is None:
        return None

    check = found["check"]
    single = check.get("single_worker_examples_per_s") or 0.0
    per_worker = sorted((check.get("examples_per_s") or {}).items(), key=lambda item: task_key(item[0]))
    labels = [task for task, _ in per_worker] + ["cluster"]
    values = [float(v) for _, v in per_worker] + [float(check.get("cluster_examples_per_s") or 0.0)]
    ideal = [single] * len(per_worker) + [single * int(check.get("workers") or len(per_worker))]
    fig, ax = plt.subplots(figsize=(max(6, 1.3 * len(labels)), 4.5))
    x = range(len(labels))
    ax.bar([i - 0.2 for i in x], ideal, width=0.4, color="#c7c7c7", hatch="//", edgecolor="#8c8c8c",
           label="ideal: one worker alone; the cluster: workers x that")
    bars = ax.bar([i + 0.2 for i in x], values, width=0.4, color=["#4c72b0"] * len(per_worker) + ["#dd8452"],
                  label="measured")
    ax.bar_label(bars, labels=[f"{v:.0f}" for v in values], fontsize=8)
    ax.set_xticks(list(x), labels, fontsize=8)
    ax.set_ylabel("examples/s")
    efficiency = check.get("scaling_efficiency")
    ax.set_title(f"{check.get('strategy', '?')}: {check.get('workers', '?')} worker(s)"
                 + (f"\nscaling efficiency {efficiency:.0%}" if isinstance(efficiency, int | float) else ""),
                 fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def write_json(rows: list[dict], found: dict, path: Path) -> Path:
    """The check as the table shows it, every task's report, and every task's outcome."""
    reports = check_reports(rows)
    record = {**found, "reports": reports,
              "tasks": [{k: v for k, v in row.items() if k != "report"} for row in rows]}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return path
