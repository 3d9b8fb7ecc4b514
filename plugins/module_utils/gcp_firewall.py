# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which of a VPC network's firewall rules open SSH or the cluster port to a cluster's nodes wider than its spec.

A rule reaches the nodes when it is an enabled INGRESS allow rule that targets every instance (no target tags or
service accounts) or the cluster's own tag. SSH may come from operator_cidr only; the cluster port from the
members only, which tfprov's own rule (tfprov-<cluster>-cluster) lists, so any other rule opening it is too wide.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ipaddress

# A rule with no source at all matches every source (Compute API: sourceRanges default 0.0.0.0/0 for INGRESS).
_EVERYWHERE = ["0.0.0.0/0"]


def opens_port(rule, port):
    """True when one of the rule's allowed entries covers TCP `port` (no ports: every port)."""
    for allowed in rule.get("allowed") or []:
        if str(allowed.get("IPProtocol", "")).lower() not in ("tcp", "all", "6"):
            continue
        ports = allowed.get("ports") or []
        if not ports:
            return True
        for item in ports:
            low, dummy, high = str(item).partition("-")
            if int(low) <= port <= int(high or low):
                return True
    return False


def reaches_nodes(rule, tag):
    if rule.get("disabled") or rule.get("direction", "INGRESS") != "INGRESS" or not rule.get("allowed"):
        return False
    if rule.get("targetServiceAccounts"):  # tfprov's nodes carry no service account of the user's
        return False
    targets = rule.get("targetTags") or []
    return not targets or tag in targets


def sources(rule):
    """What the rule lets in, as text: its ranges, and its source tags or service accounts (other VMs)."""
    found = list(rule.get("sourceRanges") or [])
    found += ["VMs tagged %s" % tag for tag in rule.get("sourceTags") or []]
    found += ["VMs running as %s" % account for account in rule.get("sourceServiceAccounts") or []]
    return found or list(_EVERYWHERE)


def _within(text, allowed):
    try:
        network = ipaddress.ip_network(text, strict=False)
    except ValueError:  # a source tag or service account: other VMs, not the operator
        return False
    return network.version == allowed.version and network.subnet_of(allowed)


def too_wide(rules, cluster, tag, operator_cidr, cluster_port):
    """[(rule name, port, the sources wider than allowed)] for the rules that break the spec, by name."""
    operator = ipaddress.ip_network(operator_cidr, strict=False)
    own = "tfprov-%s-" % cluster
    found = []
    for rule in sorted(rules, key=lambda item: item.get("name", "")):
        if str(rule.get("name", "")).startswith(own) or not reaches_nodes(rule, tag):
            continue
        if opens_port(rule, 22):
            wider = [source for source in sources(rule) if not _within(source, operator)]
            if wider:
                found.append((rule["name"], 22, wider))
        if opens_port(rule, cluster_port):
            found.append((rule["name"], cluster_port, sources(rule)))
    return found


def refusal(network, found, operator_cidr):
    name, port, wider = found[0]
    allowed = "operator_cidr %s" % operator_cidr if port == 22 else "the cluster's members (tfprov's own rule)"
    return ("network %s: firewall rule %s opens tcp:%d to %s, wider than %s: disable or narrow that rule, or remove "
            "network from the spec so tfprov makes the cluster a network of its own"
            % (network, name, port, ", ".join(wider[:3]) + (" and %d more" % (len(wider) - 3) if len(wider) > 3
                                                            else ""), allowed))
