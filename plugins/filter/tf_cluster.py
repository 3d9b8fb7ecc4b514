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

from ansible.errors import AnsibleFilterError
from ansible_collections.tfprov.gpu.plugins.module_utils import tf_cluster as cluster


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


class FilterModule(object):
    def filters(self):
        return {
            "tf_cluster": tf_cluster,
            "tf_config": tf_config,
        }
