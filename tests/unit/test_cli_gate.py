"""`tfprov run gate|node|cluster|fleet --level L`: the admission gate's depth, as tfprov_gate_level."""

import argparse

import pytest

from tfprov import cli
from tfprov import plan as plan_mod
from tfprov.commands import run as run_cmd
from tfprov.errors import TfprovError
from tfprov.project import project_root


@pytest.mark.parametrize("name", ["gate", "node", "cluster", "fleet"])
def test_plans_that_run_the_gate_take_a_level(name):
    plan = plan_mod.resolve(name, project_root())
    assert run_cmd.gate_extravars(argparse.Namespace(level="deep"), plan) == {"tfprov_gate_level": "deep"}


def test_no_level_leaves_the_plans_own():
    assert run_cmd.gate_extravars(argparse.Namespace(level=None), plan_mod.resolve("gate", project_root())) == {}


@pytest.mark.parametrize("name", ["bench", "preflight", "drift"])
def test_a_level_for_a_plan_without_the_gate_is_refused_in_one_line(name):
    with pytest.raises(TfprovError, match=f"--level applies to plans that run the admission gate .*not {name}"):
        run_cmd.gate_extravars(argparse.Namespace(level="quick"), plan_mod.resolve(name, project_root()))


def test_the_level_is_one_of_three(capsys):
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args(["run", "gate", "--level", "thorough"])
    assert "invalid choice: 'thorough'" in capsys.readouterr().err
