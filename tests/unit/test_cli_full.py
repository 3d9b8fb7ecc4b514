"""`tfprov run node --full`: every play on every node, the converge record not reused (tfprov_converge_reuse_hours=0);
refused for plans that have no converge record to skip."""

import argparse

import pytest

from tfprov import cli
from tfprov import plan as plan_mod
from tfprov.commands import run as run_cmd
from tfprov.errors import TfprovError
from tfprov.project import project_root


def test_full_on_the_node_plan_turns_reuse_off():
    plan = plan_mod.resolve("node", project_root())
    assert run_cmd.full_extravars(argparse.Namespace(full=True), plan) == {"tfprov_converge_reuse_hours": 0}
    assert run_cmd.full_extravars(argparse.Namespace(full=False), plan) == {}


@pytest.mark.parametrize("name", ["cluster", "bench", "gate"])
def test_full_for_a_plan_that_always_runs_everything_is_refused_in_one_line(name):
    with pytest.raises(TfprovError, match=f"--full applies to plans that can skip a converge .*not {name}"):
        run_cmd.full_extravars(argparse.Namespace(full=True), plan_mod.resolve(name, project_root()))


def test_run_takes_full():
    assert cli.build_parser().parse_args(["run", "node", "--full"]).full is True
