"""A real moto_server on 127.0.0.1 for tests and benchmarks (dummy keys: nothing reaches AWS)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path


def free_port(ports: range, skip: tuple[int, ...] = ()) -> int:
    """The first port of `ports` nothing listens on (each caller has its own range, so runs side by side never meet)."""
    for port in ports:
        if port in skip:
            continue
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {ports.start}-{ports.stop - 1}")


def start(port: int, log: Path | None = None, timeout: float = 60) -> subprocess.Popen:
    """moto_server on 127.0.0.1:port, once it listens; its output goes to `log` (else nowhere)."""
    out = open(log, "wb") if log else subprocess.DEVNULL  # noqa: SIM115 (the child keeps it)
    proc = subprocess.Popen([str(Path(sys.executable).parent / "moto_server"), "-H", "127.0.0.1", "-p", str(port)],
                            stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            break
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return proc
        time.sleep(0.2)
    proc.kill()
    tail = log.read_text(errors="replace")[-500:] if log else ""
    raise RuntimeError(f"moto_server did not listen on 127.0.0.1:{port} within {timeout:.0f} s {tail}".strip())


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
