"""`tfprov plan` and `tfprov run` (and `tfprov bench`, the plan bench): a plan's steps, or its run through
execute.run_plan, the run's own flags checked against what the plan does, and the views it names drawn."""

from __future__ import annotations

from rich.console import Console

from .. import extravars, retry
from .. import plan as plan_mod
from ..errors import TfprovError
from ..execute import run_plan
from ..options import DEFAULT_INVENTORY, check_job_script
from ..progress import Progress
from ..project import project_root
from ..runner import RunOptions
from ..terminal import show_run

CLUSTER_PLAYBOOK = "cluster.yml"
STRATEGIES = ("multi_worker_mirrored", "parameter_server")
GATE_LEVELS = ("quick", "default", "deep")


def cmd_plan(args, out: Console) -> int:
    plans = plan_mod.load_plans()
    if args.list or not args.name:
        for name, spec in plans.items():
            print(f"{name:<10} {spec['description']}")
        return 0
    print(plan_mod.render(plan_mod.resolve(args.name, project_root(), plans)))
    return 0


def job_extravars(args, plan: plan_mod.Plan, extra: dict | None = None) -> dict:
    """--job, --job-arg and --strategy as the extra vars the dist_tf_cluster role reads; only for plans that run
    cluster.yml, and only the ones given (so -e can still set the others). extra: the -e vars."""
    given = {"--job": getattr(args, "job", None), "--job-arg": getattr(args, "job_arg", None),
             "--strategy": getattr(args, "strategy", None)}
    given = {flag: value for flag, value in given.items() if value is not None}
    if not given:
        return {}
    if not any(step.playbook.name == CLUSTER_PLAYBOOK for step in plan.steps):
        raise TfprovError(f"{next(iter(given))} applies to plans that run {CLUSTER_PLAYBOOK} (tfprov run cluster)")
    found = {}
    if "--job" in given:
        found["dist_tf_cluster_job"] = str(check_job_script(given["--job"], "--job"))
    if "--job-arg" in given:
        if "--job" not in given and not (extra or {}).get("dist_tf_cluster_job"):
            # The built-in check would run and the arguments would be dropped without a word.
            raise TfprovError("--job-arg is for your own job: give it with --job FILE (the built-in distributed "
                              "check takes no arguments; its steps and batch are -e dist_tf_cluster_check_steps / "
                              "dist_tf_cluster_check_batch)")
        found["dist_tf_cluster_job_args"] = list(given["--job-arg"])
    if "--strategy" in given:
        found["tfprov_dist_strategy"] = given["--strategy"]
    return found


def gate_extravars(args, plan: plan_mod.Plan) -> dict:
    """--level as tfprov_gate_level, for the plans that run the admission gate (their views name it)."""
    level = getattr(args, "level", None)
    if level is None:
        return {}
    if "gate" not in plan.views:
        raise TfprovError(f"--level applies to plans that run the admission gate (gate, node, cluster, fleet), "
                          f"not {plan.name}")
    return {"tfprov_gate_level": level}


def full_extravars(args, plan: plan_mod.Plan) -> dict:
    """--full as tfprov_converge_reuse_hours=0, for the plans that skip a converge that stands (their views name
    converge)."""
    if not getattr(args, "full", False):
        return {}
    if "converge" not in plan.views:
        raise TfprovError(f"--full applies to plans that can skip a converge that stands (node), not {plan.name}: "
                          "this one runs everything every time")
    return {"tfprov_converge_reuse_hours": 0}


def cmd_run(args, out: Console) -> int:
    root = project_root()
    plan = plan_mod.resolve(args.name, root)
    # The dedicated flags win over -e: they are the more specific way to say the same thing.
    variables = extravars.parse(args.extra_vars)
    variables |= job_extravars(args, plan, variables)
    variables |= gate_extravars(args, plan)
    variables |= full_extravars(args, plan)
    if args.retry_failed and not retry.apply(args, root, plan.name, DEFAULT_INVENTORY,
                                             lambda line: out.print(line, highlight=False)):
        return 0
    inventory = DEFAULT_INVENTORY if args.inventory is None else args.inventory
    options = RunOptions(inventory=inventory, limit=args.limit, check=args.check,
                         extravars=variables, forks=args.forks, keep_runs=args.keep_runs, command=args.argv)
    report, run_dir = run_plan(plan, root, options, Progress())
    show_run(report, run_dir, plan.views, out)
    return report["rc"]
