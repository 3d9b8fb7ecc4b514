#!/usr/bin/python
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: docker_daemon_json
short_description: Merge settings into Docker's daemon.json, keeping every key already there
version_added: 1.0.0
description:
  - Reads O(path) (a missing or empty file is an empty object), merges O(settings) into it and writes the result
    only when the merged object differs from the file's.
  - Objects are merged key by key, recursively (C(runtimes) by runtime name, C(log-opts) by option); any other
    value named in O(settings) replaces the file's. Keys O(settings) does not name are kept as they are.
  - A file that is not a JSON object (comments, trailing commas, an array...) is refused with its name and the
    position of the error; nothing is written.
  - The new file is written atomically (a temporary file in the same directory, then renamed); the old one is
    first copied to a timestamped backup beside it when O(backup) is set.
author:
  - tfprov maintainers (@tfprov)
attributes:
  check_mode:
    description: Reads, merges and reports the change and its diff; writes nothing.
    support: full
  diff_mode:
    description: Shows the file before and after.
    support: full
options:
  path:
    description: The daemon.json file. Its directory is created (mode C(0755)) when missing.
    type: path
    default: /etc/docker/daemon.json
  settings:
    description: The settings to merge in (a JSON object).
    type: dict
    default: {}
  backup:
    description: Copy the old file to a timestamped backup before replacing it.
    type: bool
    default: true
  mode:
    description: Mode of a file this module creates; an existing file keeps its own.
    type: raw
    default: "0644"
"""

EXAMPLES = r"""
- name: Register NVIDIA's runtime without losing the user's settings
  tfprov.gpu.docker_daemon_json:
    settings:
      runtimes:
        nvidia: {path: nvidia-container-runtime, runtimeArgs: []}
  notify: Apply daemon.json to the Docker engine
"""

RETURN = r"""
config:
  description: The merged object (what the file holds after this task).
  returned: success
  type: dict
backup_file:
  description: Where the old file was copied; empty when nothing was written or there was no old file.
  returned: success
  type: str
path:
  description: The file.
  returned: always
  type: str
changed_keys:
  description: The top-level keys the merge changed.
  returned: success
  type: list
apply:
  description: >-
    How a running engine takes the change. C(reload) when every changed key is one dockerd applies on SIGHUP
    (runtimes, default-runtime, live-restore, ...): running containers keep running. C(restart) otherwise, C(none)
    when nothing changed.
  returned: success
  type: str
"""

import os
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_bytes, to_native
from ansible_collections.tfprov.gpu.plugins.module_utils.daemon_json import (
    DaemonJsonError,
    changed_keys,
    how_to_apply,
    plan,
)


def read_text(module, path):
    if not os.path.exists(path):
        return None
    try:
        with open(path, "rb") as handle:
            return handle.read().decode("utf-8")
    except UnicodeDecodeError as exc:
        module.fail_json(msg="%s is not UTF-8 text (%s): fix the file (nothing was written)" % (path, exc), path=path)
    except OSError as exc:
        module.fail_json(msg="cannot read %s: %s" % (path, to_native(exc)), path=path)


def write(module, path, text, existed):
    directory = os.path.dirname(path) or "."
    if not os.path.isdir(directory):
        os.makedirs(directory, 0o755)
    fd, tmp = tempfile.mkstemp(prefix=".daemon.json.", dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(to_bytes(text))
        # An existing file keeps its owner and mode (atomic_move copies them from the file it replaces).
        module.atomic_move(tmp, path)
        if not existed:
            module.set_mode_if_different(path, module.params["mode"], False)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", default="/etc/docker/daemon.json"),
            settings=dict(type="dict", default={}),
            backup=dict(type="bool", default=True),
            mode=dict(type="raw", default="0644"),
        ),
        supports_check_mode=True,
    )
    path = module.params["path"]
    text = read_text(module, path)
    try:
        changed, before, after, after_text = plan(text, module.params["settings"], path)
    except DaemonJsonError as exc:
        module.fail_json(msg=str(exc), path=path)

    keys = changed_keys(before, after)
    result = dict(changed=changed, path=path, config=after, backup_file="", changed_keys=keys, apply=how_to_apply(keys))
    if changed and module._diff:
        result["diff"] = dict(
            before_header=path if text is not None else "%s (absent)" % path,
            after_header=path,
            before=text if text is not None else "",
            after=after_text,
        )
    if changed and not module.check_mode:
        if text is not None and module.params["backup"]:
            result["backup_file"] = module.backup_local(path)
        write(module, path, after_text, text is not None)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
