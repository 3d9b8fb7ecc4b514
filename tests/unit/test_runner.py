"""Run directories: no secret in clear, rotation, one directory per run even in the same second."""

import os
from datetime import UTC, datetime
from pathlib import Path

import pytest
import tiny_project
from tiny_project import run_dirs

from tfprov import cli, rundirs, runner
from tfprov.errors import TfprovError
from tfprov.redact import MASK, Redactor


@pytest.fixture
def project(tmp_path, monkeypatch):
    return tiny_project.make(tmp_path, monkeypatch)


def _files_containing(folder, *needles):
    hits = []
    for path in folder.rglob("*"):
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            hits += [f"{path.relative_to(folder)}: {needle}" for needle in needles if needle.encode() in data]
    return hits


def test_extra_vars_never_reach_the_run_directory_in_clear(capsys, project, tmp_path, monkeypatch):
    monkeypatch.setenv("SOME_CLOUD_SECRET_KEY", "S3CRET-ENV")  # ansible-runner records the environment
    rc = cli.main(["run", "ok", "-i", "localhost,", "-e", "plain_value=S3CRET-PLAIN expected_plain=S3CRET-PLAIN",
                   "-e", '{"api_token": "S3CRET-TOKEN"}'])
    out, err = capsys.readouterr()
    assert rc == 0, out + err  # the assert in ok.yml saw the plain value: the extra vars did reach ansible
    [run_dir] = run_dirs(project)
    assert (run_dir / "artifacts" / "01-ok" / "job_events").is_dir()
    assert not (run_dir / "env").exists()
    assert _files_containing(project / ".tfprov", "S3CRET") == []
    assert "S3CRET" not in out + err
    # The careless debug task's line is masked, not dropped.
    assert f"token is {MASK}" in (run_dir / "artifacts" / "01-ok" / "stdout").read_text()
    # The extra-vars file lived outside the run directory and is gone.
    assert list((tmp_path / "tmp").glob("tfprov-extravars-*")) == []


def test_the_extra_vars_file_is_private_and_removed_even_on_error(tmp_path, monkeypatch):
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    with pytest.raises(RuntimeError), runner.extravars_file({"a": "b"}) as path:
        assert os.stat(path).st_mode & 0o777 == 0o600
        raise RuntimeError
    assert not os.path.exists(path)


def test_redactor_masks_secret_named_values_at_any_depth_and_leaves_the_rest():
    redactor = Redactor({"db": {"password": "hunter22"}, "tf_version": "2.15.1", "api_key": "ab", "on": True})
    event = {"event_data": {"res": {"msg": "login hunter22 with 2.15.1", "list": ["hunter22"]}}}
    redactor.event(event)
    assert event == {"event_data": {"res": {"msg": f"login {MASK} with 2.15.1", "list": [MASK]}}}


def _old_run(base, name, mtime=None):
    path = base / name
    path.mkdir(parents=True)
    (path / "report.json").write_text("{}")
    return path


def test_rotation_keeps_the_newest_and_never_the_wrong_things(tmp_path):
    base = tmp_path / "runs"
    old = [_old_run(base, f"20250101T0000{i:02d}Z-node") for i in range(6)]
    unrelated = _old_run(base, "my-notes")
    running = _old_run(base, "20240101T000000Z-node")
    (running / "tfprov.pid").write_text(str(os.getpid()))  # a live process still uses it
    current = _old_run(base, "20200101T000000Z-node")  # a clock set back must not delete the current run
    removed = rundirs.rotate(base, 3, current=current)
    assert sorted(removed) == sorted(old[:4])
    assert sorted(p.name for p in base.iterdir()) == sorted(
        ["20250101T000004Z-node", "20250101T000005Z-node", "my-notes", running.name, current.name])
    assert unrelated.exists()


def test_rotation_off_with_0(tmp_path):
    base = tmp_path / "runs"
    for i in range(3):
        _old_run(base, f"20250101T0000{i:02d}Z-node")
    assert rundirs.rotate(base, 0, current=base / "x") == []


def test_a_run_rotates_old_run_directories_with_keep_runs(capsys, project):
    base = project / ".tfprov" / "runs"
    for i in range(3):
        _old_run(base, f"20000101T0000{i:02d}Z-ok")
    assert cli.main(["run", "ok", "-i", "localhost,", "--keep-runs", "2"]) == 0
    names = [p.name for p in run_dirs(project)]
    assert len(names) == 2 and names[0] == "20000101T000002Z-ok"
    assert (base / names[1] / "report.json").is_file() and not (base / names[1] / "tfprov.pid").exists()


def test_keep_runs_from_the_environment(monkeypatch):
    monkeypatch.setenv("TFPROV_KEEP_RUNS", "7")
    assert rundirs.keep_runs(None) == 7 and rundirs.keep_runs(3) == 3
    monkeypatch.delenv("TFPROV_KEEP_RUNS")
    assert rundirs.keep_runs(None) == rundirs.DEFAULT_KEEP_RUNS == 20
    monkeypatch.setenv("TFPROV_KEEP_RUNS", "-2")
    with pytest.raises(TfprovError):
        rundirs.keep_runs(None)


def test_runs_started_in_the_same_second_get_distinct_directories(tmp_path, monkeypatch):
    """Two concurrent calls in the worst order: the second creates the very name the first chose, just before
    the first creates it (two processes started in one second). Both must get a directory of their own."""
    monkeypatch.setenv("TFPROV_RUNS_DIR", str(tmp_path / "runs"))

    class SameSecond(datetime):
        @classmethod
        def now(cls, tz=None):
            return datetime(2026, 1, 1, tzinfo=UTC)

    monkeypatch.setattr(rundirs, "datetime", SameSecond)  # the stamp is made there
    real_mkdir = Path.mkdir
    concurrent = []
    interleaved = []

    def mkdir_after_the_other_run(self, *args, **kwargs):
        if self.name.startswith("20260101T000000Z-node") and not interleaved:
            interleaved.append(self.name)
            concurrent.append(runner.new_run_dir(tmp_path, "node"))  # the other run gets in first
        return real_mkdir(self, *args, **kwargs)

    monkeypatch.setattr(Path, "mkdir", mkdir_after_the_other_run)
    first = runner.new_run_dir(tmp_path, "node")
    [second] = concurrent
    assert first != second and first.is_dir() and second.is_dir()
    assert {first.name, second.name} == {"20260101T000000Z-node", "20260101T000000Z-node-2"}
    assert first.stat().st_mode & 0o777 == 0o700
    monkeypatch.setattr(Path, "mkdir", real_mkdir)
    assert runner.new_run_dir(tmp_path, "node").name == "20260101T000000Z-node-3"


@pytest.mark.parametrize(("hosts", "flags", "expected"), [
    ({"a": {"failures": 1, "dark": 0}, "b": {"failures": 0, "dark": 1}}, {}, ("failed", 4)),
    ({"a": {"failures": 0, "dark": 1}}, {}, ("unreachable", 5)),
    ({}, {"no_hosts": True, "ansible_failed": True}, ("no hosts", 3)),
    ({}, {"ansible_failed": True}, ("bad input", 2)),
    ({"a": {"failures": 0, "dark": 0}}, {"ansible_failed": True}, ("error", 1)),
    ({"a": {"failures": 1, "dark": 0}}, {"interrupted": True}, ("interrupted", 130)),
    ({"a": {"failures": 0, "dark": 0}}, {}, ("successful", 0)),
])
def test_outcome_order(hosts, flags, expected):
    assert runner.outcome(hosts, **{"interrupted": False, "ansible_failed": False, "no_hosts": False,
                                    **flags}) == expected
