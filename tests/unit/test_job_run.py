"""tfprov job run|status: the sequence (nodes up -> run cluster -> logs -> nodes removed), recovery from a lost node,
--max-restarts, Ctrl-C, --keep and the job's record; the runs and the nodes are fakes here (the local cloud runs
them for real in tests/integration/test_e2e_job.py)."""

import argparse
import json
import time
from types import SimpleNamespace

import pytest
from rich.console import Console

from tfprov import job
from tfprov.errors import EXIT_INTERRUPTED, EXIT_OK


class FakeNodes(job.JobNodes):
    inventory = "inventories/fake.yml"
    env = {"TFPROV_LOCAL_CLOUD": "job-fake"}
    node_shared_dir = "/srv/tfprov/shared"
    down_command = "tfprov down fake"

    def __init__(self, lost_after_runs=None, provider_states=None, answers=None):
        self.calls, self.lost_now = [], []
        self.lost_after_runs = lost_after_runs or {}
        self.provider_states = provider_states or {}  # what the provider says of a node (default: nothing known)
        self.answers = list(answers or [])  # each ask whether the nodes answer takes the next; then all answer
        self.asked = 0

    def planned(self):
        return ["node-1", "node-2", "node-3"]

    def up(self):
        self.calls.append("up")
        self.lost_now = []

    def lost(self):
        return list(self.lost_now)

    def down(self):
        self.calls.append("down")

    def states(self, hosts):
        return {host: self.provider_states[host] for host in hosts if host in self.provider_states}

    def answering(self):
        self.asked += 1
        silent = self.answers.pop(0) if self.answers else []
        return {name: name not in silent for name in self.planned()}

    def hourly(self):
        return 3.6


class FakeRunner:
    """Each call returns the next report; a report may lose nodes while it 'runs'."""

    def __init__(self, nodes, reports):
        self.nodes, self.reports, self.calls = nodes, list(reports), []

    def __call__(self, plan, root, options, progress):
        self.calls.append(options)
        report = self.reports.pop(0)
        self.nodes.lost_now = list(report.pop("_lose", []))
        if self.nodes.lost_now:  # lost while the job runs: the watcher polls every 0.01 s here
            time.sleep(0.5)
        if report.pop("_interrupt", False):
            raise KeyboardInterrupt
        return report, root / ".tfprov" / "runs" / f"run-{len(self.calls)}"


def ok(job_seconds=None):
    report = {"status": "successful", "rc": 0, "hosts": {"node-1": {"status": "ok", "failed_tasks": []}}}
    if job_seconds is not None:
        report["hosts"]["node-1"]["data"] = {"dist_job": {"task": "chief:0", "state": "succeeded", "exit_status": 0,
                                                          "seconds": job_seconds, "log_tail": ["done"]}}
    return report


def failed(lose=(), status="failed", rc=4, message="the job exited 1"):
    hosts = {"node-1": {"status": "failed", "failed_tasks": [{"task": "Report the job", "message": message}]}}
    return {"status": status, "rc": rc, "hosts": hosts, "_lose": list(lose)}


@pytest.fixture
def checkout(tmp_path, monkeypatch):
    """The checkout (root) and the member lists the job stopped tasks on (stopped)."""
    (tmp_path / "train.py").write_text("print('train')\n")
    (tmp_path / "job.yml").write_text("name: demo\nprovider: local\nroles: {chief: {count: 1}, worker: {count: 2}}\n"
                                      "job: {shared_dir: shared}\n")
    monkeypatch.setattr(job, "project_root", lambda: tmp_path)
    monkeypatch.setattr(job.plan_mod, "resolve", lambda name, root: name)
    monkeypatch.setattr(job, "_collect_logs", lambda nodes, record, say: record.set(logs="collected"))
    stopped = []
    monkeypatch.setattr(job, "_stop_tasks", lambda nodes, exclude, directory: stopped.append(exclude))
    monkeypatch.setattr(job, "WATCH_SECONDS", 0.01)
    monkeypatch.setattr(job, "PROBE_SECONDS", 0.01)
    return SimpleNamespace(root=tmp_path, stopped=stopped)


def run(checkout, reports, keep=False, max_restarts=3, nodes=None, max_restarts_on_errors=0, unreachable_grace=300):
    nodes = nodes or FakeNodes()
    runner = FakeRunner(nodes, reports)
    args = argparse.Namespace(spec=str(checkout.root / "job.yml"), script=str(checkout.root / "train.py"),
                              job_arg=["--epochs=2"], keep=keep, max_restarts=max_restarts,
                              max_restarts_on_errors=max_restarts_on_errors, unreachable_grace=unreachable_grace)
    console = Console(record=True, width=200)
    rc = job.cmd_run(args, console, runner=runner, nodes_factory=lambda spec, directory, out: nodes)
    [record] = (checkout.root / ".tfprov" / "runs" / "jobs").glob("*/job.json")
    return rc, nodes, runner, json.loads(record.read_text()), console.export_text()


def test_a_job_that_succeeds_runs_once_and_its_nodes_are_removed(checkout):
    rc, nodes, runner, record, text = run(checkout, [ok()])
    assert rc == EXIT_OK
    assert nodes.calls == ["up", "down"]
    [options] = runner.calls
    assert options.inventory == "inventories/fake.yml"
    assert options.extravars == {"dist_tf_cluster_job": str(checkout.root / "train.py"),
                                 "dist_tf_cluster_job_args": ["--epochs=2"],
                                 "dist_tf_cluster_shared_dir": "/srv/tfprov/shared",
                                 "tfprov_dist_strategy": "multi_worker_mirrored", "dist_tf_cluster_job_timeout": 3600}
    assert record["state"] == "succeeded" and record["nodes_fate"] == "removed" and record["restarts"] == []
    assert record["logs"] == "collected" and record["shared_dir"] == str(checkout.root / "shared")
    assert record["hourly_usd"] == 3.6 and record["cost_usd"] == round(3.6 * record["seconds"] / 3600, 4)
    assert "nodes removed" in text


def test_the_jobs_own_failure_is_not_retried_and_the_nodes_still_go(checkout):
    rc, nodes, runner, record, text = run(checkout, [failed()])
    assert rc == 4
    assert nodes.calls == ["up", "down"] and len(runner.calls) == 1
    assert record["state"] == "failed" and "the job exited 1" in record["error"]
    assert "node-1: Report the job: the job exited 1" in text


def test_a_lost_member_is_replaced_and_the_job_started_again(checkout):
    rc, nodes, runner, record, text = run(checkout, [failed(lose=["node-3"], rc=5), ok()])
    assert rc == EXIT_OK
    assert nodes.calls == ["up", "up", "down"] and len(runner.calls) == 2
    [restart] = record["restarts"]
    assert restart["lost"] == ["node-3"] and restart["attempt"] == 1
    assert {"replace_seconds", "seconds_to_replacement"} <= set(restart)
    assert "lost node-3 during the job: stopping the other tasks" in text
    assert "recovery 1 of at most 3: replacing node-3" in text
    assert checkout.stopped == [["node-3"]]  # the survivors were stopped, the lost one left out


def test_max_restarts_zero_fails_at_the_first_loss_naming_the_node(checkout):
    rc, nodes, runner, record, text = run(checkout, [failed(lose=["node-2"], rc=5)], max_restarts=0)
    assert rc == 5
    assert nodes.calls == ["up", "down"]
    assert record["state"] == "failed"
    assert record["error"].startswith("lost node-2 during the job and --max-restarts 0 allows no more recoveries")


def test_recoveries_stop_at_max_restarts(checkout):
    reports = [failed(lose=["node-2"], rc=5), failed(lose=["node-3"], rc=5), ok()]
    rc, nodes, runner, record, _ = run(checkout, reports, max_restarts=1)
    assert rc == 5 and len(runner.calls) == 2 and len(record["restarts"]) == 1
    assert "node-3" in record["error"]


@pytest.mark.parametrize("how", ["report", "exception"])
def test_ctrl_c_removes_the_nodes(checkout, how):
    report = {"status": "interrupted", "rc": EXIT_INTERRUPTED, "hosts": {}} if how == "report" else {
        "_interrupt": True}
    rc, nodes, _, record, text = run(checkout, [report])
    assert rc == EXIT_INTERRUPTED
    assert nodes.calls == ["up", "down"]
    assert record["state"] == "interrupted" and record["nodes_fate"] == "removed"
    assert "interrupted (Ctrl-C)" in text and "removing the nodes: node-1, node-2, node-3" in text


def test_keep_keeps_the_nodes_and_says_how_to_remove_them(checkout):
    rc, nodes, _, record, text = run(checkout, [ok()], keep=True)
    assert rc == EXIT_OK and nodes.calls == ["up"]
    assert record["nodes_fate"] == "kept"
    assert "nodes kept (--keep): node-1, node-2, node-3; remove them with tfprov down fake" in text


def test_an_interrupted_job_kept_has_its_tasks_stopped(checkout):
    rc, nodes, _, record, _ = run(checkout, [{"status": "interrupted", "rc": EXIT_INTERRUPTED, "hosts": {}}],
                                  keep=True)
    assert rc == EXIT_INTERRUPTED and nodes.calls == ["up"]
    assert checkout.stopped == [[]]  # every member's job stopped; the nodes stay


def test_status_reads_the_record_and_sees_a_job_cut_off(checkout, monkeypatch):
    run(checkout, [failed(lose=["node-3"], rc=5), ok()])
    console = Console(record=True, width=200)
    assert job.cmd_status(argparse.Namespace(job=None), console) == EXIT_OK
    text = console.export_text()
    assert "succeeded" in text
    assert "recovery 1 at attempt 1: a lost node; replaced node-3 (the provider says it is stopped)" in text
    assert "nodes (local): node-1, node-2, node-3; removed" in text
    assert "nodes at $3.6000/h" in text
    record = job.find_record(checkout.root, None)
    record.set(state="running", pid=2 ** 22 + 1)  # no such process
    console = Console(record=True, width=200)
    job.cmd_status(argparse.Namespace(job=None), console)
    assert "the job was cut off" in console.export_text()


def test_a_price_unknown_is_said_not_guessed(checkout):
    nodes = FakeNodes()
    nodes.hourly = lambda: None
    _, _, _, record, _ = run(checkout, [ok()], nodes=nodes)
    assert record["cost_usd"] is None and record["cost_note"] == "price unknown for a node type"


def test_status_with_no_job_says_how_to_start_one(checkout):
    with pytest.raises(job.TfprovError, match="no job has run here yet"):
        job.cmd_status(argparse.Namespace(job=None), Console())


def test_the_watcher_stops_the_survivors_once(checkout):
    nodes, said, stopped = FakeNodes(), [], []
    nodes.lost_now = ["node-2"]
    with job.Watcher(nodes, said.append, stopped.append) as watcher:
        deadline = time.monotonic() + 10
        while not stopped and time.monotonic() < deadline:
            time.sleep(0.01)
    assert watcher.lost == ["node-2"] and stopped == [["node-2"]]
    assert said == ["lost node-2 during the job: stopping the other tasks"]


def test_logs_of_an_ended_job_are_the_ones_it_collected(checkout, monkeypatch):
    def collect(nodes, record, say):
        logs = record.directory / "logs"
        logs.mkdir()
        (logs / "chief-0.log").write_text("chief-0: epoch 1/2 loss 1.5\n")
        (logs / "worker-0.log").write_text("worker-0: epoch 1/2 loss 1.5\n")
        record.set(logs=str(logs), log_files=["chief-0.log", "worker-0.log"])

    monkeypatch.setattr(job, "_collect_logs", collect)
    run(checkout, [ok()])
    console = Console(record=True, width=200)
    assert job.cmd_logs(argparse.Namespace(job=None, task="worker-0"), console) == EXIT_OK
    text = console.export_text()
    assert "is succeeded: the logs it collected in" in text
    assert "==> worker-0 <==" in text and "worker-0: epoch 1/2" in text and "chief-0" not in text.split("<==")[1]
    with pytest.raises(job.TfprovError, match="no task ps-0 in job .*: its tasks are chief-0, worker-0"):
        job.cmd_logs(argparse.Namespace(job=None, task="ps-0"), Console())


def test_logs_of_a_job_that_never_ran_say_so(checkout):
    run(checkout, [{"_interrupt": True}])
    record = job.find_record(checkout.root, None)
    record.data.pop("inventory", None)
    record.write()
    with pytest.raises(job.TfprovError, match="is interrupted and collected no task log"):
        job.cmd_logs(argparse.Namespace(job=None, task=None), Console())


def test_a_cloud_spec_refused_leaves_a_refused_record_and_creates_nothing(checkout):
    def refuse(spec, directory, out):
        raise job.TfprovError("cluster spec job.yml: roles.chief.type 'x1' is unknown")

    args = argparse.Namespace(spec=str(checkout.root / "job.yml"), script=str(checkout.root / "train.py"),
                              job_arg=[], keep=False, max_restarts=3)
    with pytest.raises(job.TfprovError, match="roles.chief.type"):
        job.cmd_run(args, Console(), runner=FakeRunner(FakeNodes(), []), nodes_factory=refuse)
    record = job.find_record(checkout.root, None).data
    assert record["state"] == "refused" and "roles.chief.type" in record["error"]


def test_the_watcher_asks_again_when_the_engine_does_not_answer(checkout):
    nodes, stopped = FakeNodes(), []
    answers = iter([job.TfprovError("docker ps: Cannot connect to the Docker daemon"), [], ["node-3"]])

    def lost():
        answer = next(answers, ["node-3"])
        if isinstance(answer, Exception):
            raise answer
        return answer

    nodes.lost = lost
    with job.Watcher(nodes, lambda text: None, stopped.append) as watcher:
        deadline = time.monotonic() + 10
        while not stopped and time.monotonic() < deadline:
            time.sleep(0.01)
    assert watcher.lost == ["node-3"] and stopped == [["node-3"]]


# --- why the job ended: the job's own error, an infrastructure error, a lost node ---------------------------------

NETWORK = ["worker-0: epoch 2/4 loss 0.5", "Traceback (most recent call last):",
           '  File "/opt/tfprov/jobs/current/train_mwms.py", line 93, in main',
           "tensorflow.python.framework.errors_impl.UnavailableError: {{function_node __wrapped__CollectiveReduceV2}} "
           "Collective ops is aborted by: Error reported from /job:worker/task:1: The following tasks are unhealthy "
           "(stopped sending heartbeats):",
           "The tasks have crashed. Check the task logs for an earlier error, or scheduler events (e.g. preemption, "
           "eviction) to debug further.",
           "The error could be from a previous operation. Restart your program to reset. [Op:CollectiveReduceV2] name:"]
OWN = ["chief-0: epoch 3/4 loss 0.35", "Traceback (most recent call last):",
       '  File "/opt/tfprov/jobs/current/train_mwms.py", line 80, in on_epoch_end',
       "ValueError: the job's own bug at epoch 3"]


def tasks_failed(lines_by_task, rc=4, unreachable=()):
    """A failed run whose job tasks ended with these log lines ({'chief:0': [...], ...}), node-N per task."""
    hosts = {}
    for number, (name, lines) in enumerate(lines_by_task.items(), 1):
        dist_job = {"task": name, "state": "failed", "exit_status": 1, "signal": None, "result": "exit-code",
                    "log_tail": lines, "seconds": 30.0}
        hosts[f"node-{number}"] = {"status": "failed", "data": {"dist_job": dist_job}, "failed_tasks": [
            {"task": "Fail a job that did not succeed", "message": f"{name}: exit 1; last line: {lines[-1]}"}]}
    for host in unreachable:
        hosts[host] = {"status": "unreachable", "failed_tasks": []}
    return {"status": "failed", "rc": rc, "hosts": hosts}


def test_an_infrastructure_error_runs_the_job_again_on_the_same_nodes_and_replaces_none(checkout):
    report = tasks_failed({"chief:0": NETWORK, "worker:0": NETWORK, "worker:1": NETWORK})
    nodes = FakeNodes(answers=[["node-3"]])  # node-3 answers at the second ask
    rc, nodes, runner, record, text = run(checkout, [report, ok(job_seconds=-60.0)], nodes=nodes)
    assert rc == EXIT_OK and len(runner.calls) == 2
    assert nodes.calls == ["up", "down"]  # no node brought up again, none replaced
    assert nodes.asked == 2
    [restart] = record["restarts"]
    assert restart["cause"] == "infrastructure" and restart["replaced"] == [] and restart["seconds_lost"] >= 0
    assert restart["evidence"][0] == {"node": "node-1", "task": "chief-0", "line": (
        "tensorflow.python.framework.errors_impl.UnavailableError: Collective ops is aborted by: Error reported from "
        "/job:worker/task:1: The following tasks are unhealthy (stopped sending heartbeats):")}
    steps = [step for step in record["steps"] if step["step"] == "run cluster"]
    assert [step["cause"] for step in steps] == ["infrastructure", "succeeded"]
    assert "recovery 1 of at most 3: an infrastructure error: chief-0 on node-1" in text
    assert "waiting for node-3 to answer" in text and "every node answers" in text
    assert checkout.stopped == []
    console = Console(record=True, width=250)
    job.cmd_status(argparse.Namespace(job=None), console)
    status = console.export_text()
    assert "run cluster attempt 1: failed, an infrastructure error" in status
    assert ("recovery 1 at attempt 1: an infrastructure error (chief-0 on node-1: tensorflow.python.framework."
            "errors_impl.UnavailableError: Collective ops is aborted by") in status
    assert "no node replaced, the job run again on the same nodes" in status
    # What the recovery cost: waiting for the nodes, then the next run's seconds before its job started (the fake
    # run took ~0 s and its job -60 s: 60 s before the job ran again).
    assert restart["job_again_after"] >= 60 and restart["seconds_lost"] >= restart["wait_seconds"] + 60
    assert f"s lost ({restart['wait_seconds']} s to recover, {restart['job_again_after']} s for the cluster" in status


def test_the_jobs_own_error_is_not_run_again_and_says_so(checkout):
    report = tasks_failed({"chief:0": OWN, "worker:0": NETWORK, "worker:1": NETWORK})
    rc, nodes, runner, record, text = run(checkout, [report, ok()])
    assert rc == 4 and len(runner.calls) == 1 and nodes.calls == ["up", "down"]
    assert record["state"] == "failed" and record["restarts"] == []
    assert record["outcome"]["cause"] == "job_error"
    assert record["error"] == ("the job failed by itself (the job's own error: chief-0 on node-1: ValueError: the "
                               "job's own bug at epoch 3; running it again will not help until the script is fixed); "
                               "not run again (--max-restarts-on-errors 0)")
    assert "the job failed by itself" in text and "ValueError: the job's own bug at epoch 3" in text
    console = Console(record=True, width=250)
    job.cmd_status(argparse.Namespace(job=None), console)
    status = console.export_text()
    assert "why it ended: the job's own error" in status
    assert "chief-0 on node-1: ValueError: the job's own bug at epoch 3" in status


def test_max_restarts_on_errors_runs_the_jobs_own_error_again_that_many_times(checkout):
    own = tasks_failed({"chief:0": OWN})
    rc, nodes, runner, record, text = run(checkout, [own, own], max_restarts_on_errors=1)
    assert rc == 4 and len(runner.calls) == 2 and nodes.calls == ["up", "down"]
    [restart] = record["restarts"]
    assert restart["cause"] == "job_error" and restart["replaced"] == []
    assert "not run again (--max-restarts-on-errors 1)" in record["error"]


def test_a_node_that_runs_but_did_not_answer_is_kept_once_it_answers(checkout):
    report = tasks_failed({"chief:0": NETWORK, "worker:0": NETWORK}, rc=5, unreachable=["node-3"])
    nodes = FakeNodes(provider_states={"node-3": "running"}, answers=[["node-3"], ["node-3"]])
    rc, nodes, runner, record, text = run(checkout, [report, ok()], nodes=nodes)
    assert rc == EXIT_OK and nodes.calls == ["up", "down"] and nodes.asked == 3
    [restart] = record["restarts"]
    assert restart["cause"] == "infrastructure" and restart["replaced"] == []
    assert restart["evidence"] == [{"node": "node-3", "task": None, "line": "did not answer during the run"}]
    assert "node-3 did not answer during the run, but it runs: it is kept" in text


def test_a_node_the_cloud_says_is_terminated_is_replaced_and_the_reason_said(checkout):
    report = tasks_failed({"chief:0": NETWORK, "worker:0": NETWORK}, rc=5, unreachable=["node-3"])
    nodes = FakeNodes(provider_states={"node-3": "terminated"})
    rc, nodes, runner, record, text = run(checkout, [report, ok()], nodes=nodes)
    assert rc == EXIT_OK and nodes.calls == ["up", "up", "down"]
    [restart] = record["restarts"]
    assert restart["cause"] == "node_lost" and restart["replaced"] == ["node-3"]
    assert restart["reasons"] == {"node-3": "the provider says it is terminated"}
    assert "recovery 1 of at most 3: replacing node-3 (same name, role and task index; node-3: the provider says " \
           "it is terminated)" in text


def test_a_running_node_silent_past_the_grace_fails_the_job_and_is_not_replaced(checkout):
    report = tasks_failed({"chief:0": NETWORK}, rc=5, unreachable=["node-3"])
    nodes = FakeNodes(provider_states={"node-3": "running"}, answers=[["node-3"]] * 1000)
    rc, nodes, runner, record, text = run(checkout, [report, ok()], nodes=nodes, unreachable_grace=0)
    assert rc == 5 and nodes.calls == ["up", "down"] and len(runner.calls) == 1
    assert record["error"].startswith("node-3 still runs but did not answer within --unreachable-grace 0 s: not "
                                      "replaced while running")


def test_infrastructure_errors_count_against_max_restarts(checkout):
    report = tasks_failed({"chief:0": NETWORK, "worker:0": NETWORK})
    rc, nodes, runner, record, text = run(checkout, [report, dict(report)], max_restarts=1)
    assert rc == 4 and len(runner.calls) == 2 and len(record["restarts"]) == 1
    assert record["error"].startswith("an infrastructure error: chief-0 on node-1:")
    assert "--max-restarts 1 allows no more recoveries" in record["error"]


def test_ansible_answering_nothing_proves_nothing_no_node_is_replaced(checkout):
    report = tasks_failed({"chief:0": NETWORK, "worker:0": NETWORK})
    nodes = FakeNodes()
    nodes.answering = lambda: {}  # ansible itself failed to ask
    rc, nodes, runner, record, text = run(checkout, [report, ok()], nodes=nodes, unreachable_grace=0)
    assert rc == 5 and nodes.calls == ["up", "down"] and len(runner.calls) == 1
    assert record["error"].startswith("node-1, node-2, node-3 still run but did not answer within")


def test_a_node_gone_from_the_inventory_while_waiting_is_replaced_when_the_provider_says_so(checkout):
    report = tasks_failed({"chief:0": NETWORK, "worker:0": NETWORK})
    nodes = FakeNodes(provider_states={"node-3": "terminated"})
    nodes.answering = lambda: {"node-1": True, "node-2": True}
    rc, nodes, runner, record, text = run(checkout, [report, ok()], nodes=nodes)
    assert rc == EXIT_OK and nodes.calls == ["up", "up", "down"]
    [restart] = record["restarts"]
    assert restart["cause"] == "node_lost" and restart["replaced"] == ["node-3"]
    assert restart["reasons"] == {"node-3": "the provider says it is terminated"}
