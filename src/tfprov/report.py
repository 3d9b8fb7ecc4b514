"""Turn ansible-runner events into a per-host, per-play, per-role report (report.json)."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

_COUNTS = ("ok", "changed", "failures", "dark", "skipped", "rescued", "ignored")
CHANGED_TASKS_KEPT = 200  # per host: a first run changes a few hundred things; the page lists them, not the log
RESULT_EVENTS = {
    "runner_on_ok": "ok",
    "runner_on_failed": "failed",
    "runner_on_unreachable": "unreachable",
    "runner_on_skipped": "skipped",
}


def _ts(event: dict) -> datetime | None:
    created = event.get("created")
    return datetime.fromisoformat(created) if created else None


def _message(res: dict) -> str:
    """The shortest useful reason a task gave: msg (as one line), else stderr, else the first result line.

    Ansible folds some messages over several lines (argument validation: "Validation of arguments failed:\nvalue
    of ..."): a refusal must reach the user as one line.
    """
    failed_items = [item for item in res.get("results") or []
                    if isinstance(item, dict) and (item.get("failed") or item.get("unreachable"))]
    if failed_items:  # a loop: "One or more items failed" (or "All items completed" when one was unreachable)
        # says nothing; the first item that failed or could not be reached says why
        return _message(failed_items[0])
    if res.get("argument_errors"):  # a role's argument spec: the variable and what it allows, not Ansible's preamble
        errors = "; ".join(" ".join(str(error).split()) for error in res["argument_errors"])
        role = (res.get("validate_args_context") or {}).get("name")
        return f"{role}: {errors}" if role else errors
    if res.get("msg"):
        return " ".join(str(res["msg"]).split())
    for key in ("stderr", "reason"):
        value = res.get(key)
        if value:
            return str(value).strip()
    return json.dumps(res, default=str)[:300]


@dataclass
class _Span:
    name: str
    start: datetime
    end: datetime

    @property
    def seconds(self) -> float:
        return round((self.end - self.start).total_seconds(), 2)


@dataclass
class ReportBuilder:
    """Feed it every event of every step (on_event); ask it for the report (to_dict)."""

    plan: str
    hosts: dict[str, dict] = field(default_factory=dict)
    plays: list[_Span] = field(default_factory=list)
    role_seconds: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    host_data: dict[str, dict] = field(default_factory=dict)
    steps: list[dict] = field(default_factory=list)
    no_hosts_matched: bool = False  # a play found no host (ansible's playbook_on_no_hosts_matched)
    _task_spans: dict[str, _Span] = field(default_factory=dict)
    _task_roles: dict[str, str] = field(default_factory=dict)
    _host_starts: dict[tuple[str, str], datetime] = field(default_factory=dict)
    _timelines: dict[str, list[dict]] = field(default_factory=lambda: defaultdict(list))

    def _host(self, name: str) -> dict:
        return self.hosts.setdefault(
            name, {**{k: 0 for k in _COUNTS}, "status": "pending", "failed_tasks": [], "changed_tasks": []}
        )

    def on_event(self, event: dict) -> None:
        kind, data, when = event.get("event"), event.get("event_data", {}), _ts(event)
        if kind == "playbook_on_play_start" and when:
            self._close_play(when)
            self.plays.append(_Span(data.get("play") or data.get("name") or "play", when, when))
        elif kind == "playbook_on_task_start" and when:
            self._task_spans[data["task_uuid"]] = _Span(data.get("task", ""), when, when)
            if data.get("role"):
                self._task_roles[data["task_uuid"]] = data["role"]
        elif kind == "runner_on_start" and when and data.get("host"):
            self._host_starts[(data.get("task_uuid", ""), data["host"])] = when
        elif kind in RESULT_EVENTS:
            self._on_result(RESULT_EVENTS[kind], data, when)
        elif kind == "playbook_on_stats":
            self._on_stats(data, when)
        elif kind == "playbook_on_no_hosts_matched":
            self.no_hosts_matched = True

    def _on_result(self, outcome: str, data: dict, when: datetime | None) -> None:
        host = self._host(data["host"])
        span = self._task_spans.get(data.get("task_uuid", ""))
        if span and when:
            span.end = max(span.end, when)
        if when:
            self._on_host_time(data, when)
        res = data.get("res") or {}
        if outcome == "ok" and res.get("changed") and len(host["changed_tasks"]) < CHANGED_TASKS_KEPT:
            role = data.get("role")
            host["changed_tasks"].append(f"{role}: {data.get('task')}" if role else str(data.get("task")))
        if outcome in ("failed", "unreachable") and not data.get("ignore_errors"):
            host["failed_tasks"].append(
                {"task": data.get("task"), "outcome": outcome, "message": _message(res)}
            )

    def _on_host_time(self, data: dict, when: datetime) -> None:
        """One host's timeline: consecutive tasks of the same play and role make one segment, from the first task's
        start on that host to the last one's result (hosts run a play's tasks together, but not equally fast)."""
        start = self._host_starts.pop((data.get("task_uuid", ""), data["host"]), when)
        segments = self._timelines[data["host"]]
        key = (data.get("play") or "", data.get("role") or "")
        if segments and (segments[-1]["play"], segments[-1]["role"]) == key:
            segments[-1]["end"] = max(segments[-1]["end"], when)
        else:
            segments.append({"play": key[0], "role": key[1], "start": start, "end": when})

    def _on_stats(self, data: dict, when: datetime | None) -> None:
        if when:
            self._close_play(when)
        for uuid, span in self._task_spans.items():
            if role := self._task_roles.get(uuid):
                self.role_seconds[role] += span.seconds
        self._task_spans.clear()
        for count in _COUNTS:
            for name, value in (data.get(count) or {}).items():
                self._host(name)[count] += value
        for name in data.get("processed") or {}:
            self._host(name)
        for name, values in (data.get("artifact_data") or {}).get("tfprov_hosts", {}).items():
            self.host_data.setdefault(name, {}).update(values)

    def _close_play(self, when: datetime) -> None:
        if self.plays and self.plays[-1].end == self.plays[-1].start:
            self.plays[-1].end = when

    def add_step(self, playbook: str, rc: int, status: str, artifacts: str) -> None:
        self.steps.append({"playbook": playbook, "rc": rc, "status": status, "artifacts": artifacts})

    @staticmethod
    def host_status(host: dict) -> str:
        if host["dark"]:
            return "unreachable"
        if host["failures"]:
            return "failed"
        if host["changed"]:
            return "changed"
        return "ok"

    def to_dict(self, **extra) -> dict:
        hosts = {}
        for name in sorted(self.hosts):
            host = dict(self.hosts[name])
            host["status"] = self.host_status(host)
            host["timeline"] = [{"play": seg["play"], "role": seg["role"], "start": seg["start"].isoformat(),
                                 "seconds": round((seg["end"] - seg["start"]).total_seconds(), 2)}
                                for seg in self._timelines.get(name, [])]
            if name in self.host_data:
                host["data"] = self.host_data[name]
                # A host a rolling update never reached ran only its checks: "ok" would say it was updated.
                fleet = host["data"].get("fleet") or {}
                if fleet.get("result") == "not reached" and host["status"] in ("ok", "changed"):
                    host["status"] = "not reached"
            hosts[name] = host
        return {
            "plan": self.plan,
            **extra,
            "steps": self.steps,
            "hosts": hosts,
            "plays": [{"name": p.name, "seconds": p.seconds} for p in self.plays],
            "roles": {k: round(v, 2) for k, v in sorted(self.role_seconds.items())},
        }


def converged(report: dict) -> dict[str, str]:
    """{host: when its standing converge was recorded} for the hosts whose install the run skipped."""
    return {name: host["data"]["converge"].get("recorded_at", "")
            for name, host in report.get("hosts", {}).items()
            if ((host.get("data") or {}).get("converge") or {}).get("current")}


def write(report: dict, path: Path) -> None:
    path.write_text(json.dumps(report, indent=2, default=str) + "\n", encoding="utf-8")
