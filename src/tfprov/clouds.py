"""tfprov up|down aws|gcp --spec FILE: run the plans nodes_up / nodes_down on the controller and print the nodes.

The spec is checked here first (the same code the playbooks use), so a bad spec costs no Ansible start; the
playbooks check it again, then resolve credentials, offerings and quotas for every node before creating any.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table

from . import cloud_inventory, cost
from . import plan as plan_mod
from .errors import EXIT_OK, RunFailed, TfprovError
from .execute import run_plan
from .progress import Progress
from .project import ensure_collection_link, project_root
from .runner import RunOptions

PROVIDERS = ("aws", "gcp")
PLANS = {"up": "nodes_up", "down": "nodes_down"}
# The playbooks run on the controller only: no node inventory is needed (the API calls are local).
CONTROLLER_INVENTORY = "localhost,"
# One lock file per cluster: two `up`s (or an `up` and a `down`) of one spec on this machine would otherwise both
# find a node missing and both create it. EC2's idempotency token covers a call retried within one run.
LOCKS = ".tfprov/locks"


@contextlib.contextmanager
def cluster_lock(root: Path, provider: str, cluster: str):
    path = root / LOCKS / f"{provider}-{cluster}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            raise TfprovError(f"{provider} cluster {cluster} is being changed by {holder} on this machine: wait "
                              "for it to end, then run this again") from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"tfprov (pid {os.getpid()})")
        handle.flush()
        try:
            yield
        finally:
            handle.seek(0)
            handle.truncate()


class CloudRunFailed(RunFailed):
    """tfprov up|down aws|gcp refused or stopped inside its playbooks."""


def check_spec(path: str, provider: str, root: Path) -> dict:
    """The normalized spec, or a TfprovError naming the field to change."""
    spec_path = Path(path).expanduser()
    if not spec_path.is_file():
        raise TfprovError(f"--spec {path} does not exist: give the path of your cluster spec (see examples/cloud/)")
    collections = str(ensure_collection_link(root).parents[2])
    if collections not in sys.path:
        sys.path.insert(0, collections)
    from ansible_collections.tfprov.gpu.plugins.module_utils import cloud_spec, compat

    try:
        return cloud_spec.normalize(cloud_spec.load(str(spec_path)), compat.load_matrix(), provider)
    except cloud_spec.SpecError as exc:
        message = str(exc)  # the loader's own refusals already name the file
        named = message if message.startswith("cluster spec ") else f"cluster spec {path}: {message}"
        raise TfprovError(named) from None


def node_records(report: dict) -> dict[str, dict]:
    """{instance name: cloud_node record} from the set_stats of the run's steps (ansible-runner's job events)."""
    found: dict[str, dict] = {}
    for step in report.get("steps", []):
        for event_file in sorted(Path(step.get("artifacts", "")).glob("job_events/*.json")):
            try:
                event = json.loads(event_file.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if event.get("event") != "playbook_on_stats":
                continue
            hosts = (event.get("event_data", {}).get("artifact_data") or {}).get("tfprov_hosts") or {}
            for name, data in hosts.items():
                if isinstance(data, dict) and "cloud_node" in data:
                    found[name] = data["cloud_node"]
    return found


def node_table(verb: str, provider: str, cluster: str, records: dict[str, dict]) -> Table:
    title = f"{provider} cluster {cluster}: {len(records)} node(s) {'up' if verb == 'up' else 'removed'}"
    table = Table(title=title, title_justify="left")
    rows = []
    for name, rec in sorted(records.items()):
        gpu = f"{rec.get('gpu_count')} x {rec.get('gpu_model')}" if rec.get("gpu_model") else "-"
        rows.append((name, str(rec.get("role", "")), str(rec.get("type", "")), gpu, str(rec.get("zone", "")),
                     str(rec.get("address") or "-"), str(rec.get("private_address") or "-"), str(rec.get("id", "")),
                     str(rec.get("state", "")), "yes" if rec.get("created") in (True, "True", "true") else "no"))
    # Every cell is something to copy (names, addresses, ids, zones): none is cut; run() widens the output to fit.
    for index, column in enumerate(("node", "role", "type", "GPU", "zone", "address", "private", "id", "state",
                                    "created")):
        table.add_column(column, no_wrap=True, min_width=max([len(row[index]) for row in rows] + [len(column)]))
    for row in rows:
        table.add_row(*row)
    return table


def zone_lines(records: dict[str, dict]) -> list[str]:
    """One line per node that was stopped and has been started, per node that did not land in its first zone,
    and the zones used."""
    lines = [f"{name}: it was stopped: started" for name, rec in sorted(records.items())
             if rec.get("started") in (True, "True", "true")]
    for name, rec in sorted(records.items()):
        full = rec.get("full_zones") or []
        if full:
            lines.append(f"{name}: no capacity in {', '.join(full)}: used zone {rec.get('zone')}")
    zones = sorted({rec.get("zone") for rec in records.values() if rec.get("zone")})
    if zones:
        lines.append(f"zone(s) used: {', '.join(zones)}")
    return lines


def first_failure(report: dict) -> str | None:
    for host in report.get("hosts", {}).values():
        for failure in host.get("failed_tasks", []):
            return str(failure.get("message", "")).strip()
    return None


def run(verb: str, provider: str, spec_path: str, out: Console, extravars: dict | None = None,
        runner=None, max_hourly_cost: float | None = None, prices=None) -> int:
    if provider not in PROVIDERS:
        raise TfprovError(f"unknown cloud {provider!r}: use {' or '.join(PROVIDERS)}")
    root = project_root()
    spec = check_spec(spec_path, provider, root)
    if verb == "up":  # the price, and the refusal above --max-hourly-cost, before anything is created
        found = cost.spec_cost(spec, prices or cost.book())
        out.print(cost.spec_table(found, spec))
        for line in cost.spec_lines(found):
            out.print(line, highlight=False)
        cost.check_max(found, max_hourly_cost)
    plan = plan_mod.resolve(PLANS[verb], root)
    variables = dict(extravars or {}, tfprov_cloud_spec_file=str(Path(spec_path).expanduser().resolve()),
                     tfprov_cloud_provider=provider)
    with cluster_lock(root, provider, spec["name"]):
        report, run_dir = (runner or run_plan)(plan, root, RunOptions(inventory=CONTROLLER_INVENTORY,
                                                                      extravars=variables), Progress())
    records = node_records(report)
    if verb == "up" and report["rc"] == EXIT_OK:
        inventory = cloud_inventory.write(root, spec).relative_to(root)
    elif verb == "down" and report["rc"] == EXIT_OK:
        cloud_inventory.remove(root, provider, spec["name"])
    cloud_inventory.clear_caches(root, provider)
    if report["rc"] != EXIT_OK:
        message = first_failure(report) or next(
            (line for step in report.get("steps", []) for line in step.get("errors", [])), report["status"])
        # The first play of nodes_up / nodes_down only resolves or finds (plans.yml: checks_first): a failure there
        # is a refusal before anything was created or removed, and report.json says so too (status refused, rc 2).
        refused = report["status"] in ("refused", "bad input")
        code = report["rc"]
        where = ("nothing was created" if verb == "up" else "nothing was removed") if refused else \
            f"report: {run_dir / 'report.json'}"
        raise CloudRunFailed(f"tfprov {verb} {provider} refused: {message} ({where})" if refused else
                             f"tfprov {verb} {provider} stopped: {message} ({where})", code)
    table = node_table(verb, provider, spec["name"], records)
    out.print(table, width=max(out.width, out.measure(table, options=out.options.update_width(1000)).maximum),
              crop=False)
    for line in zone_lines(records) if verb == "up" else []:
        out.print(line, highlight=False)
    if verb == "up":
        out.print(f"inventory (this cluster only): ansible-inventory -i {inventory} --graph  "
                  f"(then: tfprov run cluster -i {inventory})", highlight=False)
    out.print(f"report: {run_dir / 'report.json'}", highlight=False)
    return EXIT_OK
