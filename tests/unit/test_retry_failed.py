"""--retry-failed: which hosts, from which run, with which inventory; faked run directories and runners."""

import json

import pytest

from tfprov import cli, retry
from tfprov.commands import fleet_update as update_cmd
from tfprov.commands import run as run_cmd
from tfprov.errors import TfprovError


def write_run(runs, name, hosts, inventory="inv-of-that-run.yml"):
    run_dir = runs / name
    run_dir.mkdir(parents=True)
    (run_dir / "report.json").write_text(json.dumps({"inventory": inventory, "hosts": hosts}))
    return run_dir


HOSTS = {"a": {"status": "ok"}, "b": {"status": "failed"}, "c": {"status": "unreachable"},
         "d": {"status": "ok", "data": {"fleet": {"result": "not reached"}}},
         "e": {"status": "ok", "data": {"fleet": {"result": "updated"}, "gpu_check": {"problems": []}}}}


@pytest.fixture
def runs(tmp_path, monkeypatch):
    monkeypatch.setenv("TFPROV_RUNS_DIR", str(tmp_path / "runs"))
    (tmp_path / "runs").mkdir()
    return tmp_path / "runs"


def test_the_newest_run_of_the_plan_is_read(runs, tmp_path):
    write_run(runs, "20261122T070000Z-fleet", HOSTS)
    newest = write_run(runs, "20261122T080000Z-fleet-2", {})
    write_run(runs, "20261122T080000Z-fleet", {})
    write_run(runs, "20261122T090000Z-node", {})
    (runs / "20261122T100000Z-fleet").mkdir()  # a run still going: no report yet
    assert retry.newest_report(tmp_path, "fleet") == newest / "report.json"
    assert retry.newest_report(tmp_path, "bench") is None


def test_failed_unreachable_and_not_reached_hosts_are_retried():
    assert retry.unfinished_hosts({"hosts": HOSTS}) == ["b", "c", "d"]


def test_limit_narrows_the_retry():
    hosts = ["b", "c", "d"]
    assert retry.narrow(hosts, None) == (hosts, "b,c,d")
    assert retry.narrow(hosts, "tfprov_worker") == (hosts, "b,c,d,&tfprov_worker")
    assert retry.narrow(hosts, "c,d,x") == (["c", "d"], "c,d")
    assert retry.narrow(hosts, "n*,z") == ([], "")
    with pytest.raises(TfprovError, match="one pattern"):
        retry.narrow(hosts, "a,!b")


def test_no_earlier_run_is_an_error(runs, tmp_path):
    with pytest.raises(TfprovError, match="no earlier run of plan 'node'"):
        retry.plan_retry(tmp_path, "node", None, None)


def fake_run(monkeypatch, module, run_dir):
    seen = []

    def run_plan(plan, root, options, progress):
        seen.append(options)
        report = {"plan": plan.name, "status": "successful", "rc": 0, "seconds": 1, "inventory": options.inventory,
                  "limit": options.limit, "run_dir": str(run_dir), "steps": [], "hosts": {}, "plays": [], "roles": {}}
        return report, run_dir
    monkeypatch.setattr(module, "run_plan", run_plan)
    return seen


def test_run_retry_failed_limits_to_those_hosts_and_reuses_the_inventory(runs, monkeypatch, capsys):
    write_run(runs, "20261122T070000Z-node", HOSTS)
    seen = fake_run(monkeypatch, run_cmd, runs)
    assert cli.main(["run", "node", "--retry-failed"]) == 0
    assert seen[0].limit == "b,c,d" and seen[0].inventory == "inv-of-that-run.yml"
    out = capsys.readouterr().out
    assert "3 host(s) from run 20261122T070000Z-node: b, c, d" in out


def test_an_inventory_given_wins_and_limit_intersects(runs, monkeypatch, capsys):
    write_run(runs, "20261122T070000Z-node", HOSTS)
    seen = fake_run(monkeypatch, run_cmd, runs)
    assert cli.main(["run", "node", "--retry-failed", "-i", "other.yml", "-l", "b,d"]) == 0
    assert seen[0].limit == "b,d" and seen[0].inventory == "other.yml"


def test_nothing_to_retry_exits_0_without_a_run(runs, monkeypatch, capsys):
    write_run(runs, "20261122T070000Z-node", {"a": {"status": "ok"}})
    seen = fake_run(monkeypatch, run_cmd, runs)
    assert cli.main(["run", "node", "--retry-failed"]) == 0
    assert seen == [] and "nothing to retry" in capsys.readouterr().out


def test_without_retry_the_default_inventory_is_used(runs, monkeypatch):
    seen = fake_run(monkeypatch, run_cmd, runs)
    assert cli.main(["run", "node"]) == 0
    assert seen[0].inventory == run_cmd.DEFAULT_INVENTORY and seen[0].limit is None


def test_fleet_update_retry_failed(runs, monkeypatch, capsys):
    write_run(runs, "20261122T070000Z-fleet", HOSTS)
    write_run(runs, "20261122T080000Z-node", {"z": {"status": "failed"}})  # another plan: not read
    seen = fake_run(monkeypatch, update_cmd, runs)
    assert cli.main(["fleet", "update", "--retry-failed", "--batch", "2"]) == 0
    assert seen[0].limit == "b,c,d" and seen[0].extravars["tfprov_fleet_batch"] == [2]
    assert "from run 20261122T070000Z-fleet" in capsys.readouterr().out


def write_report(runs, name, **report):
    run_dir = runs / name
    run_dir.mkdir(parents=True)
    (run_dir / "report.json").write_text(json.dumps({"inventory": "inv.yml", **report}))
    return run_dir


def test_a_check_mode_run_is_never_the_last_run(runs, tmp_path):
    real = write_report(runs, "20261122T070000Z-node", hosts={"b": {"status": "failed"}})
    write_report(runs, "20261122T080000Z-node", hosts={"b": {"status": "ok"}}, check=True)
    assert retry.newest_report(tmp_path, "node") == real / "report.json"
    assert retry.plan_retry(tmp_path, "node", None, None).hosts == ["b"]


def test_a_run_halted_before_its_end_retries_every_host_it_had(runs, tmp_path):
    # any_errors_fatal in resolve: a refused, the others stopped "ok" after 1 of 6 plays, never reaching the rest.
    write_report(runs, "20261122T070000Z-node", limit="tfprov_worker", planned_plays=6, plays=[{"name": "resolve"}],
                 hosts={"a": {"status": "failed"}, "b": {"status": "ok"}, "c": {"status": "ok"}})
    halted = retry.plan_retry(tmp_path, "node", None, None)
    assert halted.whole and halted.hosts == ["a", "b", "c"] and halted.limit == "tfprov_worker"
    assert retry.plan_retry(tmp_path, "node", "c*", None).limit == "tfprov_worker,&c*"


def test_a_run_that_reached_its_end_retries_only_its_failed_hosts(runs, tmp_path):
    write_report(runs, "20261122T070000Z-node", planned_plays=2, plays=[{"name": "p1"}, {"name": "p2"}],
                 hosts={"a": {"status": "failed"}, "b": {"status": "ok"}})
    done = retry.plan_retry(tmp_path, "node", None, None)
    assert not done.whole and done.hosts == ["a"] and done.limit == "a"


def test_a_cluster_is_retried_whole(runs, tmp_path):
    write_report(runs, "20261122T070000Z-cluster", planned_plays=2, plays=[{"name": "p1"}, {"name": "p2"}],
                 hosts={"chief": {"status": "ok"}, "worker": {"status": "failed"}})
    whole = retry.plan_retry(tmp_path, "cluster", None, None)
    assert whole.whole and whole.hosts == ["chief", "worker"] and whole.limit is None
