# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""State of a systemd job unit and the report it logged: pure parsing of systemctl show and journalctl output."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import signal

SHOW_PROPERTIES = ("ActiveState", "SubState", "Result", "ExecMainStatus", "ExecMainCode",
                   "ExecMainStartTimestampMonotonic", "ExecMainExitTimestampMonotonic", "InvocationID",
                   "NRestarts", "LoadState")
REPORT_PREFIX = '{"tfprov_dist_check"'
REPORT_KEY = "tfprov_dist_check"
# The report is the job's last stdout line, but TensorFlow may log many stderr lines after it: look this far back.
REPORT_SCAN_LINES = 1000
# ExecMainCode is the waitid() si_code of the main process: CLD_EXITED, CLD_KILLED, CLD_DUMPED.
_EXITED, _KILLED, _DUMPED = 1, 2, 3
_BUSY = ("active", "activating", "deactivating", "reloading", "refreshing")
# MESSAGE_IDs systemd logs about a unit's life (sd-messages.h): they tell how a run ended once the unit is unloaded.
_STARTING, _STARTED = "7d4958e842da4a758f6c1cdc7b36dcc5", "39f53479d3a045ac8e11786248231fbf"
_SUCCESS, _STOPPED = "7ad2d189f7e94e70a38c781354912448", "9d1aaa27d60140bd96365438aad20286"


def parse_show(text):
    """{property: value} from `systemctl show -p ...` output (Key=Value lines)."""
    props = {}
    for line in (text or "").splitlines():
        key, sep, value = line.partition("=")
        if sep:
            props[key.strip()] = value.strip()
    return props


def _int(value, default=0):
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def signal_name(number):
    """'KILL' for 9; 'SIG<n>' for a number Python does not name."""
    try:
        return signal.Signals(number).name[3:]
    except ValueError:
        return "SIG%d" % number


def unit_state(props, now_us=None):
    """{state, active_state, sub_state, result, exit_status, signal, seconds, restarts} of one unit.

    state: never_run (unknown unit, or loaded but never started), running (active, activating, deactivating),
    succeeded (inactive, Result=success, exit 0) or failed. now_us: CLOCK_MONOTONIC in microseconds, for the
    running time of a unit still running.
    """
    active = props.get("ActiveState", "")
    result = props.get("Result", "")
    code = _int(props.get("ExecMainCode"))
    status = _int(props.get("ExecMainStatus"))
    started = _int(props.get("ExecMainStartTimestampMonotonic"))
    exited = _int(props.get("ExecMainExitTimestampMonotonic"))
    exit_status = status if code == _EXITED else None
    killed_by = signal_name(status) if code in (_KILLED, _DUMPED) else None

    if props.get("LoadState") == "not-found":
        state = "never_run"
    elif active == "active" and props.get("SubState") == "exited":
        # A oneshot with RemainAfterExit stays active once its main process has ended (and succeeded).
        state = "succeeded" if exit_status == 0 else "failed"
    elif active in _BUSY:
        state = "running"
    elif not started and active != "failed":
        # Loaded and never started (a unit that failed before its main process still counts as failed).
        state = "never_run"
    elif active == "inactive" and result == "success" and exit_status == 0:
        state = "succeeded"
    else:
        state = "failed"

    if state == "running" and started and now_us is not None:
        seconds = max(now_us - started, 0) / 1e6
    elif started and exited >= started:
        seconds = (exited - started) / 1e6
    else:
        seconds = 0.0
    return {
        "state": state,
        "active_state": active,
        "sub_state": props.get("SubState", ""),
        "result": result,
        "exit_status": exit_status,
        "signal": killed_by,
        "seconds": round(seconds, 3),
        "restarts": _int(props.get("NRestarts")),
    }


def unloaded(props):
    """True when systemd shows a unit with no run, which is also how a unit looks after it ended well: systemd
    unloads (garbage-collects) an inactive unit, and with it the state of its last run; failed units stay."""
    return (props.get("LoadState") == "loaded" and props.get("ActiveState") == "inactive"
            and not props.get("InvocationID") and not _int(props.get("ExecMainStartTimestampMonotonic")))


def _json_entries(text):
    """The journal entries (objects) of `journalctl -o json` output; other lines are passed over."""
    for line in (text or "").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict):
            yield entry


def lifecycle_command(journalctl, unit):
    """journalctl command for systemd's own recent messages about a unit in this boot (JSON, one per line)."""
    return [journalctl, "-b", "-u", unit, "_PID=1", "-o", "json", "-n", "50", "--no-pager"]


def props_from_lifecycle(props, text):
    """The props of the last run of an unloaded unit, rebuilt from systemd's messages about it in the journal.

    The run of the newest of Starting, Started, Deactivated successfully and Stopped is the last run; its own end
    decides: Deactivated successfully is a run that exited 0; Stopped, one stopped before its end. A run without
    either leaves the props as they are. Its end may come before its Started: journald has been seen to store
    them so when it had stopped while they were sent.
    """
    entries = []
    for entry in _json_entries(text):
        if entry.get("INVOCATION_ID") and entry.get("MESSAGE_ID") in (_STARTING, _STARTED, _SUCCESS, _STOPPED):
            entries.append(entry)
    if not entries:
        return props
    run = [entry for entry in entries if entry["INVOCATION_ID"] == entries[-1]["INVOCATION_ID"]]
    last = next((e for e in reversed(run) if e["MESSAGE_ID"] in (_SUCCESS, _STOPPED)), None)
    if last is None:
        return props
    started = next((e for e in run if e["MESSAGE_ID"] == _STARTED), run[0])
    # systemd's Result is success either way; a stopped run has no exit status, so it counts as failed.
    return dict(props, ActiveState="inactive", SubState="dead", Result="success",
                ExecMainCode=str(_EXITED) if last["MESSAGE_ID"] == _SUCCESS else "0", ExecMainStatus="0",
                ExecMainStartTimestampMonotonic=str(min(_int(started.get("__MONOTONIC_TIMESTAMP")),
                                                        _int(last.get("__MONOTONIC_TIMESTAMP")))),
                ExecMainExitTimestampMonotonic=str(last.get("__MONOTONIC_TIMESTAMP", 0)),
                InvocationID=last["INVOCATION_ID"])


def journal_command(journalctl, unit, invocation_id, lines):
    """The journalctl command for the last `lines` lines of this invocation (of the unit, without an id)."""
    command = [journalctl, "-u", unit]
    if invocation_id:
        command.append("_SYSTEMD_INVOCATION_ID=%s" % invocation_id)
    return command + ["-o", "cat", "-n", str(lines), "--no-pager"]


def unattributed_command(journalctl, unit, lines):
    """journalctl command for the unit's last entries, with only the fields unattributed_lines reads."""
    return [journalctl, "-u", unit, "-o", "json", "--output-fields=MESSAGE,_PID,INVOCATION_ID,_SYSTEMD_INVOCATION_ID",
            "-n", str(lines), "--no-pager"]


def unattributed_lines(text, invocation_id):
    """The lines of this invocation that journald could not tag with it, from unattributed_command's output.

    journald tags a service's output with its invocation when it accepts the output's stream, from the process's
    cgroup; a job that ended before journald got to it (journald busy) leaves lines that only name the unit.
    They are this invocation's when they follow every entry of an earlier one (the unit's latest run is read).
    systemd's own messages about the unit (_PID 1) are not its log.
    """
    found = []
    for entry in _json_entries(text):
        if not isinstance(entry.get("MESSAGE"), str):
            continue
        owner = entry.get("_SYSTEMD_INVOCATION_ID") or entry.get("INVOCATION_ID")
        if owner and owner != invocation_id:
            found = []  # an earlier run's entry: what came before it is not this run's
        elif not owner and entry.get("_PID") != "1":
            found.append(entry["MESSAGE"])
    return found


def log_lines(text):
    # Without entries, older journalctl prints "-- No entries --" even with -o cat.
    return [line for line in (text or "").splitlines() if line.strip() != "-- No entries --"]


def find_report(lines):
    """The tfprov_dist_check object of the newest line that holds one, or None."""
    for line in reversed(lines or []):
        text = line.strip()
        if not text.startswith(REPORT_PREFIX):
            continue
        try:
            data = json.loads(text)
        except ValueError:
            continue
        if isinstance(data, dict) and isinstance(data.get(REPORT_KEY), dict):
            return data[REPORT_KEY]
    return None


def job_status(props, lines, tail_lines=20, now_us=None):
    """Everything the dist_job_status module returns, from `systemctl show` properties and the journal lines
    of this invocation (up to REPORT_SCAN_LINES of them; log_tail keeps the last tail_lines)."""
    status = unit_state(props, now_us)
    lines = list(lines or [])
    tail = lines[-tail_lines:] if tail_lines > 0 else []
    status.update({
        "invocation_id": props.get("InvocationID", ""),
        "log_tail": tail,
        "last_line": tail[-1] if tail else "",
        "report": find_report(lines),
    })
    return status
