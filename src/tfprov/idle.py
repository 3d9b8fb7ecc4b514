"""The view `idle`: the nodes running idle, from a run's report: the idle report (plan `idle`,
playbooks/idle_report.yml) records per host `idle` (the node's checker in --report mode: a fresh reading plus the
idle-stop timer's state)."""

from __future__ import annotations


def found(report: dict) -> dict[str, dict]:
    """{host: its idle record} for the hosts the idle report read in this run."""
    return {host: data["data"]["idle"] for host, data in report["hosts"].items()
            if isinstance((data.get("data") or {}).get("idle"), dict)}
