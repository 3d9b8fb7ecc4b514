"""Every plugin's DOCUMENTATION, EXAMPLES and RETURN is YAML (ansible-doc and the collection's docs read them): a
plain scalar with ": " in it turns into a broken mapping without any other test noticing."""

import ast
from pathlib import Path

import pytest
import yaml

PLUGINS = Path(__file__).resolve().parents[3] / "plugins"
DOCS = ("DOCUMENTATION", "EXAMPLES", "RETURN")


def _docs(path):
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) in DOCS:
            yield node.targets[0].id, node.value.value


@pytest.mark.parametrize("path", sorted(PLUGINS.glob("*/*.py")), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_the_documentation_is_yaml(path):
    for name, text in _docs(path):
        parsed = yaml.safe_load(text)
        if name == "DOCUMENTATION":
            assert isinstance(parsed, dict) and isinstance(parsed.get("options", {}), dict), path.name
