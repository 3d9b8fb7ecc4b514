# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters for distributed TensorFlow: the cluster of an inventory, and each host's TF_CONFIG.

    plan: "{{ hostvars | tfprov.gpu.tf_cluster(groups, dist_tf_cluster_strategy) }}"
    tf_config: "{{ plan | tfprov.gpu.tf_config(inventory_hostname) }}"

Groups tfprov_chief, tfprov_worker, tfprov_ps and tfprov_evaluator give the roles; each host's TF task listens at
tfprov_tf_address (else ansible_host, else its inventory name) and tfprov_tf_port (else 2222).
A layout that cannot work fails with one line saying what to change.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ipaddress
import re

from ansible.errors import AnsibleFilterError
from ansible_collections.tfprov.gpu.plugins.module_utils import tf_cluster as cluster

_ENDPOINT = re.compile(r"^\[?(?P<host>.*?)\]?:(?P<port>[0-9]+)$")


def tf_cluster(hostvars, groups, strategy="multi_worker_mirrored"):
    """The cluster plan: {strategy, cluster, tasks, members, job_hosts, server_hosts, ignored, warnings}.

    cluster: {"chief"|"worker"|"ps": ["address:port", ...]}, only the job types that have hosts, never the evaluator.
    tasks: {host: {type, index, address}}. members: every host that gets a TF_CONFIG. job_hosts: the hosts that run
    the job (multi_worker_mirrored: chief and workers; parameter_server: the chief; plus the evaluator).
    server_hosts: the hosts that run a tf.distribute.Server (parameter_server: ps and workers).
    ignored: tfprov_ps hosts under multi_worker_mirrored, which take no part (a line in warnings says so).
    """
    try:
        return cluster.cluster_plan(hostvars, groups, strategy)
    except cluster.TfClusterError as exc:
        raise AnsibleFilterError(str(exc)) from None


def tf_config(plan, host):
    """The TF_CONFIG object of one host of a plan: {"cluster": ..., "task": {"type": ..., "index": ...}}."""
    try:
        return cluster.tf_config(plan, host)
    except cluster.TfClusterError as exc:
        raise AnsibleFilterError(str(exc)) from None


def tf_endpoint(address):
    """"host:port" or "[v6 address]:port" (a plan's task address) -> {"host": ..., "port": int}."""
    found = _ENDPOINT.match(str(address))
    if not found:
        raise AnsibleFilterError("%r is not host:port or [address]:port" % (address,))
    return {"host": found.group("host"), "port": int(found.group("port"))}


def _is_address(host):
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _member_hosts(plan):
    hosts = [tf_endpoint(plan["tasks"][member]["address"])["host"] for member in plan["members"]]
    return list(dict.fromkeys(hosts))


def tf_member_names(plan):
    """The members given by name, not address: what the node resolves before its firewall can name them."""
    return [host for host in _member_hosts(plan) if not _is_address(host)]


def tf_member_addresses(plan, resolved=()):
    """Every member's address, once: those the plan gives as addresses, then those the names resolved to.
    resolved: the results of `getent ahosts NAME` for tf_member_names (each with stdout_lines; the address is the
    first field of a line)."""
    found = [host for host in _member_hosts(plan) if _is_address(host)]
    for result in resolved or ():
        found += [line.split()[0] for line in (result or {}).get("stdout_lines") or [] if line.strip()]
    return list(dict.fromkeys(found))


class FilterModule(object):
    def filters(self):
        return {
            "tf_cluster": tf_cluster,
            "tf_config": tf_config,
            "tf_endpoint": tf_endpoint,
            "tf_member_names": tf_member_names,
            "tf_member_addresses": tf_member_addresses,
        }
