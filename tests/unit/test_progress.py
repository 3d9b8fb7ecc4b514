"""Progress lines when the output is not a terminal (CI, pipes): one per result, one per new line of a waiting task."""

import io

from rich.console import Console

from tfprov.progress import Progress


def _progress() -> tuple[Progress, io.StringIO]:
    out = io.StringIO()
    return Progress(Console(file=out, force_terminal=False, width=200)), out


def test_a_polling_task_streams_each_new_line_once_then_its_result():
    progress, out = _progress()
    task = "Wait for the job dist_check.py"
    progress.on_event({"event": "runner_retry", "event_data": {
        "host": "tfprov-local-2", "task": task, "res": {"attempts": 3, "last_line": "step 20/60 loss 1.234"}}})
    progress.on_event({"event": "runner_retry", "event_data": {
        "host": "tfprov-local-2", "task": task, "res": {"attempts": 4, "last_line": "step 20/60 loss 1.234"}}})
    progress.on_event({"event": "runner_retry", "event_data": {"host": "tfprov-local-3", "task": task, "res": {}}})
    progress.on_event({"event": "runner_on_ok", "event_data": {"host": "tfprov-local-2", "task": task, "res": {}}})
    lines = out.getvalue().splitlines()
    assert lines[0].split() == ["waiting", "tfprov-local-2", *task.split(), "(poll", "3):", "step", "20/60", "loss",
                                "1.234"]
    assert lines[1].endswith(f"{task} (poll ?)")
    assert lines[2].split()[:2] == ["ok", "tfprov-local-2"]
    assert progress.rows["tfprov-local-3"]["task"] == f"{task} (poll ?)"
