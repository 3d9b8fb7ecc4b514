import json

import pytest

from tfprov import cli
from tfprov import plan as plan_mod


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
    assert steps == ["playbooks/cluster.yml"]  # the whole stack is one playbook
    assert "TF_CONFIG from the inventory" in lines[0]


def test_plan_cluster_describes_the_plays_of_cluster_yml(capsys, tmp_path, monkeypatch):
    # The lead's playbooks/cluster.yml imports others and names plays by group: a checkout with a small one.
    (tmp_path / "playbooks").mkdir()
    (tmp_path / "galaxy.yml").write_text("namespace: t\nname: t\nversion: 1.0.0\n")
    (tmp_path / "playbooks" / "resolve.yml").write_text(
        "- name: Resolve\n  hosts: \"{{ tfprov_resolve_hosts | default('tfprov_nodes') }}\"\n")
    (tmp_path / "playbooks" / "cluster.yml").write_text(
        "- ansible.builtin.import_playbook: resolve.yml\n"
        "- name: Start the distributed TensorFlow cluster\n  hosts: tfprov_nodes\n"
        "  roles: [{role: tfprov.gpu.dist_tf_cluster}]\n")
    monkeypatch.setenv("TFPROV_HOME", str(tmp_path))
    rc, out, _ = _run(capsys, "plan", "cluster")
    assert rc == 0
    assert [line.strip() for line in out.splitlines()[1:]] == [
        "1. playbooks/cluster.yml", "- tfprov_nodes: Resolve",
        "- tfprov_nodes: Start the distributed TensorFlow cluster  [roles: tfprov.gpu.dist_tf_cluster]"]


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
        (["plan", "nope"], "unknown plan 'nope'; known plans: bench, cluster, drift, fleet, gate, idle, job_logs, "
                           "job_stop, node, nodes_down, nodes_up, preflight, serving, status"),
        (["run", "bench", "--level", "deep"], "--level applies to plans that run the admission gate"),
        (["run", "nope"], "unknown plan 'nope'"),
        (["run", "preflight", "-i", "no/such/inventory.yml"], "inventory no/such/inventory.yml does not exist"),
        (["run", "preflight", "-e", "novalue"], "expected key=value"),
        (["run", "preflight", "-e", "@/no/such/vars.yml"], "extra vars file /no/such/vars.yml does not exist"),
        (["run", "preflight", "-e", "{bad: [yaml"], "not valid YAML/JSON"),
        (["run", "preflight", "-e", "1abc=2"], "invalid variable name '1abc'"),
        (["run", "preflight", "--job", "train.py"], "--job applies to plans that run cluster.yml (tfprov run cluster)"),
        (["run", "node", "--strategy", "parameter_server"], "--strategy applies to plans that run cluster.yml"),
        (["run", "node", "--job-arg=--epochs=3"], "--job-arg applies to plans that run cluster.yml"),
        (["run", "cluster", "--job", "/no/such/train.py"], "--job /no/such/train.py does not exist"),
        (["up", "local", "--nodes", "2", "--roles", "chief,gpu"], "unknown node role 'gpu': use chief, worker, ps, "
                                                                  "evaluator, serving or cache"),
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


def test_plan_node_resolves_first_and_ends_with_the_quick_check_and_the_gate(capsys):
    rc, out, _ = _run(capsys, "plan", "node")
    assert rc == 0
    plays = [line.strip() for line in out.splitlines() if line.strip().startswith("- ")]
    # Every node is looked at for a converge that stands (changing nothing); the others take the whole run.
    assert plays[0] == "- tfprov_nodes: Find the nodes whose last converge still stands"
    assert plays[1].startswith("- tfprov_converging: Check every node and resolve its whole stack before anything "
                               "changes")
    assert "tfprov.gpu.preflight, tfprov.gpu.nvidia_driver:resolve" in plays[1]
    # The cluster's package cache when the inventory has one (tfprov_cache), then the nodes' pip pointed at it.
    # (only when some node installs: tfprov_cache_needed is empty when every node's converge stands)
    assert plays[2] == "- tfprov_cache_needed: Run the cluster's package cache on its tfprov_cache node  [roles: " \
                       "tfprov.gpu.package_cache]"
    assert plays[3] == "- tfprov_converging: Point the nodes' pip at the cluster's package cache"
    assert ("[roles: tfprov.gpu.nvidia_driver, tfprov.gpu.miniconda, tfprov.gpu.cuda, tfprov.gpu.cudnn, "
            "tfprov.gpu.dcgm, tfprov.gpu.tensorflow_gpu]") in plays[4]  # through tasks/stack.yml, the stack's one order
    assert plays[-4].startswith("- tfprov_converging: Check TensorFlow computes on every device")
    # The gate judges every node, the converged ones too.
    assert plays[-3].startswith("- tfprov_nodes: Admit only nodes whose GPUs are fit")
    assert plays[-2].startswith("- tfprov_converging: Check that no node rebooted during the run")
    assert plays[-1] == "- tfprov_converging: Record each node's finished converge"


def test_plan_serving_resolves_only_the_serving_nodes_first(capsys):
    rc, out, _ = _run(capsys, "plan", "serving")
    assert rc == 0
    plays = [line.strip() for line in out.splitlines() if line.strip().startswith("- ")]
    assert all(play.startswith("- tfprov_serving: ") for play in plays), plays
    assert "tfprov.gpu.nvidia_docker:resolve, tfprov.gpu.tf_serving:resolve" in plays[0]
    assert [p.split("[roles: ")[1] for p in plays[1:-1]] == [
        "tfprov.gpu.nvidia_driver]", "tfprov.gpu.nvidia_docker]", "tfprov.gpu.tf_serving]"]
    assert plays[-1] == "- tfprov_serving: Check that no node rebooted during the run"


def test_a_plan_whose_playbook_is_not_there_yet_is_refused_in_one_line(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("TFPROV_RUNS_DIR", str(tmp_path))
    monkeypatch.setattr(plan_mod, "load_plans", lambda: {"later": {"description": "d", "steps": ["later.yml"]}})
    rc, _, err = _run(capsys, "run", "later")
    assert rc == 2
    assert err.strip() == "tfprov: error: plan 'later' needs playbooks this checkout does not have yet: later.yml"
