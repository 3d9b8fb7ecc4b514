"""report.html in a real headless browser (Debian's Chromium, `make browser` installs it): it loads with no console
message, loads nothing but itself, shows every host and failure line, and leaves a screenshot per page in
.tfprov/test-artifacts/report-pages/ (TFPROV_TEST_ARTIFACTS to put them elsewhere).

Chromium runs in a network namespace of its own (unshare --net, loopback only) where the test runs as root: the
page is a file, and the browser's own background traffic reaches nothing."""

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from test_report_page import RECORDED

from tfprov import report_page

ROOT = Path(__file__).parents[2]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-sync",
         "--disable-component-update", "--disable-default-apps", "--disable-domain-reliability", "--no-first-run",
         "--enable-logging=stderr", "--v=1", "--window-size=1280,2400"]
CONSOLE = re.compile(r":CONSOLE[^\]]*\] (.*)")
# Chromium's own notes on how it loads, not the page's messages: on a busy machine it decides the network is slow and
# says so ("Slow network is detected. ... Fallback font will be used while loading: ...") for a page on disk too.
BROWSER_NOTES = re.compile(r'^"?Slow network is detected\.')
LOADED = re.compile(r"FileURLLoader::Start: (\S+)|URLLoader[^:]*: (https?://\S+)")


def artifacts() -> Path:
    path = Path(os.environ.get("TFPROV_TEST_ARTIFACTS") or ROOT / ".tfprov" / "test-artifacts") / "report-pages"
    path.mkdir(parents=True, exist_ok=True)
    return path


def browse(page: Path, screenshot: Path, profile: Path) -> dict:
    """The DOM Chromium built, its console messages, every resource it loaded, and a screenshot."""
    assert CHROMIUM, "Chromium is not installed: make browser (apt-get install chromium)"
    isolate = ["unshare", "--net"] if os.geteuid() == 0 and shutil.which("unshare") else []
    base = [*isolate, CHROMIUM, *FLAGS, f"--user-data-dir={profile}"]
    dom = subprocess.run([*base, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120)
    shot = subprocess.run([*base, f"--screenshot={screenshot}", page.as_uri()], capture_output=True, text=True,
                          timeout=120)
    assert dom.returncode == 0 and shot.returncode == 0, (dom.stderr[-2000:], shot.stderr[-2000:])
    log = dom.stderr + shot.stderr
    return {"dom": dom.stdout, "console": [line for line in CONSOLE.findall(log) if not BROWSER_NOTES.match(line)],
            "loaded": sorted({a or b for a, b in LOADED.findall(log)}), "screenshot": screenshot}


def _text(dom: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", dom).replace("&gt;", ">").replace("&lt;", "<")
                    .replace("&amp;", "&").replace("&quot;", '"').replace("&#x27;", "'").split())


def test_the_check_sees_a_console_error_and_a_resource_loaded(tmp_path):
    page = tmp_path / "bad.html"
    page.write_text('<!DOCTYPE html><html><body><img src="missing.png"><script>console.error("boom")</script>'
                    "</body></html>")
    seen = browse(page, tmp_path / "bad.png", tmp_path / "profile")
    assert any("boom" in line for line in seen["console"])
    assert (tmp_path / "missing.png").as_uri() in seen["loaded"]


@pytest.mark.parametrize("path", RECORDED, ids=[p.stem for p in RECORDED])
def test_a_recorded_runs_page_in_chromium(path, tmp_path):
    report = json.loads(path.read_text())
    page = tmp_path / "report.html"
    page.write_text(report_page.render(report))
    seen = browse(page, artifacts() / f"{path.stem}.png", tmp_path / "profile")
    assert seen["console"] == []
    assert seen["loaded"] == [page.as_uri()]  # the page itself, nothing else
    text = _text(seen["dom"])
    for name, host in report["hosts"].items():
        assert name in text
        for failure in host["failed_tasks"]:
            assert " ".join(str(failure["message"]).split()) in text
    if report_page.failures(report):  # a failed run's page opens on its failures
        assert text.index(report_page.failures(report)[0]) < text.index("The run")
    assert seen["screenshot"].stat().st_size > 10_000
