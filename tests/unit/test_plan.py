import pytest

from tfprov import plan
from tfprov.errors import TfprovError
from tfprov.project import project_root


def test_every_plan_names_playbooks_and_a_description():
    for name, spec in plan.load_plans().items():
        assert spec["description"] and spec["steps"], name


def test_resolve_points_into_the_checkout(tmp_path):
    resolved = plan.resolve("preflight", tmp_path)
    assert [s.playbook for s in resolved.steps] == [tmp_path / "playbooks" / "preflight.yml"]
    assert resolved.missing() == list(resolved.steps)


def test_every_plan_names_known_views():
    for name, spec in plan.load_plans().items():
        assert set(spec.get("views") or ()) <= set(plan.VIEWS), name
    assert plan.resolve("cluster", project_root()).views == ("check", "gate", "serving", "notebook", "cluster")
    assert plan.resolve("preflight", project_root()).views == ()


@pytest.mark.parametrize(("view", "text"), [("gate", "tasks/gpu_gate.yml"), ("converge", "converge_check.yml")])
def test_the_views_that_decide_a_flag_agree_with_the_playbooks(view, text):
    """--level applies to plans whose views name gate, --full to those naming converge: their playbooks must run the
    gate, or the converge check, and no other plan's may."""
    for name in plan.load_plans():
        resolved = plan.resolve(name, project_root())
        runs = any(text in step.playbook.read_text() for step in resolved.steps if step.exists)
        assert (view in resolved.views) == runs, name


def test_an_unknown_view_is_refused_in_one_line():
    with pytest.raises(TfprovError, match="^plan 'p' names an unknown view 'graphs'; views: converge, bench"):
        plan.resolve("p", None, {"p": {"description": "d", "steps": [], "views": ["gate", "graphs"]}})


def test_unknown_plan():
    with pytest.raises(TfprovError, match="unknown plan 'x'; known plans: a, b"):
        plan.resolve("x", None, {"b": {}, "a": {}})


def test_describe_follows_imports(tmp_path):
    (tmp_path / "inner.yml").write_text("- name: Inner\n  hosts: tfprov_ps\n  roles: [{role: r1}, r2]\n")
    (tmp_path / "outer.yml").write_text(
        "- ansible.builtin.import_playbook: inner.yml\n- name: Outer\n  hosts: all\n  tasks:\n"
        "    - ansible.builtin.include_role: {name: r3}\n      when: x\n    - ansible.builtin.debug: {}\n")
    assert plan.describe_playbook(tmp_path / "outer.yml") == [
        "tfprov_ps: Inner  [roles: r1, r2]",
        "all: Outer  [roles: r3]",
    ]


def test_describe_names_hosts_given_by_the_importer_and_groups_the_run_makes(tmp_path):
    (tmp_path / "inner.yml").write_text("- name: Inner\n  hosts: \"{{ inner_hosts | default('tfprov_nodes') }}\"\n")
    (tmp_path / "outer.yml").write_text(
        "- import_playbook: inner.yml\n"
        "- import_playbook: inner.yml\n  vars: {inner_hosts: \"{{ groups['tfprov_converging'] | default([]) }}\"}\n")
    assert plan.describe_playbook(tmp_path / "outer.yml") == ["tfprov_nodes: Inner", "tfprov_converging: Inner"]


def test_describe_rejects_broken_yaml(tmp_path):
    (tmp_path / "bad.yml").write_text("- name: [unclosed\n")
    with pytest.raises(TfprovError, match="not valid YAML"):
        plan.describe_playbook(tmp_path / "bad.yml")


def test_describe_refuses_a_missing_import_in_one_line(tmp_path):
    (tmp_path / "outer.yml").write_text("- ansible.builtin.import_playbook: gone.yml\n")
    with pytest.raises(TfprovError, match=r"outer.yml imports .*gone.yml, which does not exist"):
        plan.describe_playbook(tmp_path / "outer.yml")


@pytest.mark.parametrize(("files", "chain"), [
    ({"self.yml": "self.yml"}, "self.yml -> self.yml"),
    ({"a.yml": "b.yml", "b.yml": "c.yml", "c.yml": "b.yml"}, "b.yml -> c.yml -> b.yml"),
])
def test_describe_refuses_an_import_cycle_in_one_line(tmp_path, files, chain):
    for name, target in files.items():
        (tmp_path / name).write_text(f"- import_playbook: {target}\n")
    with pytest.raises(TfprovError, match=f"import_playbook cycle: {chain}$"):
        plan.describe_playbook(tmp_path / next(iter(files)))


def test_an_import_used_twice_is_not_a_cycle(tmp_path):
    (tmp_path / "leaf.yml").write_text("- name: Leaf\n  hosts: all\n")
    (tmp_path / "top.yml").write_text("- import_playbook: leaf.yml\n- import_playbook: leaf.yml\n")
    assert plan.describe_playbook(tmp_path / "top.yml") == ["all: Leaf", "all: Leaf"]


def test_describe_refuses_what_is_not_a_playbook(tmp_path):
    (tmp_path / "map.yml").write_text("hosts: all\n")
    with pytest.raises(TfprovError, match="not a playbook"):
        plan.describe_playbook(tmp_path / "map.yml")


def test_check_refuses_a_plan_whose_playbook_imports_what_is_missing(tmp_path):
    (tmp_path / "playbooks").mkdir()
    (tmp_path / "playbooks" / "p.yml").write_text("- import_playbook: gone.yml\n")
    resolved = plan.resolve("x", tmp_path, {"x": {"description": "d", "steps": ["p.yml"]}})
    with pytest.raises(TfprovError, match="which does not exist"):
        resolved.check()
