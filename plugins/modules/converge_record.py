#!/usr/bin/python
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: converge_record
short_description: Record a node's finished converge, and tell a later run whether it still stands
version_added: 1.4.0
description:
  - With I(state=record), after a run that converged the node and passed its checks, writes what the run was given
    (I(inputs), a digest the controller computes) and what the node looked like afterwards (its boot, and the
    witnesses below) to a root-only file.
  - With I(state=check), tells whether that record still stands, and if not, why. It stands only when the inputs
    are the same, the node has not booted since, the record is younger than I(max_age_hours), and no witness
    changed.
  - The witnesses are cheap to read and change with anything a converge installs or configures. For every path of
    I(witnesses) (a glob), its type, size, modification time and inode; for a directory also those of the files
    directly in it, so a package added to or removed from C(site-packages), a unit file edited or a package
    installed (C(/var/lib/dpkg/status)) is seen. And the state of every C(tfprov-*) systemd unit, where systemd
    runs.
  - A file edited inside an installed package is not seen (a full run does not see it either, since its pip and apt
    tasks compare versions).
  - Changes nothing with I(state=check); I(state=record) reports no change, since the record is not configuration.
author:
  - tfprov maintainers (@tfprov)
options:
  state:
    description: C(check) reads the record and compares; C(record) writes it.
    type: str
    choices: [check, record]
    default: check
  name:
    description: Which converge (one record per playbook), e.g. C(node) for C(gpu_node.yml).
    type: str
    required: true
  inputs:
    description: The controller's digest of what the run was given (the collection, the host's variables).
    type: str
    required: true
  witnesses:
    description: Paths or globs whose state the record keeps.
    type: list
    elements: str
    default: []
  max_age_hours:
    description: With I(state=check), a record older than this does not stand. 0 never lets one stand.
    type: int
    default: 24
  report:
    description: With I(state=record), what the run reported of the node, given back by a check that stands.
    type: dict
    default: {}
  facts:
    description: With I(state=record), facts a check that stands returns as C(ansible_facts).
    type: dict
    default: {}
  directory:
    description: Where the records are kept (root only).
    type: path
    default: /var/lib/tfprov/converge
"""

EXAMPLES = r"""
- name: Tell whether the last converge still stands
  tfprov.gpu.converge_record:
    name: node
    inputs: "{{ __inputs }}"
    witnesses: [/var/lib/dpkg/status, /etc/profile.d, "/opt/tfprov/envs/tf/lib/python3*/site-packages"]
  register: __converge
"""

RETURN = r"""
current:
  description: Whether the record stands (I(state=check)).
  returned: always
  type: bool
reason:
  description: Why it does not stand, in a few words; empty when it does.
  returned: always
  type: str
recorded_at:
  description: When the record was written (UTC, ISO 8601), or empty.
  returned: always
  type: str
report:
  description: The record's report, when it stands.
  returned: always
  type: dict
ansible_facts:
  description:
    - The record's facts, when it stands.
    - With I(state=check), also C(tfprov_boot_id), the boot it judged (as M(tfprov.gpu.node_boot) returns it), so
      the run knows the boot it starts on without asking the node again.
  returned: always
  type: dict
"""

import glob
import json
import os
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.tfprov.gpu.plugins.module_utils.node_boot import boot_id

UNIT_DIR = "/etc/systemd/system"
SYSTEMD_RUNNING = "/run/systemd/system"  # systemd's own test that it is the init (sd_booted)


def stat_line(path):
    try:
        st = os.lstat(path)
    except OSError:
        return "absent"
    return "%o %d %d %d" % (st.st_mode, st.st_size, st.st_mtime_ns, st.st_ino)


def witness_state(patterns):
    """{path: stat line} for every path the globs match (a pattern matching nothing counts as itself, absent), and
    for a directory's files directly in it."""
    state = {}
    for pattern in patterns:
        paths = sorted(glob.glob(pattern)) or [pattern]
        for path in paths:
            state[path] = stat_line(path)
            if os.path.isdir(path) and not os.path.islink(path):
                for entry in sorted(os.listdir(path)):
                    child = os.path.join(path, entry)
                    state[child] = stat_line(child)
    return state


def unit_states(run_command, unit_dir=UNIT_DIR, systemd_running=SYSTEMD_RUNNING):
    """{unit: active state} for the tfprov-* units, where systemd runs (a container node may have none).

    run_command(argv) -> (rc, stdout, stderr): the module's.
    """
    if not os.path.isdir(systemd_running) or not os.path.isdir(unit_dir):
        return {}
    units = sorted(name for name in os.listdir(unit_dir) if name.startswith("tfprov-"))
    if not units:
        return {}
    # One line per unit, in order; exit 3 when one is not active, which is an answer, not a failure.
    dummy_rc, out, dummy_err = run_command(["systemctl", "is-active"] + units)
    return dict(zip(units, out.split()))


def snapshot(witnesses, run_command):
    return {"witnesses": witness_state(witnesses), "units": unit_states(run_command)}


def first_difference(old, new):
    for key in sorted(set(old) | set(new)):
        if old.get(key) != new.get(key):
            return key
    return None


def judge(record, inputs, now_boot, now_snapshot, max_age_hours, now=None):
    """The reason a record does not stand, or '' when it does."""
    if not record:
        return "no record of a finished converge"
    if max_age_hours <= 0:
        return "reuse is off (max age 0)"
    if record.get("inputs") != inputs:
        return "what the run is given changed (variables, extra vars or the collection)"
    if record.get("boot_id") != now_boot:
        return "the node booted since"
    age = (now or time.time()) - record.get("recorded_epoch", 0)
    if not 0 <= age < max_age_hours * 3600:
        return "recorded more than %d h ago" % max_age_hours
    for part, what in (("witnesses", "changed"), ("units", "changed state")):
        changed = first_difference(record.get(part, {}), now_snapshot[part])
        if changed:
            return "%s %s since" % (changed, what)
    return ""


def record_path(directory, name):
    return os.path.join(directory, "%s.json" % name)


def read_record(path):
    try:
        with open(path) as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def write_record(path, record):
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    temp = path + ".tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        json.dump(record, handle, sort_keys=True)
    os.rename(temp, path)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type="str", choices=["check", "record"], default="check"),
            name=dict(type="str", required=True),
            inputs=dict(type="str", required=True, no_log=False),
            witnesses=dict(type="list", elements="str", default=[]),
            max_age_hours=dict(type="int", default=24),
            report=dict(type="dict", default={}),
            facts=dict(type="dict", default={}),
            directory=dict(type="path", default="/var/lib/tfprov/converge"),
        ),
        supports_check_mode=True,
    )
    params = module.params
    if "/" in params["name"] or params["name"] in ("", ".", ".."):
        module.fail_json(msg="name is %r: give a plain word such as node" % params["name"])
    path = record_path(params["directory"], params["name"])
    try:
        if params["state"] == "record":
            record = {"inputs": params["inputs"], "boot_id": boot_id(), "recorded_epoch": int(time.time()),
                      "recorded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                      "report": params["report"], "facts": params["facts"]}
            record.update(snapshot(params["witnesses"], module.run_command))
            if not module.check_mode:
                write_record(path, record)
            module.exit_json(changed=False, current=True, reason="", recorded_at=record["recorded_at"],
                             report={}, ansible_facts={})
        record = read_record(path)
        now_boot = boot_id()
        reason = judge(record, params["inputs"], now_boot, snapshot(params["witnesses"], module.run_command),
                       params["max_age_hours"])
    except OSError as exc:
        module.fail_json(msg="cannot read or write the converge record %s: %s" % (path, exc))
    current = not reason
    module.exit_json(changed=False, current=current, reason=reason,
                     recorded_at=(record or {}).get("recorded_at", ""),
                     report=record.get("report", {}) if current else {},
                     ansible_facts=dict(record.get("facts", {}) if current else {}, tfprov_boot_id=now_boot))


if __name__ == "__main__":
    main()
