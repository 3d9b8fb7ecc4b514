"""Running the host's commands (docker, apt-get, debootstrap) so that a failure is one TfprovError line."""

from __future__ import annotations

import os
import subprocess

from rich.console import Console

from ..errors import TfprovError


def run(cmd: list[str], what: str, **kwargs) -> subprocess.CompletedProcess:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    except FileNotFoundError as exc:
        raise TfprovError(f"{what}: {cmd[0]} is not installed") from exc
    if proc.returncode != 0:
        detail = (proc.stderr or proc.stdout).strip().splitlines()
        raise TfprovError(f"{what} failed: {detail[-1] if detail else 'exit ' + str(proc.returncode)}")
    return proc


def docker(*args: str, what: str = "docker", stdin: str | None = None) -> str:
    return run(["docker", *args], what, input=stdin).stdout.strip()


def is_root() -> bool:
    return os.geteuid() == 0


def apt_install(console: Console, *packages: str) -> None:
    console.print(f"installing {' '.join(packages)} with apt-get")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    wait = ["-o", "DPkg::Lock::Timeout=600"]  # CI's lanes install at the same time (Chromium, docker.io)
    run(["apt-get", *wait, "update", "-qq"], "apt-get update", env=env)
    run(["apt-get", *wait, "install", "-y", "-qq", *packages], f"apt-get install {' '.join(packages)}", env=env)
