# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Load each play's connection, shell and become plugins, and Ansible's own filters and tests, once, in the process
that forks Ansible's workers.

Ansible runs every task on every host in a worker it forks for that one task, and the worker loads the host's
connection plugin (and its shell and become plugins): imports it and parses its documentation for its settings. The
main process loads Ansible's own connection and shell plugins at its start, so workers inherit those; a collection's
(the local cloud's `tfprov.gpu.docker_exec`, community.docker's, amazon.aws's SSM) it never loads, so every worker
loads it again: 12 ms for docker_exec on this machine, per task and host, on the controller's CPU and, for a single
node, on the run's path. Loading them here, at the start of each play, before its first fork, leaves them in the
plugin loaders' caches that every worker inherits. Nothing else changes: the workers still resolve the connection
from the host's variables as before. A name that cannot be loaded is left to the workers and to their error (Ansible
prints its "Error loading plugin" warning once more, from here).

Filters and tests the same way: the first template in a process that names a filter or test loads every one of
ansible-core's own filter and test files (its index of short names), and each worker did that again (1.5-2.5 ms a
worker, 0.15 s of a `--full` run's workers on one node). Loaded here at the play's start, the workers inherit them.
"""

from __future__ import annotations

DOCUMENTATION = r"""
name: warm_loaders
type: aggregate
short_description: Load each play's connection plugins, and Ansible's own filters and tests, before the workers fork
description:
  - Ansible forks a worker per task and host, and each worker loads the host's connection plugin itself (an import
    and a parse of the plugin's documentation) when it is a collection's, which the main process never loads.
  - At the start of each play this callback loads, in the main process, the connection plugins the play's hosts name
    (C(ansible_connection) in the inventory, else the play's connection), their shell plugins and the become
    plugins named, so that every worker inherits them; and ansible-core's own filter and test plugins, which each
    worker would otherwise load on its first template that names one.
  - Enabled in the checkout's C(ansible.cfg) (C(callbacks_enabled)).
author:
  - tfprov maintainers
requirements:
  - enabled in C(callbacks_enabled)
"""

from ansible import constants as C
from ansible.plugins.callback import CallbackBase
from ansible.plugins.loader import become_loader, connection_loader, filter_loader, shell_loader, test_loader
from ansible.utils.display import Display

display = Display()


def literal(value) -> str | None:
    """A plugin name as the inventory gives it; None for a template, which only a worker can render."""
    return value if isinstance(value, str) and value and "{{" not in value and "{%" not in value else None


def plugin_names(play, hosts, groups, extra_vars) -> tuple[set[str], set[str]]:
    """The connection and become plugins the play's hosts, the inventory's groups and the extra vars name, and the
    play's own (variables from group_vars files or the play are left out: their workers load them, as without this)."""
    connections = {literal(play.connection) or C.DEFAULT_TRANSPORT}
    becomes = {literal(play.become_method) or C.DEFAULT_BECOME_METHOD}
    for variables in [extra_vars] + [host.vars for host in hosts] + [group.vars for group in groups]:
        connections.add(literal(variables.get("ansible_connection")))
        becomes.add(literal(variables.get("ansible_become_method")))
    return connections - {None}, becomes - {None}


def warm(connections: set[str], becomes: set[str]) -> list[str]:
    """Load each plugin's class (and its settings) into the loaders' caches, and each connection's shell; return
    what was loaded."""
    loaded = []
    for loader, name in [(connection_loader, name) for name in sorted(connections)] + \
            [(become_loader, name) for name in sorted(becomes)]:
        plugin = load(loader, name)
        if plugin is None:
            continue
        loaded.append(name)
        if loader is connection_loader:
            shell = getattr(plugin, "_shell_type", None) or "sh"
            if load(shell_loader, shell) is not None:
                loaded.append(shell)
    return loaded


def load(loader, name: str):
    try:
        return loader.get(name, class_only=True)
    except Exception as exc:  # noqa: BLE001 - the workers load it and report it, as they would without this callback
        display.vvv(f"warm_loaders: {name} left to the workers: {exc}")
        return None


def warm_jinja_plugins() -> int:
    """Load ansible-core's own filter and test plugins, all of them (the way it finds any one by its short name, on a
    template's first use of one); return how many. Once loaded, the loaders keep them: later plays cost a count."""
    return sum(1 for loader in (filter_loader, test_loader) for _ in loader.all())


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "tfprov.gpu.warm_loaders"
    CALLBACK_NEEDS_ENABLED = True

    def v2_playbook_on_play_start(self, play):
        manager = play.get_variable_manager()
        inventory = getattr(manager, "_inventory", None)
        hosts = inventory.get_hosts(play.hosts) if inventory is not None else []
        groups = inventory.groups.values() if inventory is not None else []
        loaded = warm(*plugin_names(play, hosts, groups, getattr(manager, "extra_vars", {})))
        loaded.append(f"{warm_jinja_plugins()} filters and tests")
        display.vvv(f"warm_loaders: loaded {', '.join(loaded) or 'nothing'} before the play's workers")
