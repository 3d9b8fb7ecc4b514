"""Parse -e/--extra-vars the way ansible-playbook accepts them, but fail with one clear line."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from .errors import TfprovError

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _mapping(value: object, origin: str) -> dict:
    if not isinstance(value, dict):
        raise TfprovError(f"extra vars {origin}: expected a mapping of variable names to values")
    bad = [k for k in value if not isinstance(k, str) or not _NAME.match(k)]
    if bad:
        raise TfprovError(f"extra vars {origin}: invalid variable name {bad[0]!r}")
    return value


def _where(exc: yaml.YAMLError) -> str:
    """' at line L, column C: the parser's problem', as far as the parser says."""
    mark, problem = getattr(exc, "problem_mark", None), getattr(exc, "problem", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
    return where + (f": {problem}" if problem else "")


def parse_one(arg: str) -> dict:
    if arg.startswith("@"):
        path = Path(arg[1:])
        if not path.is_file():
            raise TfprovError(f"extra vars file {path} does not exist")
        try:
            return _mapping(yaml.safe_load(path.read_text(encoding="utf-8")), str(path))
        except yaml.YAMLError as exc:
            raise TfprovError(f"extra vars file {path}: not valid YAML/JSON{_where(exc)}") from exc
    if arg.lstrip().startswith("{"):
        try:
            return _mapping(yaml.safe_load(arg), repr(arg))
        except yaml.YAMLError as exc:
            raise TfprovError(f"extra vars {arg!r}: not valid YAML/JSON{_where(exc)}") from exc
    # ansible-playbook's own splitter: quotes as the shell's, a Jinja2 expression kept whole ("a={{ b }}").
    # Imported here: the other forms, and runs without -e, need none of Ansible in this process.
    from ansible.errors import AnsibleError
    from ansible.parsing.splitter import parse_kv

    try:
        pairs = parse_kv(arg)
    except AnsibleError as exc:
        raise TfprovError(f"extra vars {arg!r}: unbalanced quotes or Jinja2 braces") from exc
    if "_raw_params" in pairs:
        raise TfprovError(f"extra vars {pairs['_raw_params']!r}: expected key=value, @file or a YAML/JSON mapping")
    return _mapping(pairs, repr(arg))


def parse(args: list[str]) -> dict:
    """Later arguments win, as with ansible-playbook."""
    merged: dict = {}
    for arg in args:
        merged.update(parse_one(arg))
    return merged
