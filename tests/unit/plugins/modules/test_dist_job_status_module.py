"""dist_job_status (the module) on a node faked with a systemctl and a journalctl whose journald lags: systemd's
messages about a job that ended, and the job's own line, reach the journal only once it is synced."""

import json
import stat
import time

import pytest
from ansible.module_utils.testing import patch_module_args
from ansible_collections.tfprov.gpu.plugins.modules import dist_job_status

# systemd has already forgotten the unit (garbage-collected after it ended well).
UNLOADED = "LoadState=loaded\nActiveState=inactive\nSubState=dead\nResult=success\nInvocationID=\n" \
           "ExecMainStartTimestampMonotonic=0\nExecMainExitTimestampMonotonic=0\n"
STARTING, STARTED, SUCCESS = ("7d4958e842da4a758f6c1cdc7b36dcc5", "39f53479d3a045ac8e11786248231fbf",
                              "7ad2d189f7e94e70a38c781354912448")


def entries(*items):
    return "".join(json.dumps(item) + "\n" for item in items)


LIFECYCLE = entries(*({"MESSAGE_ID": mid, "INVOCATION_ID": "new", "__MONOTONIC_TIMESTAMP": str(mono), "MESSAGE": "m"}
                      for mid, mono in ((STARTING, 1_000_000), (STARTED, 1_000_100), (SUCCESS, 1_500_000))))
# The unit's entries: an earlier run, then this run's line, which journald could not tag with the run.
UNIT = entries({"MESSAGE": "old line", "_PID": "90", "_SYSTEMD_INVOCATION_ID": "old"},
               {"MESSAGE": "Deactivated successfully.", "_PID": "1", "INVOCATION_ID": "old"},
               {"MESSAGE": "quick ok", "_PID": "193"},
               {"MESSAGE": "Starting ...", "_PID": "1", "INVOCATION_ID": "new"})


def fake_node(tmp_path, monkeypatch, sync_works=True):
    """systemctl showing the unloaded unit; journalctl answering from files, the journal's only after --sync."""
    (tmp_path / "show.txt").write_text(UNLOADED)
    (tmp_path / "lifecycle.json").write_text(LIFECYCLE)
    (tmp_path / "unit.json").write_text(UNIT)
    synced = tmp_path / "synced"
    sync = f'touch "{synced}"' if sync_works else 'echo "Failed to trigger a sync: Access denied" >&2; exit 1'
    scripts = {
        "systemctl": f'cat "{tmp_path / "show.txt"}"',
        "timeout": 'exec timeout "$@"',  # coreutils' own, which the module puts before journalctl --sync
        "journalctl": f'echo "$*" >> "{tmp_path / "calls"}"\n'
                      f'[ "$1" = --sync ] && {{ {sync}; exit 0; }}\n'
                      f'[ -e "{synced}" ] || exit 0\n'
                      f'case "$*" in *_PID=1*) cat "{tmp_path / "lifecycle.json"}" ;;\n'
                      f'  *--output-fields*) cat "{tmp_path / "unit.json"}" ;;\n'
                      '  *_SYSTEMD_INVOCATION_ID*) echo "-- No entries --" ;;\nesac',
    }
    for name, body in scripts.items():
        script = tmp_path / name
        script.write_text("#!/bin/sh\n" + body + "\n")
        script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setattr(dist_job_status.AnsibleModule, "get_bin_path",
                        lambda self, name, *a, **k: str(tmp_path / name))


def run(capsys):
    with patch_module_args({"unit": "tfprov-quick.service"}), pytest.raises(SystemExit):
        dist_job_status.main()
    return json.loads(capsys.readouterr().out)


def test_a_job_that_ended_before_journald_stored_its_end_reads_succeeded_with_its_line(tmp_path, capsys,
                                                                                        monkeypatch):
    fake_node(tmp_path, monkeypatch)
    result = run(capsys)
    assert (result["state"], result["exit_status"], result["invocation_id"]) == ("succeeded", 0, "new")
    assert result["log_tail"] == ["quick ok"] and result["seconds"] == 0.5
    calls = (tmp_path / "calls").read_text().splitlines()
    assert calls[0] == "--sync"  # before the journal is read


def test_without_root_to_sync_the_journal_is_read_as_it_is_with_a_warning(tmp_path, capsys, monkeypatch):
    fake_node(tmp_path, monkeypatch, sync_works=False)
    # Recorded here: once a test has loaded Ansible's controller side, module warnings go to its display instead.
    warnings = []
    monkeypatch.setattr(dist_job_status.AnsibleModule, "warn", lambda self, message: warnings.append(message))
    assert run(capsys)["state"] == "never_run"
    assert any("journalctl --sync failed" in w and "Access denied" in w for w in warnings), warnings


def test_a_running_job_is_read_without_a_sync(tmp_path, capsys, monkeypatch):
    fake_node(tmp_path, monkeypatch)
    (tmp_path / "show.txt").write_text("LoadState=loaded\nActiveState=active\nSubState=running\nInvocationID=new\n"
                                       "ExecMainStartTimestampMonotonic=1000100\n")
    assert run(capsys)["state"] == "running"
    assert "--sync" not in (tmp_path / "calls").read_text().splitlines()


def test_a_journald_that_does_not_answer_the_sync_is_given_up_on_with_a_warning(tmp_path, monkeypatch):
    script = tmp_path / "journalctl"
    script.write_text("#!/bin/sh\nexec sleep 30\n")  # a stopped journald: --sync never returns
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    warnings = []
    monkeypatch.setattr(dist_job_status.AnsibleModule, "warn", lambda self, message: warnings.append(message))
    with patch_module_args({"unit": "tfprov-quick.service"}):
        module = dist_job_status.AnsibleModule(argument_spec={"unit": {"type": "str"}})
    start = time.monotonic()
    dist_job_status.sync_journal(module, str(script), timeout=0.5)
    assert len(warnings) == 1 and "did not store its pending messages within 0.5 s" in warnings[0]
    assert time.monotonic() - start < 10  # killed, not waited for

