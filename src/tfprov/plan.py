"""Named plans (plans.yml) resolved to playbooks of the checkout, and their description."""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import yaml

from .errors import TfprovError


@dataclass(frozen=True)
class Step:
    playbook: Path

    @property
    def exists(self) -> bool:
        return self.playbook.is_file()


@dataclass(frozen=True)
class Plan:
    name: str
    description: str
    steps: tuple[Step, ...]

    def missing(self) -> list[Step]:
        return [s for s in self.steps if not s.exists]

    def check(self) -> None:
        """Refuse, in one line, a plan whose playbooks are missing or import what is missing or cyclic."""
        missing = self.missing()
        if missing:
            names = ", ".join(s.playbook.name for s in missing)
            raise TfprovError(f"plan '{self.name}' needs playbooks this checkout does not have yet: {names}")
        for step in self.steps:
            describe_playbook(step.playbook)


def load_plans() -> dict[str, dict]:
    text = resources.files("tfprov").joinpath("plans.yml").read_text(encoding="utf-8")
    return yaml.safe_load(text)


def resolve(name: str, root: Path, plans: dict[str, dict] | None = None) -> Plan:
    plans = load_plans() if plans is None else plans
    if name not in plans:
        raise TfprovError(f"unknown plan '{name}'; known plans: {', '.join(sorted(plans))}")
    spec = plans[name]
    steps = tuple(Step(root / "playbooks" / p) for p in spec["steps"])
    return Plan(name=name, description=spec["description"], steps=steps)


_ROLE_TASKS = ("ansible.builtin.include_role", "include_role", "ansible.builtin.import_role", "import_role")


def _role_entry(args: dict) -> str:
    """'role' for its main entry point, 'role:entry' for another one (the resolve play uses each role's 'resolve')."""
    entry = args.get("tasks_from")
    return f"{args['name']}:{entry}" if entry and entry != "main" else str(args["name"])


_HOSTS_VAR = re.compile(r"""^\{\{\s*(\w+)\s*\|\s*default\(\s*['"]([^'"]*)['"]\s*\)\s*\}\}$""")


def _hosts(hosts, variables: dict) -> str:
    """A play's hosts as the run will see them: `{{ var | default('group') }}` with the importing playbook's vars."""
    match = _HOSTS_VAR.match(str(hosts).strip())
    return str(variables.get(match[1], match[2])) if match else str(hosts)


def describe_playbook(path: Path, _importing: tuple[Path, ...] = (), _vars: dict | None = None) -> list[str]:
    """One line per play, following import_playbook, as '<hosts>: <play name> [roles]'.

    A missing, cyclic or unreadable import is a TfprovError (one line), never a traceback.
    """
    path = path.resolve()
    if path in _importing:
        chain = " -> ".join(p.name for p in (*_importing[_importing.index(path):], path))
        raise TfprovError(f"{_importing[-1]}: import_playbook cycle: {chain}")
    if not path.is_file():
        where = f"{_importing[-1]} imports {path}" if _importing else f"playbook {path}"
        raise TfprovError(f"{where}, which does not exist")
    try:
        plays = yaml.safe_load(path.read_text(encoding="utf-8")) or []
    except (OSError, UnicodeDecodeError) as exc:
        raise TfprovError(f"{path}: cannot be read ({exc.__class__.__name__})") from exc
    except yaml.YAMLError as exc:
        raise TfprovError(f"{path}: not valid YAML ({exc.__class__.__name__})") from exc
    if not isinstance(plays, list) or not all(isinstance(play, dict) for play in plays):
        raise TfprovError(f"{path}: not a playbook (expected a list of plays)")
    lines = []
    for play in plays:
        if "ansible.builtin.import_playbook" in play or "import_playbook" in play:
            target = play.get("ansible.builtin.import_playbook") or play.get("import_playbook")
            if not isinstance(target, str) or not target.strip():
                raise TfprovError(f"{path}: import_playbook needs a file name")
            lines += describe_playbook(path.parent / target, (*_importing, path), play.get("vars") or {})
            continue
        roles = [r.get("role") or r.get("name") if isinstance(r, dict) else r for r in play.get("roles") or []]
        roles += [_role_entry(task[key]) for task in play.get("tasks") or [] for key in _ROLE_TASKS
                  if isinstance(task, dict) and isinstance(task.get(key), dict) and "name" in task[key]]
        suffix = f"  [roles: {', '.join(map(str, roles))}]" if roles else ""
        lines.append(f"{_hosts(play.get('hosts', '?'), _vars or {})}: {play.get('name', 'unnamed play')}{suffix}")
    return lines


def render(plan: Plan) -> str:
    out = [f"plan {plan.name}: {plan.description}"]
    for i, step in enumerate(plan.steps, 1):
        rel = step.playbook.relative_to(step.playbook.parents[1])
        if not step.exists:
            out.append(f"  {i}. {rel}  (not in this checkout yet: `tfprov run {plan.name}` will refuse)")
            continue
        out.append(f"  {i}. {rel}")
        out += [f"       - {line}" for line in describe_playbook(step.playbook)]
    return "\n".join(out)
