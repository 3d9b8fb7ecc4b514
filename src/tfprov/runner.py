"""Hand each step of a plan to ansible-runner, feeding its events to the progress display and the report.

The run directory (.tfprov/runs/<stamp>-<plan>) keeps ansible-runner's artifacts and report.json, but never the
extra vars in clear: they reach ansible-playbook as `-e @file`, a 0600 file outside the run directory that is
deleted when the run ends, and ansible-runner is told not to write its env/ files.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import ansible_runner

from . import report as report_mod
from . import rundirs
from .errors import (
    EXIT_BAD_INPUT,
    EXIT_HOST_FAILED,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_NO_HOSTS,
    EXIT_OK,
    EXIT_UNREACHABLE,
    TfprovError,
)
from .plan import Plan, describe_playbook
from .progress import Progress
from .project import ansible_env
from .redact import Redactor, command_line


@dataclass
class RunOptions:
    inventory: str
    limit: str | None = None
    check: bool = False
    extravars: dict | None = None
    forks: int | None = None
    keep_runs: int | None = None  # None: TFPROV_KEEP_RUNS, else rundirs.DEFAULT_KEEP_RUNS
    command: list[str] | None = None  # tfprov's arguments, for the report (secrets in them masked)


def check_inventory(inventory: str, root: Path) -> str:
    """A path must exist (relative to the cwd, else to the checkout); 'host1,host2,' lists must name a host."""
    inventory = inventory.strip()
    if not inventory:
        raise TfprovError("the inventory is empty: give an inventory file or a host list such as 'node1,node2,'")
    if "," in inventory:
        if not any(host.strip() for host in inventory.split(",")):
            raise TfprovError(f"inventory {inventory!r} names no host")
        return inventory
    for candidate in (Path(inventory), root / inventory):
        if candidate.exists():
            return str(candidate.resolve())
    raise TfprovError(f"inventory {inventory} does not exist")


_ANSIBLE_ERROR = re.compile(r"^\s*(\[ERROR\]|ERROR!|\[WARNING\]: Failed to parse .* with 'auto' plugin)")
# ansible-playbook's own words when the inventory and --limit leave nothing to run on (it then exits 1).
_NO_HOSTS_TEXT = ("no hosts to target", "provided hosts list is empty")


def _stdout_lines(stdout: Path) -> list[str]:
    if not stdout.is_file():
        return []
    return stdout.read_text(encoding="utf-8", errors="replace").splitlines()


def ansible_errors(stdout: Path) -> list[str]:
    """Ansible's own error lines (a bad inventory, a syntax error): they come before any event.

    A plugin inventory that fails says why only in the 'auto' plugin's warning, so that line is kept too.
    """
    return [line.strip() for line in _stdout_lines(stdout) if _ANSIBLE_ERROR.match(line)][:5]


def says_no_hosts(stdout: Path) -> bool:
    return any(text in line for line in _stdout_lines(stdout) for text in _NO_HOSTS_TEXT)


def new_run_dir(root: Path, plan: str) -> Path:
    """A new, private directory; concurrent runs started in the same second each get their own."""
    return rundirs.stamped_dir(rundirs.runs_dir(root), plan)


@contextlib.contextmanager
def extravars_file(extravars: dict | None) -> Iterator[str | None]:
    """Extra vars as a 0600 JSON file outside the run directory, deleted afterwards; None when there are none."""
    if not extravars:
        yield None
        return
    fd, path = tempfile.mkstemp(prefix="tfprov-extravars-", suffix=".json")  # mode 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(extravars, handle, default=str)
        yield path
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def _env(root: Path) -> dict[str, str]:
    env = ansible_env(root)
    # ansible-playbook lives beside this interpreter (a venv not on PATH, say).
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    return env


def _scrub_command_file(artifacts: Path) -> None:
    """ansible-runner records this process's whole environment (cloud credentials included) beside the command
    line: keep only what tfprov and ansible-runner set for the run."""
    path = artifacts / "command"
    with contextlib.suppress(OSError, ValueError, AttributeError):
        record = json.loads(path.read_text(encoding="utf-8"))
        record["env"] = {key: value for key, value in (record.get("env") or {}).items()
                         if os.environ.get(key) != value}
        path.write_text(json.dumps(record), encoding="utf-8")


def outcome(hosts: dict, *, interrupted: bool, ansible_failed: bool, no_hosts: bool,
            refused: bool = False) -> tuple[str, int]:
    """(status, exit code) of a run, most severe first; the codes are those of errors.py.
    refused: the run stopped within the plan's checking plays (checks_first) with no host changed."""
    if interrupted:
        return "interrupted", EXIT_INTERRUPTED
    if any(host["failures"] for host in hosts.values()):
        if refused and not any(host["changed"] for host in hosts.values()):
            return "refused", EXIT_BAD_INPUT
        return "failed", EXIT_HOST_FAILED
    if any(host["dark"] for host in hosts.values()):
        return "unreachable", EXIT_UNREACHABLE
    if no_hosts and not hosts:
        return "no hosts", EXIT_NO_HOSTS
    if ansible_failed:
        # Refused before any host was worked on (an inventory it cannot parse, a bad --limit pattern) is bad
        # input; failing after hosts ran, with no host failure, is ansible-playbook's own trouble.
        return ("bad input", EXIT_BAD_INPUT) if not hosts else ("error", EXIT_INTERNAL)
    return "successful", EXIT_OK


def run_plan(plan: Plan, root: Path, options: RunOptions, progress: Progress,
             after: Callable[[dict, Path], None] | None = None) -> tuple[dict, Path]:
    """Run every step in order, stopping at the first that fails or finds no host. Returns (report, run_dir).
    after(report, run_dir): called once report.json is written, while the run directory is still in use (the
    commands write the run's page there: execute.run_plan)."""
    plan.check()
    inventory = check_inventory(options.inventory, root)
    keep = rundirs.keep_runs(options.keep_runs)
    run_dir = new_run_dir(root, plan.name)
    with rundirs.in_use(run_dir):
        rundirs.rotate(run_dir.parent, keep, current=run_dir)
        report, run_dir = _run_steps(plan, root, options, progress, inventory, run_dir)
        if after is not None:
            after(report, run_dir)
        return report, run_dir


def _run_steps(plan: Plan, root: Path, options: RunOptions, progress: Progress, inventory: str,
               run_dir: Path) -> tuple[dict, Path]:
    builder = report_mod.ReportBuilder(plan=plan.name)
    redactor = Redactor(options.extravars or {})
    env = _env(root)
    started = datetime.now(UTC)
    interrupted = ansible_failed = no_hosts = False

    def on_event(event: dict) -> bool:
        redactor.event(event)  # in place: ansible-runner writes this same dict to job_events/ after we return
        builder.on_event(event)
        progress.on_event(event)
        return True

    try:
        with progress, extravars_file(options.extravars) as vars_path:
            for index, step in enumerate(plan.steps, 1):
                progress.step(index, len(plan.steps), step.playbook.name)
                ident = f"{index:02d}-{step.playbook.stem}"
                args = ["-i", inventory, *(["--check"] if options.check else []),
                        *(["-e", f"@{vars_path}"] if vars_path else [])]
                artifacts = run_dir / "artifacts" / ident
                try:
                    result = ansible_runner.run(
                        private_data_dir=str(run_dir),
                        project_dir=str(root),
                        playbook=str(step.playbook),
                        limit=options.limit,
                        forks=options.forks,
                        cmdline=shlex.join(args),
                        envvars=env,
                        suppress_env_files=True,  # no env/extravars, env/envvars, env/cmdline
                        ident=ident,
                        quiet=True,
                        event_handler=on_event,
                    )
                finally:  # also when interrupted
                    _scrub_command_file(artifacts)
                    redactor.files(artifacts / "stdout", artifacts / "stderr")
                builder.add_step(step.playbook.name, result.rc, result.status, str(artifacts))
                if result.status == "canceled":
                    # ansible-runner takes SIGINT / SIGTERM itself while a step runs: it stops the playbook and
                    # returns "canceled" rather than raising KeyboardInterrupt. That is the user's Ctrl-C.
                    interrupted = True
                    break
                failed = result.rc != 0 or result.status != "successful"
                no_hosts = not builder.hosts and (builder.no_hosts_matched or says_no_hosts(artifacts / "stdout"))
                if failed:
                    ansible_failed = True
                    builder.steps[-1]["errors"] = [redactor.text(line) for line in ansible_errors(artifacts / "stdout")]
                if failed or no_hosts:
                    break
    except KeyboardInterrupt:
        interrupted = True
    finished = datetime.now(UTC)
    result = builder.to_dict(
        inventory=inventory,
        limit=options.limit,
        check=options.check,
        started=started.isoformat(),
        finished=finished.isoformat(),
        seconds=round((finished - started).total_seconds(), 2),
        run_dir=str(run_dir),
        command=redactor.text(command_line(options.command)) if options.command is not None else None,
        # Fewer plays started than planned: the run stopped before its end (any_errors_fatal, a failed step, an
        # interrupt), so hosts that were fine when it stopped never got the rest (--retry-failed reads this).
        planned_plays=sum(len(describe_playbook(step.playbook)) for step in plan.steps),
    )
    result["status"], result["rc"] = outcome(result["hosts"], interrupted=interrupted,
                                             ansible_failed=ansible_failed, no_hosts=no_hosts,
                                             refused=0 < len(result["plays"]) <= plan.checks_first)
    report_mod.write(result, run_dir / "report.json")
    return result, run_dir

