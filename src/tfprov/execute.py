"""A plan's run as every command makes it: runner.run_plan, then the run's page (report.html) and the runs' index
(report_index.write_pages) written before the run directory is let go. The runner itself knows no page."""

from __future__ import annotations

from pathlib import Path

from . import report_index, runner
from .plan import Plan
from .progress import Progress
from .runner import RunOptions


def run_plan(plan: Plan, root: Path, options: RunOptions, progress: Progress) -> tuple[dict, Path]:
    return runner.run_plan(plan, root, options, progress, after=report_index.write_pages)
