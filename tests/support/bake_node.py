#!/usr/bin/env python3
"""The local form of image baking: converge one node container with playbooks/gpu_node.yml (TensorFlow from the
wheelhouse, plus what the distributed check needs) and `docker commit` it as tfprov/node-baked:<suite>.

Nodes started from it (`tfprov up local --image tfprov/node-baked:<suite>`) skip the TensorFlow install, so the
cluster tests spend their time on the cluster. The image carries a label with the digest of what it was made from
(roles/, playbooks/, plugins/, data/compat.yml, the base image and the settings below): a bake with the same digest
is skipped ("cached"), any change bakes again.

    .venv/bin/python tests/support/bake_node.py --suite bookworm --wheelhouse /var/cache/tfprov/wheelhouse
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "plugins" / "module_utils"))
from compat import legacy_keras_version  # noqa: E402 - plain module, no Ansible needed

from tfprov.local import images, nodes  # noqa: E402
from tfprov.project import ansible_env  # noqa: E402

DIGEST_LABEL = "tfprov.bake_digest"
DIGEST_SOURCES = ("roles", "playbooks", "plugins", "data/compat.yml")
DEFAULT_WHEELHOUSE = Path("/var/cache/tfprov/wheelhouse")
NODE_WHEELHOUSE = "/wheelhouse"
TF_ENV = "/opt/tfprov/envs/tf"  # tensorflow_gpu_env's default
LOG_DIR = ROOT / ".tfprov" / "logs"


def baked_name(suite: str) -> str:
    return f"tfprov/node-baked:{suite}"


def distributed_packages() -> tuple[list[str], str | None]:
    """What the dist role installs into the TensorFlow environment: the check's packages (pip resolves them with
    TensorFlow) and tf_keras, which requires the full `tensorflow` wheel and so goes in alone with --no-deps."""
    matrix = yaml.safe_load((ROOT / "data" / "compat.yml").read_text(encoding="utf-8"))
    keras = legacy_keras_version(matrix, "latest")  # tensorflow_gpu_version's default
    return list(matrix["distributed"]["check_packages"]), f"tf_keras=={keras}" if keras else None


def inventory(name: str, check_packages: list[str]) -> dict:
    """One node, reached with `docker exec` as the local cloud's nodes are, with the local cloud's relaxations (no GPU,
    shared disk)."""
    settings = {
        "ansible_connection": "community.docker.docker", "ansible_host": name,
        "ansible_python_interpreter": "/usr/bin/python3",
        "tfprov_pip_find_links": NODE_WHEELHOUSE, "tfprov_pip_no_index": True,
        "tfprov_require_gpu": False, "preflight_min_disk_gb": 5, "tfprov_tf_address": "127.0.0.1",
        "tensorflow_gpu_extra_packages": check_packages,
    }
    return {"all": {"children": {"tfprov_nodes": {"hosts": {name: settings}},
                                 "tfprov_chief": {"hosts": {name: None}}}}}


def source_files(root: Path = ROOT) -> list[Path]:
    files = []
    for source in DIGEST_SOURCES:
        path = root / source
        found = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
        files += [p for p in found if "__pycache__" not in p.parts and p.suffix != ".pyc"]
    return files


def bake_digest(base_id: str, settings: dict, root: Path = ROOT) -> str:
    digest = hashlib.sha256()
    for path in source_files(root):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    digest.update(base_id.encode() + b"\0" + yaml.safe_dump(settings, sort_keys=True).encode())
    return "sha256:" + digest.hexdigest()


def docker(*args: str, check: bool = True) -> str:
    proc = subprocess.run(["docker", *args], capture_output=True, text=True)
    if check and proc.returncode:
        detail = (proc.stderr or proc.stdout).strip().splitlines()
        raise SystemExit(f"bake: docker {args[0]} failed: {detail[-1] if detail else proc.returncode}")
    return proc.stdout.strip()


def image_label(image: str, label: str) -> str | None:
    """The label's value ('' when absent); None when there is no such image."""
    proc = subprocess.run(["docker", "image", "inspect", "--format", f'{{{{ index .Config.Labels "{label}" }}}}',
                           image], capture_output=True, text=True)
    if proc.returncode:
        return None
    return "" if proc.stdout.strip() == "<no value>" else proc.stdout.strip()


@contextlib.contextmanager
def bake_lock(suite: str) -> Iterator[None]:
    with open(f"/var/tmp/tfprov-bake-{suite}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def converge(name: str, settings: dict, keras: str | None, log: Path) -> None:
    """gpu_node.yml on the container (cwd ROOT: this checkout's ansible.cfg), then tf_keras without its deps."""
    with tempfile.NamedTemporaryFile("w", prefix="tfprov-bake-", suffix=".yml") as inv:
        yaml.safe_dump(settings, inv)
        inv.flush()
        playbook = Path(sys.executable).parent / "ansible-playbook"
        env = {**ansible_env(ROOT), "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin"}
        with log.open("w", encoding="utf-8") as out:
            rc = subprocess.call([str(playbook), "-i", inv.name, "playbooks/gpu_node.yml"], cwd=ROOT, env=env,
                                 stdout=out, stderr=subprocess.STDOUT)
    if rc:
        tail = log.read_text(encoding="utf-8", errors="replace").splitlines()[-25:]
        raise SystemExit("\n".join([*tail, f"bake: playbooks/gpu_node.yml failed (exit {rc}); the whole log: {log}"]))
    if keras:
        docker("exec", name, f"{TF_ENV}/bin/python", "-m", "pip", "install", "-q", "--no-index", "--find-links",
               NODE_WHEELHOUSE, "--no-deps", keras)


def bake(suite: str, wheelhouse: Path, name: str, tag: str, force: bool) -> str:
    base = images.image_name(suite)
    base_id = docker("image", "inspect", "--format", "{{.Id}}", base, check=False)
    if not base_id:
        raise SystemExit(f"bake: image {base} is missing: run `tfprov images --suite {suite}` first")
    if not wheelhouse.is_dir():
        raise SystemExit(f"bake: no wheelhouse at {wheelhouse}: run `make wheelhouse` first")
    check_packages, keras = distributed_packages()
    settings = inventory(name, check_packages)
    # Not the container's name: a bake under another name makes the same image.
    digest = bake_digest(base_id, {"inventory": inventory("node", check_packages), "tf_keras": keras})
    if not force and image_label(tag, DIGEST_LABEL) == digest:
        return "cached"
    old_id = docker("image", "inspect", "--format", "{{.Id}}", tag, check=False)
    docker("rm", "-f", "-v", name, check=False)
    try:
        docker("run", "-d", "--name", name, "--network", "host", "--stop-signal", "SIGRTMIN+3", *nodes.SYSTEMD_RUN,
               "-v", f"{wheelhouse}:{NODE_WHEELHOUSE}:ro", base, "/lib/systemd/systemd")
        state = nodes.wait_systemd(name)
        if state not in ("running", "degraded"):
            raise SystemExit(f"bake: {name}: systemd did not finish booting ({state or 'no answer'})")
        LOG_DIR.mkdir(parents=True, exist_ok=True)
        log = LOG_DIR / f"bake-{suite}.log"
        print(f"bake: converging {name} with playbooks/gpu_node.yml (log {log})", flush=True)
        converge(name, settings, keras, log)
        docker("stop", "-t", "60", name)  # systemd shuts down cleanly: no half-written state in the image
        docker("commit", "--change", f"LABEL {DIGEST_LABEL}={digest}", "--change", f"LABEL {nodes.SUITE_LABEL}={suite}",
               name, tag)
    finally:
        docker("rm", "-f", "-v", name, check=False)
    if old_id and old_id != docker("image", "inspect", "--format", "{{.Id}}", tag):
        docker("image", "rm", old_id, check=False)  # the previous bake, unless a node still runs from it
    return "baked"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--suite", choices=images.SUITES, default="bookworm")
    parser.add_argument("--wheelhouse", type=Path, default=DEFAULT_WHEELHOUSE,
                        help=f"wheels the node installs from, mounted read-only (default {DEFAULT_WHEELHOUSE})")
    parser.add_argument("--name", help="the bake container (default tfprov-bake-<suite>)")
    parser.add_argument("--tag", help="the image to write (default tfprov/node-baked:<suite>)")
    parser.add_argument("--force", action="store_true", help="bake even when the image's digest is current")
    args = parser.parse_args(argv)
    tag = args.tag or baked_name(args.suite)
    start = time.monotonic()
    with bake_lock(args.suite):
        outcome = bake(args.suite, args.wheelhouse.resolve(), args.name or f"tfprov-bake-{args.suite}", tag,
                       args.force)
    size = int(docker("image", "inspect", "--format", "{{.Size}}", tag) or 0)
    print(f"bake: {tag}: {outcome} in {time.monotonic() - start:.0f} s ({size / 1e9:.2f} GB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
