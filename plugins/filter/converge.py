# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""converge_inputs: the digest of what a converge is given, which a node's converge record (the module
tfprov.gpu.converge_record) must match for a later run to skip the install. It covers the collection itself (roles,
with the GPU check script of the tensorflow_gpu role, playbooks, plugins, the compatibility data) and the host's
variables: inventory, group and extra vars, not Ansible's per-run magic vars nor gathered facts."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json
import os

from ansible.errors import AnsibleFilterError

COLLECTION = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# What the collection's behaviour is made of (the quick check the roles run is roles/tensorflow_gpu/files/gpu_check.py).
CODE = ("roles", "playbooks", "plugins", "data")
# Per-run settings of Ansible itself, the whole inventory's layout, and whether to reuse a record at all: none
# changes what a node gets.
VOLATILE = frozenset((
    "groups", "ansible_facts", "playbook_dir", "ansible_playbook_python", "ansible_config_file", "ansible_forks",
    "ansible_verbosity", "ansible_inventory_sources", "ansible_limit", "ansible_skip_tags", "ansible_run_tags",
    "ansible_check_mode", "ansible_diff_mode", "omit", "tfprov_converge_reuse_hours",
))


def _files(root):
    for part in CODE:
        path = os.path.join(root, part)
        if os.path.isfile(path):
            yield path
        for folder, dirs, names in os.walk(path):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(names):
                if not name.endswith(".pyc"):
                    yield os.path.join(folder, name)


def collection_digest(root=COLLECTION):
    digest = hashlib.sha256()
    for path in _files(root):
        digest.update(os.path.relpath(path, root).encode() + b"\0")
        with open(path, "rb") as handle:
            digest.update(hashlib.sha256(handle.read()).digest())
    return digest.hexdigest()


def _value(host_vars, name):
    """The variable's value as JSON text; one that cannot be templated yet (a template on facts not gathered at the
    run's start) counts as its error, the same at every run's start."""
    try:
        return json.dumps(host_vars[name], sort_keys=True, default=str)
    except Exception as exc:  # noqa: BLE001 - whatever templating raises, the digest must not stop the run
        return "<%s: %s>" % (type(exc).__name__, exc)


def host_inputs(host_vars):
    """The host's own variables: leave out Ansible's per-run ones and the facts (under their ansible_ names too)."""
    facts = host_vars.get("ansible_facts") or {}
    left_out = VOLATILE | {"ansible_" + name for name in facts} | set(facts)
    return {name: _value(host_vars, name) for name in sorted(host_vars)
            if name not in left_out and not name.startswith("__")}


def converge_inputs(host_vars, playbook, root=None):
    """sha256 of the collection and the host's variables, for the converge named playbook."""
    if not hasattr(host_vars, "keys"):
        raise AnsibleFilterError("converge_inputs takes a host's variables (hostvars[inventory_hostname]), not %s"
                                 % type(host_vars).__name__)
    blob = json.dumps({"playbook": playbook, "collection": collection_digest(root or COLLECTION),
                       "vars": host_inputs(host_vars)}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


class FilterModule(object):
    def filters(self):
        return {"converge_inputs": converge_inputs}
