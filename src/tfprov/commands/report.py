"""`tfprov report [RUN] [--open]`: the path of a run's page (report.html), written from report.json when missing, and
the runs' index.html refreshed."""

from __future__ import annotations

import webbrowser

from rich.console import Console

from .. import rundirs
from ..errors import TfprovError
from ..project import project_root
from ..report_index import find, page, write_index


def run(args, out: Console) -> int:
    base = rundirs.runs_dir(project_root())
    path = page(find(args.run, base))
    write_index(base)
    print(path)
    if args.open and not webbrowser.open(path.as_uri()):
        raise TfprovError(f"no browser found to open {path}: open it from your desktop, or copy the file")
    return 0
