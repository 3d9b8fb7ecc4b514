"""The installed_stack module: facts from a fake tree, unchanged and allowed in check mode."""

import json

import pytest
from ansible.module_utils.testing import patch_module_args
from ansible_collections.tfprov.gpu.plugins.modules import installed_stack


def run(capsys, **args):
    with patch_module_args(args), pytest.raises(SystemExit):
        installed_stack.main()
    return json.loads(capsys.readouterr().out)


def test_facts_in_check_mode(tmp_path, capsys):
    site = tmp_path / "envs/tf/lib/python3.11/site-packages"
    (site / "tensorflow_cpu-2.21.0.dist-info").mkdir(parents=True)
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    result = run(capsys, root=str(tmp_path), env="/envs/tf", _ansible_check_mode=True)
    assert result["changed"] is False and not result.get("failed")
    facts = result["ansible_facts"]["tfprov_installed"]
    assert facts["tensorflow"]["version"] == "2.21.0" and facts["env"] == "/envs/tf"
    assert facts["python"] == "3.11" and facts["interpreter"].count(".") == 2
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before  # nothing written
