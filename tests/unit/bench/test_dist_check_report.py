"""The distributed check's pure part: TF_CONFIG, identities, the report and its problems, error lines, saving, and
the supervisor with stand-in children (TensorFlow itself runs in node containers, not here)."""

import importlib.util
import io
import json
import sys
from pathlib import Path

import numpy as np
import pytest

SPEC = importlib.util.spec_from_file_location("dist_check", Path(__file__).parents[3] / "bench" / "dist_check.py")
dist_check = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(dist_check)

CLUSTER = {"chief": ["h0:2222"], "worker": ["h1:2222", "h2:2222"], "ps": ["h3:2222"]}
CONTRACT_KEYS = {
    "strategy", "task", "workers", "steps", "batch_per_worker", "loss_first", "loss_last", "loss_decreased",
    "participants", "all_took_part", "weights_identical", "weights_digest", "examples_per_s",
    "cluster_examples_per_s", "single_worker_examples_per_s", "scaling_efficiency", "seconds", "ok", "problems"}


def config(kind, index, cluster=CLUSTER):
    return {"cluster": cluster, "task": {"type": kind, "index": index}}


def test_tf_config_is_parsed_or_refused_in_one_line():
    assert dist_check.parse_tf_config(None) == {}
    assert dist_check.parse_tf_config("  ") == {}
    assert dist_check.parse_tf_config(json.dumps(config("worker", 1)))["task"]["index"] == 1
    with pytest.raises(ValueError, match="TF_CONFIG is not JSON"):
        dist_check.parse_tf_config("{cluster")
    with pytest.raises(ValueError, match="not a JSON object"):
        dist_check.parse_tf_config("[1]")


def test_tasks_that_train_under_each_strategy():
    mwms = {"chief": ["h0:1"], "worker": ["h1:1", "h2:1"]}
    assert dist_check.training_tasks({"cluster": mwms}, "multi_worker_mirrored") == ["chief:0", "worker:0", "worker:1"]
    assert dist_check.training_tasks({"cluster": CLUSTER}, "parameter_server") == ["worker:0", "worker:1"]
    assert dist_check.training_tasks({}, "multi_worker_mirrored") == ["worker:0"]  # standalone
    assert dist_check.task_name({}) == "worker:0"
    assert dist_check.task_name(config("ps", 0)) == "ps:0"


def test_the_chief_or_worker_zero_without_one_saves():
    assert dist_check.is_chief(config("chief", 0))
    assert not dist_check.is_chief(config("worker", 0))
    assert dist_check.is_chief(config("worker", 0, {"worker": ["a:1", "b:1"]}))
    assert not dist_check.is_chief(config("worker", 1, {"worker": ["a:1", "b:1"]}))
    assert dist_check.is_chief({})


def test_identity_file_names_the_worker_that_ran_a_step():
    assert dist_check.identity_task(json.dumps(config("worker", 1)).encode()) == "worker:1"
    for bad in (b"", b"{}", b'{"task": {"type": "worker"}}', b"not json"):
        with pytest.raises(ValueError, match="identity file names no task"):
            dist_check.identity_task(bad)
    steps = dist_check.count_steps(["worker:0", "worker:1", "worker:0"])
    assert steps == {"worker:0": 2, "worker:1": 1}
    assert dist_check.examples_per_s(steps, 64, 2.0) == {"worker:0": 64.0, "worker:1": 32.0}
    assert dist_check.examples_per_s(steps, 64, 0.0) == {"worker:0": 0.0, "worker:1": 0.0}


def test_scaling_efficiency():
    assert dist_check.scaling_efficiency(300.0, 2, 200.0) == 0.75
    assert dist_check.scaling_efficiency(300.0, 2, 0.0) is None
    assert dist_check.scaling_efficiency(300.0, 0, 200.0) is None


def test_digest_and_fingerprint_tell_equal_weights_from_different_ones():
    weights = [np.arange(6, dtype=np.float32).reshape(2, 3), np.zeros(3, np.float32)]
    other = [weights[0], np.array([0, 0, 1e-7], np.float32)]
    digest = dist_check.weights_digest(weights)
    assert digest == dist_check.weights_digest([w.copy() for w in weights])
    assert digest != dist_check.weights_digest(other)
    fingerprint = dist_check.digest_fingerprint(digest)
    assert len(fingerprint) == 8 and all(0 <= f < 65536 and f == int(f) for f in fingerprint)
    assert fingerprint != dist_check.digest_fingerprint(dist_check.weights_digest(other))


def test_gathered_rows_give_participants_rates_and_agreement():
    expected = ["chief:0", "worker:0", "worker:1"]
    same = [7.0, 8.0]
    rows = [[0, 100.04, *same], [2, 90.0, *same], [1, 95.0, *same]]
    assert dist_check.summarize_rows(rows, expected) == (
        expected, {"chief:0": 100.0, "worker:0": 95.0, "worker:1": 90.0}, True)
    participants, _, identical = dist_check.summarize_rows([[0, 1.0, 7.0], [0, 1.0, 7.0], [2, 1.0, 9.0]], expected)
    assert participants == ["chief:0", "worker:1"] and identical is False


def test_problems_one_line_each():
    expected = ["worker:0", "worker:1"]
    assert dist_check.find_problems(2.3, 0.3, expected, expected, True) == []
    problems = dist_check.find_problems(2.3, 2.4, expected, ["worker:0", "worker:7"], False, ["w on /job:worker"])
    assert [p.split(" ")[0] for p in problems] == ["loss", "worker:1", "worker:7", "the", "variables"]
    assert "worker:1 took no part" in problems[1]
    assert all("\n" not in p for p in problems)
    assert dist_check.find_problems(None, None, expected, expected, None)[0].startswith("loss did not decrease")


def test_report_has_the_contract_keys_and_is_the_last_line():
    expected = ["worker:0", "worker:1"]
    report = dist_check.build_report(
        "multi_worker_mirrored", "worker:1", expected, 60, 64, 2.4, 0.3, ["worker:1", "worker:0"], True, "ab",
        {"worker:0": 100.0, "worker:1": 110.0}, 150.0, 3.456, [], saved_to=None)
    assert CONTRACT_KEYS <= set(report)
    assert report["ok"] and report["loss_decreased"] and report["all_took_part"]
    assert report["workers"] == 2 and report["participants"] == expected
    assert report["cluster_examples_per_s"] == 210.0 and report["scaling_efficiency"] == 0.7
    assert report["seconds"] == 3.46
    failed = dist_check.build_report("parameter_server", "chief:0", expected, 60, 64, 2.4, 0.3, ["worker:0"],
                                     None, "ab", {"worker:0": 100.0}, 150.0, 1.0, ["worker:1 took no part"])
    assert not failed["ok"] and not failed["all_took_part"] and failed["weights_identical"] is None
    line = dist_check.report_line(failed)
    assert line.startswith('{"tfprov_dist_check": ') and json.loads(line)["tfprov_dist_check"] == failed


GRAPH_ERROR = """Graph execution error:

Detected at node ReadFile defined at (most recent call last):
  File "/src/bench/dist_check.py", line 488, in <module>

  File "/src/bench/dist_check.py", line 372, in worker_step

/nonexistent/tf_config.json; No such file or directory
\t [[{{node ReadFile}}]]
Additional GRPC error information from remote target /job:worker/replica:0/task:1 while calling /x:
:UNKNOWN:Error received from peer  {grpc_status:5} [Op:__inference_worker_step_304]"""

USER_CODE_ERROR = """in user code:

    File "/src/bench/dist_check.py", line 320, in gather  *
        rows = strategy.run(lambda r: ...)

    ValueError: destinations can not be empty
"""

HEARTBEAT_ERROR = """Collective ops is aborted by: Error reported from /job:worker/task:1: The following tasks are \
unhealthy (stopped sending heartbeats):
/job:worker/replica:0/task:1
The tasks have crashed. Check the task logs for an earlier error.
\t [[{{node CollectiveReduceV2}}]] [Op:__inference_train_step_236]"""


def error(name, message):
    return type(name, (Exception,), {})(message)


def test_error_lines_say_what_failed_where():
    assert dist_check.describe_error(error("NotFoundError", GRAPH_ERROR), 60) == (
        "NotFoundError: /nonexistent/tf_config.json; No such file or directory (on /job:worker/replica:0/task:1)")
    assert dist_check.describe_error(error("ValueError", USER_CODE_ERROR), 60) == (
        "ValueError: destinations can not be empty")
    line = dist_check.describe_error(error("UnavailableError", HEARTBEAT_ERROR), 30)
    assert line.startswith("UnavailableError: Collective ops is aborted by: Error reported from /job:worker/task:1:")
    assert "stopped sending heartbeats): /job:worker/replica:0/task:1 (a collective failed" in line
    assert line.endswith("collective timeout 30 s)")
    assert dist_check.error_message("2 root error(s) found.\n  (0) NOT_FOUND: gone\n  (1) x") == "NOT_FOUND: gone"
    assert dist_check.describe_error(RuntimeError(""), 60) == "RuntimeError: no message"


class FakeGfile:
    def __init__(self):
        self.files, self.dirs = {}, []

    def makedirs(self, path):
        self.dirs.append(path)

    def GFile(self, path, mode):  # noqa: N802 - tf.io.gfile's name
        files = self.files

        class Handle(io.BytesIO):
            def __exit__(self, *exc):
                files[path] = self.getvalue()
                return super().__exit__(*exc)
        return Handle()


def test_weights_are_saved_locally_or_through_gfile(tmp_path):
    assert dist_check.weights_path(None) is None
    assert dist_check.weights_path("gs://b/run/") == "gs://b/run/dist_check/weights.npz"
    arrays = {"dense1_kernel": np.ones((2, 2), np.float32), "dense1_bias": np.zeros(2, np.float32)}
    local = dist_check.weights_path(str(tmp_path / "shared"))
    dist_check.save_weights(local, arrays)
    with np.load(local) as saved:
        assert sorted(saved.files) == ["dense1_bias", "dense1_kernel"]
        assert (saved["dense1_kernel"] == 1).all()
    gfile = FakeGfile()
    dist_check.save_weights("s3://bucket/x/dist_check/weights.npz", arrays, gfile)
    assert gfile.dirs == ["s3://bucket/x/dist_check"]
    with np.load(io.BytesIO(gfile.files["s3://bucket/x/dist_check/weights.npz"])) as saved:
        assert (saved["dense1_bias"] == 0).all()


def test_startup_problem_names_the_tasks_without_a_listener():
    me = config("worker", 0)
    assert ("worker:0", "h1:2222") not in dist_check.cluster_addresses(me)
    assert len(dist_check.cluster_addresses(me)) == 3

    def connect(host, port):
        if host in ("h2", "h3"):
            raise ConnectionRefusedError(host)

    down = dist_check.unreachable(me, connect)
    assert down == ["ps:0 (h3:2222)", "worker:1 (h2:2222)"]
    assert "no connection to ps:0 (h3:2222), worker:1 (h2:2222)" in dist_check.startup_problem(300, down)
    assert "every task takes connections" in dist_check.startup_problem(300, [])
    assert dist_check.watches_startup(me)
    assert not dist_check.watches_startup({})
    assert not dist_check.watches_startup(config("evaluator", 0))


def supervised(tmp_path, child_code, timeout=30.0, tf_config=None):
    script = tmp_path / "child.py"
    script.write_text(child_code)
    out = io.StringIO()
    code = dist_check.supervise([sys.executable, str(script)], {}, "multi_worker_mirrored",
                                tf_config if tf_config is not None else config("worker", 0), timeout, 0.0, out,
                                connect=lambda host, port: None)
    lines = out.getvalue().splitlines()
    return code, lines, json.loads(lines[-1])["tfprov_dist_check"] if lines[-1].startswith("{") else None


def test_supervisor_relays_the_check_and_its_exit_code(tmp_path):
    code, lines, report = supervised(tmp_path, (
        "import json, sys\nprint('worker:0: the cluster is up')\nprint('step 10/60 loss 1.0')\n"
        "print(json.dumps({'tfprov_dist_check': {'ok': False}}))\nsys.exit(3)\n"))
    assert code == 3 and lines[1] == "step 10/60 loss 1.0" and report == {"ok": False}


def test_supervisor_ends_a_cluster_that_never_comes_up(tmp_path):
    code, lines, report = supervised(tmp_path, "import time\nprint('starting', flush=True)\ntime.sleep(60)\n", 0.5)
    assert code == 1 and lines[0] == "starting"
    assert report["problems"][0].startswith("the cluster did not start within 0.5 s")
    assert report["workers"] == len(dist_check.training_tasks(config("worker", 0), "multi_worker_mirrored"))


def test_supervisor_deadline_ends_when_the_cluster_is_up(tmp_path):
    code, _, report = supervised(tmp_path, (
        "import json, time\nprint('worker:0: the cluster is up', flush=True)\ntime.sleep(1)\n"
        "print(json.dumps({'tfprov_dist_check': {'ok': True}}))\n"), 0.3)
    assert code == 0 and report == {"ok": True}


def test_standalone_has_no_startup_deadline(tmp_path):
    code, _, report = supervised(tmp_path, (
        "import json, time\ntime.sleep(0.8)\nprint(json.dumps({'tfprov_dist_check': {'ok': True}}))\n"), 0.2, {})
    assert code == 0 and report == {"ok": True}


def test_supervisor_reports_a_crash_or_a_missing_report(tmp_path):
    code, _, report = supervised(tmp_path, "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n")
    assert code == 1 and report["problems"] == ["the check died of SIGKILL"] and report["task"] == "worker:0"
    code, _, report = supervised(tmp_path, "print('step 1/60 loss 2.3')\n")
    assert code == 1 and "without its report" in report["problems"][0]


def test_parameter_server_without_cluster_is_refused_before_tensorflow(monkeypatch, capsys):
    monkeypatch.setenv(dist_check.CHILD_ENV, "1")
    monkeypatch.delenv("TF_CONFIG", raising=False)
    assert dist_check.main(["--strategy", "parameter_server"]) == 1
    report = json.loads(capsys.readouterr().out.splitlines()[-1])["tfprov_dist_check"]
    assert not report["ok"] and "parameter_server needs TF_CONFIG" in report["problems"][0]
    assert "tensorflow" not in sys.modules


def test_bad_arguments_exit_2(capsys):
    with pytest.raises(SystemExit) as exit_info:
        dist_check.parse_args(["--steps", "1"])
    assert exit_info.value.code == 2


def test_tf_server_serves_ps_and_workers_only():
    spec = importlib.util.spec_from_file_location(
        "tf_server", Path(__file__).parents[3] / "roles" / "dist_tf_cluster" / "files" / "tf_server.py")
    tf_server = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tf_server)
    assert tf_server.task_of(json.dumps(config("ps", 0))) == ("ps", 0)
    assert tf_server.task_of(json.dumps(config("worker", 1))) == ("worker", 1)
    for text, message in ((None, "TF_CONFIG is not set"), ("{x", "no valid task"), ("{}", "no valid task"),
                          (json.dumps(config("chief", 0)), "serves only ps and worker tasks")):
        with pytest.raises(ValueError, match=message):
            tf_server.task_of(text)


def test_bus_bandwidth_counts_as_nccl_tests_do():
    algbw, busbw = dist_check.bus_bandwidth(64 * 10**6, 0.5, 2)  # 64 MB in 0.5 s between two workers
    assert (round(algbw, 3), round(busbw, 3)) == (0.128, 0.128)
    assert round(dist_check.bus_bandwidth(64 * 10**6, 0.5, 4)[1], 3) == 0.192  # 2(n-1)/n = 1.5
    assert dist_check.bus_bandwidth(10**6, 1.0, 1)[1] == 0.0


def test_bandwidth_against_the_links_figure():
    assert dist_check.bandwidth_verdict(0.024, 0.2, 0.7) == (96.0, None)  # 0.2 Gbit/s = 0.025 GB/s
    percent, problem = dist_check.bandwidth_verdict(0.006, 0.2, 0.7)
    assert percent == 24.0 and problem.startswith("all-reduce bus bandwidth 0.006 GB/s is 24 % of the 0.025 GB/s a "
                                                  "0.2 Gbit/s link gives, below 70 %")
    assert dist_check.bandwidth_verdict(0.006, None, 0.7) == (None, None)  # no figure, no verdict


@pytest.mark.parametrize("argv", [["--allreduce-mb", "-1"], ["--min-fraction", "0"], ["--min-fraction", "1.5"],
                                  ["--allreduce-reps", "0"], ["--link-gbit", "-3"]])
def test_bad_all_reduce_settings_are_refused(argv, capsys):
    with pytest.raises(SystemExit):
        dist_check.parse_args(argv)
    assert "--allreduce-mb must be" in capsys.readouterr().err
