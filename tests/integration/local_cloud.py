"""What several integration tests ask of the local cloud: a node's label, a fault on demand, what a log gained."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TFPROV = str(Path(sys.executable).parent / "tfprov")


def label(node: str, key: str) -> str:
    """A label `tfprov up local` recorded on the node (key in full: tfprov.address, tfprov.http_proxy, ...)."""
    return subprocess.run(["docker", "inspect", "--format", f'{{{{index .Config.Labels "{key}"}}}}', node],
                          capture_output=True, text=True, check=True).stdout.strip()


def fault(node: str, action: str) -> None:
    """`tfprov local fault NODE ACTION` on the cloud $TFPROV_LOCAL_CLOUD names; it must succeed."""
    proc = subprocess.run([TFPROV, "local", "fault", node, action], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def log_size(path: Path) -> int:
    """Where a log kept across clouds ends now (0 when there is none yet): pass it to log_since."""
    return path.stat().st_size if path.exists() else 0


def log_since(path: Path, offset: int) -> str:
    """What the log gained after offset: only this run's lines, never an earlier cloud's."""
    return path.read_bytes()[offset:].decode(errors="replace")
