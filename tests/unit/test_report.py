import json
from pathlib import Path

from tfprov.report import ReportBuilder

FIXTURES = Path(__file__).parents[1] / "fixtures"


def _events(name):
    return [json.loads(line) for line in (FIXTURES / name).read_text().splitlines()]


def _built(name):
    builder = ReportBuilder(plan="preflight")
    for event in _events(name):
        builder.on_event(event)
    return builder.to_dict(status="failed", rc=4)


def test_a_node_stopped_mid_run_is_unreachable_and_the_others_are_recorded():
    # Recorded from `tfprov run preflight` on 3 local nodes, tfprov-local-3 killed after fact gathering.
    report = _built("events-preflight-node-stopped.jsonl")
    hosts = report["hosts"]
    assert sorted(hosts) == ["tfprov-local-1", "tfprov-local-2", "tfprov-local-3"]
    assert hosts["tfprov-local-1"]["status"] == hosts["tfprov-local-2"]["status"] == "ok"
    assert hosts["tfprov-local-1"]["ok"] == 7
    stopped = hosts["tfprov-local-3"]
    assert stopped["status"] == "unreachable" and stopped["dark"] == 1
    [failure] = stopped["failed_tasks"]
    assert failure["outcome"] == "unreachable"
    assert "is not running" in failure["message"]
    assert failure["task"].startswith("Read GPUs on the PCI bus")


def test_per_host_data_from_set_stats_lands_under_each_host():
    hosts = _built("events-preflight-node-stopped.jsonl")["hosts"]
    assert hosts["tfprov-local-1"]["data"]["preflight"]["architecture"] == "x86_64"
    assert "data" not in hosts["tfprov-local-3"]  # it never got that far


def test_play_and_role_durations():
    report = _built("events-preflight-node-stopped.jsonl")
    [play] = report["plays"]
    assert play["name"] == "Check that every node can be provisioned"
    assert 0 < play["seconds"] < 60
    assert 0 < report["roles"]["preflight"] <= play["seconds"] + 0.5
    assert report["status"] == "failed" and report["rc"] == 4


def test_ignored_failures_are_not_reported_as_failures():
    builder = ReportBuilder(plan="x")
    builder.on_event({"event": "runner_on_failed", "created": "2026-01-01T00:00:00+00:00",
                      "event_data": {"host": "h", "task": "t", "task_uuid": "u", "ignore_errors": True,
                                     "res": {"msg": "meh"}}})
    builder.on_event({"event": "playbook_on_stats", "created": "2026-01-01T00:00:01+00:00",
                      "event_data": {"ok": {"h": 1}, "ignored": {"h": 1}, "processed": {"h": 1}}})
    host = builder.to_dict()["hosts"]["h"]
    assert host["failed_tasks"] == [] and host["status"] == "ok" and host["ignored"] == 1


def test_counts_add_up_across_steps():
    builder = ReportBuilder(plan="x")
    for when in ("2026-01-01T00:00:01+00:00", "2026-01-01T00:00:02+00:00"):
        builder.on_event({"event": "playbook_on_stats", "created": when,
                          "event_data": {"ok": {"h": 2}, "changed": {"h": 1}, "processed": {"h": 1}}})
    host = builder.to_dict()["hosts"]["h"]
    assert (host["ok"], host["changed"], host["status"]) == (4, 2, "changed")


def test_a_play_that_matched_no_host_is_noted():
    builder = ReportBuilder(plan="x")
    assert not builder.no_hosts_matched
    builder.on_event({"event": "playbook_on_no_hosts_matched", "event_data": {}})
    assert builder.no_hosts_matched and builder.to_dict()["hosts"] == {}


def test_a_refusal_folded_over_lines_reaches_the_user_as_one_line():
    builder = ReportBuilder(plan="node")
    builder.on_event({"event": "runner_on_failed", "event_data": {"host": "n1", "task": "Validate the CUDA settings",
                      "res": {"msg": "Validation of arguments failed:\nvalue of cuda_method must be one of: pip, "
                                     "distro, nvidia_repo, conda, got: magic"}}})
    [failure] = builder.to_dict()["hosts"]["n1"]["failed_tasks"]
    assert failure["message"] == ("Validation of arguments failed: value of cuda_method must be one of: pip, distro, "
                                  "nvidia_repo, conda, got: magic")


def test_a_host_a_rolling_update_never_reached_is_not_reached_not_ok():
    builder = ReportBuilder(plan="fleet")
    for name, result in (("n1", "updated"), ("n2", "not reached")):
        builder._host(name)["ok"] = 3
        builder.host_data[name] = {"fleet": {"batch": 1, "result": result}}
    hosts = builder.to_dict()["hosts"]
    assert (hosts["n1"]["status"], hosts["n2"]["status"]) == ("ok", "not reached")


def test_a_failed_loop_reports_its_first_failed_items_reason():
    builder = ReportBuilder(plan="x")
    builder.on_event({"event": "runner_on_failed", "event_data": {"host": "n1", "task": "Refuse", "res": {
        "msg": "One or more items failed", "results": [{"failed": False, "msg": "fine"},
                                                       {"failed": True, "msg": "x  /no/such\n does not exist"}]}}})
    assert builder.hosts["n1"]["failed_tasks"][0]["message"] == "x /no/such does not exist"


def test_a_loop_with_an_unreachable_item_says_why_it_could_not_be_reached():
    builder = ReportBuilder(plan="x")
    builder.on_event({"event": "runner_on_unreachable", "event_data": {"host": "n1", "task": "Create", "res": {
        "msg": "All items completed", "unreachable": True, "results": [
            {"changed": False, "msg": "fine"},
            {"unreachable": True, "msg": "Failed to connect to the host via ssh: Connection timed out"}]}}})
    assert "Connection timed out" in builder.hosts["n1"]["failed_tasks"][0]["message"]
