"""The TF Serving stand-in image, built without a registry: tensorflow/serving is unreachable on test machines.

A container of the node image (tfprov/node:bookworm, no network) gets a venv at /opt/tfserving with
tensorflow-cpu and tensorflow-serving-api from the wheelhouse, and tests/support/serving_stand_in/server.py as
/usr/bin/tensorflow_model_server; `docker commit` makes it the image, `docker save` the archive that nodes load
(their engines cannot pull it either). Like the node images, the image carries a label with the digest of its
recipe, so a changed server.py or matrix row triggers a rebuild.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from rich.console import Console

from ..errors import TfprovError
from ..project import project_root
from .commands import docker
from .images import RECIPE_LABEL
from .images import image_name as node_image_name
from .images import image_recipe as node_image_recipe

IMAGE_REPOSITORY = "tfprov/serving-stand-in"
ARCHIVE_DIR = Path("/var/cache/tfprov/images")
WHEELHOUSE = Path(os.environ.get("TFPROV_WHEELHOUSE", "/var/cache/tfprov/wheelhouse"))
BASE_SUITE = "bookworm"  # Python 3.11: the wheelhouse's cp311 wheels
SERVER = Path("tests/support/serving_stand_in/server.py")
VENV = "/opt/tfserving"
# Bump when the steps below change what the image holds.
BUILD_STEPS = 1


def _compat():
    path = project_root() / "plugins" / "module_utils" / "compat.py"
    spec = importlib.util.spec_from_file_location("tfprov_compat", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def resolve_versions(requested: str | None = None) -> tuple[str, str]:
    """(TF Serving release, tensorflow-cpu version) from data/compat.yml: '2.21', '2.21.0' or None/'latest'
    (the newest release). The model server and TensorFlow share minor versions."""
    compat = _compat()
    matrix = compat.load_matrix(str(project_root() / "data" / "compat.yml"))
    releases = (matrix.get("tf_serving") or {}).get("releases") or {}
    if not releases:
        raise TfprovError("data/compat.yml has no tf_serving releases")
    if requested in (None, "", "latest"):
        minor = max(releases, key=compat.version_tuple)
    else:
        minor = ".".join(str(requested).split(".")[:2])
        if minor not in releases:
            raise TfprovError(f"TF Serving {requested} is not in data/compat.yml (known: "
                              f"{', '.join(sorted(releases, key=compat.version_tuple))})")
    release = releases[minor]["latest_patch"]
    if requested not in (None, "", "latest", minor) and requested != release:
        raise TfprovError(f"TF Serving {requested}: the matrix pins {release} for {minor}; ask for {release}")
    _, tf_row = compat.tf_entry(matrix, minor)
    return release, tf_row["latest_patch"]


def image_name(version: str) -> str:
    return f"{IMAGE_REPOSITORY}:{version}"


def archive_path(version: str) -> Path:
    return ARCHIVE_DIR / f"serving-stand-in-{version}.tar"


def recipe_digest(version: str, tf_version: str, server: bytes) -> str:
    recipe = json.dumps({"serving_api": version, "tensorflow_cpu": tf_version, "base": node_image_name(BASE_SUITE),
                         "server_sha256": hashlib.sha256(server).hexdigest(), "steps": BUILD_STEPS},
                        sort_keys=True)
    return "sha256:" + hashlib.sha256(recipe.encode()).hexdigest()


def _image_label(name: str) -> str | None:
    proc = subprocess.run(["docker", "image", "inspect", "--format", f'{{{{ index .Config.Labels "{RECIPE_LABEL}" }}}}',
                           name], capture_output=True, text=True)
    if proc.returncode != 0:
        return None
    found = proc.stdout.strip()
    return "" if found == "<no value>" else found


def _archive_recipe(archive: Path) -> str | None:
    marker = archive.with_name(archive.name + ".recipe")
    if not archive.is_file() or not marker.is_file():
        return None
    return marker.read_text().strip()


# The build, inside a node container without network: everything comes from the read-only wheelhouse.
BUILD_SCRIPT = r"""
set -eu
pip_wheel=$(ls /wheelhouse/pip-*.whl | sort -V | tail -n 1)
python3 -m venv --without-pip {venv}
{venv}/bin/python "$pip_wheel/pip" install -q --no-index --find-links /wheelhouse --no-cache-dir \
  --disable-pip-version-check pip
{venv}/bin/pip install -q --no-index --find-links /wheelhouse --no-cache-dir --disable-pip-version-check \
  "tensorflow-cpu=={tf_version}" grpcio protobuf
# It requires the full `tensorflow` wheel by name: --no-deps, its real needs came with tensorflow-cpu.
{venv}/bin/pip install -q --no-index --find-links /wheelhouse --no-cache-dir --disable-pip-version-check \
  --no-deps "tensorflow-serving-api=={version}"
{{ echo '#!{venv}/bin/python'; tail -n +2 /stand-in/server.py; }} > /usr/bin/tensorflow_model_server
chmod 0755 /usr/bin/tensorflow_model_server
{venv}/bin/python -c 'import tensorflow_serving.apis.prediction_service_pb2_grpc, grpc, tensorflow'
/usr/bin/tensorflow_model_server --version
rm -rf /root/.cache /tmp/* /var/lib/apt/lists/*
"""


def build_serving_image(version: str | None, console: Console, rebuild: bool = False) -> tuple[str, Path]:
    """The stand-in image for a TF Serving release of the matrix, and its `docker save` archive (cached)."""
    release, tf_version = resolve_versions(version)
    name, archive = image_name(release), archive_path(release)
    server = (project_root() / SERVER).read_bytes()
    digest = recipe_digest(release, tf_version, server)
    ARCHIVE_DIR.mkdir(parents=True, exist_ok=True)
    with open(f"/var/tmp/tfprov-serving-image-{release}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two `tfprov images` at once would race on the archive
        found = _image_label(name)
        if found != digest and not rebuild and _archive_recipe(archive) == digest:
            console.print(f"image {name}: loading {archive}")
            docker("load", "-i", str(archive), what=f"docker load {archive}")
            found = _image_label(name)
        if found == digest and not rebuild:
            if _archive_recipe(archive) == digest:
                console.print(f"image {name}: cached ({archive})")
                return name, archive
        else:
            if found is not None and found != digest:
                console.print(f"image {name}: built from another server.py or matrix row, rebuilding")
            _build(name, release, tf_version, digest, console)
        _save(name, archive, digest, console)
    return name, archive


PLATFORMS = ("manylinux2014_x86_64", "manylinux_2_17_x86_64", "manylinux_2_27_x86_64", "manylinux_2_28_x86_64",
             "linux_x86_64")


def _fill_wheelhouse(release: str, tf_version: str, console: Console) -> None:
    """The build container has no network: what the wheelhouse lacks is downloaded here first (PyPI, once)."""
    wanted = {f"tensorflow_cpu-{tf_version}-cp311": [f"tensorflow-cpu=={tf_version}", "grpcio", "protobuf", "pip"],
              f"tensorflow_serving_api-{release}-": [f"tensorflow-serving-api=={release}"]}
    for prefix, requirements in wanted.items():
        if any(WHEELHOUSE.glob(prefix + "*.whl")):
            continue
        console.print(f"wheelhouse {WHEELHOUSE}: downloading {' '.join(requirements)} for Python 3.11 from PyPI")
        # tensorflow-serving-api requires the full `tensorflow` wheel by name: without its dependencies.
        deps = ["--no-deps"] if prefix.startswith("tensorflow_serving_api") else []
        cmd = [sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check", "--only-binary=:all:",
               "--python-version", "3.11", "--implementation", "cp", *(a for p in PLATFORMS for a in ("--platform", p)),
               *deps, "-d", str(WHEELHOUSE), *requirements]
        WHEELHOUSE.mkdir(parents=True, exist_ok=True)
        with console.status(f"pip download {' '.join(requirements)}"):
            proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            detail = (proc.stderr or proc.stdout).strip().splitlines()
            raise TfprovError(f"downloading {' '.join(requirements)} into {WHEELHOUSE} failed: "
                              f"{detail[-1] if detail else 'exit ' + str(proc.returncode)}")


def _build(name: str, release: str, tf_version: str, digest: str, console: Console) -> None:
    base = node_image_name(BASE_SUITE)
    if node_image_recipe(BASE_SUITE) is None:
        raise TfprovError(f"image {base} is missing: run `tfprov images --suite {BASE_SUITE}` first")
    _fill_wheelhouse(release, tf_version, console)
    container = f"tfprov-serving-build-{os.getpid()}"
    script = BUILD_SCRIPT.format(venv=VENV, tf_version=tf_version, version=release)
    log = Path(f"/var/tmp/tfprov-serving-build-{release}.log")
    started = time.monotonic()
    console.print(f"image {name}: building from {base} with tensorflow-cpu {tf_version} and tensorflow-serving-api "
                  f"{release} from {WHEELHOUSE} (a few minutes; log: {log})")
    subprocess.run(["docker", "rm", "-f", container], capture_output=True)
    try:
        with console.status(f"installing TensorFlow into {name}"), log.open("w") as out:
            proc = subprocess.run(["docker", "run", "--name", container, "--network", "none",
                                   "-v", f"{WHEELHOUSE}:/wheelhouse:ro",
                                   "-v", f"{(project_root() / SERVER).parent}:/stand-in:ro",
                                   "--entrypoint", "/usr/bin/nice", base, "-n", "10", "/bin/bash", "-c", script],
                                  stdout=out, stderr=subprocess.STDOUT)
        if proc.returncode != 0:
            tail = log.read_text(errors="replace").strip().splitlines()[-1:]
            raise TfprovError(f"building {name} failed ({tail[0] if tail else 'exit ' + str(proc.returncode)}): "
                              f"see {log}")
        changes = ['ENTRYPOINT ["/usr/bin/tensorflow_model_server"]', "CMD []", "EXPOSE 8500 8501",
                   f"LABEL {RECIPE_LABEL}={digest}", "WORKDIR /"]
        previous = subprocess.run(["docker", "image", "inspect", "--format", "{{.Id}}", name], capture_output=True,
                                  text=True).stdout.strip()
        docker("commit", *(a for c in changes for a in ("--change", c)), container, name, what=f"docker commit {name}")
        if previous:  # 1.9 GB per rebuild otherwise; kept (the rm fails) while a container still uses it
            subprocess.run(["docker", "image", "rm", previous], capture_output=True)
    finally:
        subprocess.run(["docker", "rm", "-f", container], capture_output=True)
    size = docker("image", "inspect", "--format", "{{.Size}}", name)
    console.print(f"image {name}: built in {time.monotonic() - started:.0f} s ({int(size) / 1e9:.2f} GB)")


def _save(name: str, archive: Path, digest: str, console: Console) -> None:
    """docker save to a temporary file renamed into place: a node never loads half an archive."""
    started = time.monotonic()
    tmp = archive.with_name(f".{archive.name}.{os.getpid()}.tmp")
    marker = archive.with_name(archive.name + ".recipe")
    console.print(f"image {name}: saving {archive}")
    try:
        with console.status(f"docker save {name}"):
            docker("save", "-o", str(tmp), name, what=f"docker save {name}")
        os.chmod(tmp, 0o644)
        marker.unlink(missing_ok=True)
        os.replace(tmp, archive)
        marker.write_text(digest + "\n")
    finally:
        tmp.unlink(missing_ok=True)
    console.print(f"image {name}: saved {archive} ({archive.stat().st_size / 1e9:.2f} GB) in "
                  f"{time.monotonic() - started:.0f} s")
