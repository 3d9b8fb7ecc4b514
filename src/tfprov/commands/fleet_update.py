"""`tfprov fleet update`: the plan `fleet` (playbooks/fleet_update.yml), a rolling update with a canary, batches and
failure budgets, and its per-host table: batch, result (updated, unchanged, failed, not reached), reason, versions
before -> after. The table's JSON is run_dir/fleet/update.json."""

from __future__ import annotations

import re

from rich.console import Console
from rich.markup import escape

from .. import extravars, retry
from .. import plan as plan_mod
from ..errors import TfprovError
from ..execute import run_plan
from ..fleet import rows, stop_reason, summary, write_json
from ..options import DEFAULT_INVENTORY, positive, print_refused
from ..progress import Progress
from ..project import project_root
from ..runner import RunOptions
from ..terminal import fleet_table, show_problems

PLAN = "fleet"
_SIZE = re.compile(r"^(\d+)(%?)$")


def _size(value: str, flag: str, *, zero: bool = False, percent_only: bool = False) -> str:
    match = _SIZE.match(value.strip())
    if not match or (percent_only and not match.group(2) and int(match.group(1)) > 100):
        shape = "a percentage (25%)" if percent_only else "a number of hosts (2) or a percentage (25%)"
        raise TfprovError(f"{flag} {value!r}: give {shape}")
    number = int(match.group(1))
    if match.group(2) and number > 100:
        raise TfprovError(f"{flag} {value!r}: a percentage must be at most 100%")
    if number < (0 if zero else 1):
        raise TfprovError(f"{flag} {value!r}: must be at least {0 if zero else 1}")
    return f"{number}%" if match.group(2) or percent_only else str(number)


def update_extravars(args) -> dict:
    """The rolling update's options as the playbook's extra vars (refused here, before any run, when malformed)."""
    batches = [_size(part, "--batch") for part in args.batch.split(",")] if args.batch.strip() else []
    if not batches:
        raise TfprovError("--batch is empty: give a size (2), a percentage (25%) or a list (1,2,5)")
    return {
        "tfprov_fleet_canary": int(_size(str(args.canary), "--canary", zero=True)),
        "tfprov_fleet_batch": [int(b) if b.isdigit() else b for b in batches],
        "tfprov_fleet_max_fail": _size(args.max_fail, "--max-fail", zero=True),
        "tfprov_fleet_batch_max_fail": _size(args.batch_max_fail, "--batch-max-fail", zero=True, percent_only=True),
    }


def add_arguments(parser) -> None:
    parser.add_argument("-i", "--inventory",
                        help=f"inventory file or directory, or 'host1,host2,' (default {DEFAULT_INVENTORY}; with "
                             "--retry-failed, the earlier run's)")
    parser.add_argument("-l", "--limit", help="limit to hosts or groups (Ansible pattern)")
    parser.add_argument("--canary", default="1", metavar="N",
                        help="hosts updated first, alone, as the first batch (default 1; 0: no canary)")
    parser.add_argument("--batch", default="25%", metavar="N|N%|A,B,..",
                        help="hosts per batch after the canary: a count, a percentage of the fleet, or a list of "
                             "sizes whose last repeats (default 25%%)")
    parser.add_argument("--max-fail", default="0", metavar="N|N%",
                        help="failures allowed across the whole fleet before the update stops (default 0)")
    parser.add_argument("--batch-max-fail", default="0", metavar="N%",
                        help="share of one batch allowed to fail before the update stops (default 0%%)")
    parser.add_argument("-e", "--extra-vars", action="append", default=[], metavar="VARS",
                        help="key=value pairs, a YAML/JSON mapping, or @file (repeatable), e.g. "
                             "tensorflow_gpu_version=2.20.0")
    parser.add_argument("-C", "--check", action="store_true", help="check mode: report what would change")
    parser.add_argument("-f", "--forks", type=positive, help="hosts worked on in parallel")
    parser.add_argument("--retry-failed", action="store_true",
                        help="only the hosts the newest fleet update failed, could not reach or stopped before")


def run(args, out: Console) -> int:
    root = project_root()
    plan = plan_mod.resolve(PLAN, root)
    # The dedicated flags win over -e: they are the more specific way to say the same thing.
    variables = extravars.parse(args.extra_vars) | update_extravars(args)
    if args.retry_failed and not retry.apply(args, root, PLAN, DEFAULT_INVENTORY,
                                             lambda line: out.print(line, highlight=False)):
        return 0
    inventory = DEFAULT_INVENTORY if args.inventory is None else args.inventory
    options = RunOptions(inventory=inventory, limit=args.limit, check=args.check,
                         extravars=variables, forks=args.forks, keep_runs=getattr(args, "keep_runs", None),
                         command=getattr(args, "argv", None))
    report, run_dir = run_plan(plan, root, options, Progress())
    found = rows(report)
    if found:
        out.print(fleet_table(found, f"tfprov fleet update: {summary(found)} in {report['seconds']} s"))
    if stop_reason(found):
        out.print(f"[red]{escape(stop_reason(found))}[/red]", highlight=False)
    show_problems(report, out)
    print_refused(report)
    path = write_json(found, report, run_dir / "fleet" / "update.json")
    out.print(f"fleet update: {path}", highlight=False)
    out.print(f"report: {run_dir / 'report.json'}", highlight=False)
    return report["rc"]
