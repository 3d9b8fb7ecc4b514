# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters reading a host firewall's own listing: the rules a role put on one TCP port, so that it can replace them
as a set (the dist_tf_cluster role's tasks/firewall-ufw.yml and tasks/firewall-firewalld.yml).

    current: "{{ ufw_added.stdout_lines | tfprov.gpu.ufw_port_rules(2222, 'tfprov TensorFlow cluster') }}"
    former: "{{ rich_rules.stdout_lines | tfprov.gpu.firewalld_port_rules(2222, member_addresses) }}"
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible.errors import AnsibleFilterError

# `ufw show added`: "ufw RULE [... from SOURCE ...] ..." ("ufw allow from 10.0.0.2 to any port 2222 proto tcp
# comment 'x'"; a rule from anywhere is "ufw deny 2222/tcp comment 'x'").
_UFW_RULE = re.compile(r"^ufw (\S+) (?:.*?from (\S+))?.*$")


def _lines(listing):
    """A command's output as lines: its stdout_lines (a list) or its stdout (a string); none when it did not run."""
    if listing is None:
        return []
    if isinstance(listing, str):
        return listing.splitlines()
    if isinstance(listing, (list, tuple)):
        return [str(line) for line in listing]
    raise AnsibleFilterError(f"a firewall listing is a list of lines or a string, not {type(listing).__name__}")


def _port(port):
    text = str(port).strip()
    if not text.isdigit():
        raise AnsibleFilterError(f"a firewall port is a number, not {port!r}")
    return text


def ufw_port_rules(listing, port, comment):
    """The rules `ufw show added` lists with this comment on this TCP port, in ufw's order, each as "RULE SOURCE"
    ("allow 10.0.0.2", "deny any": SOURCE is "any" for a rule from anywhere)."""
    port = re.escape(_port(port))
    on_port = re.compile(r"(port " + port + r"( |$)|(^| )" + port + r"/tcp( |$))")
    tagged = "comment '" + str(comment) + "'"
    rules = []
    for line in _lines(listing):
        if tagged not in line or not on_port.search(line):
            continue
        rule = _UFW_RULE.sub(lambda m: f"{m.group(1)} {m.group(2) or ''}", line).strip()
        rules.append(rule + " any" if re.fullmatch(r"\S+", rule) else rule)
    return rules


def firewalld_port_rules(listing, port, keep=()):
    """The rich rules `firewall-cmd --list-rich-rules` lists that accept one source address on this TCP port, but
    for those whose address is in keep: the rules to remove when keep is every address that should stay."""
    accepts = re.compile(r'^rule family="ipv[46]" source address="([^"]+)" port port="' + re.escape(_port(port))
                         + r'" protocol="tcp" accept$')
    kept = {str(address) for address in keep or ()}
    rules = []
    for line in _lines(listing):
        found = accepts.match(line)
        if found and found.group(1) not in kept:
            rules.append(line)
    return rules


class FilterModule(object):
    def filters(self):
        return {
            "ufw_port_rules": ufw_port_rules,
            "firewalld_port_rules": firewalld_port_rules,
        }
