#!/usr/bin/env python3
"""A stand-in for PyPI: a PEP 503 simple index of a directory of wheels, served on 127.0.0.1 at a free port.

    simple_index.py ROOT [--prefix NAME ...] [--lifetime SECONDS]

ROOT/files holds the wheels. Writes ROOT/simple/index.html (every project) and ROOT/simple/<project>/index.html
(its wheels, each link with its sha256, which pip checks), then serves ROOT, writing the port the system picked to
ROOT/port and this process's id to ROOT/pid once it listens. Each --prefix serves the same index under /NAME/ too,
so that the log (one line per request, on standard error) tells its clients apart. Stops by itself after
--lifetime seconds, so a test that forgets it leaves nothing behind.
"""

import argparse
import functools
import hashlib
import html
import os
import re
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


def project(wheel: str) -> str:
    """A wheel's project, normalized as PEP 503 names its page."""
    return re.sub(r"[-_.]+", "-", wheel.split("-", 1)[0]).lower()


def write_pages(root: Path) -> dict[str, list[str]]:
    projects: dict[str, list[str]] = {}
    for wheel in sorted(path.name for path in (root / "files").glob("*.whl")):
        projects.setdefault(project(wheel), []).append(wheel)
    for name, wheels in projects.items():
        links = []
        for wheel in wheels:
            digest = hashlib.sha256((root / "files" / wheel).read_bytes()).hexdigest()
            links.append(f'<a href="../../files/{html.escape(wheel)}#sha256={digest}">{html.escape(wheel)}</a><br>')
        (root / "simple" / name).mkdir(parents=True, exist_ok=True)
        (root / "simple" / name / "index.html").write_text(page(f"Links for {name}", links))
    (root / "simple" / "index.html").write_text(page("Simple index", [f'<a href="{n}/">{n}</a><br>' for n in projects]))
    return projects


def page(title: str, lines: list[str]) -> str:
    return "\n".join(["<!DOCTYPE html>", f"<html><head><title>{title}</title></head><body>", *lines,
                      "</body></html>", ""])


class IndexHandler(SimpleHTTPRequestHandler):
    prefixes: frozenset[str] = frozenset()

    def translate_path(self, path: str) -> str:
        head, _, rest = path.lstrip("/").partition("/")
        return super().translate_path("/" + rest if head in self.prefixes else path)


def write_atomically(path: Path, text: str) -> None:
    path.with_suffix(".tmp").write_text(text)
    os.replace(path.with_suffix(".tmp"), path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("root", type=Path)
    parser.add_argument("--prefix", action="append", default=[])
    parser.add_argument("--lifetime", type=float, default=900)
    args = parser.parse_args()
    write_pages(args.root)
    IndexHandler.prefixes = frozenset(args.prefix)
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(IndexHandler, directory=str(args.root)))
    write_atomically(args.root / "pid", str(os.getpid()))
    write_atomically(args.root / "port", str(server.server_port))
    threading.Timer(args.lifetime, server.shutdown).start()
    server.serve_forever()


if __name__ == "__main__":
    main()
