import pytest

from tfprov.errors import TfprovError
from tfprov.extravars import parse


def test_key_value_pairs_and_later_arguments_win():
    assert parse(["a=1 b='two words'", "a=3"]) == {"a": "3", "b": "two words"}


def test_yaml_mapping_keeps_types():
    assert parse(['{"gpus": 2, "on": true}']) == {"gpus": 2, "on": True}


def test_file(tmp_path):
    path = tmp_path / "vars.yml"
    path.write_text("preflight_min_disk_gb: 5\nnested: {x: 1}\n")
    assert parse([f"@{path}"]) == {"preflight_min_disk_gb": 5, "nested": {"x": 1}}


@pytest.mark.parametrize("arg", ["[1, 2]", "x", "a=1 b", "'unclosed", "{1: 2}"])
def test_rejects(arg):
    with pytest.raises(TfprovError):
        parse([arg])


def test_a_file_that_is_not_a_mapping(tmp_path):
    path = tmp_path / "list.yml"
    path.write_text("- a\n- b\n")
    with pytest.raises(TfprovError, match="expected a mapping"):
        parse([f"@{path}"])
