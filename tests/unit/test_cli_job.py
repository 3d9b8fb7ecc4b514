"""`tfprov run cluster --job PATH --job-arg ARG --strategy S`: checked in one line, handed to the run as extra vars."""

import argparse
import re

import pytest

from tfprov import cli
from tfprov import plan as plan_mod
from tfprov.commands import run as run_cmd
from tfprov.errors import TfprovError

CLUSTER = plan_mod.resolve("cluster", plan_mod.Path("/checkout"),
                           {"cluster": {"description": "d", "steps": ["cluster.yml"]}})


def _args(job=None, job_arg=None, strategy=None):
    return argparse.Namespace(job=job, job_arg=job_arg, strategy=strategy)


def test_a_job_file_becomes_its_absolute_path(tmp_path, monkeypatch):
    (tmp_path / "train.py").write_text("print('hi')\n")
    monkeypatch.chdir(tmp_path)
    assert run_cmd.job_extravars(_args("train.py", ["--epochs=3", "fast"], "parameter_server"), CLUSTER) == {
        "dist_tf_cluster_job": str(tmp_path / "train.py"),
        "dist_tf_cluster_job_args": ["--epochs=3", "fast"],
        "tfprov_dist_strategy": "parameter_server",
    }


def test_only_the_flags_given_become_variables(tmp_path):
    (tmp_path / "job").mkdir()
    (tmp_path / "job" / "main.py").write_text("")
    assert run_cmd.job_extravars(_args(), CLUSTER) == {}
    assert run_cmd.job_extravars(_args(strategy="multi_worker_mirrored"), CLUSTER) == {
        "tfprov_dist_strategy": "multi_worker_mirrored"}
    assert run_cmd.job_extravars(_args(str(tmp_path / "job")), CLUSTER) == {
        "dist_tf_cluster_job": str(tmp_path / "job")}


@pytest.mark.parametrize(("files", "job", "message"), [
    ({"notes.txt": "x"}, "notes.txt", "notes.txt is not a Python script (.py)"),
    ({"data/x.csv": "1"}, "data", "data is a directory without a Python script (.py)"),
    ({}, "gone.py", "gone.py does not exist"),
])
def test_a_job_that_cannot_be_run_is_refused(tmp_path, files, job, message):
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    with pytest.raises(TfprovError, match="^" + re.escape(f"--job {tmp_path}/{message}")):
        run_cmd.job_extravars(_args(str(tmp_path / job)), CLUSTER)


def test_a_plan_without_cluster_yml_takes_none_of_the_flags():
    node = plan_mod.resolve("node", plan_mod.Path("/checkout"))
    with pytest.raises(TfprovError, match=r"^--job-arg applies to plans that run cluster.yml \(tfprov run cluster\)$"):
        run_cmd.job_extravars(_args(job_arg=["x"]), node)


def test_run_hands_the_flags_over_and_they_win_over_extra_vars(capsys, tmp_path, monkeypatch):
    (tmp_path / "train.py").write_text("")
    seen = {}

    def fake_run_plan(plan, root, options, progress):
        seen.update(plan=plan.name, extravars=options.extravars)
        raise TfprovError("stopped here")

    monkeypatch.setattr(run_cmd, "run_plan", fake_run_plan)
    rc = cli.main(["run", "cluster", "-e", "tfprov_dist_strategy=parameter_server other=1",
                   "-e", f"dist_tf_cluster_job={tmp_path}/elsewhere.py", "--job", str(tmp_path / "train.py"),
                   "--strategy", "multi_worker_mirrored", "--job-arg=--steps=10", "--job-arg", "x"])
    assert rc == 2 and "stopped here" in capsys.readouterr().err
    assert seen == {"plan": "cluster", "extravars": {
        "tfprov_dist_strategy": "multi_worker_mirrored", "other": "1",
        "dist_tf_cluster_job": str(tmp_path / "train.py"), "dist_tf_cluster_job_args": ["--steps=10", "x"]}}


def test_bench_takes_no_job(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["bench", "--job", "x.py"])
    assert exit_info.value.code == 2
    assert "unrecognized arguments: --job" in capsys.readouterr().err


def test_job_args_without_a_job_of_ones_own_are_refused_not_dropped(tmp_path):
    with pytest.raises(TfprovError, match=r"^--job-arg is for your own job: give it with --job FILE"):
        run_cmd.job_extravars(_args(job_arg=["--epochs=3"]), CLUSTER)
    job = str(tmp_path / "train.py")  # a job given with -e dist_tf_cluster_job takes the arguments too
    assert run_cmd.job_extravars(_args(job_arg=["--epochs=3"]), CLUSTER, {"dist_tf_cluster_job": job}) == {
        "dist_tf_cluster_job_args": ["--epochs=3"]}


def test_run_cluster_with_a_job_arg_and_no_job_exits_2_before_any_run(capsys, monkeypatch):
    monkeypatch.setattr(run_cmd, "run_plan", lambda *a: pytest.fail("no run may start"))
    assert cli.main(["run", "cluster", "--job-arg=--epochs=3"]) == 2
    assert "--job-arg is for your own job" in capsys.readouterr().err
