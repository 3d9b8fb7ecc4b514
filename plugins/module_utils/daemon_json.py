# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Merge settings into Docker's daemon.json without losing anything a user put there.

Pure functions (no I/O): the module docker_daemon_json reads and writes the file, this decides what it holds.
Users of other roles lost their daemon.json to a template (NVIDIA/ansible-role-nvidia-docker#9,
geerlingguy/ansible-role-docker#84): here every existing key is kept, nested objects (runtimes, log-opts...) are
merged key by key, and only the values the settings name are replaced.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json


class DaemonJsonError(Exception):
    """The file cannot be merged safely; the message is one line naming the file and what to fix."""


def parse(text, path):
    """The object a daemon.json holds; an empty (or blank) file is an empty object, as dockerd reads it."""
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        msg = getattr(exc, "msg", str(exc))
        where = ""
        if getattr(exc, "lineno", None) is not None:
            where = " at line %d column %d" % (exc.lineno, exc.colno)
        hint = ""
        if "//" in text or "/*" in text or "#" in text:
            hint = " (JSON has no comments)"
        raise DaemonJsonError(
            "%s is not valid JSON: %s%s%s; dockerd would refuse it too: fix the file (nothing was written)"
            % (path, msg, where, hint)
        ) from None
    if not isinstance(data, dict):
        raise DaemonJsonError(
            "%s must hold a JSON object ({...}), it holds a JSON %s: fix the file (nothing was written)"
            % (path, _json_type(data))
        )
    return data


def _json_type(value):
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if value is None:
        return "null"
    return "number"


def merge(existing, settings):
    """existing with settings merged in: objects merged key by key (recursively), any other value replaced.

    Keys only in existing are kept as they are; neither argument is modified.
    """
    merged = copy.deepcopy(existing)
    for key, value in (settings or {}).items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def render(data):
    """The text written: two-space indents, keys in their order, a final newline."""
    return json.dumps(data, indent=2) + "\n"


def plan(text, settings, path):
    """(changed, before_data, after_data, after_text) for the file's current text (None: no file).

    Changed compares the parsed objects, so a file already holding every setting is left byte for byte, whatever
    its formatting, and no file is created for empty settings.
    """
    before = parse(text, path) if text is not None else {}
    after = merge(before, settings)
    changed = after != before
    return changed, before, after, render(after)


# The keys dockerd applies on SIGHUP (`systemctl reload docker`, moby's daemon/reload.go): runtimes and the default
# runtime among them, so registering NVIDIA's runtime never needs a restart. Any other key needs one.
RELOADABLE = frozenset(("runtimes", "default-runtime", "live-restore", "debug", "labels", "max-concurrent-downloads",
                        "max-concurrent-uploads", "max-download-attempts", "insecure-registries", "registry-mirrors",
                        "shutdown-timeout"))


def changed_keys(before, after):
    """The top-level keys whose values differ between the two objects."""
    return sorted(key for key in set(before) | set(after) if before.get(key) != after.get(key))


def how_to_apply(keys):
    """none, reload (every changed key is reloadable: running containers keep running) or restart."""
    if not keys:
        return "none"
    return "reload" if set(keys) <= RELOADABLE else "restart"
