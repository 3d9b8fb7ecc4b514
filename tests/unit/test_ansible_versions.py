"""tests/support/ansible_versions.py: a venv's ansible-core or a collection outside the declared ranges is named."""

import importlib.util
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
SPEC = importlib.util.spec_from_file_location("ansible_versions", ROOT / "tests" / "support" / "ansible_versions.py")
ansible_versions = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(ansible_versions)
DEPENDENCIES = yaml.safe_load((ROOT / "galaxy.yml").read_text())["dependencies"]
REQUIRES = yaml.safe_load((ROOT / "meta" / "runtime.yml").read_text())["requires_ansible"]

# The bundles of the Ansible packages at both supported ends (Ansible 12.3.0 and 14.5.0).
OLDEST = {"amazon.aws": "10.1.2", "google.cloud": "1.10.2", "community.docker": "4.8.5", "community.general": "11.4.2",
          "ansible.posix": "2.1.0"}
NEWEST = {"amazon.aws": "11.4.0", "google.cloud": "1.15.0", "community.docker": "5.4.0", "community.general": "13.5.0",
          "ansible.posix": "2.2.2"}


def test_both_ends_of_the_supported_range_pass():
    assert ansible_versions.problems("2.19.14", OLDEST, DEPENDENCIES, REQUIRES) == []
    assert ansible_versions.problems("2.21.5", NEWEST, DEPENDENCIES, REQUIRES) == []
    assert ansible_versions.problems("2.20.0", NEWEST, DEPENDENCIES, REQUIRES) == []


def test_what_is_outside_is_named():
    assert ansible_versions.problems("2.18.9", OLDEST, DEPENDENCIES, REQUIRES) == [
        f"ansible-core 2.18.9 is outside meta/runtime.yml's requires_ansible {REQUIRES}"]
    assert ansible_versions.problems("2.22.0rc1", OLDEST, DEPENDENCIES, REQUIRES)  # not yet tested: named
    newer = NEWEST | {"community.docker": "6.0.0"}
    newer.pop("google.cloud")
    assert ansible_versions.problems("2.21.5", newer, DEPENDENCIES, REQUIRES) == [
        "google.cloud is not installed (galaxy.yml wants >=1.10.0,<2.0.0)",
        "community.docker 6.0.0 is outside galaxy.yml's range >=4.8.0,<6.0.0"]
