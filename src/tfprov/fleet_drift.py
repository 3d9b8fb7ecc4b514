"""`tfprov fleet drift`: per host, the installed driver, CUDA, cuDNN and TensorFlow beside the desired ones (the
resolve play's tfprov_stack, from the inventory's variables), and what a run of the stack would change.

It is the plan `drift` (playbooks/fleet_drift.yml) in check mode, always: that playbook refuses any other run. What
would change is the stack's own check-mode verdict (its changed tasks, by role), so drift means exactly "a run of
`tfprov run node` would do something here". Where that run would skip the install (the node's last converge still
stands), the node's record says what it has and was asked for, and nothing would change. Exit 0 with or without
drift; --exit-code makes drift exit 6.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from . import extravars
from . import plan as plan_mod
from .options import DEFAULT_INVENTORY, positive, print_playbook_stopped
from .progress import Progress
from .project import project_root
from .runner import RunOptions, run_plan

PLAN = "drift"
EXIT_DRIFT = 6  # --exit-code only: the run succeeded and at least one host drifts
COMPONENTS = ("tensorflow", "cuda", "cudnn", "driver")


class ChangeRecorder(Progress):
    """The live progress display, also keeping every changed task: {host: {role: [task, ...]}}."""

    def __init__(self, console: Console | None = None):
        super().__init__(console)
        self.changes: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))

    def on_event(self, event: dict) -> None:
        data = event.get("event_data") or {}
        if event.get("event") == "runner_on_ok" and (data.get("res") or {}).get("changed"):
            self.changes[data.get("host", "?")][data.get("role") or "(play)"].append(data.get("task", ""))
        super().on_event(event)


def _parts(version) -> list[str]:
    return str(version).split(".") if version else []


def same_release(installed, desired) -> bool:
    """'12.5.82' is CUDA '12.5'; '9.3.0.75' is cuDNN '9.3.0.75' or '9.3': compare as many parts as desired gives."""
    want = _parts(desired)
    return bool(installed) and _parts(installed)[:len(want)] == want


def _compare(installed, desired, matches: bool) -> dict:
    return {"installed": installed, "desired": desired, "differs": desired is not None and not matches}


def components(installed: dict, desired: dict) -> dict[str, dict]:
    """Installed vs desired per component; desired is None where the stack needs nothing (no GPU: no CUDA)."""
    tf = installed.get("tensorflow") or {}
    tf_version, want_version = tf.get("version"), desired.get("tensorflow_version")
    tf_variant, want_variant = tf.get("variant"), desired.get("variant")
    tf_row = _compare(tf_version, want_version,
                      tf_version == want_version and (not tf_variant or tf_variant == want_variant))
    tf_row.update(installed_variant=tf_variant, desired_variant=want_variant, package=tf.get("package"))
    gpu = bool(desired.get("gpu_node"))
    cuda = (installed.get("cuda") or {}).get("version")
    want_cuda = desired.get("cuda") if gpu else None
    cudnn = (installed.get("cudnn") or {}).get("version")
    want_cudnn = (desired.get("cudnn_full") or desired.get("cudnn")) if gpu else None
    driver = (installed.get("driver") or {}).get("version")
    action = desired.get("driver_action")
    if action == "install":  # the driver role installs this branch
        want_driver = f"branch {desired.get('driver_branch')}"
        driver_ok = _parts(driver)[:1] == [str(desired.get("driver_branch"))]
    elif action == "adopt":  # the loaded driver is new enough and stays
        want_driver, driver_ok = f">= {desired.get('min_driver')} (kept)", True
    else:  # skip: no GPU here (or a CPU build), nothing to install
        want_driver, driver_ok = None, True
    return {
        "tensorflow": tf_row,
        "cuda": _compare(cuda, want_cuda, same_release(cuda, want_cuda)),
        "cudnn": _compare(cudnn, want_cudnn, same_release(cudnn, want_cudnn)),
        "driver": {**_compare(driver, want_driver, driver_ok), "action": action},
    }


def host_row(name: str, host: dict, changes: dict[str, list[str]]) -> dict:
    """One host's drift record: state (drift, in sync, failed, unreachable, not reached), versions, changes."""
    found = (host.get("data") or {}).get("drift")
    failures = [f"{f['task']}: {f['message']}" for f in host.get("failed_tasks") or []]
    row = {"host": name, "components": {}, "would_change": {role: list(tasks) for role, tasks in changes.items()},
           "changed_tasks": sum(len(tasks) for tasks in changes.values()), "problems": failures}
    if host.get("status") in ("failed", "unreachable"):
        return {**row, "state": host["status"]}
    if not found:  # the run stopped before this host's stack was read (another host failed the resolve play)
        return {**row, "state": "not reached"}
    if found.get("recorded_at"):  # its last converge stands: a run would skip the install (converge_check.yml)
        row["converge_recorded_at"] = found["recorded_at"]
    row["components"] = components(found.get("installed") or {}, found.get("desired") or {})
    row["python"] = {"installed": (found.get("installed") or {}).get("python"),
                     "desired": (found.get("desired") or {}).get("python")}
    drifting = row["changed_tasks"] > 0 or any(c["differs"] for c in row["components"].values())
    return {**row, "state": "drift" if drifting else "in sync"}


def rows(report: dict, changes: dict[str, dict[str, list[str]]]) -> list[dict]:
    return [host_row(name, host, changes.get(name, {})) for name, host in sorted(report["hosts"].items())]


def summary(found: list[dict]) -> str:
    drifting = sum(row["state"] == "drift" for row in found)
    text = f"{drifting} of {len(found)} host{'s' if len(found) != 1 else ''} drift"
    others = defaultdict(int)
    for row in found:
        if row["state"] not in ("drift", "in sync"):
            others[row["state"]] += 1
    return text + "".join(f", {count} {state}" for state, count in sorted(others.items()))


def cell(component: dict | None) -> str:
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


def table(found: list[dict], title: str) -> Table:
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
                    *(cell(row["components"].get(name)) for name in COMPONENTS), escape(changes))
    return out


def write_json(found: list[dict], report: dict, path: Path) -> Path:
    record = {"summary": summary(found), "drifting": [row["host"] for row in found if row["state"] == "drift"],
              "inventory": report.get("inventory"), "limit": report.get("limit"), "status": report.get("status"),
              "report": str(Path(report["run_dir"]) / "report.json"), "hosts": {row["host"]: row for row in found}}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return path


def add_arguments(parser) -> None:
    parser.add_argument("-i", "--inventory", default=DEFAULT_INVENTORY,
                        help=f"inventory file or directory, or 'host1,host2,' (default {DEFAULT_INVENTORY})")
    parser.add_argument("-l", "--limit", help="limit to hosts or groups (Ansible pattern)")
    parser.add_argument("-e", "--extra-vars", action="append", default=[], metavar="VARS",
                        help="key=value pairs, a YAML/JSON mapping, or @file (repeatable): desired settings for "
                             "every host (per-host settings belong in the inventory's host_vars)")
    parser.add_argument("-f", "--forks", type=positive, help="hosts worked on in parallel")
    parser.add_argument("--exit-code", action="store_true",
                        help=f"exit {EXIT_DRIFT} when a host drifts (default: 0 with or without drift)")


def show_problems(report: dict, out: Console) -> None:
    for name, host in report["hosts"].items():
        for failure in host["failed_tasks"]:
            out.print(f"[red]{name}[/red]: {escape(failure['task'] or '')}: {escape(failure['message'])}",
                      highlight=False)
    if report["status"] == "no hosts":
        out.print(f"[red]no host matched[/red] in {report['inventory']}"
                  f"{' with --limit ' + report['limit'] if report['limit'] else ''}", highlight=False)
    print_playbook_stopped(report)


def run(args, out: Console) -> int:
    root = project_root()
    plan = plan_mod.resolve(PLAN, root)
    options = RunOptions(inventory=args.inventory, limit=args.limit, check=True,
                         extravars=extravars.parse(args.extra_vars), forks=args.forks,
                         keep_runs=getattr(args, "keep_runs", None), command=getattr(args, "argv", None))
    recorder = ChangeRecorder()
    report, run_dir = run_plan(plan, root, options, recorder)
    found = rows(report, recorder.changes)
    if found:
        out.print(table(found, f"tfprov fleet drift: {summary(found)} (installed -> desired)"))
        out.print(summary(found), highlight=False)
        stood = sum(1 for row in found if row.get("converge_recorded_at"))
        if stood:
            out.print(f"{stood} host(s) read from their converge record: same inputs, same boot, nothing it "
                      "installed changed since, so a run would skip the install (-e tfprov_converge_reuse_hours=0 "
                      "looks at them in full)", highlight=False, soft_wrap=True)
    show_problems(report, out)
    path = write_json(found, report, run_dir / "fleet" / "drift.json")
    out.print(f"drift: {path}", highlight=False)
    out.print(f"report: {run_dir / 'report.json'}", highlight=False)
    if report["rc"]:
        return report["rc"]
    return EXIT_DRIFT if args.exit_code and any(row["state"] == "drift" for row in found) else 0
