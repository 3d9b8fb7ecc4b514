"""tfprov job run|status|logs: a training job on nodes that exist only while it runs.

run: nodes up from the job spec -> `run cluster` with the user's script (TF_CONFIG on every task, the shared
directory in TFPROV_SHARED_DIR) -> each task's log collected into the job's directory -> nodes removed, also when
the job fails or the user presses Ctrl-C (--keep keeps them). A member lost during the job (stopped, preempted,
removed) is said on screen, the surviving tasks are stopped, the nodes are brought up again (the lost one replaced
with the same name, role and task index) and the job is started again: it resumes from its last checkpoint in the
shared directory. --max-restarts bounds that.

The job's record (.tfprov/runs/jobs/<id>/job.json): its steps, restarts and the time each cost, wall time, the runs it
made, where the outputs went, and what became of the nodes. `job status` and `job logs` read it from another terminal.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from . import job_outcome, rundirs
from . import plan as plan_mod
from .errors import EXIT_INTERRUPTED, EXIT_OK, EXIT_UNREACHABLE, RunFailed, TfprovError
from .execute import run_plan
from .job_nodes import JobNodes, nodes_for
from .job_spec import load as load_spec
from .options import check_job_script, count
from .progress import Progress
from .project import project_root
from .runner import RunOptions

JOBS = "jobs"  # beside the run directories (rundirs.runs_dir), which rotation and the index leave alone
WATCH_SECONDS = 2.0
DEFAULT_GRACE = 300  # --unreachable-grace
PROBE_SECONDS = 5.0  # between two asks whether every node answers again


def add_arguments(parser) -> None:
    sub = parser.add_subparsers(dest="job_command", required=True, metavar="ACTION")
    r = sub.add_parser("run", help="nodes up, the cluster converged, your script run on every task, nodes removed")
    r.add_argument("--spec", required=True, metavar="FILE",
                   help="the job spec (YAML: provider local, aws or gcp, its nodes, job.shared_dir; examples/jobs/)")
    r.add_argument("script", help="your training script (.py), or a directory holding train.py")
    r.add_argument("--job-arg", action="append", default=[], metavar="ARG",
                   help="an argument for the script (repeatable, in order); --job-arg=--epochs=3 for one that "
                        "starts with '-'")
    r.add_argument("--keep", action="store_true", help="keep the nodes when the job ends (default: remove them)")
    r.add_argument("--max-restarts", type=count, default=3, metavar="N",
                   help="recoveries from a lost node or an infrastructure error (the network, a node that did not "
                        "answer) before the job fails (default 3; 0: fail at the first)")
    r.add_argument("--max-restarts-on-errors", type=count, default=0, metavar="N",
                   help="runs again after the job's own error (an exception in the script, a non-zero exit on a "
                        "healthy cluster) (default 0: never, running it again does not fix the script)")
    r.add_argument("--unreachable-grace", type=count, default=DEFAULT_GRACE, metavar="SECONDS",
                   help="how long a node that still runs but stopped answering gets to answer again before the "
                        f"job fails; it is kept if it does, never replaced while it runs (default {DEFAULT_GRACE})")
    for action, text in (("status", "the newest job (or JOB): its state, steps, restarts and nodes"),
                         ("logs", "each task's log of the newest job (or --job JOB), read from its nodes now")):
        a = sub.add_parser(action, help=text)
        if action == "status":
            a.add_argument("job", nargs="?", help="a job id (.tfprov/runs/jobs/<id>); default the newest")
        else:
            a.add_argument("task", nargs="?", help="one task, e.g. worker-1 or chief-0 (default every task)")
            a.add_argument("--job", help="a job id (.tfprov/runs/jobs/<id>); default the newest")


def run(args, out: Console) -> int:
    return {"run": cmd_run, "status": cmd_status, "logs": cmd_logs}[args.job_command](args, out)


# --- the record ---------------------------------------------------------------------------------------------------


class JobRecord:
    """job.json, rewritten at every change so that `job status` in another terminal sees the job as it is."""

    def __init__(self, directory: Path, data: dict):
        self.directory = directory
        self.data = data

    @classmethod
    def new(cls, root: Path, spec: dict, script: str, args: list[str]) -> JobRecord:
        directory = rundirs.stamped_dir(rundirs.runs_dir(root) / JOBS, spec["name"])
        record = cls(directory, {"id": directory.name, "name": spec["name"], "provider": spec["provider"],
                                 "script": script, "args": args, "pid": os.getpid(), "state": "starting",
                                 "started": _now(), "steps": [], "restarts": [], "nodes": [],
                                 "shared_dir": spec["job"]["shared_dir"]})
        record.write()
        return record

    def step(self, name: str, **fields) -> None:
        self.data["steps"].append({"step": name, "at": _now(), **fields})
        self.write()

    def set(self, **fields) -> None:
        self.data.update(fields)
        self.write()

    def write(self) -> None:
        tmp = self.directory / "job.json.tmp"
        tmp.write_text(json.dumps(self.data, indent=2) + "\n")
        tmp.replace(self.directory / "job.json")


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def find_record(root: Path, job: str | None) -> JobRecord:
    base = rundirs.runs_dir(root) / JOBS
    if job:
        directory = base / job
    else:
        found = sorted(p for p in base.glob("*/job.json")) if base.is_dir() else []
        if not found:
            raise TfprovError(f"no job has run here yet ({base} is empty): start one with tfprov job run --spec FILE "
                              "SCRIPT")
        directory = found[-1].parent
    if not (directory / "job.json").is_file():
        raise TfprovError(f"no job {job!r} in {base}: tfprov job status lists the newest")
    return JobRecord(directory, json.loads((directory / "job.json").read_text()))


# --- run ----------------------------------------------------------------------------------------------------------


class Watcher:
    """Polls the nodes while the job runs; on the first member lost, says so and stops the survivors' tasks (so
    that none waits for the lost one until a collective times out)."""

    def __init__(self, nodes: JobNodes, say: Callable[[str], None], stop_survivors: Callable[[list[str]], None]):
        self.nodes, self.say, self.stop_survivors = nodes, say, stop_survivors
        self.lost: list[str] = []
        self.lost_at: float | None = None
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> Watcher:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._done.set()
        self._thread.join(timeout=30)

    def _loop(self) -> None:
        while not self._done.wait(WATCH_SECONDS):
            try:
                lost = self.nodes.lost()
            except TfprovError:  # the engine did not answer this once: ask again at the next poll
                continue
            if lost:
                self.lost, self.lost_at = lost, time.monotonic()
                self.say(f"lost {', '.join(lost)} during the job: stopping the other tasks")
                self.stop_survivors(lost)
                return


def cmd_run(args, out: Console, runner=None, nodes_factory=nodes_for) -> int:
    root = project_root()
    spec = load_spec(args.spec, root)
    script = check_job_script(args.script, "script")
    record = JobRecord.new(root, spec, str(script), list(args.job_arg))
    try:
        nodes = nodes_factory(spec, record.directory, out)  # a cloud spec is checked here, before anything exists
    except TfprovError as exc:
        record.set(state="refused", error=str(exc))
        raise

    def say(text: str) -> None:
        out.print(f"job {record.data['id']}: {text}", highlight=False)

    say(f"{spec['provider']} nodes {', '.join(nodes.planned())}; record {record.directory / 'job.json'}")
    started = time.monotonic()
    rc = EXIT_OK
    try:
        rc = _run_job(args, spec, script, record, nodes, runner or run_plan, say, root)
    except KeyboardInterrupt:
        say("interrupted (Ctrl-C)")
        record.set(state="interrupted")
        rc = EXIT_INTERRUPTED
    except TfprovError as exc:
        record.set(state="failed", error=str(exc))
        say(f"failed: {exc}")
        rc = exc.exit_code
    finally:
        seconds = round(time.monotonic() - started, 1)
        record.set(seconds=seconds, **_cost(nodes, seconds))
        _end_nodes(args.keep, nodes, record, say)
    return rc


def _cost(nodes: JobNodes, seconds: float) -> dict:
    """The nodes' price per hour and what the job's wall time cost at it (from up to the end of the job; the removal's
    minutes are not counted), where the price is known."""
    try:
        hourly = nodes.hourly()
    except Exception as exc:  # noqa: BLE001 - a price that cannot be read is unknown, never a failed job
        return {"hourly_usd": None, "cost_usd": None, "cost_note": f"price unknown: {type(exc).__name__}"}
    if hourly is None:
        return {"hourly_usd": None, "cost_usd": None, "cost_note": "price unknown for a node type"}
    return {"hourly_usd": hourly, "cost_usd": round(hourly * seconds / 3600, 4)}


def _run_job(args, spec: dict, script: Path, record: JobRecord, nodes: JobNodes, runner, say, root: Path) -> int:
    plan = plan_mod.resolve("cluster", root)
    variables = {"dist_tf_cluster_job": str(script), "dist_tf_cluster_job_args": list(args.job_arg),
                 "dist_tf_cluster_shared_dir": nodes.node_shared_dir,
                 "tfprov_dist_strategy": spec["job"]["strategy"],
                 "dist_tf_cluster_job_timeout": spec["job"]["timeout"]}
    record.set(state="nodes up")
    t0 = time.monotonic()
    nodes.up()
    record.step("nodes up", seconds=round(time.monotonic() - t0, 1), nodes=nodes.planned())
    record.set(nodes=nodes.planned(), inventory=nodes.inventory, env=nodes.env, state="running")
    def stop_survivors(lost: list[str]) -> None:
        _stop_tasks(nodes, exclude=lost, directory=record.directory)

    attempt, own_errors = 0, 0
    while True:
        attempt += 1
        say(f"attempt {attempt}: converging the cluster and running {script.name} on every task")
        t0 = time.monotonic()
        with Watcher(nodes, say, stop_survivors) as watcher:
            report, run_dir = runner(plan, root, RunOptions(inventory=nodes.inventory, extravars=variables,
                                                            command=["job", "run", str(script)]), Progress())
        seen_at = watcher.lost_at or time.monotonic()
        if report["status"] == "interrupted":
            record.step("run cluster", attempt=attempt, seconds=round(time.monotonic() - t0, 1),
                        run_dir=str(run_dir), status=report["status"], rc=report["rc"], lost=[])
            raise KeyboardInterrupt
        node_states = {} if report["rc"] == EXIT_OK else _node_states(nodes, watcher.lost, report, say)
        outcome = job_outcome.classify(job_outcome.report_tasks(report), node_states, run_failed=report["rc"] != 0)
        lost = sorted(node for node, state in node_states.items() if state in job_outcome.NODE_LOST_STATES)
        record.step("run cluster", attempt=attempt, seconds=round(time.monotonic() - t0, 1), run_dir=str(run_dir),
                    status=report["status"], rc=report["rc"], lost=lost, cause=outcome["cause"],
                    evidence=outcome["evidence"])
        _add_restart_overhead(record, report, time.monotonic() - t0)
        if report["rc"] == EXIT_OK:
            break
        cause = outcome["cause"]
        record.set(outcome=outcome)
        if cause == job_outcome.SETUP_FAILED:
            record.set(state="failed", error=_first_failure(report))
            say(f"the job failed: {_first_failure(report)} (report: {run_dir / 'report.html'})")
            _collect_logs(nodes, record, say)
            return report["rc"]
        if cause == job_outcome.JOB_ERROR:
            if own_errors >= args.max_restarts_on_errors:
                message = (f"the job failed by itself ({outcome['summary']}); not run again "
                           f"(--max-restarts-on-errors {args.max_restarts_on_errors})")
                record.set(state="failed", error=message)
                say(f"{message} (report: {run_dir / 'report.html'})")
                _collect_logs(nodes, record, say)
                return report["rc"]
            own_errors += 1
            say(f"{outcome['summary']}: running it again on the same nodes as --max-restarts-on-errors "
                f"{args.max_restarts_on_errors} asks ({own_errors} of {args.max_restarts_on_errors})")
            _add_recovery(record, outcome, attempt, seen_at, replaced=[], reasons={})
            continue
        restarts = len([r for r in record.data["restarts"] if r.get("cause") != job_outcome.JOB_ERROR])
        if restarts >= args.max_restarts:
            _collect_logs(nodes, record, say)  # from the members still up: why they stopped
            what = (f"lost {', '.join(lost)} during the job" if cause == job_outcome.NODE_LOST
                    else outcome["summary"].split("; ")[0])
            raise RunFailed(f"{what} and --max-restarts {args.max_restarts} allows no more recoveries "
                            f"(report: {run_dir / 'report.html'})", report["rc"])
        if cause == job_outcome.INFRASTRUCTURE:
            say(f"recovery {restarts + 1} of at most {args.max_restarts}: {outcome['summary']}; waiting for every "
                f"node to answer (at most {args.unreachable_grace} s), then running the job again on the same nodes "
                "from its last checkpoint")
            gone = _wait_answering(nodes, args.unreachable_grace, say)
            if gone:  # the cloud says they are gone after all: replace them below
                lost = sorted(gone)
                node_states.update(gone)
                cause = job_outcome.NODE_LOST
            else:
                _add_recovery(record, outcome, attempt, seen_at, replaced=[], reasons={})
                continue
        reasons = {node: _replace_reason(node_states.get(node, "stopped")) for node in lost}
        say(f"recovery {restarts + 1} of at most {args.max_restarts}: replacing {', '.join(lost)} (same name, role "
            f"and task index; {'; '.join(f'{n}: {r}' for n, r in reasons.items())}); the job resumes from its last "
            "checkpoint in the shared directory")
        t_recover = time.monotonic()
        nodes.up()
        if cause != outcome["cause"]:  # gone while tfprov waited for it to answer
            evidence = [{"node": n, "task": None, "line": reasons[n]} for n in lost]
            outcome = {**outcome, "cause": cause, "retry": True, "evidence": evidence,
                       "summary": job_outcome.summary(cause, evidence)}
        _add_recovery(record, outcome, attempt, seen_at, replaced=lost, reasons=reasons,
                      replace_seconds=round(time.monotonic() - t_recover, 1))
    record.data.pop("outcome", None)  # an earlier run's failure, recovered from: the recoveries keep it
    record.set(state="succeeded")
    say(f"the job succeeded on every task (attempts {attempt}, restarts {len(record.data['restarts'])})")
    _collect_logs(nodes, record, say)
    say(f"outputs: {spec['job']['shared_dir']}")
    return EXIT_OK


def _replace_reason(state: str) -> str:
    return f"the provider says it is {state}"


def _add_recovery(record: JobRecord, outcome: dict, attempt: int, seen_at: float, replaced: list[str],
                  reasons: dict[str, str], replace_seconds: float | None = None) -> None:
    """One recovery in the record: its cause and evidence, what was replaced and why, and the seconds it cost from
    the moment the end was seen to the job running again."""
    lost = replaced or []
    entry = {"cause": outcome["cause"], "summary": outcome["summary"], "evidence": outcome["evidence"],
             "lost": lost, "replaced": lost, "reasons": reasons, "at": _now(), "attempt": attempt,
             "seconds_lost": round(time.monotonic() - seen_at, 1)}
    entry["wait_seconds"] = entry["seconds_lost"]  # the job's next run adds the seconds before its job started
    if replace_seconds is not None:
        entry.update(replace_seconds=replace_seconds, seconds_to_replacement=entry["seconds_lost"])
    record.data["restarts"].append(entry)
    record.write()


def _add_restart_overhead(record: JobRecord, report: dict, run_seconds: float) -> None:
    """The run after a recovery: the seconds it spent before the job ran again (the cluster converged again, the
    servers up) count as lost to that recovery too."""
    restarts = record.data["restarts"]
    if not restarts or "wait_seconds" not in restarts[-1] or "job_again_after" in restarts[-1]:
        return
    job_seconds = [t.get("seconds") for t in job_outcome.report_tasks(report) if isinstance(t.get("seconds"),
                                                                                            int | float)]
    if not job_seconds:
        return
    before_job = round(max(0.0, run_seconds - max(job_seconds)), 1)
    last = restarts[-1]
    last.update(job_again_after=before_job, seconds_lost=round(last["wait_seconds"] + before_job, 1))
    record.write()


def _node_states(nodes: JobNodes, watched: list[str], report: dict, say) -> dict[str, str]:
    """The nodes that were not simply up during a failed run, and what the provider says of them now: lost
    (stopped, terminated, removed) or still running though they did not answer (unreachable)."""
    try:
        lost = set(watched) | set(nodes.lost())
    except TfprovError:
        lost = set(watched)
    suspects = sorted(lost | set(_unreachable(report)))
    if not suspects:
        return {}
    try:
        states = nodes.states(suspects)
    except TfprovError as exc:  # the provider did not answer: a node it cannot vouch for is not replaced now
        say(f"could not ask the provider about {', '.join(suspects)}: {exc}")
        states = {}
    found = {}
    for node in suspects:
        state = states.get(node, "stopped" if node in lost else "running")
        if state in ("running", "pending"):
            found[node] = "unreachable"
            say(f"{node} did not answer during the run, but it runs: it is kept")
        else:
            found[node] = state if state in job_outcome.NODE_LOST_STATES else "stopped"
    return found


def _wait_answering(nodes: JobNodes, grace: float, say) -> dict[str, str]:
    """Until every node answers over SSH again, at most `grace` seconds. Returns the nodes the provider says are
    gone meanwhile ({node: state}: they are to be replaced); a node that still runs and does not answer in time
    fails the job (it is not replaced while it runs)."""
    deadline = time.monotonic() + grace
    while True:
        answers = nodes.answering()
        # A node the inventory no longer lists (the cloud took it back, a container removed); none listed at all is
        # Ansible failing to ask, which proves nothing about the nodes: ask again.
        missing = [name for name in nodes.planned()
                   if answers and not any(host == name or host.startswith(f"{name}_") for host in answers)]
        silent = sorted(host for host, ok in answers.items() if not ok) + missing if answers else nodes.planned()
        if not silent:
            say("every node answers: running the job again on the same nodes")
            return {}
        try:  # the provider decides whether a silent node is gone; it never is for not answering alone
            gone = {n: s for n, s in nodes.states(silent).items() if s in job_outcome.NODE_LOST_STATES}
        except TfprovError as exc:
            say(f"could not ask the provider about {', '.join(silent)}: {exc}")
            gone = {}
        if gone:
            return gone
        if time.monotonic() >= deadline:
            one = len(silent) == 1
            raise RunFailed(f"{', '.join(silent)} still run{'s' if one else ''} but did not answer within "
                            f"--unreachable-grace {grace:g} s: not replaced while running; check "
                            f"{'it' if one else 'them'}, or remove {'it' if one else 'them'} and run the job again",
                            EXIT_UNREACHABLE)
        say(f"waiting for {', '.join(silent)} to answer ({max(0.0, deadline - time.monotonic()):.0f} s left)")
        time.sleep(PROBE_SECONDS)


def _unreachable(report: dict) -> list[str]:
    return sorted(host for host, data in report.get("hosts", {}).items() if data.get("status") == "unreachable")


def _first_failure(report: dict) -> str:
    for host, data in report.get("hosts", {}).items():
        for failure in data.get("failed_tasks", []):
            return f"{host}: {failure['task']}: {failure['message']}"
    return report.get("status", "failed")


def _tfprov() -> list[str]:
    return [sys.executable, "-m", "tfprov.cli"]


def _stop_tasks(nodes: JobNodes, exclude: list[str], directory: Path) -> None:
    """`tfprov run job_stop` in a process of its own (the job's run is still going in this one)."""
    limit = ",".join(f"!{name}" for name in exclude) or "all"
    with open(directory / "stop-tasks.log", "a") as log:
        subprocess.run([*_tfprov(), "run", "job_stop", "-i", nodes.inventory, "-l", f"all,{limit}"],
                       cwd=project_root(), env={**os.environ, **nodes.env}, stdout=log, stderr=subprocess.STDOUT,
                       check=False)


def _read_logs(inventory: str, env: dict, logs: Path) -> subprocess.CompletedProcess:
    """`tfprov run job_logs`: every reachable member's job log into logs/TYPE-INDEX.log."""
    logs.mkdir(exist_ok=True)
    return subprocess.run([*_tfprov(), "run", "job_logs", "-i", inventory, "-e",
                           json.dumps({"dist_tf_cluster_logs_dir": str(logs)})], cwd=project_root(),
                          env={**os.environ, **env}, capture_output=True, text=True, check=False)


def _collect_logs(nodes: JobNodes, record: JobRecord, say) -> None:
    """Each task's log into the job's directory (logs/TYPE-INDEX.log), before the nodes go."""
    logs = record.directory / "logs"
    proc = _read_logs(nodes.inventory, nodes.env, logs)
    found = sorted(p.name for p in logs.glob("*.log"))
    shared_logs = nodes.local_logs_dir()
    if shared_logs and found:  # with the job's outputs, where the shared directory is on this machine
        shared_logs.mkdir(parents=True, exist_ok=True)
        for name in found:
            shutil.copyfile(logs / name, shared_logs / name)
    record.set(logs=str(logs), log_files=found)
    say(f"task logs: {logs} ({', '.join(found) or 'none: ' + (proc.stderr.strip() or 'see its run')})")


def _end_nodes(keep: bool, nodes: JobNodes, record: JobRecord, say) -> None:
    """Remove the nodes (or keep them with --keep), saying which; a second Ctrl-C must not leave them behind."""
    previous = signal.signal(signal.SIGINT, lambda *_: say("removing the nodes: wait, they would be left behind"))
    try:
        if keep:
            if record.data["state"] == "interrupted":  # the nodes stay; the job must not go on alone on them
                _stop_tasks(nodes, exclude=nodes.lost(), directory=record.directory)
            say(f"nodes kept (--keep): {', '.join(nodes.planned())}; remove them with {nodes.down_command}")
            record.set(nodes_fate="kept")
            return
        say(f"removing the nodes: {', '.join(nodes.planned())}")
        try:
            nodes.down()
        except TfprovError as exc:
            record.set(nodes_fate=f"removal failed: {exc}")
            say(f"the nodes were NOT all removed: {exc}; remove them with {nodes.down_command}")
            raise
        record.set(nodes_fate="removed")
        say("nodes removed")
    finally:
        signal.signal(signal.SIGINT, previous)


# --- status and logs ----------------------------------------------------------------------------------------------


def cmd_status(args, out: Console) -> int:
    record = find_record(project_root(), args.job)
    data = record.data
    state = data["state"]
    if state in ("starting", "nodes up", "running") and not rundirs.pid_alive(data.get("pid", 0)):
        state = f"{state} (its tfprov process {data.get('pid')} is gone: the job was cut off)"
    out.print(f"job {data['id']}: {state}", highlight=False)
    out.print(f"  script {data['script']} {' '.join(data['args'])}".rstrip(), highlight=False)
    out.print(f"  nodes ({data['provider']}): {', '.join(data['nodes']) or '-'}"
              + (f"; {data['nodes_fate']}" if data.get("nodes_fate") else ""), highlight=False)
    for step in data["steps"]:
        extra = f" attempt {step['attempt']}: {step['status']}" if "attempt" in step else ""
        if step.get("cause") and step["cause"] != job_outcome.SUCCEEDED:
            extra += f", {job_outcome.cause_text(step['cause'])}"
        out.print(f"  {step['at']} {step['step']}{extra} ({step.get('seconds', '-')} s)", highlight=False)
    for number, restart in enumerate(data["restarts"], 1):
        out.print(f"  {_recovery_text(number, restart)}", highlight=False, markup=False)
    if "seconds" in data:
        price = (f"; nodes at ${data['hourly_usd']:.4f}/h: ${data['cost_usd']:.4f}" if data.get("cost_usd") is not None
                 else f"; cost: {data.get('cost_note', 'unknown')}")
        out.print(f"  wall time {data['seconds']} s{price}", highlight=False)
    out.print(f"  outputs: {data['shared_dir']}" + (f"; logs {data['logs']}" if data.get("logs") else ""),
              highlight=False)
    outcome = data.get("outcome")
    if outcome and data["state"] == "failed":
        out.print(f"  why it ended: {job_outcome.cause_text(outcome['cause'])}", highlight=False)
        for item in outcome.get("evidence") or []:
            out.print(f"    {job_outcome.evidence_text(item)}", highlight=False, markup=False)
    if data.get("error"):
        out.print(f"  [red]{escape(data['error'])}[/red]", highlight=False)
    return EXIT_OK


def _recovery_text(number: int, restart: dict) -> str:
    """recovery N: its cause and evidence, what was replaced and why (or that no node was), the seconds it cost."""
    cause = restart.get("cause", job_outcome.NODE_LOST)  # records written before causes were kept
    evidence = restart.get("evidence") or []
    why = job_outcome.cause_text(cause)
    if evidence and cause != job_outcome.NODE_LOST:
        more = f" (and {len(evidence) - 1} more)" if len(evidence) > 1 else ""
        why += f" ({job_outcome.evidence_text(evidence[0])}{more})"
    lost = restart.get("replaced", restart.get("lost")) or []
    if lost:
        reasons = restart.get("reasons") or {}
        what = "replaced " + ", ".join(f"{n} ({reasons[n]})" if reasons.get(n) else n for n in lost)
        what += (f"; replacement up {restart['seconds_to_replacement']} s after the loss was seen (its up: "
                 f"{restart['replace_seconds']} s)" if "replace_seconds" in restart else "")
    else:
        what = "no node replaced, the job run again on the same nodes"
    lost_seconds = f"; {restart['seconds_lost']} s lost" if "seconds_lost" in restart else ""
    if "job_again_after" in restart:
        lost_seconds += (f" ({restart['wait_seconds']} s to recover, {restart['job_again_after']} s for the cluster "
                         "to run the job again)")
    return f"recovery {number} at attempt {restart.get('attempt', '?')}: {why}; {what}{lost_seconds}"


def cmd_logs(args, out: Console) -> int:
    """A running job's logs are read from its nodes now; an ended one's from what it collected before its nodes went."""
    record = find_record(project_root(), args.job)
    data = record.data
    running = data["state"] in ("nodes up", "running") and rundirs.pid_alive(data.get("pid", 0))
    if running:
        logs = record.directory / "logs-now"
        proc = _read_logs(data["inventory"], data.get("env", {}), logs)
        why = proc.stderr.strip()[-200:] or "see tfprov report latest"
    elif data.get("log_files"):
        logs, why = Path(data["logs"]), ""
    else:
        raise TfprovError(f"job {data['id']} is {data['state']} and collected no task log"
                          + (" (it never ran)" if not data.get("inventory") else ""))
    files = sorted(logs.glob("*.log"))
    if args.task:
        tasks = ", ".join(f.stem for f in files) or "none reachable now"
        files = [f for f in files if f.stem == args.task]
        if not files:
            raise TfprovError(f"no task {args.task} in job {data['id']}: its tasks are {tasks}")
    if not files:
        raise TfprovError(f"no task log could be read from job {data['id']}'s nodes ({why})")
    if not running:
        out.print(f"job {data['id']} is {data['state']}: the logs it collected in {logs}", highlight=False)
    for path in files:
        out.print(f"==> {path.stem} <==", highlight=False)
        out.print(path.read_text(), highlight=False, markup=False, end="")
    return EXIT_OK
