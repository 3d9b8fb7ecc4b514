"""The runs folder's index.html (every run, newest first: plan, result, duration, its page), a run's page found (and
written from report.json for runs made before pages existed), and both written at the end of a run (write_pages)."""

from __future__ import annotations

import json
import sys
from html import escape
from pathlib import Path

from . import report_page, rundirs
from .errors import TfprovError

INDEX = "index.html"


def render_index(base: Path) -> str:
    rows = []
    for path, report in rundirs.reports(base):
        failed = sum(bool(host.get("failed_tasks")) for host in (report.get("hosts") or {}).values())
        status = str(report.get("status", "?"))
        css = report_page.STATUS_CLASS.get(status, "")
        rows.append(f'<tr><td><a href="{escape(path.name)}/{report_page.PAGE}">{escape(path.name)}</a></td>'
                    f"<td>{escape(str(report.get('plan', '?')))}</td><td class=\"{css}\">{escape(status)}</td>"
                    f"<td class=\"n\">{escape(str(report.get('rc', '?')))}</td>"
                    f"<td>{escape(str(report.get('started', '?')))}</td>"
                    f"<td class=\"n\">{report_page.number(report.get('seconds'))}</td>"
                    f"<td class=\"n\">{len(report.get('hosts') or {})}</td><td class=\"n\">{failed}</td></tr>")
    head = "".join(f"<th>{c}</th>" for c in ("run", "plan", "result", "exit", "started", "seconds", "hosts",
                                              "hosts failed"))
    body = "".join(rows) or '<tr><td colspan="8">no run yet</td></tr>'
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>tfprov runs</title>'
            f"<style>{report_page.CSS}</style></head><body><h1>tfprov runs, newest first</h1>"
            f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></body></html>\n")


def write_index(base: Path) -> Path:
    """The index, after writing the page of any listed run that has none (made before pages existed): every link
    in it leads somewhere. Rotation keeps the folder to a few dozen runs, so this stays cheap."""
    for path, report in rundirs.reports(base):
        if not (path / report_page.PAGE).is_file():
            report_page.write(report, path)
    return report_page.write_atomically(base / INDEX, render_index(base))


def find(which: str, base: Path) -> Path:
    """'latest', a run directory's name (or its unique start), or a path."""
    if which != "latest" and Path(which).expanduser().is_dir():
        return Path(which).expanduser().resolve()
    found = rundirs.reports(base)
    if not found:
        raise TfprovError(f"no run in {base} yet: tfprov run PLAN writes one")
    if which == "latest":
        return found[0][0]
    matches = [path for path, _ in found if path.name.startswith(which)]
    if len(matches) != 1:
        names = ", ".join(path.name for path in matches[:5]) if matches else "none"
        raise TfprovError(f"run {which!r}: {len(matches)} run(s) match ({names}); give a run directory's name "
                          f"from {base / INDEX}, or latest")
    return matches[0]


def page(run_dir: Path) -> Path:
    """The run's report.html, written from its report.json when it is missing."""
    path = run_dir / report_page.PAGE
    if not path.is_file():
        try:
            report = json.loads((run_dir / "report.json").read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise TfprovError(f"{run_dir} has no readable report.json ({type(exc).__name__}): not a run directory"
                              ) from None
        report_page.write(report, run_dir)
    return path



def write_pages(report: dict, run_dir: Path) -> None:
    """report.html and the runs' index.html. A bug in a page must not cost the run its end: report.json is
    written already, and `tfprov report` can write the page again once the bug is fixed."""
    try:
        report_page.write(report, run_dir)
        write_index(run_dir.parent)
    except Exception as exc:  # noqa: BLE001 - any failure here is reported in one line, never raised
        print(f"tfprov: warning: the run's page was not written: {type(exc).__name__}: {exc}", file=sys.stderr)
