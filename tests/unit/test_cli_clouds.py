"""tfprov up|down aws|gcp --spec: the spec checked first, the plan run with the spec path, the node table."""

import json

import pytest
import yaml

from tfprov import cli, clouds, runner

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIE1234567890abcdefghijklmnopqrstuvwxyzABCDEF test"
SPEC = {"name": "demo", "provider": "aws", "region": "us-east-1", "zones": ["us-east-1a", "us-east-1b"],
        "image": "ami-0123456789abcdef0", "ssh": {"user": "admin", "public_key": KEY},
        "operator_cidr": "203.0.113.7/32",
        "roles": {"chief": {"count": 1, "type": "g4dn.xlarge"}, "ps": {"count": 1, "type": "m5.xlarge"}}}
RECORDS = {
    "demo-chief-0": {"cloud_node": {"id": "i-1", "provider": "aws", "zone": "us-east-1b",
                                    "full_zones": ["us-east-1a"], "type": "g4dn.xlarge", "role": "chief",
                                    "address": "54.1.2.3", "private_address": "10.0.0.1", "gpu_model": "t4",
                                    "gpu_count": 1, "state": "running", "created": True}},
    "demo-ps-0": {"cloud_node": {"id": "i-2", "provider": "aws", "zone": "us-east-1a", "full_zones": [],
                                 "type": "m5.xlarge", "role": "ps", "address": "", "private_address": "10.0.0.2",
                                 "gpu_model": "", "gpu_count": 0, "state": "running", "created": False}},
}


class FakeRunner:
    def __init__(self, tmp_path, records=None, plays=2, failure=None):
        self.tmp_path, self.records, self.plays, self.failure = tmp_path, records, plays, failure
        self.calls = []

    def __call__(self, plan, root, options, progress):
        self.calls.append((plan, options))
        artifacts = self.tmp_path / "artifacts"
        (artifacts / "job_events").mkdir(parents=True, exist_ok=True)
        event = {"event": "playbook_on_stats", "event_data": {"artifact_data": {"tfprov_hosts": self.records or {}}}}
        (artifacts / "job_events" / "9-stats.json").write_text(json.dumps(event))
        failed = [{"task": "Check", "outcome": "failed", "message": self.failure}] if self.failure else []
        hosts = {"localhost": {"failures": len(failed), "changed": 0, "dark": 0, "failed_tasks": failed}}
        # The real run's verdict: a failure within the plan's checking plays is a refusal (status refused, rc 2).
        status, rc = runner.outcome(hosts, interrupted=False, ansible_failed=bool(failed), no_hosts=False,
                                    refused=self.plays <= plan.checks_first)
        report = {"rc": rc, "status": status,
                  "steps": [{"playbook": plan.steps[0].playbook.name, "artifacts": str(artifacts)}],
                  "plays": [{"name": "p", "seconds": 1}] * self.plays, "hosts": hosts}
        return report, self.tmp_path


@pytest.fixture
def spec_file(tmp_path):
    path = tmp_path / "demo.yml"
    path.write_text(yaml.safe_dump(SPEC))
    return path


def run(capsys, argv):
    rc = cli.main(argv)
    return (rc, *capsys.readouterr())


def test_up_aws_runs_nodes_up_with_the_spec_and_prints_the_nodes_and_zones(capsys, tmp_path, spec_file, monkeypatch):
    fake = FakeRunner(tmp_path, records=RECORDS)
    monkeypatch.setattr(clouds, "run_plan", fake)
    monkeypatch.setenv("COLUMNS", "200")
    rc, out, err = run(capsys, ["up", "aws", "--spec", str(spec_file)])
    assert rc == 0, err
    plan, options = fake.calls[0]
    assert plan.name == "nodes_up" and [s.playbook.name for s in plan.steps] == ["nodes_up.yml"]
    assert options.inventory == "localhost,"
    assert options.extravars == {"tfprov_cloud_spec_file": str(spec_file.resolve()), "tfprov_cloud_provider": "aws"}
    assert "aws cluster demo: 2 node(s) up" in out
    assert "demo-chief-0: no capacity in us-east-1a: used zone us-east-1b" in out
    assert "zone(s) used: us-east-1a, us-east-1b" in out
    assert "1 x t4" in out and "tfprov run cluster -i .tfprov/inventories/demo.aws_ec2.yml" in out


def test_down_gcp_runs_nodes_down(capsys, tmp_path, spec_file, monkeypatch):
    spec_file.write_text(yaml.safe_dump({**SPEC, "provider": "gcp", "project": "my-project",
                                         "zones": ["us-central1-a"], "region": "us-central1",
                                         "image": "projects/debian-cloud/global/images/family/debian-12",
                                         "roles": {"chief": {"count": 1, "type": "g2-standard-4"}}}))
    fake = FakeRunner(tmp_path, records={})
    monkeypatch.setattr(clouds, "run_plan", fake)
    rc, out, err = run(capsys, ["down", "gcp", "--spec", str(spec_file)])
    assert rc == 0, err
    assert fake.calls[0][0].name == "nodes_down" and "0 node(s) removed" in out


@pytest.mark.parametrize(("argv", "words"), [
    (["up", "aws"], "tfprov up aws needs --spec FILE"),
    (["down", "gcp"], "tfprov down gcp needs --spec FILE"),
    (["up", "aws", "--spec", "/nonexistent/spec.yml"], "--spec /nonexistent/spec.yml does not exist"),
    (["up", "local", "--spec", "x.yml"], "--spec is for tfprov up|down aws|gcp"),
    (["up", "aws", "--spec", "SPEC", "--roles", "chief"], "--roles is for tfprov up local"),
    (["up", "gcp", "--spec", "SPEC"], "provider is aws but this is `gcp`"),
])
def test_bad_input_is_refused_in_one_line_before_any_run(capsys, tmp_path, spec_file, monkeypatch, argv, words):
    fake = FakeRunner(tmp_path)
    monkeypatch.setattr(clouds, "run_plan", fake)
    rc, _, err = run(capsys, [str(spec_file) if a == "SPEC" else a for a in argv])
    assert rc == 2
    assert len(err.strip().splitlines()) == 1 and words in err
    assert fake.calls == []


def test_a_refusal_in_the_resolve_play_is_bad_input_and_says_nothing_was_created(capsys, tmp_path, spec_file,
                                                                                 monkeypatch):
    fake = FakeRunner(tmp_path, plays=1, failure="GPU quota too small in us-east-1: request at least 12")
    monkeypatch.setattr(clouds, "run_plan", fake)
    rc, _, err = run(capsys, ["up", "aws", "--spec", str(spec_file)])
    assert rc == 2
    assert err.strip() == ("tfprov: error: tfprov up aws refused: GPU quota too small in us-east-1: request at "
                           "least 12 (nothing was created)")


def test_a_failure_while_creating_keeps_the_run_exit_code(capsys, tmp_path, spec_file, monkeypatch):
    fake = FakeRunner(tmp_path, plays=2, failure="no capacity for g4dn.xlarge")
    monkeypatch.setattr(clouds, "run_plan", fake)
    rc, _, err = run(capsys, ["up", "aws", "--spec", str(spec_file)])
    assert rc == 4 and "stopped: no capacity for g4dn.xlarge" in err


def test_the_cloud_plans_exist():
    from tfprov import plan as plan_mod

    plans = plan_mod.load_plans()
    assert plans["nodes_up"]["steps"] == ["nodes_up.yml"] and plans["nodes_down"]["steps"] == ["nodes_down.yml"]


def test_a_second_up_of_the_same_cluster_is_refused_while_the_first_runs(capsys, tmp_path, spec_file, monkeypatch):
    seen = {}

    def nested(plan, root, options, progress):  # while the first `up` runs, a second one starts
        seen["rc"], seen["out"], seen["err"] = run(capsys, ["up", "aws", "--spec", str(spec_file)])
        return FakeRunner(tmp_path, records=RECORDS)(plan, root, options, progress)

    monkeypatch.setattr(clouds, "run_plan", nested)
    rc, out, err = run(capsys, ["up", "aws", "--spec", str(spec_file)])
    assert rc == 0, err
    assert seen["rc"] == 2 and seen["err"].count("\n") == 1
    assert "aws cluster demo is being changed by tfprov (pid " in seen["err"] and "wait for it to end" in seen["err"]
    monkeypatch.setattr(clouds, "run_plan", FakeRunner(tmp_path, records=RECORDS))
    assert run(capsys, ["up", "aws", "--spec", str(spec_file)])[0] == 0  # released when the first ended


def test_a_spec_that_is_not_yaml_names_its_file_once(capsys, tmp_path):
    bad = tmp_path / "broken.yml"
    bad.write_text("name: [demo\n")
    rc, _, err = run(capsys, ["up", "aws", "--spec", str(bad)])
    assert rc == 2 and err.count(str(bad)) == 1, err
    assert "is not valid YAML at line 2, column 1: expected ',' or ']', but got '<stream end>'" in err, err


def test_up_writes_an_inventory_of_this_cluster_only_and_down_removes_it(capsys, tmp_path, spec_file, monkeypatch):
    monkeypatch.setattr(clouds, "project_root", lambda: tmp_path)
    monkeypatch.setattr(clouds, "ensure_collection_link", lambda root: cli.project_root() / ".tfprov/collections/"
                        "ansible_collections/tfprov/gpu")
    (tmp_path / "inventories").mkdir()
    for name in ("aws.aws_ec2.yml", "gcp.gcp_compute.yml"):
        (tmp_path / "inventories" / name).write_text((cli.project_root() / "inventories" / name).read_text())
    cache = tmp_path / ".tfprov/cache/aws_ec2"
    cache.mkdir(parents=True)
    (cache / "aws_ec2_demo_s3cr3t").write_text("{}")  # this cluster's cached listing, stale once nodes come
    monkeypatch.setattr(clouds, "run_plan", FakeRunner(tmp_path, records=RECORDS))
    spec_file.write_text(yaml.safe_dump({**SPEC, "region": "eu-west-1", "zones": ["eu-west-1a"]}))
    assert run(capsys, ["up", "aws", "--spec", str(spec_file)])[0] == 0
    written = tmp_path / ".tfprov/inventories/demo.aws_ec2.yml"
    config = yaml.safe_load(written.read_text())
    assert config["plugin"] == "amazon.aws.aws_ec2" and config["regions"] == ["eu-west-1"]
    assert config["filters"]["tag:tfprov:cluster"] == "demo" and "tag-key" not in config["filters"]
    assert config["filters"]["instance-state-name"] == ["pending", "running", "stopping", "stopped"]
    assert config["cache_prefix"] == "aws_ec2_demo_" and not list(cache.iterdir())
    assert run(capsys, ["down", "aws", "--spec", str(spec_file)])[0] == 0
    assert not written.exists()


def test_a_gcp_cluster_inventory_names_its_project_and_label():
    from tfprov import cloud_inventory

    shipped = yaml.safe_load((cli.project_root() / "inventories/gcp.gcp_compute.yml").read_text())
    config = cloud_inventory.narrowed(shipped, {"provider": "gcp", "name": "demo", "project": "my-project"})
    assert config["projects"] == ["my-project"] and config["filters"] == ["labels.tfprov-cluster = demo"]
    assert config["cache_connection"] == shipped["cache_connection"] and config["cache_prefix"] == "gcp_compute_demo_"

