"""`tfprov fleet drift`: per host, the installed driver, CUDA, cuDNN and TensorFlow beside the desired ones (the
resolve play's tfprov_stack, from the inventory's variables), and what a run of the stack would change.

It is the plan `drift` (playbooks/fleet_drift.yml) in check mode, always: that playbook refuses any other run. What
would change is the stack's own check-mode verdict (its changed tasks, by role), so drift means exactly "a run of
`tfprov run node` would do something here". Where that run would skip the install (the node's last converge still
stands), the node's record says what it has and was asked for, and nothing would change. Exit 0 with or without
drift; --exit-code makes drift exit 6.
"""

from __future__ import annotations

from collections import defaultdict

from rich.console import Console

from .. import extravars
from .. import plan as plan_mod
from ..execute import run_plan
from ..fleet_drift import rows, summary, write_json
from ..options import DEFAULT_INVENTORY, positive
from ..progress import Progress
from ..project import project_root
from ..runner import RunOptions
from ..terminal import drift_table, show_problems

PLAN = "drift"
EXIT_DRIFT = 6  # --exit-code only: the run succeeded and at least one host drifts


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
        out.print(drift_table(found, f"tfprov fleet drift: {summary(found)} (installed -> desired)"))
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
