"""Named plans (plans.yml) resolved to playbooks of the checkout, their description, and the views their results
show."""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import yaml

from .errors import TfprovError

# libyaml's loader where PyYAML has it: every run reads its playbooks here before Ansible starts, and the pure-Python
# loader took 90 ms of that for gpu_node.yml's imports.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
# The views a plan's results may show (plans.yml's views), each a report read into rows (bench.py, gate.py, ...) and
# drawn by the renderers (terminal.py, report_page.py):
VIEWS = {
    "converge": "the nodes whose install was skipped because their last converge stands (--full runs it all)",
    "bench": "the matmul bench: a table, one JSON per node, a plot",
    "check": "the quick GPU check: one matmul per device",
    "gate": "the admission gate's verdicts (--level sets its depth)",
    "serving": "TF Serving's models, versions and latencies",
    "notebook": "the notebook service: the SSH tunnel to reach it",
    "cluster": "the distributed job's tasks and the distributed check",
    "idle": "the nodes running idle",
}


def load_yaml(text: str):
    return yaml.load(text, Loader=_LOADER)  # noqa: S506 - a safe loader, C or Python


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
    # How many of its first plays only check and resolve (plans.yml's checks_first): a run that fails there,
    # with no host changed, was refused before any change (exit 2), not a host failing (exit 4).
    checks_first: int = 0
    # The views its results show (plans.yml's views; plan.VIEWS): what `tfprov run` prints after its summary, and
    # which of the run's flags apply (--level: gate; --full: converge).
    views: tuple[str, ...] = ()

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
    return load_yaml(text)


def resolve(name: str, root: Path, plans: dict[str, dict] | None = None) -> Plan:
    plans = load_plans() if plans is None else plans
    if name not in plans:
        raise TfprovError(f"unknown plan '{name}'; known plans: {', '.join(sorted(plans))}")
    spec = plans[name]
    steps = tuple(Step(root / "playbooks" / p) for p in spec["steps"])
    views = tuple(spec.get("views") or ())
    unknown = [view for view in views if view not in VIEWS]
    if unknown:
        raise TfprovError(f"plan '{name}' names an unknown view {unknown[0]!r}; views: {', '.join(VIEWS)}")
    return Plan(name=name, description=spec["description"], steps=steps,
                checks_first=int(spec.get("checks_first", 0)), views=views)


_ROLE_TASKS = ("ansible.builtin.include_role", "include_role", "ansible.builtin.import_role", "import_role")


def _role_entry(args: dict) -> str:
    """'role' for its main entry point, 'role:entry' for another one (the resolve play uses each role's 'resolve')."""
    entry = args.get("tasks_from")
    return f"{args['name']}:{entry}" if entry and entry != "main" else str(args["name"])


_TASK_IMPORTS = ("ansible.builtin.import_tasks", "import_tasks")


def _task_roles(tasks, base: Path, seen: tuple[Path, ...] = ()) -> list[str]:
    """The roles a play's tasks include, in order, through blocks and static task imports (playbooks/tasks/...)."""
    found = []
    for task in tasks or []:
        if not isinstance(task, dict):
            continue
        found += [_role_entry(task[key]) for key in _ROLE_TASKS if isinstance(task.get(key), dict)
                  and "name" in task[key]]
        for part in ("block", "rescue", "always"):
            found += _task_roles(task.get(part), base, seen)
        target = next((task[key] for key in _TASK_IMPORTS if isinstance(task.get(key), str)), None)
        path = (base / target).resolve() if target and "{{" not in target else None
        if path and path.is_file() and path not in seen:
            try:
                found += _task_roles(load_yaml(path.read_text(encoding="utf-8")), base, (*seen, path))
            except (OSError, UnicodeDecodeError, yaml.YAMLError):
                continue  # the listing is a description: ansible-playbook reports a broken file itself
    return found


_HOSTS_VAR = re.compile(r"""^\{\{\s*(\w+)\s*\|\s*default\(\s*['"]([^'"]*)['"]\s*\)\s*\}\}$""")
# A group the run makes as it goes (group_by), which may end up empty: `{{ groups['name'] | default([]) }}`.
_HOSTS_GROUP = re.compile(r"""^\{\{\s*groups\[\s*['"](\w+)['"]\s*\]\s*\|\s*default\(\s*\[\s*\]\s*\)\s*\}\}$""")


def _hosts(hosts, variables: dict) -> str:
    """A play's hosts as the run will see them: `{{ var | default('group') }}` with the importing playbook's vars,
    and a group made during the run by its name."""
    match = _HOSTS_VAR.match(str(hosts).strip())
    hosts = variables.get(match[1], match[2]) if match else hosts
    group = _HOSTS_GROUP.match(str(hosts).strip())
    return group[1] if group else str(hosts)


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
        plays = load_yaml(path.read_text(encoding="utf-8")) or []
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
        for section in ("pre_tasks", "tasks", "post_tasks"):
            roles += _task_roles(play.get(section), path.parent)
        roles = list(dict.fromkeys(roles))  # a role used twice (a fallback path) is listed once
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
