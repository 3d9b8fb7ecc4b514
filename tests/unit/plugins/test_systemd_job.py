"""systemd job state and report parsing (module_utils/systemd_job.py), on output captured from systemd 252."""

import json

from ansible_collections.tfprov.gpu.plugins.module_utils.systemd_job import (
    SHOW_PROPERTIES,
    find_report,
    job_status,
    journal_command,
    lifecycle_command,
    log_lines,
    parse_show,
    props_from_lifecycle,
    signal_name,
    unattributed_command,
    unattributed_lines,
    unit_state,
    unloaded,
)

RUNNING = """Result=success
NRestarts=0
ExecMainStartTimestampMonotonic=23789860642
ExecMainExitTimestampMonotonic=0
ExecMainCode=0
ExecMainStatus=0
LoadState=loaded
ActiveState=active
SubState=running
InvocationID=3e1978e79c814ca7af6ebdb8e3718905
"""
EXIT_1 = """Result=exit-code
NRestarts=2
ExecMainStartTimestampMonotonic=23667464491
ExecMainExitTimestampMonotonic=23669478349
ExecMainCode=1
ExecMainStatus=1
LoadState=loaded
ActiveState=failed
SubState=failed
InvocationID=72841335ee0c458abc6e6df8ca94b30c
"""
KILLED = """Result=signal
NRestarts=0
ExecMainStartTimestampMonotonic=23788826785
ExecMainExitTimestampMonotonic=23789841607
ExecMainCode=2
ExecMainStatus=9
LoadState=loaded
ActiveState=failed
SubState=failed
InvocationID=d98f4c01346f462ab4bb4fcb8f46d1d0
"""
NOT_FOUND = """Result=success
NRestarts=0
ExecMainStartTimestampMonotonic=0
ExecMainExitTimestampMonotonic=0
ExecMainCode=0
ExecMainStatus=0
LoadState=not-found
ActiveState=inactive
SubState=dead
InvocationID=
"""
# A unit file that exists but whose unit systemd unloaded: never started, or ended well and garbage-collected.
UNLOADED = NOT_FOUND.replace("LoadState=not-found", "LoadState=loaded")


def props(text, **changes):
    return dict(parse_show(text), **changes)


def test_parse_show_reads_every_property():
    parsed = parse_show(RUNNING)
    assert set(parsed) == set(SHOW_PROPERTIES)
    assert parsed["InvocationID"] == "3e1978e79c814ca7af6ebdb8e3718905"
    assert parse_show("Environment=A=1 B=2\nbroken line\n") == {"Environment": "A=1 B=2"}


def test_running_counts_seconds_up_to_now():
    state = unit_state(parse_show(RUNNING), now_us=23789860642 + 12_500_000)
    assert state == {"state": "running", "active_state": "active", "sub_state": "running", "result": "success",
                     "exit_status": None, "signal": None, "seconds": 12.5, "restarts": 0}
    assert unit_state(props(RUNNING, ActiveState="activating", SubState="auto-restart"))["state"] == "running"


def test_succeeded():
    done = props(EXIT_1, Result="success", ExecMainStatus="0", ActiveState="inactive", SubState="dead")
    state = unit_state(done, now_us=99_999_999_999)
    assert state["state"] == "succeeded" and state["exit_status"] == 0
    assert state["seconds"] == 2.014  # exit - start, not now - start
    # A oneshot with RemainAfterExit stays active (exited) after its main process ended.
    assert unit_state(dict(done, ActiveState="active", SubState="exited"))["state"] == "succeeded"


def test_exit_code_1_fails():
    state = unit_state(parse_show(EXIT_1))
    assert (state["state"], state["result"], state["exit_status"], state["signal"]) == (
        "failed", "exit-code", 1, None)
    assert state["restarts"] == 2


def test_killed_by_kill_names_the_signal():
    state = unit_state(parse_show(KILLED))
    assert (state["state"], state["result"], state["exit_status"], state["signal"]) == (
        "failed", "signal", None, "KILL")
    assert state["seconds"] == 1.015
    assert unit_state(props(KILLED, ExecMainCode="3", ExecMainStatus="11"))["signal"] == "SEGV"  # dumped core
    assert signal_name(15) == "TERM" and signal_name(200) == "SIG200"


def test_never_run():
    assert unit_state(parse_show(NOT_FOUND))["state"] == "never_run"
    assert unit_state(parse_show(UNLOADED), now_us=10**12)["seconds"] == 0.0
    assert unit_state(parse_show(UNLOADED))["state"] == "never_run"
    # A unit that failed before its main process started did run.
    assert unit_state(props(UNLOADED, ActiveState="failed", Result="exit-code"))["state"] == "failed"


def test_journal_commands():
    assert journal_command("/bin/journalctl", "tfprov-tf-job.service", "abc", 20) == [
        "/bin/journalctl", "-u", "tfprov-tf-job.service", "_SYSTEMD_INVOCATION_ID=abc", "-o", "cat", "-n", "20",
        "--no-pager"]
    assert "_SYSTEMD_INVOCATION_ID" not in " ".join(journal_command("journalctl", "u", "", 5))
    assert lifecycle_command("journalctl", "u")[:5] == ["journalctl", "-b", "-u", "u", "_PID=1"]


def lifecycle(*messages):
    ids = {"starting": "7d4958e842da4a758f6c1cdc7b36dcc5", "started": "39f53479d3a045ac8e11786248231fbf",
           "success": "7ad2d189f7e94e70a38c781354912448", "stopped": "9d1aaa27d60140bd96365438aad20286",
           "other": None}
    lines = []
    for mono, invocation, kind in messages:
        entry = {"__MONOTONIC_TIMESTAMP": str(mono), "INVOCATION_ID": invocation, "MESSAGE": kind}
        if ids[kind]:
            entry["MESSAGE_ID"] = ids[kind]
        lines.append(json.dumps(entry))
    return "\n".join(lines) + "\n"


def test_an_unloaded_unit_that_ended_well_is_rebuilt_from_the_journal():
    shown = parse_show(UNLOADED)
    assert unloaded(shown) and not unloaded(parse_show(EXIT_1)) and not unloaded(parse_show(NOT_FOUND))
    text = lifecycle((100, "old", "starting"), (110, "old", "started"), (200, "old", "success"),
                     (300, "new", "other"), (1_000_000, "new", "starting"), (1_000_500, "new", "started"),
                     (4_000_500, "new", "success"), (4_000_600, "new", "other"))
    rebuilt = props_from_lifecycle(shown, text + "not json\n")
    assert rebuilt["InvocationID"] == "new"
    state = unit_state(rebuilt)
    assert (state["state"], state["exit_status"], state["seconds"]) == ("succeeded", 0, 3.0)


def test_an_unloaded_unit_that_was_stopped_failed():
    text = lifecycle((1_000_000, "a", "started"), (2_000_000, "a", "success"), (2_000_100, "a", "stopped"))
    state = unit_state(props_from_lifecycle(parse_show(UNLOADED), text))
    assert (state["state"], state["exit_status"], state["signal"]) == ("failed", None, None)


def test_an_unloaded_units_end_stored_before_its_started_still_ends_its_run():
    # Seen on a node whose journald had been stopped while systemd sent them: Started stored after the run's end.
    text = lifecycle((100, "old", "started"), (200, "old", "success"), (8_000_100, "new", "starting"),
                     (8_000_200, "new", "success"), (8_000_300, "new", "started"))
    rebuilt = props_from_lifecycle(parse_show(UNLOADED), text)
    state = unit_state(rebuilt)
    assert rebuilt["InvocationID"] == "new" and (state["state"], state["exit_status"]) == ("succeeded", 0)
    assert state["seconds"] == 0.0  # not negative
    # An earlier run's end is not this run's: a newest run without an end still reads as no finished run.
    unended = lifecycle((100, "old", "started"), (200, "old", "success"), (300, "new", "starting"))
    assert props_from_lifecycle(parse_show(UNLOADED), unended) == parse_show(UNLOADED)


def test_an_unloaded_unit_without_a_finished_run_stays_never_run():
    shown = parse_show(UNLOADED)
    assert props_from_lifecycle(shown, "") == shown
    assert props_from_lifecycle(shown, lifecycle((1, "a", "starting"), (2, "a", "started"))) == shown


JOURNAL = """Epoch 1/2 loss 2.30
{not json, but starts with a brace
{"tfprov_dist_check": {"ok": false, "task": "worker:0"}}
{"tfprov_dist_check": {"ok": true, "task": "worker:0", "workers": 2, "problems": []}}
{"tfprov_dist_check": broken
{"other": 1}
2026-11-22 W tensorflow/core/framework/local_rendezvous.cc:404] Local rendezvous is aborting
"""


def test_report_is_the_newest_parseable_report_line():
    lines = log_lines(JOURNAL)
    assert find_report(lines) == {"ok": True, "task": "worker:0", "workers": 2, "problems": []}
    assert find_report(lines[:3]) == {"ok": False, "task": "worker:0"}
    assert find_report(lines[:2]) is None
    assert find_report(['{"tfprov_dist_check": [1]}', '{"tfprov_dist_check_x": {}}']) is None
    assert find_report([]) is None


def test_job_status_keeps_the_tail_but_finds_a_report_above_it():
    lines = log_lines(JOURNAL) + [f"stderr noise {n}" for n in range(30)]
    status = job_status(parse_show(EXIT_1), lines, tail_lines=3)
    assert status["log_tail"] == ["stderr noise 27", "stderr noise 28", "stderr noise 29"]
    assert status["last_line"] == "stderr noise 29"
    assert status["report"]["ok"] is True
    assert status["invocation_id"] == "72841335ee0c458abc6e6df8ca94b30c"
    assert status["state"] == "failed"
    empty = job_status(parse_show(NOT_FOUND), log_lines("-- No entries --\n"), tail_lines=0)
    assert (empty["log_tail"], empty["last_line"], empty["report"]) == ([], "", None)


def test_unattributed_lines_are_those_after_the_earlier_runs_entries_without_an_owner():
    text = "\n".join(json.dumps(entry) for entry in (
        {"MESSAGE": "before everything", "_PID": "7"},
        {"MESSAGE": "old run", "_PID": "8", "_SYSTEMD_INVOCATION_ID": "old"},
        {"MESSAGE": "old: Deactivated successfully.", "_PID": "1", "INVOCATION_ID": "old"},
        {"MESSAGE": "first", "_PID": "9"},
        {"MESSAGE": "tagged with this run", "_PID": "9", "_SYSTEMD_INVOCATION_ID": "new"},
        {"MESSAGE": "Starting", "_PID": "1", "INVOCATION_ID": "new"},
        {"MESSAGE": "a systemd line without an id", "_PID": "1"},
        {"MESSAGE": ["binary"], "_PID": "9"},
        {"MESSAGE": "last", "_PID": "9"})) + "\nnot json\n"
    assert unattributed_lines(text, "new") == ["first", "last"]
    assert unattributed_lines("", "new") == []
    command = unattributed_command("journalctl", "u.service", 1000)
    assert command[:5] == ["journalctl", "-u", "u.service", "-o", "json"] and "1000" in command
