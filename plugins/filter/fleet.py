# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters for playbooks/fleet_update.yml: the serial list from the canary and the batch size, the batch each host
falls in (Ansible's own slicing, so that hosts never reached can be reported with their batch), and the failure
budgets checked after every batch."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math
import re

from ansible.errors import AnsibleFilterError

_SIZE = re.compile(r"^\s*(\d+)\s*(%?)\s*$")


def _size(value, what, allow_zero=False):
    """'3' or 3 -> 3; '25%' -> '25%'. What Ansible's serial accepts, refused here with one line otherwise."""
    match = _SIZE.match(str(value))
    if not match or isinstance(value, bool):
        raise AnsibleFilterError("%s %r: give a number of hosts (2) or a percentage of the fleet (25%%)"
                                 % (what, value))
    number, percent = int(match.group(1)), match.group(2)
    lowest = 0 if allow_zero else 1
    if percent and not lowest <= number <= 100:
        raise AnsibleFilterError("%s %r: a percentage must be between %d%% and 100%%" % (what, value, lowest))
    if not percent and number < (0 if allow_zero else 1):
        raise AnsibleFilterError("%s %r: must be at least %d" % (what, value, 0 if allow_zero else 1))
    return "%d%%" % number if percent else number


def fleet_serial(batch, canary=1):
    """The play's serial: the canary (0: none) then the batch sizes; Ansible repeats the last one."""
    if isinstance(batch, str) and "," in batch:
        batch = [part for part in batch.split(",") if part.strip()]
    sizes = [_size(b, "tfprov_fleet_batch") for b in (batch if isinstance(batch, (list, tuple)) else [batch])]
    if not sizes:
        raise AnsibleFilterError("tfprov_fleet_batch is empty: give a size (2), a percentage (25%) or a list (1,2,5)")
    canary = _size(canary, "tfprov_fleet_canary", allow_zero=True)
    return ([canary] if canary else []) + sizes


def _count(size, total):
    """Ansible's pct_to_int: a percentage of the fleet rounded down, at least one host."""
    if isinstance(size, str) and size.endswith("%"):
        return max(int(total * int(size[:-1]) / 100), 1)
    return int(size)


def fleet_batches(hosts, serial):
    """{host: batch number (1 = the first batch, the canary when there is one)} as Ansible slices the play."""
    hosts, serial = list(hosts), list(serial) or [len(hosts)]
    batches, start, index = {}, 0, 0
    while start < len(hosts):
        count = _count(serial[min(index, len(serial) - 1)], len(hosts))
        for host in hosts[start:start + (count if count > 0 else len(hosts))]:
            batches[host] = index + 1
        start += count if count > 0 else len(hosts)
        index += 1
    return batches


def fleet_budget(failed, fleet_size, batch_failed, batch_size, max_fail=0, batch_max_fail=0):
    """'' while the update may go on, else why it stops: the whole fleet's failures over max_fail (a count or a
    percentage of the fleet), or this batch's share of failures over batch_max_fail (a percentage)."""
    limit = _size(max_fail, "tfprov_fleet_max_fail", allow_zero=True)
    allowed = math.floor(fleet_size * int(limit[:-1]) / 100) if isinstance(limit, str) else limit
    if failed > allowed:
        return "%d host(s) failed, over the fleet's budget of %d (tfprov_fleet_max_fail %s)" % (
            failed, allowed, max_fail)
    share = _size(batch_max_fail, "tfprov_fleet_batch_max_fail", allow_zero=True)
    percent = int(str(share).rstrip("%"))
    if batch_size and batch_failed * 100 > percent * batch_size:
        return "%d of %d host(s) of this batch failed, over tfprov_fleet_batch_max_fail %d%%" % (
            batch_failed, batch_size, percent)
    return ""


def fleet_stop_reason(hostvars, play_hosts_all, play_hosts, batch, max_fail=0, batch_max_fail=0):
    """fleet_budget after a batch, from the play itself: '' while the update may go on, else why it stops.

    Failed: a node whose update was rescued with a reason (__fleet_failure), or one gone from the play (unreachable).
    This batch: the nodes whose __fleet_batch is `batch`."""
    gone = set(play_hosts_all) - set(play_hosts)
    failed = [host for host in play_hosts_all if "__fleet_failure" in hostvars[host] or host in gone]
    this_batch = [host for host in play_hosts_all if str(hostvars[host].get("__fleet_batch")) == str(batch)]
    return fleet_budget(len(failed), len(play_hosts_all), len(set(failed) & set(this_batch)), len(this_batch),
                        max_fail, batch_max_fail)


def fleet_versions(installed):
    """The versions a fleet report shows, from tfprov.gpu.installed_stack's fact: None where nothing is there."""
    installed = installed or {}

    def version(part):
        return (installed.get(part) or {}).get("version")

    return {"tensorflow": version("tensorflow"), "cuda": version("cuda"), "cudnn": version("cudnn"),
            "driver": version("driver"), "python": installed.get("python")}


class FilterModule(object):
    def filters(self):
        return {"fleet_serial": fleet_serial, "fleet_batches": fleet_batches, "fleet_budget": fleet_budget,
                "fleet_stop_reason": fleet_stop_reason, "fleet_versions": fleet_versions}
