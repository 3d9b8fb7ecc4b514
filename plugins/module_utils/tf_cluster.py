# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The TensorFlow cluster of an inventory: which host runs which task (TF_CONFIG), refused when it cannot work."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
from collections.abc import Mapping

STRATEGIES = ("multi_worker_mirrored", "parameter_server")
DEFAULT_PORT = 2222
# Inventory group of each task type, in the order members are listed.
ROLE_GROUPS = (("chief", "tfprov_chief"), ("worker", "tfprov_worker"), ("ps", "tfprov_ps"),
               ("evaluator", "tfprov_evaluator"))
_UNSET = object()


class TfClusterError(ValueError):
    """A cluster that cannot work; the message is one line saying what to change."""


def natural_key(name):
    """Sort key putting tfprov-local-2 before tfprov-local-10 (digit runs compare as numbers)."""
    parts = re.split(r"(\d+)", str(name))
    return [int(part) if i % 2 else part for i, part in enumerate(parts)], str(name)


def _var(host_vars, name):
    # hostvars[host] is Ansible's lazy HostVarsVars in a play, a dict in tests: `in` and [] work on both.
    try:
        return host_vars[name] if name in host_vars else _UNSET
    except KeyError:
        return _UNSET


def _host_vars(hostvars, host):
    try:
        found = hostvars[host] if host in hostvars else {}
    except KeyError:
        found = {}
    # A host Ansible does not know comes back as an undefined marker, not a mapping.
    return found if isinstance(found, Mapping) else {}


def _group(groups, name):
    try:
        hosts = groups[name] if name in groups else []
    except KeyError:
        hosts = []
    return sorted((str(host) for host in hosts or []), key=natural_key)


def _names(hosts):
    return ", ".join(hosts)


def _port(host, value):
    if value is _UNSET or value is None:
        return DEFAULT_PORT
    if isinstance(value, bool):
        port = None
    elif isinstance(value, int):
        port = value
    else:
        text = str(value).strip()
        port = int(text) if text.isdigit() else None
    if port is None or not 1 <= port <= 65535:
        raise TfClusterError("host %s has tfprov_tf_port %r: set it to a port number from 1 to 65535" % (host, value))
    return port


def _address(host, host_vars):
    value = _var(host_vars, "tfprov_tf_address")
    source = "tfprov_tf_address"
    if value is _UNSET or value is None:
        value, source = _var(host_vars, "ansible_host"), "ansible_host"
    if value is _UNSET or value is None:
        value, source = host, "its inventory name"
    text = str(value).strip() if isinstance(value, (str, int)) and not isinstance(value, bool) else ""
    if not text:
        raise TfClusterError("host %s has an empty TF address (from %s %r): set tfprov_tf_address to the address "
                             "the other members reach it at" % (host, source, value))
    return text


def _endpoint(address, port):
    # An IPv6 literal needs brackets before the port, as gRPC expects.
    if ":" in address and not address.startswith("["):
        address = "[%s]" % address
    return "%s:%d" % (address, port)


def _check_layout(strategy, roles):
    seen = {}
    for task_type, group in ROLE_GROUPS:
        for host in roles[task_type]:
            if host in seen:
                raise TfClusterError("host %s is in both %s and %s: a host has one TF role, remove it from one of "
                                     "them" % (host, seen[host], group))
            seen[host] = group
    chief, worker, ps, evaluator = (roles[t] for t, dummy in ROLE_GROUPS)
    if not (chief or worker or ps):
        raise TfClusterError("the TF cluster is empty: put hosts in tfprov_chief, tfprov_worker or tfprov_ps")
    if len(chief) > 1:
        raise TfClusterError("tfprov_chief has %d hosts (%s): a cluster has one chief, make the others workers "
                             "(tfprov_worker)" % (len(chief), _names(chief)))
    if len(evaluator) > 1:
        raise TfClusterError("tfprov_evaluator has %d hosts (%s): a cluster has at most one evaluator, remove the "
                             "others from tfprov_evaluator" % (len(evaluator), _names(evaluator)))
    if strategy == "parameter_server":
        if not chief:
            raise TfClusterError("parameter_server needs a chief to coordinate: put one host in tfprov_chief")
        if not ps:
            raise TfClusterError("parameter_server needs at least one parameter server: put a host in tfprov_ps "
                                 "(or use multi_worker_mirrored)")
        if not worker:
            raise TfClusterError("parameter_server needs at least one worker: put a host in tfprov_worker")
    elif not (chief or worker):
        raise TfClusterError("multi_worker_mirrored trains on the chief and workers, and there are none (only "
                             "tfprov_ps %s): put hosts in tfprov_worker" % _names(ps))


def _endpoints(hostvars, hosts, evaluator):
    """{host: "address:port"}, refusing two members that would bind the same address and port."""
    endpoints, owner = {}, {}
    for host in hosts + evaluator:
        host_vars = _host_vars(hostvars, host)
        address = _address(host, host_vars)
        endpoint = _endpoint(address, _port(host, _var(host_vars, "tfprov_tf_port")))
        # The evaluator serves nothing, so it may share an endpoint with a member.
        if host not in evaluator and endpoint in owner:
            raise TfClusterError("hosts %s and %s both have the TF address %s: give each its own tfprov_tf_port "
                                 "(or tfprov_tf_address)" % (owner[endpoint], host, endpoint))
        owner.setdefault(endpoint, host)
        endpoints[host] = endpoint
    return endpoints


def _refuse_stopped(hostvars, tasks):
    """A member the inventory lists as not running (tfprov_node_state): a cluster without it would have other task
    indexes, and the job would be told a smaller cluster than the user asked for."""
    stopped = []
    for host, task in tasks.items():
        state = _var(_host_vars(hostvars, host), "tfprov_node_state")
        if state not in (_UNSET, None, "", "running"):
            stopped.append("%s:%d (%s) is %s" % (task["type"], task["index"], host, state))
    if stopped:
        raise TfClusterError("%s: start it first (tfprov up starts stopped nodes); the cluster is never built "
                             "without a member" % "; ".join(stopped))


def cluster_plan(hostvars, groups, strategy="multi_worker_mirrored"):
    """The cluster plan of an inventory (see docs of the tf_cluster filter); TfClusterError when it cannot work."""
    if strategy not in STRATEGIES:
        raise TfClusterError("unknown TF strategy %r: set tfprov_dist_strategy to %s or %s"
                             % (strategy, STRATEGIES[0], STRATEGIES[1]))
    roles = {task_type: _group(groups, group) for task_type, group in ROLE_GROUPS}
    _check_layout(strategy, roles)
    chief, worker, ps, evaluator = (roles[t] for t, dummy in ROLE_GROUPS)
    mirrored = strategy == "multi_worker_mirrored"
    ignored = ps if mirrored else []
    jobs = [("chief", chief), ("worker", worker)] + ([] if mirrored else [("ps", ps)])
    members = [host for dummy, hosts in jobs for host in hosts]
    endpoints = _endpoints(hostvars, members, evaluator)

    tasks, cluster = {}, {}
    for task_type, hosts in jobs + [("evaluator", evaluator)]:
        for index, host in enumerate(hosts):
            # The evaluator has index 0 and stays out of `cluster` (tensorflow#30121).
            tasks[host] = {"type": task_type, "index": index, "address": endpoints[host]}
        if hosts and task_type != "evaluator":
            cluster[task_type] = [endpoints[host] for host in hosts]
    _refuse_stopped(hostvars, tasks)
    warnings = ["tfprov_ps hosts %s take no part under multi_worker_mirrored" % _names(ignored)] if ignored else []
    return {
        "strategy": str(strategy),
        "cluster": cluster,
        "tasks": tasks,
        "members": members + evaluator,
        # MWMS: the chief is a worker with chief duties, every trainer runs the job. PS: the chief drives the
        # training, workers and ps only serve (tf.distribute.Server).
        "job_hosts": (chief + worker if mirrored else chief) + evaluator,
        "server_hosts": [] if mirrored else ps + worker,
        "ignored": ignored,
        "warnings": warnings,
    }


def tf_config(plan, host):
    """The TF_CONFIG of one host of a plan: {"cluster": ..., "task": {"type", "index"}}."""
    if not isinstance(plan, Mapping) or "tasks" not in plan or "cluster" not in plan:
        raise TfClusterError("tf_config needs the plan the tf_cluster filter returns, got %s" % type(plan).__name__)
    tasks = plan["tasks"]
    if host not in tasks:
        if host in (plan.get("ignored") or []):
            raise TfClusterError("host %s is in tfprov_ps, which takes no part under multi_worker_mirrored: run "
                                 "it only on the members of the plan" % host)
        raise TfClusterError("host %s has no TF task: put it in tfprov_chief, tfprov_worker, tfprov_ps or "
                             "tfprov_evaluator, or leave it out of the TF cluster play" % host)
    task = tasks[host]
    cluster = {job: list(addresses) for job, addresses in plan["cluster"].items()}
    return {"cluster": cluster, "task": {"type": task["type"], "index": task["index"]}}
