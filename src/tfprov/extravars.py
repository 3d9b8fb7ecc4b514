"""Parse -e/--extra-vars the way ansible-playbook accepts them, but fail with one clear line."""

from __future__ import annotations

import re
import shlex
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
    try:
        tokens = shlex.split(arg)
    except ValueError as exc:
        raise TfprovError(f"extra vars {arg!r}: {exc}") from exc
    result = {}
    for token in tokens:
        key, sep, value = token.partition("=")
        if not sep:
            raise TfprovError(f"extra vars {token!r}: expected key=value, @file or a YAML/JSON mapping")
        result[key] = value
    return _mapping(result, repr(arg))


def parse(args: list[str]) -> dict:
    """Later arguments win, as with ansible-playbook."""
    merged: dict = {}
    for arg in args:
        merged.update(parse_one(arg))
    return merged
