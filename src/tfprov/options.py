"""What several commands share: the default inventory, the whole-number option types, the check of a user's job
script, and the one line printed when ansible-playbook stopped before (or outside) any host's task."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .errors import TfprovError

DEFAULT_INVENTORY = "inventories/local.docker_containers.yml"


def whole_number(minimum: int, below: str):
    """argparse type: a whole number of at least `minimum`; `below` is what a smaller one is told."""
    def parse(value: str) -> int:
        try:
            number = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{value!r} is not a whole number") from None
        if number < minimum:
            raise argparse.ArgumentTypeError(below)
        return number
    return parse


positive = whole_number(1, "must be at least 1")  # forks, node counts
count = whole_number(0, "must be 0 or more")  # runs kept, milliseconds


def check_job_script(given: str, label: str) -> Path:
    """A user's job (`run cluster --job`, `job run`): a Python script, or a directory holding one; its absolute path.
    label: how the refusals name it."""
    path = Path(given).expanduser()
    if not path.exists():
        raise TfprovError(f"{label} {path} does not exist")
    if path.is_file() and path.suffix != ".py":
        raise TfprovError(f"{label} {path} is not a Python script (.py): give the script or a directory holding it")
    if path.is_dir() and not any(path.glob("*.py")):
        raise TfprovError(f"{label} {path} is a directory without a Python script (.py)")
    return path.resolve()


def usd(value: str) -> float:
    """argparse type: an amount of US dollars above zero ('12.5', '$12.50')."""
    try:
        amount = float(value.strip().lstrip("$"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not an amount of dollars, e.g. 12.50") from None
    if not amount > 0 or amount == float("inf"):
        raise argparse.ArgumentTypeError("must be above 0")
    return amount


def print_refused(report: dict) -> None:
    """A run refused within its checking plays (status refused): one line, the first reason, and that nothing
    changed."""
    if report["status"] != "refused":
        return
    reason = next((f"{name}: {failure['message']}" for name, host in report["hosts"].items()
                   for failure in host["failed_tasks"]), "see the report")
    print(f"tfprov: error: refused before any change: {reason} (no host was changed; fix the setting and run "
          f"again)", file=sys.stderr)


def print_playbook_stopped(report: dict) -> None:
    """When ansible-playbook refused or crashed outside any host's task, its first error is the one line."""
    if report["status"] not in ("bad input", "error"):
        return
    errors = [line for step in report["steps"] for line in step.get("errors", [])]
    first = next((line for line in errors if "ERROR" in line), errors[0] if errors else "see its stdout")
    print(f"tfprov: error: ansible-playbook stopped: {first} ({report['steps'][-1]['artifacts']}/stdout)",
          file=sys.stderr)
