import pytest

from tfprov.errors import TfprovError
from tfprov.extravars import parse


def test_key_value_pairs_and_later_arguments_win():
    assert parse(["a=1 b='two words'", "a=3"]) == {"a": "3", "b": "two words"}


def test_a_jinja2_expression_is_kept_whole_as_ansible_playbook_keeps_it():
    # shlex split "{{ tfprov_local_wheelhouse }}" into three words and refused it; ansible-playbook takes it.
    assert parse(["tfprov_pip_find_links={{ tfprov_local_wheelhouse }} b='{{ x | default(\"y z\") }}'"]) == {
        "tfprov_pip_find_links": "{{ tfprov_local_wheelhouse }}", "b": '{{ x | default("y z") }}'}


def test_yaml_mapping_keeps_types():
    assert parse(['{"gpus": 2, "on": true}']) == {"gpus": 2, "on": True}


def test_file(tmp_path):
    path = tmp_path / "vars.yml"
    path.write_text("preflight_min_disk_gb: 5\nnested: {x: 1}\n")
    assert parse([f"@{path}"]) == {"preflight_min_disk_gb": 5, "nested": {"x": 1}}


@pytest.mark.parametrize("arg", ["[1, 2]", "x", "a=1 b", "'unclosed", "{1: 2}", "a={{ b", "1a=2"])
def test_rejects(arg):
    with pytest.raises(TfprovError):
        parse([arg])


def test_a_file_that_is_not_a_mapping(tmp_path):
    path = tmp_path / "list.yml"
    path.write_text("- a\n- b\n")
    with pytest.raises(TfprovError, match="expected a mapping"):
        parse([f"@{path}"])
