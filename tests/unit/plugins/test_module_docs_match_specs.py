"""Every module's DOCUMENTATION says what its argument_spec takes: names, types, required, defaults, choices, list
elements and aliases, at every depth.

This is the check of ansible-test's validate-modules that matters most here (a module whose documentation drifts
from its arguments fails); ansible-test itself cannot run on this machine (it bootstraps its own pip from outside
PyPI). Each module's main() runs until AnsibleModule is built, which records the spec and stops it.
"""

import importlib
import sys
from pathlib import Path

import pytest
import yaml
from ansible.module_utils import basic

MODULES = sorted(p.stem for p in (Path(__file__).parents[3] / "plugins" / "modules").glob("*.py"))
# Actions whose module file only documents them: the action plugin checks its arguments (by its own spec).
ACTION_ONLY = {"serving_models": "plugins/action/serving_models.py", "stack": "plugins/action/stack.py"}


class _Built(Exception):
    pass


def argument_spec(name: str, monkeypatch) -> dict:
    module = importlib.import_module(f"ansible_collections.tfprov.gpu.plugins.modules.{name}")
    seen = {}

    def record(self, argument_spec, **kwargs):
        seen.update(argument_spec=argument_spec, **kwargs)
        raise _Built

    monkeypatch.setattr(basic.AnsibleModule, "__init__", record)
    monkeypatch.setattr(sys, "argv", [name])
    with pytest.raises(_Built):
        module.main()
    return seen["argument_spec"]


def _norm(spec: dict, documented: bool) -> dict:
    """What both sides must agree on, with Ansible's defaults filled in (type str, required false)."""
    out = {"type": spec.get("type", "str"), "required": bool(spec.get("required", False)),
           "default": spec.get("default"), "choices": sorted(map(str, spec["choices"])) if spec.get("choices")
           else None, "elements": spec.get("elements"), "aliases": sorted(spec.get("aliases") or [])}
    sub = spec.get("suboptions" if documented else "options")
    if sub:
        out["suboptions"] = {key: _norm(value, documented) for key, value in sub.items()}
    return out


def compare(doc: dict, spec: dict, where: str = "") -> list[str]:
    problems = []
    for key in sorted(set(doc) | set(spec)):
        path = f"{where}{key}"
        if key not in spec:
            problems.append(f"{path}: documented, not in the argument_spec")
        elif key not in doc:
            problems.append(f"{path}: in the argument_spec, not documented")
        else:
            left, right = dict(doc[key]), dict(spec[key])
            for nested in ("suboptions",):
                if left.get(nested) or right.get(nested):
                    problems += compare(left.pop(nested, {}) or {}, right.pop(nested, {}) or {}, f"{path}.")
            problems += [f"{path}.{field}: documented {left[field]!r}, spec {right[field]!r}"
                         for field in left if left[field] != right.get(field)]
    return problems


@pytest.mark.parametrize("name", [m for m in MODULES if m not in ACTION_ONLY])
def test_documentation_matches_the_argument_spec(name, monkeypatch):
    module = importlib.import_module(f"ansible_collections.tfprov.gpu.plugins.modules.{name}")
    documented = yaml.safe_load(module.DOCUMENTATION).get("options") or {}
    spec = argument_spec(name, monkeypatch)
    problems = compare({k: _norm(v, True) for k, v in documented.items()},
                       {k: _norm(v, False) for k, v in spec.items()})
    assert problems == [], f"plugins/modules/{name}.py: " + "; ".join(problems)


def test_the_check_sees_a_drift():
    doc = {"a": _norm({"type": "int", "default": 1}, True), "b": _norm({}, True)}
    spec = {"a": _norm({"type": "int", "default": 2}, False), "c": _norm({}, False)}
    assert compare(doc, spec) == ["a.default: documented 1, spec 2", "b: documented, not in the argument_spec",
                                  "c: in the argument_spec, not documented"]
