"""tfprov: plan -> ansible-runner -> report. Every error ends in one line and a distinct exit code (below);
an unexpected one also leaves its traceback in .tfprov/logs/."""

from __future__ import annotations

import argparse
import os
import sys

from rich.console import Console

from . import __version__, clouds, crashlog
from . import job as job_cmd
from .commands import fleet_drift, fleet_status, fleet_update
from .commands import local as local_cmd
from .commands import report as report_cmd
from .commands import run as run_cmd
from .commands.run import GATE_LEVELS, STRATEGIES
from .errors import EXIT_INTERNAL, EXIT_INTERRUPTED, TfprovError, exit_codes_text
from .local import cloud as local_cloud
from .local import faults as local_faults
from .local import images as local_images
from .local import nodes as local_nodes
from .options import DEFAULT_INVENTORY, count, positive, usd
from .project import project_root  # noqa: F401 - tests/cloud find the checkout through cli.project_root
from .rundirs import DEFAULT_KEEP_RUNS, KEEP_RUNS_ENV

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
            ("update", fleet_update, "a rolling update: canary, batches, failure budgets, a health gate per batch"),
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


def cmd_fleet(args, out: Console) -> int:
    return args.fleet_run(args, out)


COMMANDS = {"plan": run_cmd.cmd_plan, "run": run_cmd.cmd_run, "bench": run_cmd.cmd_run, "up": local_cmd.cmd_up,
            "down": local_cmd.cmd_down, "engine": local_cmd.cmd_engine, "images": local_cmd.cmd_images,
            "fleet": cmd_fleet, "local": local_cmd.cmd_local, "report": report_cmd.run, "job": job_cmd.run}


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
