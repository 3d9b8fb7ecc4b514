"""An unexpected exception is a bug: its traceback goes to a log file, the user gets one line pointing there."""

from __future__ import annotations

import os
import tempfile
import traceback
from datetime import UTC, datetime
from pathlib import Path

from . import __version__
from .project import project_root

KEEP_LOGS = 20


def logs_dir() -> Path:
    """TFPROV_LOGS_DIR, else .tfprov/logs in the checkout, else (no checkout found) the temporary directory."""
    if env := os.environ.get("TFPROV_LOGS_DIR"):
        return Path(env)
    try:
        return project_root() / ".tfprov" / "logs"
    except Exception:  # the log must be written whatever broke
        return Path(tempfile.gettempdir()) / "tfprov-logs"


def write(exc: BaseException, command: str | None) -> Path:
    """Write the traceback (never the arguments: they may hold secrets) and return the log's path."""
    folder = logs_dir()
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S.%fZ")
    path = folder / f"{stamp}-{os.getpid()}-internal-error.log"
    text = "".join(traceback.format_exception(exc))
    path.write_text(f"tfprov {__version__}, command: {command or '?'}\n{text}", encoding="utf-8")
    for old in sorted(folder.glob("*-internal-error.log"))[:-KEEP_LOGS]:
        old.unlink(missing_ok=True)
    return path


def one_line(exc: BaseException) -> str:
    what = " ".join(str(exc).split()) or "(no message)"
    return f"{exc.__class__.__name__}: {what}"[:300]
