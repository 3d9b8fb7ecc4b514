"""The CLI contract: one distinct exit code per outcome (errors.py), one line on stderr, never a traceback.

Runs go through ansible-runner for real, against localhost with a local connection (tiny_project.py).
"""

import json
import os
import signal
import threading
import time

import pytest
import tiny_project
from tiny_project import run_dirs

from tfprov import cli, errors
from tfprov import plan as plan_mod


@pytest.fixture
def project(tmp_path, monkeypatch):
    return tiny_project.make(tmp_path, monkeypatch)


def _run(capsys, *argv):
    rc = cli.main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return rc, out, err


def _report(root):
    [run_dir] = run_dirs(root)
    return json.loads((run_dir / "report.json").read_text())


def _one_line(err, prefix="tfprov: error: "):
    assert err.startswith(prefix), err
    assert len(err.strip().splitlines()) == 1, err


def test_the_exit_codes_are_distinct_and_documented_in_help(capsys):
    assert len(set(errors.EXIT_CODES)) == len(errors.EXIT_CODES) == 7
    with pytest.raises(SystemExit):
        cli.main(["run", "--help"])
    out = capsys.readouterr().out
    for code, text in errors.EXIT_CODES.items():
        assert f"{code:<4} {text}" in out
    assert "--keep-runs" in out and "TFPROV_KEEP_RUNS" in out


def test_success_is_0(capsys, project):
    rc, out, _ = _run(capsys, "run", "ok", "-i", "localhost,")
    assert rc == errors.EXIT_OK == 0
    report = _report(project)
    assert (report["status"], report["rc"]) == ("successful", 0)
    assert list(report["hosts"]) == ["localhost"]  # not a host named 'localhost,'


def test_a_failed_host_is_4_not_the_bad_input_code(capsys, project):
    rc, out, _ = _run(capsys, "run", "fail", "-i", "localhost,")
    assert rc == errors.EXIT_HOST_FAILED == 4
    assert "failed on purpose" in out
    assert (_report(project)["status"], _report(project)["rc"]) == ("failed", 4)


def test_a_refusal_in_the_checking_play_is_bad_input_in_one_line_and_nothing_changed(capsys, project):
    rc, _, err = _run(capsys, "run", "refuse", "-i", "localhost,")
    assert rc == errors.EXIT_BAD_INPUT == 2
    assert (_report(project)["status"], _report(project)["rc"]) == ("refused", 2)  # the report agrees
    assert [line for line in err.splitlines() if line.startswith("tfprov: error:")] == [
        "tfprov: error: refused before any change: localhost: tiny_port 70000 is out of range 1-65535 (no host was "
        "changed; fix the setting and run again)"]
    assert [play["name"] for play in _report(project)["plays"]] == ["Check the settings before anything changes"]


def test_a_failure_after_the_checking_plays_stays_a_host_failure(capsys, project):
    rc, _, err = _run(capsys, "run", "fail-checked", "-i", "localhost,")
    assert rc == errors.EXIT_HOST_FAILED and "refused" not in err


def test_an_argument_spec_refusal_is_one_line_naming_the_variable_and_its_choices(capsys, project):
    rc, out, err = _run(capsys, "run", "argspec", "-i", "localhost,")
    assert rc == errors.EXIT_BAD_INPUT
    failure = _report(project)["hosts"]["localhost"]["failed_tasks"][0]["message"]
    assert failure.startswith("tiny_role: value of tiny_role_mode must be one of: a, b") and "bogus" in failure
    error = [line for line in err.splitlines() if line.startswith("tfprov: error:")]
    assert error == [f"tfprov: error: refused before any change: localhost: {failure} (no host was changed; fix the "
                     "setting and run again)"]


def test_an_unreachable_host_is_5(capsys, project, tmp_path):
    inventory = tmp_path / "closed-port.ini"
    inventory.write_text("far ansible_connection=ssh ansible_host=127.0.0.1 ansible_port=1 ansible_user=nobody\n")
    rc, _, _ = _run(capsys, "run", "ok", "-i", str(inventory))
    assert rc == errors.EXIT_UNREACHABLE == 5
    report = _report(project)
    assert (report["status"], report["rc"]) == ("unreachable", 5)
    assert report["hosts"]["far"]["status"] == "unreachable"


def test_a_failed_host_outweighs_an_unreachable_one(capsys, project, tmp_path):
    inventory = tmp_path / "mixed.ini"
    inventory.write_text("here ansible_connection=local\n"
                         "far ansible_connection=ssh ansible_host=127.0.0.1 ansible_port=1 ansible_user=nobody\n")
    rc, _, _ = _run(capsys, "run", "fail", "-i", str(inventory))
    assert rc == errors.EXIT_HOST_FAILED


def test_a_limit_that_matches_no_host_is_3(capsys, project):
    # ansible-playbook itself exits 1 here ("--limit leaves us with no hosts to target").
    rc, out, err = _run(capsys, "run", "ok", "-i", "localhost,", "-l", "no-such-host")
    assert rc == errors.EXIT_NO_HOSTS == 3
    assert "no host matched" in out and "with --limit no-such-host" in out
    assert (_report(project)["status"], _report(project)["rc"]) == ("no hosts", 3)


def test_a_group_with_no_host_is_3(capsys, project, tmp_path):
    inventory = tmp_path / "empty.ini"
    inventory.write_text("[tfprov_nodes]\n[other]\nlocalhost\n")
    rc, out, _ = _run(capsys, "run", "group", "-i", str(inventory))
    assert rc == errors.EXIT_NO_HOSTS
    assert (_report(project)["status"], _report(project)["rc"]) == ("no hosts", 3)


@pytest.mark.parametrize("inventory", ["", "   ", ","])
def test_an_empty_inventory_argument_is_bad_input(capsys, project, inventory):
    rc, _, err = _run(capsys, "run", "ok", "-i", inventory)
    assert rc == errors.EXIT_BAD_INPUT == 2
    _one_line(err)
    assert "inventory" in err


def test_an_inventory_ansible_cannot_parse_is_bad_input_with_ansibles_line(capsys, project, tmp_path):
    inventory = tmp_path / "broken.yml"
    inventory.write_text("plugin: no.such.plugin\n")
    rc, out, err = _run(capsys, "run", "ok", "-i", str(inventory))
    assert rc == errors.EXIT_BAD_INPUT
    # Progress lines come first on stderr (the run had started); the error is one line, the last.
    [line] = [line for line in err.splitlines() if "error" in line.lower()]
    assert line == err.splitlines()[-1] and line.startswith("tfprov: error: ansible-playbook stopped: [ERROR]")
    assert "inventory" in line.lower()
    assert (_report(project)["status"], _report(project)["rc"]) == ("bad input", 2)


@pytest.mark.parametrize(("command", "plan", "message"), [
    ("run", "cycle", "import_playbook cycle: cycle-a.yml -> cycle-b.yml -> cycle-a.yml"),
    ("plan", "cycle", "import_playbook cycle"),
    ("run", "missing-import", "imports"),
    ("plan", "missing-import", "not-there.yml, which does not exist"),
])
def test_a_plan_with_a_broken_import_is_one_line(capsys, project, command, plan, message):
    rc, _, err = _run(capsys, command, plan, *(["-i", "localhost,"] if command == "run" else []))
    assert rc == errors.EXIT_BAD_INPUT
    _one_line(err)
    assert message in err
    assert not (project / ".tfprov" / "runs").exists() or not run_dirs(project)


def test_an_unexpected_exception_is_one_line_and_a_logged_traceback(capsys, project, monkeypatch):
    def explode(*_args, **_kwargs):
        raise KeyError("something\nwent wrong")

    monkeypatch.setattr(plan_mod, "load_plans", explode)
    rc, out, err = _run(capsys, "plan", "--list")
    assert rc == errors.EXIT_INTERNAL == 1
    _one_line(err, "tfprov: internal error: KeyError: ")
    assert "(traceback in " in err
    [log] = (project / ".tfprov" / "logs").glob("*-internal-error.log")
    assert str(log) in err
    assert "Traceback (most recent call last)" in log.read_text() and "explode" in log.read_text()


def test_interrupt_stays_130(capsys, project, monkeypatch):
    def interrupt(*_args, **_kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(plan_mod, "load_plans", interrupt)
    rc, _, err = _run(capsys, "plan", "--list")
    assert rc == errors.EXIT_INTERRUPTED == 130
    assert err.strip() == "tfprov: interrupted"


def test_ctrl_c_during_a_run_is_130_and_the_report_says_interrupted(capsys, project, tmp_path):
    """ansible-runner takes SIGINT itself while a playbook runs (it cancels the step, raising nothing): the run must
    still end as interrupted, 130, with its report, and the plan's later steps never start."""
    marker = tmp_path / "started"

    def interrupt_once_started():
        deadline = time.monotonic() + 60
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        os.kill(os.getpid(), signal.SIGINT)  # what a terminal's Ctrl-C sends

    threading.Thread(target=interrupt_once_started, daemon=True).start()
    started = time.monotonic()
    rc, out, err = _run(capsys, "run", "slow", "-i", "localhost,", "-e", f"started_marker={marker}")
    assert rc == errors.EXIT_INTERRUPTED == 130, out + err
    assert time.monotonic() - started < 50  # the minute-long task was stopped
    report = _report(project)
    assert report["status"] == "interrupted" and report["rc"] == 130
    assert [step["playbook"] for step in report["steps"]] == ["slow.yml"]


@pytest.mark.parametrize("value", ["many", "-1"])
def test_a_bad_keep_runs_setting_is_bad_input(capsys, project, monkeypatch, value):
    monkeypatch.setenv("TFPROV_KEEP_RUNS", value)
    rc, _, err = _run(capsys, "run", "ok", "-i", "localhost,")
    assert rc == errors.EXIT_BAD_INPUT
    _one_line(err)
    assert "TFPROV_KEEP_RUNS" in err


@pytest.mark.parametrize("argv", [["run", "node"], ["fleet", "update"], ["fleet", "drift"], ["fleet", "status"]])
@pytest.mark.parametrize(("forks", "words"), [("0", "must be at least 1"), ("two", "'two' is not a whole number")])
def test_forks_is_a_whole_number_of_at_least_one_for_every_command(capsys, argv, forks, words):
    with pytest.raises(SystemExit) as exit_:
        cli.main([*argv, "-f", forks])
    err = capsys.readouterr().err
    assert exit_.value.code == errors.EXIT_BAD_INPUT and f"argument -f/--forks: {words}" in err, err


def test_a_run_halted_by_any_errors_fatal_is_retried_whole(capsys, project):
    from tfprov import retry

    rc, _, _ = _run(capsys, "run", "halt", "-i", "h1,h2,")
    assert rc == errors.EXIT_HOST_FAILED
    report = _report(project)
    assert report["planned_plays"] == 2 and len(report["plays"]) == 1
    assert report["hosts"]["h2"]["status"] == "ok"  # stopped, not failed: only the plan's count tells
    again = retry.plan_retry(project, "halt", None, None)
    assert again.whole and again.hosts == ["h1", "h2"] and again.inventory == "h1,h2,"

