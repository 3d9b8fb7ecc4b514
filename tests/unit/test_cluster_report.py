"""The CLI's distributed TensorFlow output (tfprov.cluster), from fabricated run reports: the task table, a failed
task's log lines, the built-in check's table, PNG and JSON."""

import json
import sys

from rich.console import Console

from tfprov import cluster, terminal


def _check(task, **changes):
    report = {
        "strategy": "multi_worker_mirrored", "task": task, "workers": 3, "steps": 60, "batch_per_worker": 64,
        "loss_first": 2.3026, "loss_last": 0.4123, "loss_decreased": True,
        "participants": ["chief:0", "worker:0", "worker:1"], "all_took_part": True, "weights_identical": True,
        "weights_digest": "a" * 64, "examples_per_s": {"chief:0": 900.0, "worker:0": 880.0, "worker:1": 870.0},
        "cluster_examples_per_s": 2650.0, "single_worker_examples_per_s": 1200.0, "scaling_efficiency": 0.736,
        "seconds": 12.5, "ok": True, "problems": [],
    }
    return {**report, **changes}


def _job(task, state="succeeded", report=None, **changes):
    printed = [json.dumps({"tfprov_dist_check": report})] if report else []
    entry = {"task": task, "unit": "tfprov-tf-job.service", "job": "dist_check.py", "strategy": "multi_worker_mirrored",
             "state": state, "result": "success", "exit_status": 0, "signal": None, "seconds": 14.2, "restarts": 0,
             "log_tail": [f"{task}: step 60 loss 0.41", *printed], "report": report}
    return {"dist_job": {**entry, **changes}}


def _server(task, state="running"):
    return {"dist_server": {"task": task, "unit": "tfprov-tf-server.service", "state": state, "result": "success",
                            "restarts": 0, "log_tail": [f"{task}: server listening"]}}


def _report(hosts):
    # Hosts in the report's order, not the cluster's: the table sorts them.
    return {"hosts": {name: {"status": "ok", "data": data} for name, data in hosts.items()}}


MWMS_OK = _report({
    "tfprov-local-3": _job("worker:1", report=_check("worker:1")),
    "tfprov-local-1": _job("chief:0", report=_check("chief:0")),
    "tfprov-local-2": _job("worker:0", report=_check("worker:0")),
    "tfprov-local-4": {"serving": []},
})

PS_CHECK = _check("chief:0", strategy="parameter_server", workers=2, weights_identical=None, weights_digest="b" * 64,
                  participants=["worker:0", "worker:1"], examples_per_s={"worker:0": 500.0, "worker:1": 480.0},
                  cluster_examples_per_s=980.0, single_worker_examples_per_s=600.0, scaling_efficiency=0.817)
PS_OK = _report({
    "tfprov-local-1": _job("chief:0", report=PS_CHECK, strategy="parameter_server"),
    "tfprov-local-2": _server("worker:0"),
    "tfprov-local-3": _server("worker:1"),
    "tfprov-local-4": _server("ps:0"),
})

KILLED_LOG = [f"worker:1: step {i} loss 1.{i}" for i in range(15)]
KILLED = _report({
    "tfprov-local-1": _job("chief:0", state="failed", result="exit-code", exit_status=3,
                           report=_check("chief:0", ok=False, all_took_part=False, participants=["chief:0", "worker:0"],
                                         problems=["worker:1 stopped answering after step 14"])),
    "tfprov-local-2": _job("worker:0", report=_check("worker:0")),
    "tfprov-local-3": _job("worker:1", state="failed", result="signal", exit_status=None, signal="KILL",
                           log_tail=KILLED_LOG),
})

USER_JOB = _report({
    "tfprov-local-1": _job("chief:0", job="train.py", log_tail=["epoch 3/3 - loss: 0.12"]),
    "tfprov-local-2": _job("worker:0", job="train.py", log_tail=["epoch 3/3 - loss: 0.12"]),
})


def _text(renderable, width=240) -> list[str]:
    console = Console(width=width, record=True)
    console.print(renderable)
    return console.export_text().splitlines()


def _shown(report, tmp_path) -> str:
    console = Console(width=240, record=True)
    terminal.show_cluster(report, tmp_path / "cluster", console)
    return console.export_text()


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.split("│")[1:-1]]


def test_tasks_are_sorted_chief_workers_by_index_then_ps():
    assert [row["task"] for row in cluster.tasks(MWMS_OK)] == ["chief:0", "worker:0", "worker:1"]
    assert [(row["task"], row["kind"]) for row in cluster.tasks(PS_OK)] == [
        ("chief:0", "job"), ("worker:0", "server"), ("worker:1", "server"), ("ps:0", "server")]
    ten = _report({f"n{i}": _job(f"worker:{i}") for i in (10, 2, 1)} | {"e": _job("evaluator:0"), "c": _job("chief:0")})
    assert [row["task"] for row in cluster.tasks(ten)] == [
        "chief:0", "worker:1", "worker:2", "worker:10", "evaluator:0"]


def test_no_distributed_task_prints_nothing(tmp_path):
    assert _shown({"hosts": {"n1": {"data": {"gpu_check": {}}}, "n2": {}}}, tmp_path) == ""
    assert not (tmp_path / "cluster").exists()


def test_mwms_ok_shows_every_task_and_the_check(tmp_path):
    text = _shown(MWMS_OK, tmp_path)
    rows = [_cells(line) for line in text.splitlines() if "tfprov-local-" in line]
    assert [row[:5] for row in rows] == [
        ["chief:0", "tfprov-local-1", "job dist_check.py", "succeeded", "exit 0"],
        ["worker:0", "tfprov-local-2", "job dist_check.py", "succeeded", "exit 0"],
        ["worker:1", "tfprov-local-3", "job dist_check.py", "succeeded", "exit 0"]]
    # The last log line is the progress line, not the JSON report (it has its table).
    assert rows[0][-1] == "chief:0: step 60 loss 0.41"
    assert "distributed check: ok (the report of chief:0)" in text
    check = {cells[0]: cells[1] for cells in map(_cells, text.splitlines()) if len(cells) == 2}
    assert check["loss first -> last"] == "2.3026 -> 0.4123"
    assert check["identical weights"] == "yes"
    assert check["every task took part"] == "yes (chief:0, worker:0, worker:1)"
    assert check["examples/s per worker"] == "chief:0 900.0, worker:0 880.0, worker:1 870.0"
    assert (check["cluster examples/s"], check["scaling efficiency"]) == ("2650.0", "74%")
    assert check["problems"] == "none"
    record = json.loads((tmp_path / "cluster" / "dist_check.json").read_text())
    assert record["ok"] is True and record["from_task"] == "chief:0" and sorted(record["reports"]) == [
        "chief:0", "worker:0", "worker:1"]
    assert [task["task"] for task in record["tasks"]] == ["chief:0", "worker:0", "worker:1"]
    png = tmp_path / "cluster" / "dist_check.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000
    assert f"distributed check: {tmp_path / 'cluster' / 'dist_check.json'} and {png}" in text


def test_without_matplotlib_the_check_is_written_and_the_line_says_how_to_get_the_plot(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib: ImportError, as where it is missing
    text = _shown(MWMS_OK, tmp_path)
    assert "distributed check: ok (the report of chief:0)" in text
    assert (f"distributed check: {tmp_path / 'cluster' / 'dist_check.json'} (no plot: pip install 'tfprov[local]')"
            in text)
    assert not (tmp_path / "cluster" / "dist_check.png").exists()


def test_ps_ok_shows_the_servers_running_and_no_weight_comparison(tmp_path):
    text = _shown(PS_OK, tmp_path)
    rows = {_cells(line)[0]: _cells(line) for line in text.splitlines() if "tfprov-local-" in line}
    assert rows["ps:0"][2:4] == ["tf.distribute.Server", "running"]
    assert rows["ps:0"][4:6] == ["-", "-"]  # no exit and no seconds for a server that keeps running
    check = {cells[0]: cells[1] for cells in map(_cells, text.splitlines()) if len(cells) == 2}
    assert check["strategy"] == "parameter_server"
    assert check["identical weights"] == "- (the parameter servers hold them)"
    assert check["scaling efficiency"] == "82%"
    assert "distributed check: ok" in text


def test_a_worker_killed_by_kill_is_red_with_its_last_ten_log_lines(tmp_path):
    rows = cluster.tasks(KILLED)
    [killed] = [row for row in rows if row["task"] == "worker:1"]
    assert "[red]failed (signal)[/red]" in terminal.task_table(rows).columns[3]._cells[2]
    assert terminal.task_table(rows).columns[4]._cells[2] == "signal KILL"
    lines = cluster.failure_lines(rows)
    assert lines[0].startswith("chief:0 on tfprov-local-1 (tfprov-tf-job.service): failed, exit 3; its last 1 log")
    at = lines.index(
        "worker:1 on tfprov-local-3 (tfprov-tf-job.service): failed, signal KILL; its last 10 log line(s):")
    assert lines[at + 1:] == [f"  {line}" for line in KILLED_LOG[-10:]]
    assert killed["log_tail"][-1] in _shown(KILLED, tmp_path)
    text = _shown(KILLED, tmp_path)
    assert "distributed check: failed" in text
    assert "chief:0: worker:1 stopped answering after step 14" in text
    assert json.loads((tmp_path / "cluster" / "dist_check.json").read_text())["ok"] is False


def test_weights_that_differ_between_workers_fail_the_check_even_if_each_task_said_ok():
    reports = {"chief:0": _check("chief:0"), "worker:0": _check("worker:0", weights_digest="c" * 64)}
    found = cluster.summary(reports)
    assert not found["ok"]
    assert found["problems"] == [f"the weights differ between tasks: chief:0 {'a' * 12}, worker:0 {'c' * 12}"]


def test_a_user_job_without_a_report_gets_the_task_table_only(tmp_path):
    text = _shown(USER_JOB, tmp_path)
    rows = [_cells(line) for line in text.splitlines() if "tfprov-local-" in line]
    assert [row[2] for row in rows] == ["job train.py", "job train.py"]
    assert rows[0][-1] == "epoch 3/3 - loss: 0.12"
    assert "distributed check" not in text
    assert not (tmp_path / "cluster").exists()


def test_long_log_lines_are_shown_whole_and_markup_in_them_is_not_interpreted():
    digest = "weights sha256 " + "0123456789abcdef" * 8 + " [red]x"
    row = {**_job("chief:0", log_tail=[digest])["dist_job"], "host": "n1", "kind": "job"}
    assert cluster.last_line(row) == digest
    text = "".join(line.split("│")[-2].strip() for line in _text(terminal.task_table([row]), width=80)
                   if line.startswith("│"))
    assert digest.replace(" ", "") in text.replace(" ", "")  # folded over lines, every character kept
