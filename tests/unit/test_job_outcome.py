"""Why a job ended (tfprov.job_outcome): the job's own error, an infrastructure error, a lost node, from the tasks'
exits, their last log lines (as TensorFlow 2.21 and Python print them) and the nodes' states."""

import pytest

from tfprov import job_outcome as jo

# A worker whose peer's link was cut: TensorFlow's coordination service gives up on the job.
COORDINATION_CRASH = [
    "worker-0: epoch 3/16 loss 0.412345",
    "E0000 00:00:1765000000.123456    4242 coordination_service_agent.cc:332] Polled an error from coordination "
    "service (this can be an error from this or another task).",
    "E0000 00:00:1765000000.123999    4242 coordination_service_agent.cc:344] UNAVAILABLE: The following tasks are "
    "unhealthy (stopped sending heartbeats):",
    "/job:worker/replica:0/task:1",
    "The tasks have crashed. Check the task logs for an earlier error, or scheduler events (e.g. preemption, "
    "eviction) to debug further.",
    "Traceback (most recent call last):",
    '  File "/opt/tfprov/job/current/train_mwms.py", line 123, in <module>',
    "    sys.exit(main())",
    '  File "/opt/tfprov/envs/tf/lib/python3.11/site-packages/tf_keras/src/utils/traceback_utils.py", line 70, in '
    "error_handler",
    "    raise e.with_traceback(filtered_tb) from None",
    "tensorflow.python.framework.errors_impl.UnavailableError: Graph execution error:",
    "",
    "Detected at node CollectiveReduceV2 defined at (most recent call last):",
    '  File "/opt/tfprov/job/current/train_mwms.py", line 123, in <module>',
    "Collective ops is aborted by: The following tasks are unhealthy (stopped sending heartbeats):",
    "The error could be from a previous operation. Restart your program to reset.",
    "\t [[{{node CollectiveReduceV2}}]] [Op:__inference_train_function_2345]",
]
DEADLINE = [
    "chief-0: epoch 4/16 loss 0.3",
    "2026-12-06 03:01:02.123456: E tensorflow/core/common_runtime/base_collective_executor.cc:249] "
    "BaseCollectiveExecutor::StartAbort DEADLINE_EXCEEDED: Collective has timed out waiting for other workers.",
    "Traceback (most recent call last):",
    '  File "/opt/tfprov/job/current/train_mwms.py", line 123, in <module>',
    "tensorflow.python.framework.errors_impl.DeadlineExceededError: Collective has timed out waiting for other "
    "workers.",
]
INTERNAL_ABORTED = [
    "Traceback (most recent call last):",
    '  File "train.py", line 9, in <module>',
    "tensorflow.python.framework.errors_impl.InternalError: Graph execution error:",
    "Collective ops is aborted by: cluster check alive failed, /job:worker/replica:0/task:1 is down",
    "The error could be from a previous operation. Restart your program to reset.",
]
GRPC_ONLY = [
    "worker-1: epoch 2/16 loss 0.5",
    "E1206 03:01:02.123456   4242 grpc_server_lib.cc:112] Failed to connect: {created_time:\"2026-12-06T03:01:02\", "
    "grpc_status:14, grpc_message:\"Connection refused\"}",
]
USER_ERROR = [
    "chief-0: epoch 3/16 loss 0.351234",
    "Traceback (most recent call last):",
    '  File "/opt/tfprov/job/current/train_raises.py", line 40, in <module>',
    "    sys.exit(main())",
    '  File "/opt/tfprov/job/current/train_raises.py", line 31, in on_epoch_end',
    '    raise ValueError("the learning rate went negative at epoch 3")',
    "ValueError: the learning rate went negative at epoch 3",
    # TensorFlow's shutdown, after the user's exception: noise, not the cause.
    "E0000 00:00:1765000001.000000    4242 coordination_service_agent.cc:500] Failed to disconnect from coordination "
    "service with status: UNAVAILABLE: failed to connect to all addresses; grpc_status:14",
]
# A worker that finished well after the chief: TensorFlow's shutdown noise after the job's own last line.
SUCCEEDED_NOISE = [
    "worker-1: epoch 16/16 loss 0.012345",
    "worker-1: done; weights sha256 5f3c0ffee",
    "E0000 00:00:1765000002.000000    4242 coordination_service_agent.cc:500] Failed to disconnect from coordination "
    "service with status: UNAVAILABLE: Connection refused",
    "Additional GRPC error information from remote target /job:chief/replica:0/task:0 while calling "
    "/tensorflow.CoordinationService/ShutdownTask:",
    ':{"created":"@1765000002.000000000","description":"Error received from peer ipv4:10.77.0.11:2222",'
    '"grpc_status":14,"grpc_message":"Connection refused"}',
]


def task(state="failed", lines=(), exit_status=1, signal=None, result="exit-code", name="worker:0", host="node-2"):
    return {"task": name, "host": host, "state": state, "exit_status": exit_status, "signal": signal,
            "result": result, "log_tail": list(lines), "seconds": 12.5}


@pytest.mark.parametrize("lines, evidence", [
    (COORDINATION_CRASH, "tensorflow.python.framework.errors_impl.UnavailableError: Graph execution error:"),
    (DEADLINE, "tensorflow.python.framework.errors_impl.DeadlineExceededError: Collective has timed out"),
    (INTERNAL_ABORTED, "InternalError: Graph execution error: (Collective ops is aborted by"),
    (GRPC_ONLY, "grpc_status:14"),
    (["The tasks have crashed. Restart your program to reset."], "The tasks have crashed"),
])
def test_tensorflows_network_errors_are_infrastructure(lines, evidence):
    verdict, line = jo.task_verdict(task(lines=lines))
    assert verdict == jo.INFRASTRUCTURE and evidence in line


def test_an_exception_in_the_users_code_is_the_jobs_own_error_even_with_network_noise_after_it():
    verdict, line = jo.task_verdict(task(lines=USER_ERROR, name="chief:0"))
    assert (verdict, line) == (jo.JOB_ERROR, "ValueError: the learning rate went negative at epoch 3")


def test_tensorflows_own_non_network_errors_are_the_jobs():
    lines = ["Traceback (most recent call last):", '  File "t.py", line 3, in <module>',
             "tensorflow.python.framework.errors_impl.InvalidArgumentError: Incompatible shapes: [32,10] vs. [32,3]"]
    assert jo.task_verdict(task(lines=lines))[0] == jo.JOB_ERROR


@pytest.mark.parametrize("signal, result, cause", [
    ("KILL", "signal", jo.INFRASTRUCTURE), ("TERM", "signal", jo.INFRASTRUCTURE),
    ("SEGV", "core-dump", jo.JOB_ERROR), ("ABRT", "core-dump", jo.JOB_ERROR),
    ("KILL", "oom-kill", jo.JOB_ERROR),
])
def test_signals_the_task_did_not_send_itself_are_infrastructure_and_the_oom_killer_is_the_jobs(signal, result,
                                                                                                 cause):
    verdict, line = jo.task_verdict(task(lines=["worker-0: epoch 2/16 loss 0.5"], exit_status=None, signal=signal,
                                         result=result))
    assert verdict == cause
    assert ("OOM" in line) == (result == "oom-kill")


def test_an_abort_with_the_coordination_services_words_is_infrastructure():
    lines = ["F0000 00:00:1765000000.1 4242 coordination_service_agent.cc:99] Terminating process because the "
             "coordination service has stopped: UNAVAILABLE: heartbeat timeout"]
    assert jo.task_verdict(task(lines=lines, exit_status=None, signal="ABRT"))[0] == jo.INFRASTRUCTURE


def test_a_plain_non_zero_exit_is_the_jobs_and_a_task_that_never_started_is_not():
    verdict, line = jo.task_verdict(task(lines=["no --shared-dir and no TFPROV_SHARED_DIR"], exit_status=2))
    assert verdict == jo.JOB_ERROR and line == "exit 2; last line: no --shared-dir and no TFPROV_SHARED_DIR"
    assert jo.task_verdict(task(state="never_run"))[0] == jo.INFRASTRUCTURE
    assert jo.task_verdict(task(state="timed_out", exit_status=None, signal=None))[0] == jo.JOB_ERROR


def test_the_last_line_of_a_task_that_succeeded_is_its_own_not_tensorflows_shutdown_noise():
    verdict, line = jo.task_verdict(task(state="succeeded", lines=SUCCEEDED_NOISE, exit_status=0))
    assert (verdict, line) == (jo.SUCCEEDED, "worker-1: done; weights sha256 5f3c0ffee")
    assert jo.job_last_line(["E1206 03:01:02.1 1 x.cc:1] only noise"]) == "E1206 03:01:02.1 1 x.cc:1] only noise"
    assert jo.job_last_line(['{"tfprov_dist_check": {}}', "done"], skip=('{"tfprov',)) == "done"


def test_a_users_error_on_one_task_wins_over_its_peers_network_errors():
    tasks = [task(lines=USER_ERROR, name="chief:0", host="node-1"),
             task(lines=COORDINATION_CRASH, name="worker:0", host="node-2"),
             task(lines=DEADLINE, name="worker:1", host="node-3")]
    outcome = jo.classify(tasks)
    assert outcome["cause"] == jo.JOB_ERROR and not outcome["retry"]
    assert outcome["evidence"] == [{"node": "node-1", "task": "chief-0",
                                    "line": "ValueError: the learning rate went negative at epoch 3"}]
    assert outcome["summary"] == ("the job's own error: chief-0 on node-1: ValueError: the learning rate went "
                                  "negative at epoch 3; running it again will not help until the script is fixed")


def test_every_task_dead_of_the_network_is_an_infrastructure_error_to_run_again():
    tasks = [task(lines=COORDINATION_CRASH, name="chief:0", host="node-1"),
             task(lines=COORDINATION_CRASH, name="worker:0", host="node-2"),
             task(lines=DEADLINE, name="worker:1", host="node-3")]
    outcome = jo.classify(tasks)
    assert outcome["cause"] == jo.INFRASTRUCTURE and outcome["retry"]
    assert [item["node"] for item in outcome["evidence"]] == ["node-1", "node-2", "node-3"]
    assert outcome["summary"].endswith("(and 2 more); every node is still there: running it again can help")


def test_the_nodes_state_comes_first():
    tasks = [task(lines=USER_ERROR, name="chief:0", host="node-1")]
    lost = jo.classify(tasks, {"node-3": "terminated", "node-2": "unreachable"})
    assert lost["cause"] == jo.NODE_LOST and lost["evidence"] == [
        {"node": "node-3", "task": None, "line": "the node is terminated"}]
    cut = jo.classify([task(lines=COORDINATION_CRASH)], {"node-3": "unreachable", "node-1": "up"})
    assert cut["cause"] == jo.INFRASTRUCTURE
    assert cut["evidence"] == [{"node": "node-3", "task": None, "line": "did not answer during the run"}]
    assert jo.classify([], {"node-2": "rebooted"})["evidence"][0]["line"] == "rebooted during the run"


def test_a_run_that_failed_before_any_job_is_its_setup_and_one_that_passed_succeeded():
    assert jo.classify([], {}, run_failed=True)["cause"] == jo.SETUP_FAILED
    ok = [task(state="succeeded", exit_status=0, lines=SUCCEEDED_NOISE)]
    assert jo.classify(ok, {}, run_failed=False)["cause"] == jo.SUCCEEDED


def test_a_report_is_read_for_its_tasks_and_unreachable_hosts():
    report = {"rc": 4, "hosts": {
        "node-1": {"status": "failed", "data": {"dist_job": task(lines=COORDINATION_CRASH, name="chief:0",
                                                                 host=None)}},
        "node-2": {"status": "ok", "data": {"dist_server": {"state": "running"}}},
        "node-3": {"status": "unreachable"}}}
    assert [t["host"] for t in jo.report_tasks(report)] == ["node-1"]
    assert jo.classify_report(report)["evidence"][0]["node"] == "node-3"
    assert jo.classify_report(report, {"node-3": "stopped"})["cause"] == jo.NODE_LOST


# --- the same view in `tfprov run cluster --job`: the cluster view's rows ------------------------------------------


def _row(lines, **fields):
    return {**task(lines=lines, **fields), "kind": "job", "unit": "tfprov-tf-job.service", "job": "train_mwms.py"}


def test_the_cluster_views_last_line_of_a_succeeded_task_is_the_jobs_own():
    from tfprov import cluster

    row = _row(SUCCEEDED_NOISE, state="succeeded", exit_status=0, result="success")
    assert cluster.last_line(row) == "worker-1: done; weights sha256 5f3c0ffee"
    failed_row = _row(COORDINATION_CRASH)
    assert cluster.last_line(failed_row) == COORDINATION_CRASH[-1]  # a failed task keeps its very last line


def test_the_cluster_view_says_whether_a_failed_job_failed_by_itself_or_from_the_network():
    from tfprov import cluster

    own = [_row(USER_ERROR, name="chief:0", host="n1"), _row(COORDINATION_CRASH, name="worker:0", host="n2")]
    assert cluster.outcome_line(own) == (
        "why the job failed: the job's own error: chief-0 on n1: ValueError: the learning rate went negative at "
        "epoch 3; running it again will not help until the script is fixed")
    network = [_row(COORDINATION_CRASH, name="chief:0", host="n1"), _row(DEADLINE, name="worker:0", host="n2")]
    assert cluster.outcome_line(network).startswith(
        "why the job failed: an infrastructure error: chief-0 on n1: tensorflow.python.framework.errors_impl."
        "UnavailableError: Graph execution error: (and 1 more); every node is still there: running it again can help")
    ok = [_row(SUCCEEDED_NOISE, state="succeeded", exit_status=0, result="success")]
    assert cluster.outcome_line(ok) == ""


def test_the_terminal_and_the_page_show_why(tmp_path):
    from rich.console import Console

    from tfprov import report_page, terminal

    report = {"hosts": {"n1": {"status": "failed", "data": {"dist_job": task(lines=USER_ERROR, name="chief:0")}},
                        "n2": {"status": "failed", "data": {"dist_job": task(lines=DEADLINE, name="worker:0")}}}}
    console = Console(record=True, width=250)
    terminal.show_cluster(report, tmp_path, console)
    assert "why the job failed: the job's own error: chief-0 on n1: ValueError" in console.export_text()
    assert "why the job failed: the job&#x27;s own error: chief-0 on n1: ValueError" in \
        report_page._cluster_section(report)


# The ends of the logs of a real run (TensorFlow 2.21, tf_keras, 3 tasks) whose worker-1 lost its link for 15 s.
CUT_CHIEF = [
    '  File "/usr/lib/python3.11/multiprocessing/pool.py", line 48, in mapstar',
    "    return list(map(*args))",
    "           ^^^^^^^^^^^^^^^^",
    "tensorflow.python.framework.errors_impl.UnavailableError: {{function_node __wrapped__CollectiveReduceV2_Norderin"
    "g_token_1_device_/job:chief/replica:0/task:0/device:CPU:0}} Collective ops is aborted by: Error reported from "
    "/job:worker/task:1: The following tasks are unhealthy (stopped sending heartbeats):",
    "/job:worker/replica:0/task:1",
    "The tasks have crashed. Check the task logs for an earlier error, or scheduler events (e.g. preemption, "
    "eviction) to debug further.",
    "The error could be from a previous operation. Restart your program to reset. [Op:CollectiveReduceV2] name:",
]
CUT_WORKER = [
    "    return list(map(*args))",
    "           ^^^^^^^^^^^^^^^^",
    "tensorflow.python.framework.errors_impl.DeadlineExceededError: {{function_node __wrapped__CollectiveReduceV2_No"
    "rdering_token_1_device_/job:worker/replica:0/task:1/device:CPU:0}} Collective ops is aborted by: Deadline "
    "Exceeded",
    "RPC: /tensorflow.CoordinationService/Heartbeat",
    "The error could be from a previous operation. Restart your program to reset. [Op:CollectiveReduceV2] name:",
]


def test_a_real_link_cut_is_an_infrastructure_error_with_short_evidence():
    outcome = jo.classify([task(lines=CUT_CHIEF, name="chief:0", host="n1"),
                           task(lines=CUT_WORKER, name="worker:1", host="n3")])
    assert outcome["cause"] == jo.INFRASTRUCTURE and outcome["retry"]
    assert [item["line"] for item in outcome["evidence"]] == [
        "tensorflow.python.framework.errors_impl.UnavailableError: Collective ops is aborted by: Error reported from "
        "/job:worker/task:1: The following tasks are unhealthy (stopped sending heartbeats):",
        "tensorflow.python.framework.errors_impl.DeadlineExceededError: Collective ops is aborted by: Deadline "
        "Exceeded"]
