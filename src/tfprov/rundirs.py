"""Where run directories live, which one a run is using, and rotating old ones away."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from .errors import TfprovError

DEFAULT_KEEP_RUNS = 20
KEEP_RUNS_ENV = "TFPROV_KEEP_RUNS"
RUN_DIR = re.compile(r"^(\d{8}T\d{6}Z)-")  # new_run_dir's names; nothing else in the folder is touched
_PID_FILE = "tfprov.pid"


def runs_dir(root: Path) -> Path:
    return Path(os.environ.get("TFPROV_RUNS_DIR") or root / ".tfprov" / "runs")


def keep_runs(option: int | None) -> int:
    """--keep-runs, else TFPROV_KEEP_RUNS, else 20; 0 keeps every run."""
    if option is not None:
        return option
    value = os.environ.get(KEEP_RUNS_ENV, "").strip()
    if not value:
        return DEFAULT_KEEP_RUNS
    if not value.isdigit():
        raise TfprovError(f"{KEEP_RUNS_ENV}={value!r}: expected a whole number (0 keeps every run)")
    return int(value)


@contextlib.contextmanager
def in_use(run_dir: Path) -> Iterator[None]:
    """Mark a run directory as in use by this process, so that a concurrent run's rotation leaves it alone."""
    marker = run_dir / _PID_FILE
    marker.write_text(str(os.getpid()), encoding="utf-8")
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            marker.unlink()


def _running(run_dir: Path) -> bool:
    """A run that is still going (its process is alive) is not rotated away, however old."""
    try:
        pid = int((run_dir / _PID_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return pid_alive(pid)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, but another user's
        return True
    return True


def stamped_dir(base: Path, name: str) -> Path:
    """A new, private directory base/<UTC stamp>-<name>[-N]; processes started in the same second each get their own
    (mkdir is atomic)."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    base.mkdir(parents=True, exist_ok=True, mode=0o700)
    for suffix in itertools.count(1):
        path = base / (f"{stamp}-{name}" if suffix == 1 else f"{stamp}-{name}-{suffix}")
        try:
            path.mkdir(mode=0o700)
        except FileExistsError:
            continue
        return path
    raise AssertionError("unreachable")


def rotate(base: Path, keep: int, current: Path) -> list[Path]:
    """Delete all but the newest `keep` run directories (the current one counts, and is never deleted)."""
    if keep <= 0 or not base.is_dir():
        return []
    runs = []
    for path in base.iterdir():
        match = RUN_DIR.match(path.name)
        if match and path.is_dir() and not path.is_symlink() and path != current:
            with contextlib.suppress(OSError):
                runs.append(((match.group(1), path.stat().st_mtime_ns), path))
    runs.sort(reverse=True)
    removed = []
    for _, path in runs[max(keep - 1, 0):]:
        if _running(path):
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed


def reports(base: Path) -> list[tuple[Path, dict]]:
    """(run directory, its report.json) for every readable report under base, newest first (by its start, else
    the directory's name); a run still going, or killed before its report, has none."""
    found = []
    for directory in base.iterdir() if base.is_dir() else []:
        if not RUN_DIR.match(directory.name):
            continue
        try:
            report = json.loads((directory / "report.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(report, dict) and isinstance(report.get("hosts"), dict):
            report.setdefault("run_dir", str(directory))
            found.append((str(report.get("started") or ""), directory.name, directory, report))
    return [(directory, report) for _, _, directory, report in sorted(found, key=lambda item: item[:2],
                                                                        reverse=True)]
