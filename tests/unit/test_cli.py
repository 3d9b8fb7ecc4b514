import json

import pytest

from tfprov import cli


def _run(capsys, *argv):
    rc = cli.main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def test_help_lists_the_commands(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    for command in ("plan", "run", "up", "down", "images"):
        assert command in out


def test_plan_cluster_prints_the_ordered_steps(capsys):
    rc, out, _ = _run(capsys, "plan", "cluster")
    assert rc == 0
    lines = out.splitlines()
    assert lines[0].startswith("plan cluster:")
    steps = [line.strip().split()[1] for line in lines[1:] if line.strip()[:2] in ("1.", "2.", "3.")]
    assert steps == ["playbooks/gpu_node.yml", "playbooks/cluster.yml", "playbooks/serving.yml"]


def test_plan_preflight_shows_plays_and_roles(capsys):
    rc, out, _ = _run(capsys, "plan", "preflight")
    assert rc == 0
    assert "tfprov_nodes: Check that every node can be provisioned  [roles: tfprov.gpu.preflight]" in out


def test_plan_list(capsys):
    rc, out, _ = _run(capsys, "plan", "--list")
    assert rc == 0 and {line.split()[0] for line in out.splitlines()} >= {"preflight", "node", "serving", "cluster"}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["plan", "nope"], "unknown plan 'nope'; known plans: bench, cluster, node, preflight, serving"),
        (["run", "nope"], "unknown plan 'nope'"),
        (["run", "preflight", "-i", "no/such/inventory.yml"], "inventory no/such/inventory.yml does not exist"),
        (["run", "preflight", "-e", "novalue"], "expected key=value"),
        (["run", "preflight", "-e", "@/no/such/vars.yml"], "extra vars file /no/such/vars.yml does not exist"),
        (["run", "preflight", "-e", "{bad: [yaml"], "not valid YAML/JSON"),
        (["run", "preflight", "-e", "1abc=2"], "invalid variable name '1abc'"),
        (["run", "cluster"], "needs playbooks this checkout does not have yet: cluster.yml"),
        (["up", "local", "--nodes", "2", "--roles", "chief"], "--roles names 1 roles for 2 nodes"),
    ],
)
def test_bad_input_gets_one_line_and_exit_2(capsys, argv, message, tmp_path, monkeypatch):
    monkeypatch.setenv("TFPROV_RUNS_DIR", str(tmp_path))
    rc, out, err = _run(capsys, *argv)
    assert rc == 2
    assert err.startswith("tfprov: error: ") and message in err
    assert len(err.strip().splitlines()) == 1
    assert "Traceback" not in out + err


@pytest.mark.parametrize("argv", [["run", "preflight", "--forks", "0"], ["up", "cloud"], ["run"]])
def test_argument_errors_exit_2_with_usage(capsys, argv):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(argv)
    assert exit_info.value.code == 2
    assert "error:" in capsys.readouterr().err


def test_run_with_an_inventory_ansible_cannot_parse_fails_and_still_writes_a_report(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("TFPROV_RUNS_DIR", str(tmp_path / "runs"))
    inventory = tmp_path / "broken.yml"
    inventory.write_text("plugin: no.such.plugin\n")
    rc, out, err = _run(capsys, "run", "preflight", "-i", str(inventory))
    assert rc == 2  # refused before any host: bad input, not a host failure
    report_path = next((tmp_path / "runs").glob("*-preflight/report.json"))
    report = json.loads(report_path.read_text())
    assert report["rc"] == rc and report["hosts"] == {}
    assert report["steps"][0]["errors"], "ansible's own error line is kept"
    assert "inventory" in out.lower()


def test_run_against_an_empty_inventory_is_not_a_success(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("TFPROV_RUNS_DIR", str(tmp_path / "runs"))
    inventory = tmp_path / "empty.ini"
    inventory.write_text("[tfprov_nodes]\n")
    rc, out, _ = _run(capsys, "run", "preflight", "-i", str(inventory))
    assert rc == 3
    assert "no host matched" in out


def test_plan_node_resolves_first_and_ends_with_the_quick_check(capsys):
    rc, out, _ = _run(capsys, "plan", "node")
    assert rc == 0
    plays = [line.strip() for line in out.splitlines() if line.strip().startswith("- ")]
    assert plays[0].startswith("- tfprov_nodes: Check every node and resolve its whole stack before anything changes")
    assert "tfprov.gpu.preflight, tfprov.gpu.nvidia_driver:resolve" in plays[0]
    assert "[roles: tfprov.gpu.nvidia_driver]" in plays[1]
    assert plays[-1].startswith("- tfprov_nodes: Check TensorFlow computes on every device")


def test_plan_serving_resolves_only_the_serving_nodes_first(capsys):
    rc, out, _ = _run(capsys, "plan", "serving")
    assert rc == 0
    plays = [line.strip() for line in out.splitlines() if line.strip().startswith("- ")]
    assert all(play.startswith("- tfprov_serving: ") for play in plays), plays
    assert "tfprov.gpu.nvidia_docker:resolve, tfprov.gpu.tf_serving:resolve" in plays[0]
    assert [p.split("[roles: ")[1] for p in plays[1:]] == [
        "tfprov.gpu.nvidia_driver]", "tfprov.gpu.nvidia_docker]", "tfprov.gpu.tf_serving]"]
