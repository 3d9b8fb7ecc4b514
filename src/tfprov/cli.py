"""tfprov: plan -> ansible-runner -> report. Every error ends in one line and a distinct exit code (below);
an unexpected one also leaves its traceback in .tfprov/logs/."""

from __future__ import annotations

import argparse
import os
import sys

from rich.console import Console
from rich.table import Table

from . import (
    __version__,
    bench,
    clouds,
    cluster,
    crashlog,
    extravars,
    fleet,
    fleet_drift,
    fleet_status,
    gate,
    idle,
    report_index,
    retry,
    services,
)
from . import job as job_cmd
from . import plan as plan_mod
from . import report as report_mod
from .errors import EXIT_INTERNAL, EXIT_INTERRUPTED, TfprovError, exit_codes_text
from .local import cloud as local_cloud
from .local import engine as local_engine
from .local import faults as local_faults
from .local import images as local_images
from .local import nodes as local_nodes
from .local import serving_image as local_serving_image
from .local import vms as local_vms
from .options import DEFAULT_INVENTORY, check_job_script, count, positive, print_playbook_stopped, print_refused, usd
from .progress import Progress
from .project import project_root
from .rundirs import DEFAULT_KEEP_RUNS, KEEP_RUNS_ENV
from .runner import RunOptions, run_plan

SSH_INVENTORY = "inventories/local_ssh.docker_containers.yml"
_STATUS_STYLE = {"ok": "green", "changed": "yellow", "failed": "red", "unreachable": "red", "not reached": "yellow"}
CLUSTER_PLAYBOOK = "cluster.yml"
STRATEGIES = ("multi_worker_mirrored", "parameter_server")
GATE_LEVELS = ("quick", "default", "deep")
GATE_PLAYBOOK = "tasks/gpu_gate.yml"
# A playbook that imports it skips the install on nodes whose last converge stands (tfprov run --full does not).
CONVERGE_CHECK_PLAYBOOK = "converge_check.yml"


_RUN_EPILOG = f"""\
Each run gets its own directory, .tfprov/runs/<UTC stamp>-<plan>[-N] (TFPROV_RUNS_DIR moves them): ansible-runner's
artifacts per step (stdout, job_events/) and report.json. Extra vars are never written there in clear. Only the newest
{DEFAULT_KEEP_RUNS} run directories are kept (--keep-runs or {KEEP_RUNS_ENV}; 0 keeps all).

{exit_codes_text()}"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tfprov", description=__doc__, epilog=exit_codes_text(),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"tfprov {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("plan", help="print the ordered steps a run would take")
    p.add_argument("name", help="plan name (tfprov plan --list)", nargs="?")
    p.add_argument("--list", action="store_true", help="list the plans")

    r = sub.add_parser("run", help="run a plan's playbooks through ansible-runner and write a report",
                       description="Run a plan's playbooks in order through ansible-runner and write a report.",
                       epilog=_RUN_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    r.add_argument("name", help="plan name, e.g. preflight")
    job = r.add_argument_group(
        "distributed TensorFlow (plans that run cluster.yml: tfprov run cluster)",
        "These become the extra vars dist_tf_cluster_job, dist_tf_cluster_job_args and tfprov_dist_strategy,\n"
        "and win over the same variables given with -e.")
    job.add_argument("--job", metavar="PATH",
                     help="your training script (.py), or a directory holding it, for the cluster's tasks to run with "
                          "TF_CONFIG set (default: the built-in distributed check, bench/dist_check.py)")
    job.add_argument("--job-arg", action="append", metavar="ARG",
                     help="an argument for the job (repeatable, in order); write --job-arg=--epochs=3 for one that "
                          "starts with '-'")
    job.add_argument("--strategy", choices=STRATEGIES,
                     help="tf.distribute strategy (default multi_worker_mirrored; parameter_server needs a tfprov_ps "
                          "node)")
    r.add_argument("--full", action="store_true",
                   help="install on every node, even where its last converge still stands (same inputs, same boot, "
                        "nothing changed since: plans that run gpu_node.yml skip the install there; "
                        "tfprov_converge_reuse_hours=0)")
    r.add_argument("--level", choices=GATE_LEVELS,
                   help="the admission gate's depth (tfprov_gate_level): quick (nvidia-smi and the kernel log; what "
                        "run node and run cluster end with), default (and DCGM's level 1 diagnostics where DCGM is "
                        "installed; what run gate does), deep (DCGM level 3 and the all-reduce bandwidth)")
    b = sub.add_parser("bench", help="run the GPU check and matmul bench on every node (the plan 'bench')",
                       epilog=_RUN_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    b.set_defaults(name="bench")
    for p in (r, b):
        # No default here: --retry-failed reuses the earlier run's inventory unless -i is given.
        p.add_argument("-i", "--inventory",
                       help=f"inventory file or 'host1,host2,' (default {DEFAULT_INVENTORY}; with --retry-failed, "
                            "the earlier run's)")
        p.add_argument("-l", "--limit", help="limit to hosts or groups (Ansible pattern)")
        p.add_argument("-C", "--check", action="store_true", help="check mode: report what would change")
        p.add_argument("-e", "--extra-vars", action="append", default=[], metavar="VARS",
                       help="key=value pairs, a YAML/JSON mapping, or @file (repeatable)")
        p.add_argument("-f", "--forks", type=positive, help="hosts worked on in parallel")
        p.add_argument("--keep-runs", type=count, metavar="N",
                       help=f"keep the newest N run directories, this one included (default ${KEEP_RUNS_ENV} "
                            f"or {DEFAULT_KEEP_RUNS}; 0 keeps all)")
        p.add_argument("--retry-failed", action="store_true",
                       help="only the hosts the newest run of this plan failed, could not reach or never reached "
                            "(from its report.json; within -l when given)")

    f = sub.add_parser("fleet", help="rolling updates, drift and status of a whole fleet")
    fleet_sub = f.add_subparsers(dest="fleet_command", required=True, metavar="ACTION")
    for action, module, text in (
            ("update", fleet, "a rolling update: canary, batches, failure budgets, a health gate per batch"),
            ("drift", fleet_drift, "what a run of the stack would change, per host (check mode, changes nothing)"),
            ("status", fleet_status, "per host: installed versions, last run, last bench figure")):
        a = fleet_sub.add_parser(action, help=text, description=(module.__doc__ or text).strip(), epilog=_RUN_EPILOG,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
        module.add_arguments(a)
        if not any("--keep-runs" in action_.option_strings for action_ in a._actions):
            a.add_argument("--keep-runs", type=count, metavar="N",
                           help=f"keep the newest N run directories (default ${KEEP_RUNS_ENV} or {DEFAULT_KEEP_RUNS})")
        a.set_defaults(fleet_run=module.run)

    j = sub.add_parser("job", help="a training job on nodes that exist only while it runs, recovered from a lost node",
                       description=(job_cmd.__doc__ or "").strip(),
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    job_cmd.add_arguments(j)

    for verb, text in (("up", "start a local cloud's node containers (a private network with an address per node, or "
                              "the host's network), or a cluster spec's AWS / GCP nodes (--spec)"),
                       ("down", "remove them")):
        u = sub.add_parser(verb, help=text)
        u.add_argument("target", choices=["local", *clouds.PROVIDERS],
                       help="local (container nodes), or aws / gcp (the nodes of a cluster spec: --spec)")
        u.add_argument("--spec", metavar="FILE",
                       help="aws / gcp: the cluster spec (YAML; examples/cloud/). up creates what is missing, after "
                            "resolving every node (credentials, zone offerings, quotas); down removes the cluster")
        _add_cloud_name(u)
        u.add_argument("--kind", choices=("container", "vm"), default="container",
                       help="local: container nodes (default), or vm: Debian 12 VMs under QEMU (real kernels, "
                            "reboots, cloud-init; cloud name 'vm' unless --name; see README)")
        if verb == "up":
            u.add_argument("--max-hourly-cost", type=usd, metavar="USD",
                           help="aws / gcp: refuse the spec, before anything is created, when its nodes cost more "
                                "than this many US dollars per hour (or when a price is unknown)")
            u.add_argument("-n", "--nodes", type=positive, default=3,
                           help="how many nodes (default 3). Their roles: 1 chief; 2 chief, worker; 3 chief, worker, "
                                "ps; 4 chief, worker, worker, ps; 5 the same and serving; more: more workers")
            u.add_argument("--suite", choices=local_images.SUITES,
                           help="Debian suite (default: the --image's own, else bookworm)")
            u.add_argument("--roles", help=f"comma-separated node roles, one per node, instead of the default layout, "
                                           f"e.g. chief,worker,worker,evaluator; roles: {', '.join(local_nodes.ROLES)}")
            u.add_argument("--image", metavar="NAME",
                           help="start the nodes from this image (one baked from a converged node: make baked-image "
                                "builds tfprov/node-baked:<suite>) instead of tfprov/node:<suite>; nodes from "
                                "another image are replaced. --kind vm: an image tfprov local bake made (its name "
                                "or path)")
            u.add_argument("--network", choices=local_cloud.NETWORKS,
                           help="private: a network namespace with a bridge, an address per node, the same ports on "
                                "every node, reached through a jump, no route out; host: the host's network, a port "
                                f"per node (default: what the cloud has, else {local_cloud.DEFAULT_NETWORK})")
            u.add_argument("--subnet", metavar="CIDR",
                           help="private network: the cloud's subnet (default 10.210.<slot>.0/24; node N is host "
                                f"{local_cloud.FIRST_HOST}+N, the gateway host 1)")

    rp = sub.add_parser("report", help="print the path of a run's page (report.html), writing it if missing",
                        description="Print the path of a run's report.html (one self-contained page: what ran where, "
                                    "durations, versions, failures, bench, gate, serving, cluster job, fleet, drift, "
                                    "cost) and refresh the runs' index.html.")
    rp.add_argument("run", nargs="?", default="latest",
                    help="latest (default), a run directory's name or its start (20261125T0612), or a path")
    rp.add_argument("--open", action="store_true", help="open the page in a browser, where one exists")

    lc = sub.add_parser("local", help="act on a local cloud: faults on demand")
    local_sub = lc.add_subparsers(dest="local_command", required=True, metavar="ACTION")
    fa = local_sub.add_parser("fault", help="cut, restore, stop, start, reboot, delay or rate-limit one node",
                              description=(local_faults.__doc__ or "").strip(),
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    fa.add_argument("node", help="the node's name (tfprov-<cloud>-N) or its index N")
    fa.add_argument("action", choices=local_faults.ACTIONS)
    _add_cloud_name(fa)
    fa.add_argument("--ms", type=count, default=0, help="delay: added latency in milliseconds (0 with --loss 0: "
                                                         "remove the shaping)")
    fa.add_argument("--loss", type=float, default=0.0, metavar="PERCENT", help="delay: packets lost, in percent")
    fa.add_argument("--mbit", type=float, default=0.0, help="rate: the link's rate into the node in Mbit/s (0: no "
                                                             "limit)")
    fa.add_argument("--no-wait", action="store_true", help="start, reboot: return at once instead of waiting for "
                                                           "systemd in the node")

    bk = local_sub.add_parser("bake", help="VM clouds: stop a VM and image its disk (after playbooks/bake_image.yml "
                                           "--tags generalize); tfprov up local --kind vm --image NAME boots from it")
    bk.add_argument("node", help="the VM's name (tfprov-<cloud>-N) or its index N")
    bk.add_argument("image", help="the image's name (kept under the download cache) or a path")
    _add_cloud_name(bk)

    e = sub.add_parser("engine", help="make sure a Docker engine with host-only networking runs")
    e.set_defaults(target=None)
    i = sub.add_parser("images", help="build the node images (cached)")
    i.add_argument("--suite", action="append", choices=local_images.SUITES, help="default: all suites")
    i.add_argument("--rebuild", action="store_true", help="build even if the image exists")
    i.add_argument("--serving", action="store_true",
                   help="also the stand-in TF Serving image and its archive (`tfprov up local` builds it for a "
                        "serving node when missing)")
    return parser


def _add_cloud_name(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--name", metavar="CLOUD",
                        help=f"local: which local cloud (default ${local_cloud.NAME_ENV} or "
                             f"{local_cloud.DEFAULT_NAME}); its nodes are tfprov-<CLOUD>-N, and the local inventories "
                             f"list the cloud named by ${local_cloud.NAME_ENV}")


def cmd_plan(args, out: Console) -> int:
    plans = plan_mod.load_plans()
    if args.list or not args.name:
        for name, spec in plans.items():
            print(f"{name:<10} {spec['description']}")
        return 0
    print(plan_mod.render(plan_mod.resolve(args.name, project_root(), plans)))
    return 0


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
    """--level as tfprov_gate_level, for the plans that run the admission gate (their playbooks import it)."""
    level = getattr(args, "level", None)
    if level is None:
        return {}
    if not any(GATE_PLAYBOOK in step.playbook.read_text() for step in plan.steps if step.playbook.is_file()):
        raise TfprovError(f"--level applies to plans that run the admission gate (gate, node, cluster, fleet), "
                          f"not {plan.name}")
    return {"tfprov_gate_level": level}


def full_extravars(args, plan: plan_mod.Plan) -> dict:
    """--full as tfprov_converge_reuse_hours=0, for the plans whose playbooks skip a converge that stands."""
    if not getattr(args, "full", False):
        return {}
    if not any(CONVERGE_CHECK_PLAYBOOK in step.playbook.read_text() for step in plan.steps if step.playbook.is_file()):
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
    out.print(summary_table(report))
    if report["plays"]:
        out.print(durations_table(report))
    stood = report_mod.converged(report)
    if stood:
        out.print(f"install skipped on {len(stood)} node(s) whose last converge still stands (same inputs, same boot, "
                  f"nothing it installed changed since; --full runs it all): "
                  f"{', '.join(f'{name} ({when})' for name, when in stood.items())}", highlight=False, soft_wrap=True)
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
    benches = bench.results(report)
    if benches:
        out.print(bench.table(benches))
        paths = bench.write_json(benches, run_dir / "bench")
        png = bench.plot(benches, run_dir / "bench" / "throughput.png")
        out.print(f"bench: {len(paths)} JSON file(s) and {png}", highlight=False)
    found = bench.checks(report)
    if found:
        out.print(bench.check_table(found))
    judged = gate.verdicts(report)
    if judged:
        out.print(gate.table(judged))
    models = services.serving(report)
    if models:
        out.print(services.serving_table(models))
    for line in services.notebook_lines(services.notebooks(report)):
        out.print(line, highlight=False, soft_wrap=True)
    cluster.show(report, run_dir / "cluster", out)
    idle.show(report, out)
    out.print(f"report: {run_dir / 'report.json'}", highlight=False)
    out.print(f"page: {run_dir / 'report.html'} (tfprov report latest)", highlight=False)
    return report["rc"]


def _cloud_args(args) -> bool:
    """True for aws / gcp; refuses options that belong to the other kind of target."""
    if args.target == "local":
        if args.spec:
            raise TfprovError("--spec is for tfprov up|down aws|gcp: the local cloud takes -n / --roles instead")
        return False
    if not args.spec:
        raise TfprovError(f"tfprov {args.command} {args.target} needs --spec FILE: a cluster spec (examples/cloud/)")
    given = [flag for flag in ("--roles", "--suite", "--image", "--name", "--network", "--subnet")
             if getattr(args, flag[2:], None)]
    if given:
        raise TfprovError(f"{given[0]} is for tfprov up local: for {args.target}, set it in the spec file")
    return True


def cmd_up(args, out: Console) -> int:
    if _cloud_args(args):
        return clouds.run("up", args.target, args.spec, out, max_hourly_cost=args.max_hourly_cost)
    if args.max_hourly_cost is not None:
        raise TfprovError("--max-hourly-cost is for tfprov up aws|gcp: local nodes cost nothing by the hour")
    roles = args.roles.split(",") if args.roles else None
    if args.kind == "vm":
        return _up_vms(args, roles, out)
    if local_vms.is_vm_cloud(args.name or local_cloud.default_name()):
        raise TfprovError(f"local cloud {args.name or local_cloud.default_name()} is a VM cloud: add --kind vm, or "
                          "give the container nodes another --name")
    nodes = local_nodes.up(args.nodes, args.suite, out, roles, args.image, args.name, args.network, args.subnet)
    cloud = nodes[0].cloud
    where = f"private network {cloud.subnet} in namespace {cloud.namespace}" if cloud.private else "host network"
    table = Table(title=f"local cloud {cloud.name}: {len(nodes)} node(s), {where}", title_justify="left")
    for column in ("node", "role", "suite", "address", "ssh", "tf port", "serving grpc", "serving rest"):
        table.add_column(column)
    for node in nodes:
        ports = node.ports
        table.add_row(node.name, node.role, node.suite, node.address, str(ports["ssh_port"]), str(ports["tf_port"]),
                      str(ports["serving_grpc_port"]), str(ports["serving_rest_port"]))
    out.print(table)
    out.print(f"image: {nodes[0].image_ref}", highlight=False)
    if cloud.name != local_cloud.default_name():
        out.print(f"the inventories below list this cloud with {local_cloud.NAME_ENV}={cloud.name}", highlight=False)
    out.print(f"inventory: {DEFAULT_INVENTORY} (docker exec, as root)", highlight=False)
    out.print(f"inventory: {SSH_INVENTORY} (SSH as {local_nodes.ssh.LOGIN_USER}, sudo)", highlight=False)
    return 0


def _up_vms(args, roles: list[str] | None, out: Console) -> int:
    given = [flag for flag in ("--suite", "--network", "--subnet") if getattr(args, flag[2:], None)]
    if given:
        raise TfprovError(f"{given[0]} is for container nodes: VMs boot Debian 12's cloud image on their own segment")
    base = local_vms.baked_path(args.image) if args.image else None
    cloud, vms = local_vms.up(args.nodes, roles, args.name, out, base)
    table = Table(title=f"local cloud {cloud.name}: {len(vms)} VM(s) under QEMU, segment {local_vms.SUBNET}.0/24",
                  title_justify="left")
    for column in ("node", "role", "address", "ssh (127.0.0.1)", "user"):
        table.add_column(column)
    for vm in vms:
        table.add_row(vm.name, vm.role, vm.address, str(vm.ssh_port), local_nodes.ssh.LOGIN_USER)
    out.print(table)
    out.print(f"inventory: {cloud.inventory.relative_to(project_root())} (SSH as {local_nodes.ssh.LOGIN_USER}, "
              "sudo; host keys from the consoles)", highlight=False)
    return 0


def cmd_down(args, out: Console) -> int:
    if _cloud_args(args):
        return clouds.run("down", args.target, args.spec, out)
    if args.kind == "vm" or local_vms.is_vm_cloud(args.name or local_cloud.default_name()):
        count = local_vms.down(args.name, out)
        out.print(f"local cloud {args.name or local_vms.DEFAULT_NAME}: {count} VM(s) removed", highlight=False)
        return 0
    count = local_nodes.down(out, args.name)
    out.print(f"local cloud {args.name or local_cloud.default_name()}: {count} node(s) removed", highlight=False)
    return 0


def cmd_local(args, out: Console) -> int:
    if args.local_command == "bake":
        local_vms.bake(args.name or local_vms.cloud_named_by(args.node) or local_vms.DEFAULT_NAME, args.node,
                       args.image, out)
        return 0
    if args.mbit < 0:
        raise TfprovError(f"--mbit {args.mbit:g}: give a rate in Mbit/s above 0, or 0 to remove the limit")
    local_faults.apply(args.name, args.node, args.action, out, delay_ms=args.ms, loss_percent=args.loss,
                       wait=not args.no_wait, rate_mbit=args.mbit)
    return 0


def cmd_engine(args, out: Console) -> int:
    local_engine.ensure_engine(out)
    out.print("Docker engine: running", highlight=False)
    return 0


def cmd_images(args, out: Console) -> int:
    local_engine.ensure_engine(out)
    for suite in args.suite or local_images.SUITES:
        local_images.build_image(suite, out, rebuild=args.rebuild)
    if args.serving:
        name, archive = local_serving_image.build_serving_image(None, out, rebuild=args.rebuild)
        out.print(f"serving image {name}: archive {archive}", highlight=False)
    return 0


def cmd_fleet(args, out: Console) -> int:
    return args.fleet_run(args, out)


COMMANDS = {"plan": cmd_plan, "run": cmd_run, "bench": cmd_run, "up": cmd_up, "down": cmd_down,
            "engine": cmd_engine, "images": cmd_images, "fleet": cmd_fleet, "local": cmd_local,
            "report": report_index.run, "job": job_cmd.run}


def main(argv: list[str] | None = None) -> int:
    """Exit codes: errors.EXIT_CODES. Nothing but a one-line message reaches stderr, whatever goes wrong."""
    args = None
    try:
        args = build_parser().parse_args(argv)
        args.argv = list(sys.argv[1:] if argv is None else argv)  # for the run's report (masked there)
        # Logs (CI, pipes) get 120 columns rather than Rich's 80, so host names and headings are not cut.
        out = Console(soft_wrap=True, width=None if sys.stdout.isatty() or "COLUMNS" in os.environ else 120)
        return COMMANDS[args.command](args, out)
    except TfprovError as exc:
        print(f"tfprov: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("tfprov: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:  # a bug: one line for the user, the traceback for the bug report
        return _internal_error(exc, getattr(args, "command", None))


def _internal_error(exc: Exception, command: str | None) -> int:
    try:
        where = f"traceback in {crashlog.write(exc, command)}"
    except Exception as log_exc:  # the log itself failed: still one line
        where = f"no traceback written: {crashlog.one_line(log_exc)}"
    print(f"tfprov: internal error: {crashlog.one_line(exc)} ({where})", file=sys.stderr)
    return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
