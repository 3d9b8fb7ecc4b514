"""Live progress of a run: a hosts x tasks table on a terminal, one line per result elsewhere (CI, pipes)."""

from __future__ import annotations

import time

from rich.console import Console
from rich.live import Live
from rich.table import Table

from .report import RESULT_EVENTS

_STYLE = {"ok": "green", "changed": "yellow", "failed": "red", "unreachable": "red", "skipped": "dim"}


class Progress:
    def __init__(self, console: Console | None = None):
        self.console = console or Console(stderr=True, soft_wrap=True)
        self.live = self.console.is_terminal
        self.rows: dict[str, dict] = {}
        self.play = self.task = ""
        self.started = time.monotonic()
        self._live: Live | None = None

    def __enter__(self) -> Progress:
        if self.live:
            self._live = Live(self._table(), console=self.console, refresh_per_second=4, transient=False)
            self._live.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        if self._live:
            self._live.update(self._table())
            self._live.__exit__(*exc)

    def step(self, index: int, total: int, playbook: str) -> None:
        self._say(f"[bold]step {index}/{total}: {playbook}[/bold]")

    def on_event(self, event: dict) -> None:
        kind, data = event.get("event"), event.get("event_data", {})
        if kind == "playbook_on_play_start":
            self.play = data.get("play") or data.get("name") or ""
            self._say(f"PLAY {self.play}")
        elif kind == "playbook_on_task_start":
            self.task = data.get("task", "")
        elif kind == "runner_on_start":
            self._row(data["host"])["task"] = data.get("task", "")
        elif kind == "runner_retry":
            # A task polling until something ends (a distributed job): say where it stands, with its latest line.
            res = data.get("res") or {}
            line = str(res.get("last_line") or "").strip()
            where = f"{data.get('task', '')} (poll {res.get('attempts', '?')}){': ' + line if line else ''}"
            row = self._row(data["host"])
            row["task"] = where
            # One line per new log line, not per poll: a job's hour of polls must not flood a CI log.
            if not self.live and line != row.get("polled"):
                self.console.print(f"  [cyan]{'waiting':<11}[/cyan] {data['host']}  {where}", highlight=False)
            row["polled"] = line
        elif kind in RESULT_EVENTS:
            outcome = RESULT_EVENTS[kind]
            if outcome == "ok" and (data.get("res") or {}).get("changed"):
                outcome = "changed"
            row = self._row(data["host"])
            row["done"] += 1
            row[outcome] = row.get(outcome, 0) + 1
            row["last"] = outcome
            if not self.live:
                style = _STYLE[outcome]
                self.console.print(
                    f"  [{style}]{outcome:<11}[/{style}] {data['host']}  {data.get('task', '')}",
                    highlight=False,
                )
        if self._live:
            self._live.update(self._table())

    def _row(self, host: str) -> dict:
        return self.rows.setdefault(host, {"done": 0, "task": "", "last": ""})

    def _say(self, text: str) -> None:
        if self._live:
            self._live.console.print(text)
        else:
            self.console.print(text, highlight=False)

    def _table(self) -> Table:
        elapsed = time.monotonic() - self.started
        table = Table(title=f"{self.play}  ({elapsed:.0f} s)", title_justify="left", expand=False)
        for column in ("host", "tasks", "ok", "changed", "failed", "unreachable", "running"):
            table.add_column(column)
        for host, row in sorted(self.rows.items()):
            table.add_row(
                host,
                str(row["done"]),
                str(row.get("ok", 0)),
                str(row.get("changed", 0)),
                f"[red]{row['failed']}[/red]" if row.get("failed") else "0",
                f"[red]{row['unreachable']}[/red]" if row.get("unreachable") else "0",
                row["task"],
            )
        return table
