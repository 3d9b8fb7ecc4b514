"""The view `fleet`: a rolling update's per-host rows (playbooks/fleet_update.yml: batch, result updated, unchanged,
failed or not reached, reason, versions before -> after), its summary, and their JSON (run_dir/fleet/update.json).
The command is commands/fleet_update.py."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

RESULTS = ("updated", "unchanged", "failed", "not reached")
COMPONENTS = (("tensorflow", "TensorFlow"), ("cuda", "CUDA"), ("cudnn", "cuDNN"), ("driver", "driver"))


def host_row(name: str, host: dict) -> dict:
    """One host's fleet record; a host the playbook wrote none for was unreachable or never got that far."""
    record = (host.get("data") or {}).get("fleet")
    if record:
        return {"host": name, **record}
    failures = host.get("failed_tasks") or []
    reason = f"{failures[0]['task']}: {failures[0]['message']}" if failures else "the run stopped before the update"
    result = "failed" if host.get("status") in ("failed", "unreachable") else "not reached"
    return {"host": name, "batch": None, "result": result, "reason": reason, "before": {}, "after": {}}


def rows(report: dict) -> list[dict]:
    found = [host_row(name, host) for name, host in report.get("hosts", {}).items()]
    return sorted(found, key=lambda row: (row["batch"] is None, row["batch"] or 0, row["host"]))


def versions(row: dict) -> str:
    """'TensorFlow 2.21.0 -> 2.20.0' for what changed, else the installed TensorFlow; '-' when unknown."""
    before, after = row.get("before") or {}, row.get("after") or {}
    changed = [f"{label} {before.get(key) or 'none'} -> {after.get(key) or 'none'}"
               for key, label in COMPONENTS if before.get(key) != after.get(key)]
    if changed:
        return ", ".join(changed)
    return f"TensorFlow {before['tensorflow']}" if before.get("tensorflow") else "-"


def summary(found: list[dict]) -> str:
    counts = Counter(row["result"] for row in found)
    return ", ".join(f"{counts[result]} {result}" for result in RESULTS if counts[result]) or "no host"


def stop_reason(found: list[dict]) -> str:
    return next((row["reason"] for row in found if row["result"] == "not reached" and row["reason"]), "")


def write_json(found: list[dict], report: dict, path: Path) -> Path:
    record = {"summary": summary(found), "stopped": stop_reason(found),
              "failed": [row["host"] for row in found if row["result"] == "failed"],
              "not_reached": [row["host"] for row in found if row["result"] == "not reached"],
              "inventory": report.get("inventory"), "limit": report.get("limit"), "status": report.get("status"),
              "report": str(Path(report["run_dir"]) / "report.json"), "hosts": {row["host"]: row for row in found}}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return path
