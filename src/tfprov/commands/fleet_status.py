"""`tfprov fleet status`: per host, what is installed (read from the nodes by the read-only plan `status`), the last
run that could have changed it, that run's result there, the last bench figure and, where the idle report recorded
it, how long the node has been idle; the last three come from the run reports (.tfprov/runs/*/report.json).

Read-only runs (the plans status and drift, and any --check run) are not "the last run": they changed nothing.
"""

from __future__ import annotations

from rich.console import Console

from .. import plan as plan_mod
from .. import rundirs
from ..execute import run_plan
from ..fleet_status import load_reports, rows, write_json
from ..options import DEFAULT_INVENTORY, positive
from ..progress import Progress
from ..project import project_root
from ..runner import RunOptions
from ..terminal import show_problems, status_table

PLAN = "status"


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
                         keep_runs=getattr(args, "keep_runs", None), command=getattr(args, "argv", None))
    # Read the history first: this run's own rotation (--keep-runs) may remove the oldest run directories.
    history = load_reports(rundirs.runs_dir(root))
    report, run_dir = run_plan(plan, root, options, Progress())
    found = rows(report, history)
    if found:
        out.print(status_table(found))
    show_problems(report, out)
    out.print(f"status: {write_json(found, run_dir / 'fleet' / 'status.json')}", highlight=False)
    return report["rc"]
