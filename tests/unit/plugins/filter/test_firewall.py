"""tfprov.gpu.ufw_port_rules and firewalld_port_rules on what ufw 0.36 (`ufw show added`) and firewalld 1.3
(`firewall-cmd --permanent --list-rich-rules`) print on Debian 12, and the same answers as the Jinja expressions the
dist_tf_cluster role had in vars/main.yml before them."""

import pytest
from ansible.errors import AnsibleFilterError
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template
from ansible_collections.tfprov.gpu.plugins.filter.firewall import FilterModule, firewalld_port_rules, ufw_port_rules

COMMENT = "tfprov TensorFlow cluster"
UFW_ADDED = """\
Added user rules (see 'ufw status' for running firewall):
ufw allow 22/tcp
ufw allow from 10.210.0.11 to any port 2222 proto tcp comment 'tfprov TensorFlow cluster'
ufw allow from 10.210.0.13 to any port 2222 proto tcp comment 'tfprov TensorFlow cluster'
ufw allow from fd00:10::3 to any port 2222 proto tcp comment 'tfprov TensorFlow cluster'
ufw deny 2222/tcp comment 'tfprov TensorFlow cluster'
ufw allow from 10.210.0.11 to any port 22222 proto tcp comment 'tfprov TensorFlow cluster'
ufw allow from 10.210.0.14 to any port 2222 proto tcp comment 'someone else'
ufw allow 2222/tcp
ufw deny from 192.0.2.9
"""
UFW_NONE = "Added user rules (see 'ufw status' for running firewall):\n(None)\n"
RICH_RULES = """\
rule family="ipv4" source address="10.210.0.11" port port="2222" protocol="tcp" accept
rule family="ipv4" source address="10.210.0.13" port port="2222" protocol="tcp" accept
rule family="ipv6" source address="fd00:10::3" port port="2222" protocol="tcp" accept
rule family="ipv4" source address="10.210.0.11" port port="22" protocol="tcp" accept
rule family="ipv4" source address="10.210.0.1" port port="2222" protocol="udp" accept
rule family="ipv4" source address="10.210.0.15" port port="2222" protocol="tcp" reject
rule family="ipv4" source address="192.0.2.0/24" service name="ssh" accept
"""


def test_ufw_gives_this_ports_tagged_rules_in_ufws_order_as_rule_and_source():
    assert ufw_port_rules(UFW_ADDED.splitlines(), 2222, COMMENT) == [
        "allow 10.210.0.11", "allow 10.210.0.13", "allow fd00:10::3", "deny any"]


def test_ufw_port_is_a_whole_port_not_a_prefix_and_stdout_works_as_well_as_its_lines():
    assert ufw_port_rules(UFW_ADDED, "22222", COMMENT) == ["allow 10.210.0.11"]
    assert ufw_port_rules(UFW_ADDED, 222, COMMENT) == []


def test_ufw_without_rules_or_without_a_listing_gives_none():
    assert ufw_port_rules(UFW_NONE.splitlines(), 2222, COMMENT) == []
    assert ufw_port_rules([], 2222, COMMENT) == []
    assert ufw_port_rules(None, 2222, COMMENT) == []


def test_firewalld_gives_the_tcp_accepts_on_this_port_of_addresses_not_kept():
    lines = RICH_RULES.splitlines()
    assert firewalld_port_rules(lines, 2222, ["10.210.0.11", "fd00:10::3"]) == [lines[1]]
    assert firewalld_port_rules(lines, "2222") == lines[:3]  # no member: every such rule is a former member's
    assert firewalld_port_rules(lines, 22, ["10.210.0.13"]) == [lines[3]]


def test_firewalld_keeps_exact_addresses_not_prefixes():
    lines = RICH_RULES.splitlines()
    assert firewalld_port_rules(lines, 2222, ["10.210.0.1"]) == lines[:3]


@pytest.mark.parametrize("port", ["22 22", "x", None, "2222|22"])
def test_a_port_that_is_not_a_number_is_refused(port):
    with pytest.raises(AnsibleFilterError, match="a firewall port is a number"):
        ufw_port_rules([], port, COMMENT)
    with pytest.raises(AnsibleFilterError, match="a firewall port is a number"):
        firewalld_port_rules([], port)


def test_a_listing_of_another_type_is_refused():
    with pytest.raises(AnsibleFilterError, match="not dict"):
        ufw_port_rules({"stdout": ""}, 2222, COMMENT)


def test_the_filters_are_registered_under_their_names():
    assert FilterModule().filters() == {"ufw_port_rules": ufw_port_rules, "firewalld_port_rules": firewalld_port_rules}


# What roles/dist_tf_cluster/vars/main.yml computed before the filters, kept to show they answer the same.
OLD_UFW = """{{ lines
     | select('search', "comment '" ~ comment ~ "'")
     | select('search', '(port ' ~ port ~ '( |$)|(^| )' ~ port ~ '/tcp( |$))')
     | map('regex_replace', '^ufw (\\S+) (?:.*?from (\\S+))?.*$', '\\1 \\2') | map('trim')
     | map('regex_replace', '^(\\S+)$', '\\1 any') | list }}"""
OLD_FIREWALLD = """{{ lines
     | select('match', '^rule family="ipv[46]" source address="[^"]+" port port="' ~ port
              ~ '" protocol="tcp" accept$')
     | reject('search', 'address="(' ~ (members | map('regex_escape') | join('|'))
              ~ ')"') | list }}"""


def _old(expression, **variables):
    return Templar(loader=DataLoader(), variables=variables).template(trust_as_template(expression))


@pytest.mark.parametrize("port", [2222, 22, 22222])
@pytest.mark.parametrize("listing", [UFW_ADDED, UFW_NONE], ids=["rules", "none"])
def test_ufw_answers_as_the_roles_former_expression(listing, port):
    lines = listing.splitlines()
    assert ufw_port_rules(lines, port, COMMENT) == _old(OLD_UFW, lines=lines, port=port, comment=COMMENT)


@pytest.mark.parametrize("port", [2222, 22])
@pytest.mark.parametrize("members", [[], ["10.210.0.11"], ["10.210.0.11", "fd00:10::3", "10.210.0.13"]])
def test_firewalld_answers_as_the_roles_former_expression(members, port):
    lines = RICH_RULES.splitlines()
    assert firewalld_port_rules(lines, port, members) == _old(OLD_FIREWALLD, lines=lines, port=port, members=members)
