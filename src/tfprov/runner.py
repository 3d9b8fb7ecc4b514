"""Hand each step of a plan to ansible-runner, feeding its events to the progress display and the report."""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import ansible_runner

from . import report as report_mod
from .errors import TfprovError
from .plan import Plan
from .progress import Progress
from .project import ansible_env


@dataclass
class RunOptions:
    inventory: str
    limit: str | None = None
    check: bool = False
    extravars: dict | None = None
    forks: int | None = None


def check_inventory(inventory: str, root: Path) -> str:
    """A path must exist (relative to the cwd, else to the checkout); 'host1,host2,' lists pass as they are."""
    if "," in inventory:
        return inventory
    for candidate in (Path(inventory), root / inventory):
        if candidate.exists():
            return str(candidate.resolve())
    raise TfprovError(f"inventory {inventory} does not exist")


def ansible_errors(stdout: Path) -> list[str]:
    """Ansible's own error lines (a bad inventory, a syntax error): they come before any event.

    A plugin inventory that fails says why only in the 'auto' plugin's warning, so that line is kept too.
    """
    if not stdout.is_file():
        return []
    lines = stdout.read_text(encoding="utf-8", errors="replace").splitlines()
    pattern = re.compile(r"^\s*(\[ERROR\]|ERROR!|\[WARNING\]: Failed to parse .* with 'auto' plugin)")
    return [line.strip() for line in lines if pattern.match(line)][:5]


def new_run_dir(root: Path, plan: str) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    base = Path(os.environ.get("TFPROV_RUNS_DIR", root / ".tfprov" / "runs"))
    run_dir = base / f"{stamp}-{plan}"
    suffix = 1
    while run_dir.exists():
        suffix += 1
        run_dir = base / f"{stamp}-{plan}-{suffix}"
    run_dir.mkdir(parents=True)
    return run_dir


def _env(root: Path) -> dict[str, str]:
    env = ansible_env(root)
    # ansible-playbook lives beside this interpreter (a venv not on PATH, say).
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    return env


def run_plan(plan: Plan, root: Path, options: RunOptions, progress: Progress) -> tuple[dict, Path]:
    """Run every step in order, stopping at the first that fails. Returns (report, run_dir)."""
    missing = plan.missing()
    if missing:
        names = ", ".join(s.playbook.name for s in missing)
        raise TfprovError(f"plan '{plan.name}' needs playbooks this checkout does not have yet: {names}")
    inventory = check_inventory(options.inventory, root)
    run_dir = new_run_dir(root, plan.name)
    builder = report_mod.ReportBuilder(plan=plan.name)
    started = datetime.now(UTC)
    rc, status = 0, "successful"

    def on_event(event: dict) -> bool:
        builder.on_event(event)
        progress.on_event(event)
        return True

    try:
        with progress:
            for index, step in enumerate(plan.steps, 1):
                progress.step(index, len(plan.steps), step.playbook.name)
                ident = f"{index:02d}-{step.playbook.stem}"
                result = ansible_runner.run(
                    private_data_dir=str(run_dir),
                    project_dir=str(root),
                    playbook=str(step.playbook),
                    inventory=inventory,
                    limit=options.limit,
                    forks=options.forks,
                    extravars=options.extravars or {},
                    cmdline="--check" if options.check else None,
                    envvars=_env(root),
                    ident=ident,
                    quiet=True,
                    event_handler=on_event,
                )
                artifacts = run_dir / "artifacts" / ident
                builder.add_step(step.playbook.name, result.rc, result.status, str(artifacts))
                if result.rc != 0 or result.status != "successful":
                    rc, status = result.rc or 1, result.status
                    builder.steps[-1]["errors"] = ansible_errors(artifacts / "stdout")
                    break
    except KeyboardInterrupt:
        rc, status = 130, "interrupted"
    finished = datetime.now(UTC)
    result = builder.to_dict(
        inventory=inventory,
        limit=options.limit,
        check=options.check,
        started=started.isoformat(),
        finished=finished.isoformat(),
        seconds=round((finished - started).total_seconds(), 2),
        status=status,
        rc=rc,
        run_dir=str(run_dir),
    )
    if not result["hosts"] and rc == 0:
        result["status"], result["rc"] = "no hosts", 3
    report_mod.write(result, run_dir / "report.json")
    return result, run_dir
