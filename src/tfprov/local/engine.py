"""The Docker engine behind the local cloud, kept off the host's network: no docker0 bridge, no NAT rules."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

from rich.console import Console

from ..errors import TfprovError
from .commands import apt_install, is_root, run

# Settings that keep an engine off the host's network: no docker0 bridge, no NAT rules.
SAFE_DAEMON = {"bridge": "none", "iptables": False, "ip-forward": False, "ip-masq": False}
DAEMON_JSON = Path(os.environ.get("TFPROV_DOCKER_DAEMON_JSON", "/etc/docker/daemon.json"))


def engine_running() -> bool:
    if not shutil.which("docker"):
        return False
    return subprocess.run(["docker", "info", "--format", "{{.ServerVersion}}"],
                          capture_output=True).returncode == 0


def read_daemon_json(path: Path | None = None) -> dict:
    """The engine's settings; a file that is not a JSON object is the user's to fix, said in one line."""
    path = path or DAEMON_JSON
    if not path.is_file():
        return {}
    try:
        current = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise TfprovError(f"{path} is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}): "
                          "fix it or move it away, then run tfprov engine again") from None
    except UnicodeDecodeError:
        raise TfprovError(f"{path} is not UTF-8 text: fix it or move it away") from None
    if not isinstance(current, dict):
        raise TfprovError(f"{path} holds a JSON {type(current).__name__}, not an object of settings: "
                          "fix it or move it away")
    return current


def write_safe_daemon_json(path: Path | None = None) -> bool:
    """Merge the host-only settings into daemon.json before any engine starts. True if it changed."""
    path = path or DAEMON_JSON
    current = read_daemon_json(path)
    merged = {**current, **SAFE_DAEMON}
    if merged == current:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(merged, indent=2) + "\n", encoding="utf-8")
    return True


def ensure_engine(console: Console) -> None:
    """A running engine is used as it is; otherwise, as root, install Debian's docker.io and start it."""
    if engine_running():
        return
    if not is_root():
        raise TfprovError("no Docker engine is running and tfprov is not root: start one "
                          "(dockerd with bridge none and iptables off) or run `tfprov engine` as root")
    if write_safe_daemon_json():
        console.print(f"wrote host-only networking settings to {DAEMON_JSON}")
    if not shutil.which("dockerd"):
        apt_install(console, "docker.io")
    if engine_running():  # the package's own service may have started it, with our settings
        return
    if Path("/run/systemd/system").is_dir():
        run(["systemctl", "start", "docker"], "systemctl start docker")
    else:
        log = open("/var/log/tfprov-dockerd.log", "ab")  # noqa: SIM115 - the daemon keeps it
        subprocess.Popen(["dockerd"], stdout=log, stderr=log, start_new_session=True)
    console.print("starting the Docker engine")
    for _ in range(60):
        if engine_running():
            return
        time.sleep(1)
    raise TfprovError("the Docker engine did not start within 60 s: see /var/log/tfprov-dockerd.log")
