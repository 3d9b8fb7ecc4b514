#!/usr/bin/env python3
"""Download the CUDA runtime and cuDNN wheels the matrix pins for a TensorFlow version into a wheelhouse.

Molecule mounts the wheelhouse into the nodes and installs from it with --no-index: the offline path, and
one download per machine instead of one per node.
"""

import argparse
import glob
import os
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "plugins" / "module_utils"))
from compat import legacy_keras_version, pinned_version  # noqa: E402 - plain module, no Ansible needed

DEFAULT = Path("/var/cache/tfprov/wheelhouse")


def pins(tf_version: str, wanted: tuple[str, ...]) -> list[str]:
    matrix = yaml.safe_load((ROOT / "data" / "compat.yml").read_text())
    versions = sorted(matrix["tensorflow"], key=lambda v: tuple(int(p) for p in v.split(".")))
    row = matrix["tensorflow"][versions[-1] if tf_version == "latest" else tf_version]
    packages = row["pip_cuda_packages"]
    return [f"{name}=={pinned_version(spec)}" for name, spec in sorted(packages.items())
            if any(w in name for w in wanted)]


def tensorflow_cpu(tf_version: str) -> str:
    matrix = yaml.safe_load((ROOT / "data" / "compat.yml").read_text())
    versions = sorted(matrix["tensorflow"], key=lambda v: tuple(int(p) for p in v.split(".")))
    return matrix["tensorflow"][versions[-1] if tf_version == "latest" else tf_version]["latest_patch"]


def distributed(tf_version: str) -> tuple[list[str], str | None]:
    """What the distributed check needs in the TF env (scikit-learn: the digits data) and the tf_keras pin."""
    matrix = yaml.safe_load((ROOT / "data" / "compat.yml").read_text())
    keras = legacy_keras_version(matrix, tensorflow_cpu(tf_version))
    return matrix["distributed"]["check_packages"], f"tf_keras=={keras}" if keras else None


def serving_api() -> str:
    """tensorflow-serving-api of the newest TF Serving release in the matrix (the stand-in image's gRPC API)."""
    from compat import version_tuple

    releases = yaml.safe_load((ROOT / "data" / "compat.yml").read_text())["tf_serving"]["releases"]
    return releases[max(releases, key=version_tuple)]["latest_patch"]


PLATFORMS = [arg for tag in ("manylinux2014_x86_64", "manylinux_2_17_x86_64", "manylinux_2_27_x86_64",
                             "manylinux_2_28_x86_64", "linux_x86_64") for arg in ("--platform", tag)]


def download_tensorflow(dest: Path, tf_version: str, pythons: list[str]) -> int:
    """tensorflow-cpu and everything it needs, plus ipykernel and pip (the stand-in conda installs pip from it),
    JupyterLab (the notebook service), the distributed check's packages, tf_keras and tensorflow-serving-api
    (the serving stand-in image)."""
    check_packages, keras = distributed(tf_version)
    rc = download_for_pythons(dest, pythons, f"tensorflow-cpu=={tensorflow_cpu(tf_version)}", "ipykernel",
                              "jupyterlab", "pip", *check_packages)
    if rc:
        return rc
    if keras:
        # Requires the full `tensorflow` wheel: beside tensorflow-cpu it goes in with --no-deps (pure Python).
        print(f"wheelhouse {dest}: {keras} (--no-deps)", flush=True)
        rc = subprocess.call([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                              "-d", str(dest), keras])
        if rc:
            return rc
    # Pure Python, but it requires the full `tensorflow` wheel (620 MB): beside tensorflow-cpu it goes in with
    # --no-deps, its real needs (grpcio, protobuf) come with tensorflow-cpu above.
    print(f"wheelhouse {dest}: tensorflow-serving-api=={serving_api()} (--no-deps)", flush=True)
    return subprocess.call([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                            "-d", str(dest), f"tensorflow-serving-api=={serving_api()}"])


def proxpi() -> str:
    """The proxpi release the matrix pins (the package_cache role's server)."""
    return yaml.safe_load((ROOT / "data" / "compat.yml").read_text())["package_cache"]["proxpi"]


def pip_of(version: str) -> list[str]:
    """A pip run by a Python of that version, where this machine has one: pip evaluates environment markers
    (`overrides; python_version < "3.12"`, which jupyter-server needs on 3.11) with the Python that runs it, not with
    --python-version, so a 3.13 venv's pip leaves such wheels out of a 3.11 node's wheelhouse. Else this Python's.
    Looked for where tests/sanity/run.sh looks (the system's, pyenv's builds; not pyenv's shims)."""
    if f"{sys.version_info[0]}.{sys.version_info[1]}" == version:
        return [sys.executable, "-m", "pip"]
    pyenv = os.environ.get("PYENV_ROOT") or str(Path.home() / ".pyenv")
    for python in [f"/usr/bin/python{version}", f"/usr/local/bin/python{version}",
                   *sorted(glob.glob(f"{pyenv}/versions/{version}.*/bin/python{version}"))]:
        if os.access(python, os.X_OK) and subprocess.call([python, "-m", "pip", "--version"],
                                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) == 0:
            return [python, "-m", "pip"]
    print(f"wheelhouse: no Python {version} with pip here: markers are evaluated for Python "
          f"{sys.version_info[0]}.{sys.version_info[1]}", file=sys.stderr)
    return [sys.executable, "-m", "pip"]


def download_for_pythons(dest: Path, pythons: list[str], *requirements: str) -> int:
    """The requirements and everything they need, as wheels for each of these Pythons (Linux, x86_64)."""
    for python in pythons:
        print(f"wheelhouse {dest}: {' '.join(requirements)} for Python {python}", flush=True)
        rc = subprocess.call([*pip_of(python), "download", "-q", "--only-binary=:all:",
                              "--python-version", python, "--implementation", "cp", *PLATFORMS,
                              "-d", str(dest), *requirements])
        if rc:
            return rc
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dest", type=Path, default=DEFAULT)
    parser.add_argument("--tf-version", default="latest")
    parser.add_argument("--only", nargs="+", default=["cuda-runtime", "cudnn", "cublas"], help="parts of wheel names")
    parser.add_argument("--tensorflow", nargs="*", metavar="PYTHON", default=["3.11", "3.13"],
                        help="also tensorflow-cpu and its dependencies for these Pythons (bookworm, trixie)")
    parser.add_argument("--second-tf-version", default="2.20", metavar="VERSION",
                        help="also this tensorflow-cpu for Python 3.11 (the fleet test's version change; '' skips)")
    args = parser.parse_args()
    args.dest.mkdir(parents=True, exist_ok=True)
    requirements = pins(args.tf_version, tuple(args.only))
    print(f"wheelhouse {args.dest}: {' '.join(requirements)}", flush=True)
    rc = subprocess.call([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                          "-d", str(args.dest), *requirements])
    rc = rc or download_tensorflow(args.dest, args.tf_version, args.tensorflow)
    # proxpi and what it needs (Flask, lxml...): package_cache's scenario serves them to the role from a local index.
    rc = rc or download_for_pythons(args.dest, args.tensorflow, f"proxpi=={proxpi()}")
    if rc or not args.second_tf_version:
        return rc
    # A second tensorflow-cpu (no extras): the fleet test rolls nodes from the newest version to this one, offline.
    return download_for_pythons(args.dest, ["3.11"], f"tensorflow-cpu=={tensorflow_cpu(args.second_tf_version)}")


if __name__ == "__main__":
    sys.exit(main())
