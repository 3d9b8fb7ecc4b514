#!/usr/bin/env python3
"""Build a cuDNN archive in NVIDIA's redist layout from the real nvidia-cudnn wheel, for the tarball method's test.

cudnn-linux-x86_64-<version>_cuda<major>-archive/{include/, lib/, LICENSE}, as NVIDIA publishes it. Only the
libraries needed to load cuDNN and ask its version go in (libcudnn and libcudnn_graph), to keep it small.
Prints the archive path and its sha256.
"""

import argparse
import hashlib
import io
import lzma
import sys
import tarfile
import zipfile
from pathlib import Path

KEEP_LIBS = ("libcudnn.so.", "libcudnn_graph.so.")


def build(wheel: Path, out_dir: Path) -> Path:
    name = wheel.name.split("-")
    version, cuda_major = name[1], name[0].rsplit("cu", 1)[1]
    top = f"cudnn-linux-x86_64-{version}_cuda{cuda_major}-archive"
    archive = out_dir / f"{top}.tar.xz"
    with zipfile.ZipFile(wheel) as whl, lzma.open(archive, "wb", preset=1) as xz, \
            tarfile.open(fileobj=xz, mode="w") as tar:
        for member in whl.namelist():
            rel = None
            if member.startswith("nvidia/cudnn/include/"):
                rel = "include/" + member.rsplit("/", 1)[1]
            elif member.startswith("nvidia/cudnn/lib/") and member.rsplit("/", 1)[1].startswith(KEEP_LIBS):
                rel = "lib/" + member.rsplit("/", 1)[1]
            elif member.endswith(".dist-info/License.txt"):
                rel = "LICENSE"
            if not rel:
                continue
            data = whl.read(member)
            info = tarfile.TarInfo(f"{top}/{rel}")
            info.size, info.mode = len(data), 0o755 if rel.startswith("lib/") else 0o644
            tar.addfile(info, io.BytesIO(data))
    return archive


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("wheel", type=Path)
    parser.add_argument("out_dir", type=Path)
    args = parser.parse_args()
    args.out_dir.mkdir(parents=True, exist_ok=True)
    archive = build(args.wheel, args.out_dir)
    print(archive, "sha256:" + hashlib.sha256(archive.read_bytes()).hexdigest())
    return 0


if __name__ == "__main__":
    sys.exit(main())
