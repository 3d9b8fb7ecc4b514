#!/usr/bin/python
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: dist_job_status
short_description: Tell whether a systemd job unit runs, succeeded or failed, with its log and its report
version_added: 1.3.0
description:
  - Reads a unit's state with C(systemctl show) and the log of its current (or last) invocation with
    C(journalctl _SYSTEMD_INVOCATION_ID=...), so an earlier run's lines never mix in.
  - A unit that is no longer running is read only after journald has stored what it was sent
    (C(journalctl --sync), which needs root; a journald that does not answer within 30 s is given up on, with a
    warning). Otherwise a job that ended in a second can be read before systemd's
    messages about its end, and its own last lines, reach the journal. Lines journald could not tag with the
    invocation (the job had ended before journald read them) are taken when they follow every earlier run's.
  - Finds the report a distributed check logs as its last line (a JSON object with the single key
    C(tfprov_dist_check)) in the log of that invocation.
  - Changes nothing.
author:
  - tfprov maintainers (@tfprov)
options:
  unit:
    description: The systemd unit, for example C(tfprov-tf-job.service).
    type: str
    required: true
  log_lines:
    description: How many of the invocation's last log lines to return in RV(log_tail).
    type: int
    default: 20
extends_documentation_fragment:
  - tfprov.gpu.read_only
"""

EXAMPLES = r"""
- name: Wait for the distributed job to end
  tfprov.gpu.dist_job_status:
    unit: tfprov-tf-job.service
  register: __job
  until: __job.state != "running"
  retries: 60
  delay: 10
"""

RETURN = r"""
state:
  description: C(running), C(succeeded) (ended with exit status 0), C(failed), or C(never_run) (no such unit, or
    never started since boot).
  returned: always
  type: str
  sample: succeeded
active_state:
  description: systemd's ActiveState.
  returned: always
  type: str
  sample: inactive
sub_state:
  description: systemd's SubState.
  returned: always
  type: str
  sample: dead
result:
  description: systemd's Result (C(success), C(exit-code), C(signal), C(timeout), ...).
  returned: always
  type: str
  sample: exit-code
exit_status:
  description: Exit status of the main process when it exited; null while it runs or when a signal ended it.
  returned: always
  type: int
  sample: 3
signal:
  description: Name of the signal that ended the main process (C(KILL), C(SEGV), ...), or null.
  returned: always
  type: str
  sample: KILL
seconds:
  description: Wall time of this invocation, up to now while it runs.
  returned: always
  type: float
  sample: 42.5
restarts:
  description: How many times systemd restarted the unit (NRestarts).
  returned: always
  type: int
  sample: 0
invocation_id:
  description: systemd's InvocationID of the run the log belongs to.
  returned: always
  type: str
log_tail:
  description: The last O(log_lines) log lines of this invocation (stdout and stderr, as in the journal).
  returned: always
  type: list
  elements: str
last_line:
  description: The last line of RV(log_tail), or an empty string.
  returned: always
  type: str
report:
  description: The C(tfprov_dist_check) object of the newest log line of this invocation that holds one, or null.
  returned: always
  type: dict
  sample: {"ok": true, "task": "worker:0", "workers": 2, "problems": []}
"""

import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.tfprov.gpu.plugins.module_utils.systemd_job import (
    REPORT_SCAN_LINES,
    SHOW_PROPERTIES,
    job_status,
    journal_command,
    lifecycle_command,
    log_lines,
    parse_show,
    props_from_lifecycle,
    unattributed_command,
    unattributed_lines,
    unit_state,
    unloaded,
)

# journalctl --sync waits for journald without a limit of its own.
SYNC_TIMEOUT = 30


def _first_line(text):
    return next((line.strip() for line in (text or "").splitlines() if line.strip()), "no output")


def read_journal(module, unit, command):
    """journalctl's output, or "" (with a warning) when it cannot read the journal."""
    rc, out, err = module.run_command(command)
    if rc != 0:
        module.warn("journalctl could not read the log of %s: %s" % (unit, _first_line(err)))
        return ""
    return out


def sync_journal(module, journalctl, timeout=SYNC_TIMEOUT):
    """Let journald store what it has been sent before the journal is read.

    A unit that has ended may already be gone from systemd (garbage-collected) while the messages that say how it
    ended, its own last lines and systemd's "Deactivated successfully", still wait in journald's sockets: read
    then, a job that succeeded in a second looks as if it never started. `journalctl --sync` returns once journald
    has written everything sent before it (it needs root; without it the journal is read as it is). It waits for
    journald without end: a journald that does not answer is given `timeout` seconds (coreutils' timeout ends it
    then, killing it a second later if it is still there: run_command has no time limit of its own).
    """
    command = [journalctl, "--sync"]
    limit = module.get_bin_path("timeout")
    if limit:
        command = [limit, "--kill-after=1", "%g" % timeout] + command
    rc, dummy_out, err = module.run_command(command)
    # 124: ended at the time limit; killed, timeout exits 128 + 9 or is killed with its process group.
    if limit and rc in (124, 128 + 9, -9):
        module.warn("journald did not store its pending messages within %g s: the log of a job that has just ended "
                    "may lack its last lines" % timeout)
        return
    if rc != 0:
        module.warn("journalctl --sync failed, the log may lack its last lines: %s" % _first_line(err))


def main():
    module = AnsibleModule(
        argument_spec={
            "unit": {"type": "str", "required": True},
            "log_lines": {"type": "int", "default": 20},
        },
        supports_check_mode=True,
    )
    unit, tail_lines = module.params["unit"], module.params["log_lines"]
    if tail_lines < 0:
        module.fail_json(msg="log_lines is %d: set it to 0 or more" % tail_lines)
    systemctl = module.get_bin_path("systemctl")
    if not systemctl:
        module.fail_json(msg="systemctl is not on this node: dist_job_status needs systemd")
    rc, out, err = module.run_command([systemctl, "show", unit, "-p", ",".join(SHOW_PROPERTIES)])
    if rc != 0:
        module.fail_json(msg="systemctl show %s failed: %s" % (unit, _first_line(err)))
    props = parse_show(out)
    journalctl = module.get_bin_path("journalctl")
    if not journalctl:
        module.warn("journalctl is not on this node: no log for %s" % unit)
    elif unit_state(props)["state"] != "running":
        sync_journal(module, journalctl)
    if journalctl and unloaded(props):
        props = props_from_lifecycle(props, read_journal(module, unit, lifecycle_command(journalctl, unit)))
    # time.monotonic() is CLOCK_MONOTONIC, the clock of systemd's *TimestampMonotonic (/proc/uptime also
    # counts suspended time).
    now_us = int(time.monotonic() * 1e6)
    state = unit_state(props, now_us)["state"]
    lines = []
    if journalctl and state != "never_run":
        scan = max(tail_lines, REPORT_SCAN_LINES)
        command = journal_command(journalctl, unit, props.get("InvocationID"), scan)
        lines = log_lines(read_journal(module, unit, command))
        if not lines and state != "running" and props.get("InvocationID"):
            # A job that ended before journald read its output: its lines name the unit, not the run.
            text = read_journal(module, unit, unattributed_command(journalctl, unit, scan))
            lines = unattributed_lines(text, props["InvocationID"])
    module.exit_json(changed=False, **job_status(props, lines, tail_lines, now_us))


if __name__ == "__main__":
    main()
