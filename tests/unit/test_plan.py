import pytest

from tfprov import plan
from tfprov.errors import TfprovError


def test_every_plan_names_playbooks_and_a_description():
    for name, spec in plan.load_plans().items():
        assert spec["description"] and spec["steps"], name


def test_resolve_points_into_the_checkout(tmp_path):
    resolved = plan.resolve("preflight", tmp_path)
    assert [s.playbook for s in resolved.steps] == [tmp_path / "playbooks" / "preflight.yml"]
    assert resolved.missing() == list(resolved.steps)


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


def test_describe_rejects_broken_yaml(tmp_path):
    (tmp_path / "bad.yml").write_text("- name: [unclosed\n")
    with pytest.raises(TfprovError, match="not valid YAML"):
        plan.describe_playbook(tmp_path / "bad.yml")
