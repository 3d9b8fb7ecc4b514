"""Print the ansible-core and the collections this venv runs tfprov with; fail, naming each, where one is outside
the range the collection declares (galaxy.yml's dependencies, meta/runtime.yml's requires_ansible).

`make venv` runs it after installing, and CI's output starts with it: a collection release that breaks tfprov is
named in the run that first installs it.
"""

from __future__ import annotations

import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import yaml
from ansible.release import __version__ as core_version
from packaging.specifiers import SpecifierSet
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]


def installed_collections() -> dict[str, str]:
    """name -> version of each collection in the venv's site-packages (the `ansible` package's bundle)."""
    import ansible_collections  # the namespace package the `ansible` package installs

    found = {}
    for base in map(Path, ansible_collections.__path__):
        for manifest in base.glob("*/*/MANIFEST.json"):
            info = yaml.safe_load(manifest.read_text())["collection_info"]
            found[f"{info['namespace']}.{info['name']}"] = info["version"]
    return found


def problems(core: str, collections: dict[str, str], dependencies: dict[str, str], requires: str) -> list[str]:
    """One line for each version outside its declared range (pure: tested in tests/unit)."""
    out = []
    if Version(core) not in SpecifierSet(requires.replace(" ", ""), prereleases=True):
        out.append(f"ansible-core {core} is outside meta/runtime.yml's requires_ansible {requires}")
    for name, spec in dependencies.items():
        have = collections.get(name)
        if have is None:
            out.append(f"{name} is not installed (galaxy.yml wants {spec})")
        elif Version(have) not in SpecifierSet(str(spec).replace(" ", "")):
            out.append(f"{name} {have} is outside galaxy.yml's range {spec}")
    return out


def main() -> int:
    galaxy = yaml.safe_load((ROOT / "galaxy.yml").read_text())
    runtime = yaml.safe_load((ROOT / "meta" / "runtime.yml").read_text())
    collections = installed_collections()
    try:
        package = version("ansible")
    except PackageNotFoundError:
        package = "none"
    deps = galaxy.get("dependencies") or {}
    print(f"Ansible {package}: ansible-core {core_version} on Python {sys.version.split()[0]}; "
          + ", ".join(f"{name} {collections.get(name, 'missing')}" for name in sorted(deps)))
    found = problems(core_version, collections, deps, runtime["requires_ansible"])
    for line in found:
        print(f"unsupported: {line}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
