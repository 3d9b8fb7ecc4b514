"""src/tfprov imports as a DAG (issue 51): views, then renderers, then commands, then cli; nothing lower imports
anything higher. Every import of a tfprov module counts, a function-level one too: it is still a dependency, only a
hidden one. Read with ast, nothing imported, so it is quick and pure."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
PACKAGE = "tfprov"

# The per-plan views: a report in, rows out. No terminal, no argument parsing, no run.
VIEWS = ("bench", "cluster", "fleet", "fleet_drift", "fleet_status", "gate", "idle", "services")
# Who may run a plan: the commands (and what runs plans for them), never a view or a renderer.
RUNNING = ("runner", "execute")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted((SRC / PACKAGE).rglob("*.py"))}


def imports(name: str, path: Path, known: set[str]) -> dict[str, set[str]]:
    """{imported module: {'tfprov' or 'other'}} for every import statement anywhere in the file; `from x import y`
    counts as x.y where that is a module, else as x."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: dict[str, set[str]] = {}
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.setdefault(alias.name, set())
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                parts = parts[:len(parts) - (node.level - 1)]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            else:
                base = node.module or ""
            for alias in node.names:
                candidate = f"{base}.{alias.name}"
                found.setdefault(candidate if candidate in known else base, set())
    return found


def graph() -> dict[str, set[str]]:
    found = modules()
    known = set(found)
    return {name: {dep for dep in imports(name, path, known) if dep in known and dep != name}
            for name, path in found.items()}


def all_imports(name: str) -> set[str]:
    path = modules()[name]
    return set(imports(name, path, set(modules())))


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One cycle as [a, b, ..., a], or None: a depth-first search that keeps the path it is on."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for dep in sorted(edges.get(node, ())):
            if state.get(dep) == 1:
                return [*path[path.index(dep):], dep]
            if dep not in state and (cycle := visit(dep)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_the_finder_sees_a_cycle_and_a_dag():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_a_function_level_import_counts(tmp_path):
    path = tmp_path / "mod.py"
    path.write_text("def f():\n    from . import other\n    from .pkg.deep import name\n")
    assert set(imports("tfprov.mod", path, {"tfprov.other", "tfprov.pkg.deep"})) == {"tfprov.other",
                                                                                    "tfprov.pkg.deep"}


def test_src_tfprov_has_no_import_cycle():
    edges = graph()
    assert len(edges) > 30  # it read the package
    cycle = find_cycle(edges)
    assert cycle is None, "import cycle in src/tfprov: " + " -> ".join(cycle or [])


@pytest.mark.parametrize("view", VIEWS)
def test_a_view_draws_nothing_parses_nothing_and_runs_nothing(view):
    name = f"{PACKAGE}.{view}"
    found = all_imports(name)
    assert not {dep for dep in found if dep.split(".")[0] in ("rich", "argparse", "ansible_runner")}, found
    assert not {dep for dep in found if dep.split(".")[0] == PACKAGE and dep.split(".")[-1] in
                (*RUNNING, "progress", "terminal", "report_page", "report_index", "cli", "commands")}, found


def test_the_renderers_use_views_and_run_nothing():
    edges = graph()
    for renderer in ("terminal", "report_page", "report_index"):
        assert not {dep for dep in edges[f"{PACKAGE}.{renderer}"] if dep.split(".")[1] in (*RUNNING, "cli")
                    or dep.startswith(f"{PACKAGE}.commands")}, renderer


def test_the_runner_imports_no_page_and_no_view():
    edges = graph()
    higher = {f"{PACKAGE}.{name}" for name in (*VIEWS, "report_page", "report_index", "terminal", "cli", "execute")}
    assert not edges[f"{PACKAGE}.runner"] & higher


def test_nothing_imports_cli_and_only_cli_imports_the_commands():
    edges = graph()
    assert not [name for name, deps in edges.items() if f"{PACKAGE}.cli" in deps]
    assert not [name for name, deps in edges.items() if name != f"{PACKAGE}.cli"
                and not name.startswith(f"{PACKAGE}.commands")
                and any(dep.startswith(f"{PACKAGE}.commands") for dep in deps)]
