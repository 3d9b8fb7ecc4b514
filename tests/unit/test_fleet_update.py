"""tfprov fleet update with run_plan replaced: options -> extra vars, the per-host table and update.json."""

import json
from types import SimpleNamespace

import pytest

from tfprov import cli, fleet
from tfprov.commands import fleet_drift as drift_cmd
from tfprov.commands import fleet_status as status_cmd
from tfprov.commands import fleet_update as update_cmd
from tfprov.errors import TfprovError

OLD = {"tensorflow": "2.21.0", "cuda": None, "cudnn": None, "driver": None, "python": "3.11.2"}
NEW = {**OLD, "tensorflow": "2.20.0"}
STOP = "the update stopped after batch 2: 1 host(s) failed, over the fleet's budget of 0 (tfprov_fleet_max_fail 0)"


def _host(status, fleet_record=None, failed_tasks=()):
    return {"status": status, "failed_tasks": list(failed_tasks), **({"data": {"fleet": fleet_record}}
                                                                     if fleet_record else {})}


def stopped_report(run_dir):
    return {"plan": "fleet", "status": "failed", "rc": 4, "seconds": 12.5, "inventory": "inv.yml", "limit": None,
            "run_dir": str(run_dir), "steps": [], "hosts": {
                "n1": _host("changed", {"batch": 1, "result": "updated", "reason": "", "before": OLD, "after": NEW}),
                "n2": _host("changed", {"batch": 2, "result": "updated", "reason": "", "before": OLD, "after": NEW}),
                "n3": _host("failed", {"batch": 2, "result": "failed",
                                       "reason": "Verify TensorFlow: import of tensorflow halted",
                                       "before": OLD, "after": OLD},
                            [{"task": "Fail the node", "message": "import of tensorflow halted"}]),
                "n4": _host("ok", {"batch": 3, "result": "not reached", "reason": STOP, "before": OLD, "after": OLD}),
                "n5": _host("unreachable", None, [{"task": "Gather", "message": "ssh: connect refused"}]),
            }}


def args(**given):
    values = {"inventory": None, "limit": None, "canary": "1", "batch": "25%", "max_fail": "0",
              "batch_max_fail": "0", "extra_vars": [], "check": False, "forks": None, "retry_failed": False}
    return SimpleNamespace(**(values | given))


def test_options_become_the_playbooks_extra_vars():
    assert update_cmd.update_extravars(args(batch="2", canary="1", max_fail="10%", batch_max_fail="50")) == {
        "tfprov_fleet_canary": 1, "tfprov_fleet_batch": [2], "tfprov_fleet_max_fail": "10%",
        "tfprov_fleet_batch_max_fail": "50%"}
    assert update_cmd.update_extravars(args(batch="1,25%", canary="0"))["tfprov_fleet_batch"] == [1, "25%"]


@pytest.mark.parametrize("given, words", [
    ({"batch": "0"}, "--batch '0': must be at least 1"), ({"batch": "two"}, "--batch 'two': give a number"),
    ({"canary": "-1"}, "--canary"), ({"max_fail": "101%"}, "at most 100%"),
    ({"batch_max_fail": "150"}, "--batch-max-fail '150': give a percentage"), ({"batch": ""}, "--batch is empty")])
def test_bad_options_are_refused_in_one_line(given, words):
    with pytest.raises(TfprovError, match=words.replace("(", r"\(")):
        update_cmd.update_extravars(args(**given))


def test_rows_name_the_failed_host_and_the_ones_not_reached(tmp_path):
    found = fleet.rows(stopped_report(tmp_path))
    by_host = {row["host"]: row for row in found}
    assert [row["host"] for row in found] == ["n1", "n2", "n3", "n4", "n5"]
    assert by_host["n3"]["result"] == "failed" and "import of tensorflow halted" in by_host["n3"]["reason"]
    assert by_host["n4"]["result"] == "not reached" and fleet.stop_reason(found) == STOP
    # No record from the playbook: unreachable is a failure, with the task's message.
    assert by_host["n5"]["result"] == "failed" and "connect refused" in by_host["n5"]["reason"]
    assert fleet.versions(by_host["n1"]) == "TensorFlow 2.21.0 -> 2.20.0"
    assert fleet.versions(by_host["n4"]) == "TensorFlow 2.21.0"
    assert fleet.versions(by_host["n5"]) == "-"
    assert fleet.summary(found) == "2 updated, 2 failed, 1 not reached"


def test_run_prints_the_table_and_writes_update_json(tmp_path, monkeypatch, capsys):
    seen = {}

    def run_plan(plan, root, options, progress):
        seen["options"] = options
        return stopped_report(tmp_path), tmp_path

    monkeypatch.setattr(update_cmd, "run_plan", run_plan)
    rc = cli.main(["fleet", "update", "--batch", "2", "-e", "tensorflow_gpu_version=2.20.0",
                   "-e", "tfprov_fleet_batch=9"])
    out = capsys.readouterr().out
    assert rc == 4
    assert seen["options"].extravars["tensorflow_gpu_version"] == "2.20.0"
    assert seen["options"].extravars["tfprov_fleet_batch"] == [2]  # the flag wins over -e
    assert seen["options"].inventory == update_cmd.DEFAULT_INVENTORY
    assert "2 updated, 2 failed, 1 not reached" in out and "TensorFlow 2.21.0 -> 2.20.0" in out
    assert "the update stopped after batch 2" in out
    record = json.loads((tmp_path / "fleet" / "update.json").read_text())
    assert record["failed"] == ["n3", "n5"] and record["not_reached"] == ["n4"]
    assert record["hosts"]["n3"]["batch"] == 2 and record["stopped"] == STOP


def test_a_bad_option_stops_before_any_run(monkeypatch, capsys):
    monkeypatch.setattr(update_cmd, "run_plan", lambda *a: pytest.fail("ran"))
    assert cli.main(["fleet", "update", "--batch", "none"]) == 2
    assert "--batch 'none'" in capsys.readouterr().err


def test_fleet_drift_and_status_are_wired(monkeypatch):
    called = []
    monkeypatch.setattr(drift_cmd, "run", lambda a, out: called.append("drift") or 0)
    monkeypatch.setattr(status_cmd, "run", lambda a, out: called.append("status") or 0)
    # build_parser binds run at parse time: patch first, then parse.
    assert cli.main(["fleet", "drift"]) == 0 and cli.main(["fleet", "status"]) == 0
    assert called == ["drift", "status"]


@pytest.mark.parametrize("given", [{}, {"batch": "1,25%", "canary": "0", "max_fail": "10%", "batch_max_fail": "100"}])
def test_the_playbooks_filters_accept_what_the_cli_passes(given):
    from ansible_collections.tfprov.gpu.plugins.filter.fleet import fleet_budget, fleet_serial

    variables = update_cmd.update_extravars(args(**given))
    assert fleet_serial(variables["tfprov_fleet_batch"], variables["tfprov_fleet_canary"])
    assert fleet_budget(0, 6, 0, 1, variables["tfprov_fleet_max_fail"],
                        variables["tfprov_fleet_batch_max_fail"]) == ""
