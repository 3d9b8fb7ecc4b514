#!/usr/bin/python
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# The options documented here are amazon.aws.aws_ec2's (amazon.aws 10.1.2, GPL-3.0-or-later).

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: aws_ec2
short_description: amazon.aws.aws_ec2 plus tfprov host vars and groups computed in Python
extends_documentation_fragment:
- inventory_cache
- constructed
- amazon.aws.common.plugins
- amazon.aws.region.plugins
- amazon.aws.assume_role.plugins
description:
- 'The amazon.aws.aws_ec2 inventory (its code, options and cache) with tfprov''s group contract
  and GPU vars added in Python for every instance tagged C(tfprov:cluster): groups C(tfprov_nodes)
  (all but the package cache node), C(tfprov_<role>) (tag C(tfprov:role)), C(gpu_<family>) and C(gpu_<model>)
  when it differs;
  host vars C(tfprov_node_role), C(tfprov_cluster), C(tfprov_gpu_model), C(tfprov_gpu_family),
  C(tfprov_gpu_count), C(tfprov_gpu_nvlink), C(tfprov_tf_address), C(tfprov_tf_port), C(tfprov_zone),
  C(tfprov_instance_type), C(tfprov_provider), C(tfprov_market), C(tfprov_booted_from_image).'
- 'A thin composition: amazon.aws.aws_ec2''s own plugin lists the instances, untouched, then tfprov''s vars and groups
  are added to the hosts it listed; no method of amazon.aws is overridden. O(raw_hostvars) trims what each host
  carries.'
- 'With O(cache), the finished inventory is cached too, and a listing read from it loads neither amazon.aws nor
  boto3 (a tenth of a second of a cached 1,000-host listing).'
- 'Why not compose: ansible-core 2.19 compiles every compose expression anew for every host;
  13 expressions on 1,000 hosts spent most of the inventory''s time in Jinja''s compiler.'
- 'The options below are amazon.aws.aws_ec2''s (copied from amazon.aws 10.1.2: keep them in
  step).'
requirements:
- 'boto3 and botocore, at amazon.aws.aws_ec2''s minimum versions, to list EC2 (a listing read from the cache needs
  neither). amazon.aws.boto3''s documentation fragment (these requirements, no option) is not used here: it imports
  boto3 to print them.'
notes:
- If no credentials are provided and the control node has an associated IAM instance profile
  then the role will be used for authentication.
author:
- tfprov maintainers (tfprov additions)
- amazon.aws authors (the aws_ec2 plugin)
options:
  regions:
    description:
    - A list of regions in which to describe EC2 instances.
    - If empty (the default) default this will include all regions, except possibly restricted
      ones like V(us-gov-west-1) and V(cn-north-1).
    type: list
    elements: str
    default: []
  hostnames:
    description:
    - A list in order of precedence for hostname variables.
    - The elements of the list can be a dict with the keys mentioned below or a string.
    - Can be one of the options specified in U(http://docs.aws.amazon.com/cli/latest/reference/ec2/describe-instances.html#options).
    - If value provided does not exist in the above options, it will be used as a literal string.
    - To use tags as hostnames use the syntax tag:Name=Value to use the hostname Name_Value,
      or tag:Name to use the value of the Name tag.
    - Jinja2 filters can be added to the hostnames string. Added in version 9.2.0.
    type: list
    elements: raw
    default: []
    suboptions:
      name:
        description:
        - Name of the host.
        type: str
        required: true
      prefix:
        description:
        - Prefix to prepend to O(hostnames[].name). Same options as O(hostnames[].name).
        - If O(hostnames[].prefix) is specified, final hostname will be O(hostnames[].prefix) +
          O(hostnames[].separator) + O(hostnames[].name).
        type: str
        default: ''
        required: false
      separator:
        description:
        - Value to separate O(hostnames[].prefix) and O(hostnames[].name) when O(hostnames[].prefix)
          is specified.
        type: str
        default: _
        required: false
  allow_duplicated_hosts:
    description:
    - By default, the first name that matches an entry of the O(hostnames) list is returned.
    - Turn this flag on if you don't mind having duplicated entries in the inventory and you
      want to get all the hostnames that match.
    type: bool
    default: false
    version_added: 5.0.0
  filters:
    description:
    - A dictionary of filter value pairs.
    - Available filters are listed here U(http://docs.aws.amazon.com/cli/latest/reference/ec2/describe-instances.html#options).
    type: dict
    default: {}
  include_filters:
    description:
    - A list of filters. Any instances matching at least one of the filters are included in
      the result.
    - Available filters are listed here U(http://docs.aws.amazon.com/cli/latest/reference/ec2/describe-instances.html#options).
    - Every entry in this list triggers a search query. As such, from a performance point of
      view, it's better to keep the list as short as possible.
    type: list
    elements: dict
    default: []
    version_added: 1.5.0
  exclude_filters:
    description:
    - A list of filters. Any instances matching one of the filters are excluded from the result.
    - The filters from O(exclude_filters) take priority over the O(include_filters) and O(filters)
      keys.
    - Available filters are listed here U(http://docs.aws.amazon.com/cli/latest/reference/ec2/describe-instances.html#options).
    - Every entry in this list triggers a search query. As such, from a performance point of
      view, it's better to keep the list as short as possible.
    type: list
    elements: dict
    default: []
    version_added: 1.5.0
  strict_permissions:
    description:
    - By default if a 403 (Forbidden) error code is encountered this plugin will fail.
    - You can set this option to False in the inventory config file which will allow 403 errors
      to be gracefully skipped.
    type: bool
    default: true
  use_contrib_script_compatible_sanitization:
    description:
    - By default this plugin is using a general group name sanitization to create safe and usable
      group names for use in Ansible. This option allows you to override that, in efforts to
      allow migration from the old inventory script and matches the sanitization of groups when
      the script's ``replace_dash_in_groups`` option is set to ``False``. To replicate behavior
      of ``replace_dash_in_groups = True`` with constructed groups, you will need to replace
      hyphens with underscores via the regex_replace filter for those entries.
    - For this to work you should also turn off the TRANSFORM_INVALID_GROUP_CHARS setting, otherwise
      the core engine will just use the standard sanitization on top.
    - This is not the default as such names break certain functionality as not all characters
      are valid Python identifiers which group names end up being used as.
    type: bool
    default: false
  use_contrib_script_compatible_ec2_tag_keys:
    description:
    - Expose the host tags with ec2_tag_TAGNAME keys like the old ec2.py inventory script.
    - The use of this feature is discouraged and we advise to migrate to the new ``tags`` structure.
    type: bool
    default: false
    version_added: 1.5.0
  hostvars_prefix:
    description:
    - The prefix for host variables names coming from AWS.
    type: str
    version_added: 3.1.0
  hostvars_suffix:
    description:
    - The suffix for host variables names coming from AWS.
    type: str
    version_added: 3.1.0
  use_ssm_inventory:
    description:
    - Enables fetching additional EC2 instance information from the AWS Systems Manager (SSM)
      inventory service into hostvars.
    - By leveraging the SSM inventory data, the O(use_ssm_inventory) option provides additional
      details and attributes about the EC2 instances in your inventory. These details can include
      operating system information, installed software, network configurations, and custom inventory
      attributes defined in SSM.
    type: bool
    default: false
    version_added: 6.0.0
  route53_enabled:
    description:
    - Whether or not to use the Route53 DNS as host name.
    - When set to V(true), Route53 hostnames will be included.
    type: bool
    default: false
    version_added: 10.1.0
  route53_hostnames:
    description:
    - Specifies the Route53 DNS name suffix to consider.
    - Consider only Route53 zone with name ending with the value specified here.
    type: list
    elements: str
    default: []
    version_added: 10.1.0
  route53_excluded_zones:
    description:
    - A list of Route53 zones to exclude.
    type: list
    elements: str
    default: []
    version_added: 10.1.0
  raw_hostvars:
    description:
    - tfprov addition. Which of amazon.aws.aws_ec2's raw host vars (snake_case names after O(hostvars_prefix) and
      O(hostvars_suffix), e.g. V(instance_id), V(tags), V(placement)) each host carries; the tfprov vars and
      C(ansible_host) are always set.
    - Empty (the default) keeps them all, as the stock plugin does. Variables set by O(compose) are kept.
    - O(compose), O(groups) and O(keyed_groups) still see every raw var, trimmed or not.
    - 'Why trim it: a 1,000-host listing prints about 50 raw vars per host; trimmed to the shipped list it prints a
      quarter of the bytes and takes a third less CPU from the cache.'
    type: list
    elements: str
    default: []
version_added: 1.3.0
"""

EXAMPLES = r"""
# inventories/aws.aws_ec2.yml
plugin: tfprov.gpu.aws_ec2
regions: [us-east-1]
filters:
  tag-key: "tfprov:cluster"
  instance-state-name: [pending, running, stopping, stopped]
hostnames:
  - name: instance-id
    prefix: "tag:Name"
"""

import hashlib
import json

from ansible.plugins.inventory import BaseInventoryPlugin, Cacheable
from ansible_collections.tfprov.gpu.plugins.filter.cloud import instance_gpu
from ansible_collections.tfprov.gpu.plugins.module_utils.cloud_spec import CACHE_ROLE

DEFAULT_TF_PORT = 2222


def node_state(ec2_state):
    """EC2's instance state as tfprov's node state (the local and GCP inventories use the same words)."""
    return "stopped" if ec2_state in ("stopping", "stopped") else ec2_state or "unknown"


def tfprov_vars(host_vars):
    """tfprov's host vars for one instance (aws_ec2's snake_case host vars), or None when tfprov did not make it."""
    tags = host_vars.get("tags") or {}
    cluster = tags.get("tfprov:cluster")
    if not cluster:
        return None
    gpu = instance_gpu(host_vars.get("instance_type") or "", "aws")
    role = tags.get("tfprov:role") or ""
    try:
        port = int(tags.get("tfprov:tf-port") or DEFAULT_TF_PORT)
    except ValueError:
        port = DEFAULT_TF_PORT
    # The spec's idle-stop minutes (playbooks/idle_stop.yml); left unset on instances without the tag, and kept as
    # written otherwise so that resolve.yml refuses a value that is not a number with its own line.
    idle = {"tfprov_idle_stop_minutes": tags["tfprov:idle-stop-minutes"]} if "tfprov:idle-stop-minutes" in tags else {}
    return idle | {
        # Public address, else the private one (tests run against moto, whose addresses are fake: never used).
        "ansible_host": host_vars.get("public_ip_address") or host_vars.get("private_ip_address") or "",
        "tfprov_cluster": cluster,
        # running, pending, or stopped (stopping too): resolve.yml refuses a node that is not running, naming it.
        "tfprov_node_state": node_state((host_vars.get("state") or {}).get("name", "")),
        "tfprov_node_role": tags.get("tfprov:role", ""),
        "tfprov_tf_address": host_vars.get("private_ip_address") or "",
        "tfprov_tf_port": port,
        "tfprov_zone": (host_vars.get("placement") or {}).get("availability_zone", ""),
        "tfprov_instance_type": host_vars.get("instance_type") or "",
        "tfprov_provider": "aws",
        # What tfprov's price lookup needs: a Spot instance is priced at the Spot market's rate.
        "tfprov_market": "spot" if host_vars.get("instance_lifecycle") == "spot" else "on-demand",
        "tfprov_booted_from_image": tags.get("tfprov:image", ""),
        "tfprov_gpu_model": gpu["model"],
        "tfprov_gpu_family": gpu["family"],
        "tfprov_gpu_count": gpu["count"],
        "tfprov_gpu_nvlink": gpu["nvlink"],
    }, ([] if role == CACHE_ROLE else ["tfprov_nodes"]) + (["tfprov_" + role] if role else []) + gpu["groups"]


LISTED_GROUP = "aws_ec2"  # amazon.aws.aws_ec2 puts every host it lists in this group


def _members(inventory, group):
    """The names of a group's hosts; none when the group does not exist."""
    found = inventory.groups.get(group)
    return {host.name for host in found.hosts} if found else set()


FINISHED_FORMAT = 1  # bump when what the finished inventory holds changes: older entries are then ignored


def _from_text(value):
    """The finished inventory from its cached JSON text; {} for anything else (none, or another format)."""
    try:
        found = json.loads(str(value)) if value is not None else {}
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


# What ansible-core's PluginLoader sets on a plugin it loads (ansible.plugins._AnsiblePluginInfoMixin). amazon.aws's
# plugin takes them from this one: it then reads this plugin's options and keys its cache entry as this plugin.
LOADED_AS = ("_original_path", "_load_name", "_redirected_names", "ansible_aliases", "ansible_name")


class InventoryModule(BaseInventoryPlugin, Cacheable):
    NAME = "tfprov.gpu.aws_ec2"
    INVENTORY_FILE_SUFFIXES = ("aws_ec2.yml", "aws_ec2.yaml")  # amazon.aws.aws_ec2's file names

    def verify_file(self, path):
        return super().verify_file(path) and path.endswith(self.INVENTORY_FILE_SUFFIXES)

    def parse(self, inventory, loader, path, cache=True):
        """From the finished inventory in the cache when it is there (no API call, none of amazon.aws's per-host
        work, amazon.aws not even imported); else amazon.aws.aws_ec2's own parse, untouched (API calls, cache,
        hostnames, compose, groups), then tfprov's vars and groups on the hosts it listed, and the raw vars trimmed
        to raw_hostvars. Only amazon.aws's public entry points are used, so a release that changes its internals
        cannot silently break the group contract."""
        super().parse(inventory, loader, path)
        key = self._finished_key(path, self._read_config_data(path))
        use_cache = bool(cache and key)
        if use_cache:
            try:
                finished = self._cache[key]
            except KeyError:  # none yet, or expired with amazon.aws's own entry (cache_timeout)
                finished = None
            finished = _from_text(finished)
            # A host another source listed first is left to the full parse: its vars are not this source's alone.
            if finished.get("format") == FINISHED_FORMAT and not set(finished["hosts"]) & set(inventory.hosts):
                self._load_finished(inventory, finished)
                return
        # Was amazon.aws's own entry still fresh? Then the finished one is not written from it: its age would
        # restart, and the listing could outlive cache_timeout.
        raw_cached = use_cache and self.get_cache_key(path) in self._cache
        before_vars = {name: set(host.vars) for name, host in inventory.hosts.items()}
        before_groups = set(inventory.groups)
        listed_before = _members(inventory, LISTED_GROUP)
        stock = self._stock_plugin()
        stock.parse(inventory, loader, path, cache=cache)
        if self.get_option("cache"):
            stock.update_cache_if_changed()  # amazon.aws's entry: the inventory manager saves only this plugin's
        # The hosts new to the inventory, and those another source listed first that amazon.aws put in its group
        # too (were that group ever renamed, only the new hosts: the contract on them does not rest on it).
        listed_now = _members(inventory, LISTED_GROUP) - listed_before
        listed = [name for name in inventory.hosts if name not in before_vars or name in listed_now]
        self._add_tfprov(inventory, listed, before_vars)
        if key and not raw_cached and not any(name in before_vars for name in listed):
            # As one JSON text: stored as Ansible's values, each string would carry its data tags, and decoding
            # 27,000 of them took 10 s for 1,000 hosts. Read back, plain strings are data, never templates.
            self._cache[key] = json.dumps(self._finished(inventory, listed, before_groups), default=str)

    def _stock_plugin(self):
        """amazon.aws.aws_ec2's plugin as this one: this plugin's name, options and cache key. Imported only when
        the listing is not read from the finished inventory: amazon.aws imports boto3 and botocore."""
        from ansible_collections.amazon.aws.plugins.inventory.aws_ec2 import InventoryModule as Stock

        stock = Stock()
        stock.NAME = self.NAME
        for name in LOADED_AS:
            setattr(stock, name, getattr(self, name, None))
        return stock

    def _finished_key(self, path, config):
        """The cache key of the finished inventory, None when caching is off. It carries a digest of the
        inventory file's settings (config): an edited file never reads a listing made under other settings."""
        if not self.get_option("cache"):
            return None
        digest = hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode()).hexdigest()[:12]
        return f"{self.get_cache_key(path)}_tfprov_{digest}"

    def _add_tfprov(self, inventory, listed, before_vars):
        """tfprov's vars and groups on each host this source listed, the raw vars trimmed to raw_hostvars (a host
        another source listed first keeps the vars it had from there)."""
        kept = set(self.get_option("raw_hostvars") or ())
        composed = set(self.get_option("compose") or {})
        prefix, suffix = self.get_option("hostvars_prefix") or "", self.get_option("hostvars_suffix") or ""
        for name in listed:
            host = inventory.get_host(name)
            raw = {key[len(prefix):len(key) - len(suffix)]: value for key, value in host.vars.items()
                   if key.startswith(prefix) and key.endswith(suffix)}
            found = tfprov_vars(raw)
            if kept:
                other = before_vars.get(name, ())
                for key in [key for key in host.vars if key not in kept and key not in composed and key not in other]:
                    del host.vars[key]
            if found is None:
                continue
            variables, groups = found
            for key, value in variables.items():
                inventory.set_variable(name, key, value)
            for group_name in groups:
                inventory.add_group(group_name)
                inventory.add_child(group_name, name)

    @staticmethod
    def _finished(inventory, listed, before_groups):
        """What this source added: each host's vars, and each group's hosts, child groups and vars from it."""
        hosts = set(listed)
        groups = {}
        for name, group in inventory.groups.items():
            if name in ("all", "ungrouped"):  # every host is in all; ungrouped is worked out afterwards
                continue
            new = name not in before_groups
            members = [host.name for host in group.hosts if host.name in hosts]
            children = [child.name for child in group.child_groups if child.name not in before_groups]
            if new or members or children:
                groups[name] = {"hosts": members, "children": children, "vars": dict(group.vars) if new else {}}
        return {"format": FINISHED_FORMAT, "hosts": {name: dict(inventory.get_host(name).vars) for name in listed},
                "groups": groups}

    @staticmethod
    def _load_finished(inventory, finished):
        # ansible-core 2.19 hands a plugin a proxy whose set_variable walks each value to tag its origin and trust:
        # 24,000 walks for 1,000 hosts, most of the inventory's time in a run. The cached values are JSON's plain
        # types and must stay untrusted (data, never templates), which they are untagged; and every host is new to
        # the inventory here (parse checked), so nothing is there to merge with: each host takes its vars whole.
        plain = getattr(inventory, "__wrapped__", inventory)
        for name, variables in finished["hosts"].items():
            inventory.add_host(name)
            plain.get_host(name).vars.update(variables)
        for name, group in finished["groups"].items():
            inventory.add_group(name)
            for key, value in group["vars"].items():
                inventory.set_variable(name, key, value)
        for name, group in finished["groups"].items():
            for child in group["children"] + group["hosts"]:
                inventory.add_child(name, child)
