#!/usr/bin/env python3
"""Download the CUDA runtime and cuDNN wheels the matrix pins for a TensorFlow version into a wheelhouse.

Molecule mounts the wheelhouse into the nodes and installs from it with --no-index: the offline path, and
one download per machine instead of one per node.
"""

import argparse
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "plugins" / "module_utils"))
from compat import pinned_version  # noqa: E402 - plain module, no Ansible needed

DEFAULT = Path("/var/cache/tfprov/wheelhouse")


def pins(tf_version: str, wanted: tuple[str, ...]) -> list[str]:
    matrix = yaml.safe_load((ROOT / "data" / "compat.yml").read_text())
    versions = sorted(matrix["tensorflow"], key=lambda v: tuple(int(p) for p in v.split(".")))
    row = matrix["tensorflow"][versions[-1] if tf_version == "latest" else tf_version]
    packages = row["pip_cuda_packages"]
    return [f"{name}=={pinned_version(spec)}" for name, spec in sorted(packages.items())
            if any(w in name for w in wanted)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dest", type=Path, default=DEFAULT)
    parser.add_argument("--tf-version", default="latest")
    parser.add_argument("--only", nargs="+", default=["cuda-runtime", "cudnn", "cublas"], help="parts of wheel names")
    args = parser.parse_args()
    args.dest.mkdir(parents=True, exist_ok=True)
    requirements = pins(args.tf_version, tuple(args.only))
    print(f"wheelhouse {args.dest}: {' '.join(requirements)}", flush=True)
    return subprocess.call([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                            "-d", str(args.dest), *requirements])


if __name__ == "__main__":
    sys.exit(main())
