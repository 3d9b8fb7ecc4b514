"""Why a training job ended: from each task's exit (status, signal, systemd's result), its last log lines, and the
nodes' state. Pure: no runner, no console, no cloud; `tfprov job run` and the cluster view read it.

Causes:
- succeeded: every task exited 0.
- job_error: the job's own error: an exception in the user's code (a Python traceback whose exception is not one of
  TensorFlow's network errors), a non-zero exit or a crash (SIGSEGV, SIGABRT) with no sign of the network, the
  kernel's OOM killer (the job's memory), a job that ran past its timeout. Running it again does not help.
- infrastructure: the network or a node, with every node still there: TensorFlow's coordination service or a
  collective giving up on a peer (UnavailableError, DeadlineExceededError, "The tasks have crashed", grpc_status:14),
  a task killed by a signal it did not send itself (KILL, TERM, ...), a node that did not answer or rebooted during
  the run, a job that could not start. Running it again on the same nodes can help.
- node_lost: a node stopped, terminated, preempted or removed. It must be replaced first.
- setup_failed: the run failed before any job started, on nodes that answered (the cluster's setup).

A task's own evidence is its last Python exception where its log has one, else the network's marks in its log, else
how it exited. The job's cause is the strongest: a lost node, then a node unreachable or rebooted, then any task's own
error (a task that died of its own error leaves its peers with network errors: they are its consequence), then the
network's marks.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

SUCCEEDED, JOB_ERROR, INFRASTRUCTURE, NODE_LOST, SETUP_FAILED = (
    "succeeded", "job_error", "infrastructure", "node_lost", "setup_failed")
CAUSES = (SUCCEEDED, JOB_ERROR, INFRASTRUCTURE, NODE_LOST, SETUP_FAILED)

# Node states: what a watcher or the cloud said of a node during or after the run.
NODE_UP = "up"
NODE_LOST_STATES = ("stopped", "stopping", "terminated", "shutting-down", "preempted", "removed", "missing")
NODE_INFRA_STATES = ("unreachable", "rebooted")

# TensorFlow's errors that mean a peer or the network went away, not the user's code.
INFRA_EXCEPTIONS = ("UnavailableError", "DeadlineExceededError", "AbortedError", "CancelledError")
# TensorFlow's catch-all classes: infrastructure when their message carries one of the marks below.
TF_GENERIC_EXCEPTIONS = ("InternalError", "UnknownError")
INFRA_MARKS = (
    "UnavailableError", "DeadlineExceededError", "UNAVAILABLE:", "DEADLINE_EXCEEDED:",
    "The tasks have crashed", "Restart your program to reset",
    "Collective ops is aborted by", "heartbeat timeout", "stopped sending heartbeats", "missing heartbeats",
    "Socket closed", "Connection reset by peer", "Failed to connect to remote host",
    "failed to connect to all addresses",
    "Polled an error from coordination service", "coordination service has stopped",
)
# gRPC's UNAVAILABLE (14) and DEADLINE_EXCEEDED (4), as `grpc_status:14` or JSON's `"grpc_status":14`.
_GRPC_MARK = re.compile(r'grpc_status"?:\s*(14|4)\b')
# Signals a task does not send itself: someone (systemd, a stop, the node going down) ended it.
EXTERNAL_SIGNALS = ("KILL", "TERM", "INT", "HUP", "QUIT", "PIPE", "PWR")

_TRACEBACK = "Traceback (most recent call last):"
# An exception line of a Python traceback: `pkg.mod.SomeError: message` (or `SomeError` alone) at column 0.
_EXCEPTION = re.compile(r"^(?:[A-Za-z_]\w*\.)*(?P<cls>[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt|Failure))"
                        r"(?::\s*(?P<msg>.*))?$")
# TensorFlow's and absl's own log lines, gRPC's status dumps and Python's warnings: noise at a job's end.
_NOISE = (
    re.compile(r"^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+\s+\S+:\d+\]"),  # glog/absl: E1206 02:51:12.123 42 x.cc:7]
    re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: [IWEF] \S+:\d+\]"),  # TF's: 2026-12-06 02:51:12.1: I x.cc:7]
    re.compile(r"^WARNING: All log messages before absl::InitializeLog"),
    re.compile(r'grpc_status"?:|grpc_message"?:|created_time"?:|UNAVAILABLE:|DEADLINE_EXCEEDED:|CANCELLED:'),
    re.compile(r"^\s*(\{|\}|\[\[|[Aa]dditional GRPC error information)"),
    re.compile(r"^(?:/\S+:\d+: )?\w*Warning: "),
)


_FUNCTION_NODE = re.compile(r"\{\{function_node [^}]*\}\}\s*")
EVIDENCE_CHARS = 240


def short(line: str) -> str:
    """An evidence line without TensorFlow's function-node prefix, at most EVIDENCE_CHARS characters."""
    text = _FUNCTION_NODE.sub("", line.strip())
    return text if len(text) <= EVIDENCE_CHARS else text[:EVIDENCE_CHARS - 3] + "..."


def is_noise(line: str) -> bool:
    return any(pattern.search(line) for pattern in _NOISE)


def last_exception(lines: list[str]) -> tuple[int, str, str] | None:
    """(index, class name, line) of the last Python exception line in the log, or None."""
    for index in range(len(lines) - 1, -1, -1):
        line = lines[index].rstrip()
        match = _EXCEPTION.match(line)
        if match and not line.startswith(" "):
            return index, match.group("cls"), line
    return None


def has_mark(line: str) -> bool:
    return any(mark in line for mark in INFRA_MARKS) or bool(_GRPC_MARK.search(line))


def _mark(lines: Iterable[str], first: bool = False) -> str | None:
    """The last (or the first) line that carries one of the network's marks."""
    found = None
    for line in lines:
        if has_mark(line):
            found = line.strip()
            if first:
                break
    return found


def job_last_line(lines: list[str], skip: tuple[str, ...] = ()) -> str:
    """The job's own last line: the newest that is neither TensorFlow's shutdown noise nor starts with one of skip;
    the newest line at all when every line is noise."""
    kept = [line for line in lines or [] if line.strip() and not line.startswith(skip)]
    own = [line for line in kept if not is_noise(line)]
    return (own or kept or [""])[-1].strip()


def task_verdict(task: dict) -> tuple[str, str]:
    """(succeeded | job_error | infrastructure, the evidence line) of one task's end.

    task: the run's record of a job unit (dist_job): state (succeeded, failed, timed_out, never_run, not_started),
    exit_status, signal, result (systemd's: exit-code, signal, oom-kill, timeout, ...), log_tail.
    """
    state = task.get("state")
    lines = [str(line) for line in task.get("log_tail") or []]
    if state == "succeeded":
        return SUCCEEDED, job_last_line(lines)
    if state in ("never_run", "not_started", None):
        return INFRASTRUCTURE, "no run of the job on this node since its boot: it rebooted, or the job never started"
    if task.get("result") == "oom-kill":
        return JOB_ERROR, "killed by the kernel's OOM killer: the job used more memory than the node has"
    found = last_exception(lines)
    if found:
        index, cls, line = found
        if cls in INFRA_EXCEPTIONS or cls == "KeyboardInterrupt":
            return INFRASTRUCTURE, line
        if cls in TF_GENERIC_EXCEPTIONS:
            mark = _mark(lines[index + 1:], first=True)
            if mark:
                return INFRASTRUCTURE, f"{line} ({mark})" if mark != line else line
        return JOB_ERROR, line
    mark = _mark(lines)
    if mark:
        return INFRASTRUCTURE, mark
    signal = task.get("signal")
    if signal:
        if signal in EXTERNAL_SIGNALS:
            return INFRASTRUCTURE, f"killed by signal {signal}, which the job did not send itself"
        return JOB_ERROR, f"crashed with signal {signal}" + (f"; last line: {job_last_line(lines)}" if lines else "")
    if state == "timed_out":
        return JOB_ERROR, f"still running at the job's timeout ({task.get('seconds', '?')} s), stopped"
    last = job_last_line(lines)
    return JOB_ERROR, f"exit {task.get('exit_status')}" + (f"; last line: {last}" if last else "")


def _task_name(task: dict) -> str:
    return str(task.get("task") or "?").replace(":", "-")


def classify(tasks: list[dict], nodes: dict[str, str] | None = None, run_failed: bool = True) -> dict:
    """The job's cause and its evidence.

    tasks: each job task's record (dist_job, with its host in `host`); nodes: {node: state} for the nodes that were
    not simply up (stopped, terminated, preempted, removed, unreachable, rebooted); run_failed: whether the run
    itself failed (a run that failed with every task succeeded failed elsewhere). Returns
    {cause, summary, evidence: [{node, task, line}], retry: whether running it again can help}.
    """
    nodes = nodes or {}
    lost = {node: state for node, state in nodes.items() if state in NODE_LOST_STATES}
    if lost:
        evidence = [{"node": node, "task": None, "line": f"the node is {state}"}
                    for node, state in sorted(lost.items())]
        return _outcome(NODE_LOST, evidence)
    troubled = {node: state for node, state in nodes.items() if state in NODE_INFRA_STATES}
    if troubled:
        evidence = [{"node": node, "task": None,
                     "line": "did not answer during the run" if state == "unreachable" else "rebooted during the run"}
                    for node, state in sorted(troubled.items())]
        return _outcome(INFRASTRUCTURE, evidence)
    verdicts = [(task, *task_verdict(task)) for task in tasks]
    for cause in (JOB_ERROR, INFRASTRUCTURE):
        evidence = [{"node": task.get("host"), "task": _task_name(task), "line": short(line)}
                    for task, verdict, line in verdicts if verdict == cause]
        if evidence:
            return _outcome(cause, evidence)
    if not tasks and run_failed:
        return _outcome(SETUP_FAILED, [])
    if run_failed:  # every task succeeded, yet the run failed: after the job (its report, a server)
        return _outcome(SETUP_FAILED, [])
    return _outcome(SUCCEEDED, [])


def _outcome(cause: str, evidence: list[dict]) -> dict:
    return {"cause": cause, "summary": summary(cause, evidence), "evidence": evidence,
            "retry": cause in (INFRASTRUCTURE, NODE_LOST)}


def cause_text(cause: str) -> str:
    return {SUCCEEDED: "succeeded", JOB_ERROR: "the job's own error", INFRASTRUCTURE: "an infrastructure error",
            NODE_LOST: "a lost node", SETUP_FAILED: "the cluster's setup failed before the job"}.get(cause, cause)


def advice(cause: str) -> str:
    return {JOB_ERROR: "running it again will not help until the script is fixed",
            INFRASTRUCTURE: "every node is still there: running it again can help",
            NODE_LOST: "the node must be replaced before the job can run again",
            SETUP_FAILED: "see the run's failed tasks"}.get(cause, "")


def evidence_text(item: dict) -> str:
    where = " on ".join(part for part in (item.get("task"), item.get("node")) if part)
    return f"{where}: {item['line']}" if where else item["line"]


def summary(cause: str, evidence: list[dict]) -> str:
    """One line: the cause, its first evidence (and how many more), and whether running it again can help."""
    if cause == SUCCEEDED:
        return "succeeded"
    text = cause_text(cause)
    if evidence:
        more = f" (and {len(evidence) - 1} more)" if len(evidence) > 1 else ""
        text += f": {evidence_text(evidence[0])}{more}"
    hint = advice(cause)
    return f"{text}; {hint}" if hint else text


def report_tasks(report: dict) -> list[dict]:
    """The job tasks' records (dist_job) of a run's report, each with its host."""
    found = []
    for host, data in (report.get("hosts") or {}).items():
        job = (data.get("data") or {}).get("dist_job")
        if isinstance(job, dict):
            found.append({**job, "host": host})
    return found


def unreachable_hosts(report: dict) -> list[str]:
    return sorted(host for host, data in (report.get("hosts") or {}).items() if data.get("status") == "unreachable")


def classify_report(report: dict, nodes: dict[str, str] | None = None) -> dict:
    """classify() of a run's report: its job tasks, its unreachable hosts (unless nodes says more of them)."""
    states = {host: "unreachable" for host in unreachable_hosts(report)}
    states.update(nodes or {})
    return classify(report_tasks(report), states, run_failed=report.get("rc", 0) != 0)
