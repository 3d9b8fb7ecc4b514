"""report.html, index.html and `tfprov report`: the page from real runs (tiny_project.py, through ansible-runner) and
from reports recorded on the local cloud (tests/fixtures/reports/: node, cluster with a failed task, serving, a
fleet update stopped by its budget, drift)."""

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
import tiny_project
from tiny_project import run_dirs

from tfprov import cli, redact, report_index, report_page
from tfprov import report as report_mod
from tfprov.commands import report as report_cmd
from tfprov.report import ReportBuilder

FIXTURES = Path(__file__).parents[1] / "fixtures"
RECORDED = sorted((FIXTURES / "reports").glob("*.json"))
VOID = {"meta", "br", "img", "input", "link", "hr", "rect", "path", "line"}


class _Checked(HTMLParser):
    """Tags balanced, no script, nothing loaded from elsewhere (src/href/url() to a network address)."""

    def __init__(self):
        super().__init__()
        self.stack, self.problems, self.text = [], [], []

    def handle_starttag(self, tag, attrs):
        if tag == "script":
            self.problems.append("a script")
        for name, value in attrs:
            if name in ("src", "href") and value and re.match(r"^(https?:)?//", value):
                self.problems.append(f"{tag} {name}={value} loads from the network")
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag not in VOID:
            self.stack.pop()

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.problems.append(f"</{tag}> closes {self.stack[-1] if self.stack else 'nothing'}")
            return
        self.stack.pop()

    def handle_data(self, data):
        self.text.append(data)


def checked(html: str) -> str:
    """The page's text, after checking it is well formed and self-contained."""
    parser = _Checked()
    parser.feed(html)
    parser.close()
    assert parser.problems == [] and parser.stack == [], (parser.problems, parser.stack)
    assert "url(" not in html and "@import" not in html
    return " ".join(" ".join(parser.text).split())


def _events(name):
    return [json.loads(line) for line in (FIXTURES / name).read_text().splitlines()]


def test_each_host_gets_a_timeline_of_its_plays_and_roles():
    builder = ReportBuilder(plan="preflight")
    for event in _events("events-preflight-node-stopped.jsonl"):
        builder.on_event(event)
    hosts = builder.to_dict()["hosts"]
    [segment] = hosts["tfprov-local-1"]["timeline"]
    assert segment["play"] == "Check that every node can be provisioned" and segment["role"] == "preflight"
    assert 0 < segment["seconds"] < 60
    stopped = hosts["tfprov-local-3"]["timeline"]
    assert stopped and stopped[-1]["seconds"] <= segment["seconds"] + 1  # it stopped early


def test_changed_tasks_are_kept_per_host_with_their_role():
    builder = ReportBuilder(plan="x")
    for kind, changed in (("runner_on_ok", True), ("runner_on_ok", False), ("runner_on_skipped", False)):
        builder.on_event({"event": kind, "created": "2026-01-01T00:00:00+00:00", "event_data": {
            "host": "h", "task": f"Task {changed}", "task_uuid": "u", "role": "cuda", "res": {"changed": changed}}})
    builder.on_event({"event": "playbook_on_stats", "created": "2026-01-01T00:00:01+00:00",
                      "event_data": {"ok": {"h": 2}, "changed": {"h": 1}, "processed": {"h": 1}}})
    assert builder.to_dict()["hosts"]["h"]["changed_tasks"] == ["cuda: Task True"]


@pytest.fixture
def project(tmp_path, monkeypatch):
    return tiny_project.make(tmp_path, monkeypatch)


def test_every_run_leaves_its_page_and_the_index_lists_runs_newest_first(capsys, project):
    assert cli.main(["run", "ok", "-i", "localhost,", "-e", '{"api_token": "S3CRET-TOKEN"}',
                     "-e", "plain_value=S3CRET-PLAIN expected_plain=S3CRET-PLAIN"]) == 0
    assert cli.main(["run", "fail-checked", "-i", "localhost,"]) == 4
    first, second = run_dirs(project)
    page = (second / "report.html").read_text()
    text = checked(page)
    # The failing host and its reason come first, before the run's details and the host table.
    assert text.index("failed: 1 failure(s)") < text.index("The run") < text.index("Hosts")
    assert "localhost: Fail on purpose: failed on purpose" in text
    assert "tfprov run fail-checked -i localhost," in text
    ok_page = (first / "report.html").read_text()
    assert "S3CRET" not in ok_page and "S3CRET" not in (first / "report.json").read_text()
    # Extra vars are named, never shown: not only the secret-looking ones.
    assert json.loads((first / "report.json").read_text())["command"] == (
        "tfprov run ok -i localhost, -e 'api_token=********' -e 'plain_value=******** expected_plain=********'")
    index = checked((project / ".tfprov" / "runs" / "index.html").read_text())
    assert index.index(second.name) < index.index(first.name)
    assert "fail-checked failed 4" in index
    out = capsys.readouterr().out
    assert f"page: {second / 'report.html'}" in out


def test_the_command_line_keeps_vars_files_and_masks_job_arguments():
    assert redact.command_line(["run", "cluster", "-e", "@my vars.yml", "--extra-vars=x=1", "--job", "train.py",
                                "--job-arg", "--api-key=abc", "-ex=2", "-e", "{not yaml"]) == (
        "tfprov run cluster -e '@my vars.yml' '--extra-vars=x=********' --job train.py --job-arg '********' "
        "-e '********' -e '********'")


def test_tfprov_report_names_the_latest_page_and_writes_a_missing_one(capsys, project):
    assert cli.main(["run", "ok", "-i", "localhost,"]) == 0
    [run_dir] = run_dirs(project)
    (run_dir / "report.html").unlink()  # a run made before pages existed
    capsys.readouterr()
    assert cli.main(["report"]) == 0
    assert capsys.readouterr().out.strip() == str(run_dir / "report.html")
    assert "localhost" in checked((run_dir / "report.html").read_text())
    assert cli.main(["report", run_dir.name[:15]]) == 0
    assert capsys.readouterr().out.strip() == str(run_dir / "report.html")


def test_tfprov_report_refuses_in_one_line_when_there_is_no_such_run(capsys, project):
    assert cli.main(["report"]) == 2
    assert capsys.readouterr().err.startswith("tfprov: error: no run in ")
    assert cli.main(["run", "ok", "-i", "localhost,"]) == 0
    capsys.readouterr()
    assert cli.main(["report", "19990101"]) == 2
    err = capsys.readouterr().err
    assert "run '19990101': 0 run(s) match" in err and len(err.strip().splitlines()) == 1


def test_a_page_that_cannot_be_rendered_costs_the_run_nothing(capsys, project, monkeypatch):
    def broken(report, run_dir):
        raise KeyError("bug")
    monkeypatch.setattr(report_page, "write", broken)
    assert cli.main(["run", "ok", "-i", "localhost,"]) == 0
    [run_dir] = run_dirs(project)
    assert (run_dir / "report.json").is_file()
    assert "the run's page was not written: KeyError" in capsys.readouterr().err


@pytest.mark.parametrize("path", RECORDED, ids=[p.stem for p in RECORDED])
def test_recorded_reports_render_every_host_failure_and_result(path):
    report = json.loads(path.read_text())
    text = checked(report_page.render(report))
    for name, host in report["hosts"].items():
        assert name in text
        for failure in host["failed_tasks"]:
            assert " ".join(str(failure["message"]).split()) in text
    if report_page.failures(report):
        assert text.index("failure(s)") < text.index("Hosts")
    for host in report["hosts"].values():
        for part, version in report_page.versions(host).items():
            assert f"{part} {version}" in text


def test_the_timeline_names_each_colour_with_its_seconds():
    report = json.loads((FIXTURES / "reports" / "cluster-check.json").read_text())
    host = next(h for h in report["hosts"].values() if len(h["timeline"]) > 1)
    text = checked(report_page.render({**report, "hosts": {"n1": host}}))
    roles = {seg["role"] for seg in host["timeline"] if seg.get("role")}
    for role in roles:  # one key per role, its seconds summed over its segments
        seconds = sum(seg["seconds"] for seg in host["timeline"] if seg.get("role") == role)
        assert f"role {role} {seconds:.1f} s" in text


def test_recorded_reports_cover_every_plan_the_issue_names():
    plans = {json.loads(p.read_text())["plan"] for p in RECORDED}
    assert {"node", "cluster", "serving", "fleet", "drift"} <= plans


def test_a_node_whose_converge_stood_says_so_and_one_installed_in_full_says_why():
    report = json.loads((FIXTURES / "reports" / "node-rerun.json").read_text())
    stood = report_mod.converged(report)
    assert sorted(stood) == sorted(report["hosts"]) and all(stood.values())
    text = checked(report_page.render(report))
    assert text.count("install skipped: the converge recorded at") == len(report["hosts"])
    host = next(iter(report["hosts"].values()))
    host["data"]["converge"] = {"current": False, "recorded_at": "", "reason": "the node booted since"}
    assert "installed in full: the node booted since" in checked(report_page.render(report))
    assert len(report_mod.converged(report)) == len(report["hosts"]) - 1


def test_the_index_reads_a_runs_folder_with_stray_entries(tmp_path):
    (tmp_path / "notes.txt").write_text("x")
    (tmp_path / "20260101T000000Z-node").mkdir()  # killed before its report
    assert "no run yet" in checked(report_index.render_index(tmp_path))


def test_the_bench_section_shows_percent_of_peak_numpy_and_a_plot():
    report = json.loads((FIXTURES / "reports" / "bench.json").read_text())
    [result] = [host["data"]["bench"] for host in report["hosts"].values()]
    largest = max(row["n"] for row in result["numpy"])
    numpy = next(row["gflops"] for row in result["numpy"] if row["n"] == largest)
    html = report_page.render(report)
    assert "% of peak" in html and "<svg" in html
    assert "NumPy float32</text>" in html and f"{numpy:,.1f} GFLOP/s" in html


def test_the_index_links_only_to_pages_that_exist(capsys, project):
    assert cli.main(["run", "ok", "-i", "localhost,"]) == 0
    assert cli.main(["run", "fail", "-i", "localhost,"]) == 4
    older, newer = run_dirs(project)
    (older / "report.html").unlink()  # a run made before pages existed
    assert cli.main(["report", newer.name]) == 0
    assert (older / "report.html").is_file()  # written for the index's link
    assert not list(project.glob(".tfprov/runs/.*.partial")) and not list(older.glob(".*.partial"))


@pytest.mark.parametrize("opened, rc", [(True, 0), (False, 2)])
def test_report_open_uses_a_browser_and_says_so_when_there_is_none(capsys, project, monkeypatch, opened, rc):
    assert cli.main(["run", "ok", "-i", "localhost,"]) == 0
    [run_dir] = run_dirs(project)
    urls = []
    monkeypatch.setattr(report_cmd.webbrowser, "open", lambda url: urls.append(url) or opened)
    capsys.readouterr()
    assert cli.main(["report", "--open"]) == rc
    assert urls == [(run_dir / "report.html").as_uri()]
    out, err = capsys.readouterr()
    assert out.strip() == str(run_dir / "report.html")  # the path is printed either way
    assert ("no browser found to open" in err) == (not opened)
