"""The view `drift`: per host, the installed driver, CUDA, cuDNN and TensorFlow beside the desired ones (the resolve
play's tfprov_stack), what a run of the stack would change, and their JSON (run_dir/fleet/drift.json). The command is
commands/fleet_drift.py."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

COMPONENTS = ("tensorflow", "cuda", "cudnn", "driver")


def _parts(version) -> list[str]:
    return str(version).split(".") if version else []


def same_release(installed, desired) -> bool:
    """'12.5.82' is CUDA '12.5'; '9.3.0.75' is cuDNN '9.3.0.75' or '9.3': compare as many parts as desired gives."""
    want = _parts(desired)
    return bool(installed) and _parts(installed)[:len(want)] == want


def _compare(installed, desired, matches: bool) -> dict:
    return {"installed": installed, "desired": desired, "differs": desired is not None and not matches}


def components(installed: dict, desired: dict) -> dict[str, dict]:
    """Installed vs desired per component; desired is None where the stack needs nothing (no GPU: no CUDA)."""
    tf = installed.get("tensorflow") or {}
    tf_version, want_version = tf.get("version"), desired.get("tensorflow_version")
    tf_variant, want_variant = tf.get("variant"), desired.get("variant")
    tf_row = _compare(tf_version, want_version,
                      tf_version == want_version and (not tf_variant or tf_variant == want_variant))
    tf_row.update(installed_variant=tf_variant, desired_variant=want_variant, package=tf.get("package"))
    gpu = bool(desired.get("gpu_node"))
    cuda = (installed.get("cuda") or {}).get("version")
    want_cuda = desired.get("cuda") if gpu else None
    cudnn = (installed.get("cudnn") or {}).get("version")
    want_cudnn = (desired.get("cudnn_full") or desired.get("cudnn")) if gpu else None
    driver = (installed.get("driver") or {}).get("version")
    action = desired.get("driver_action")
    if action == "install":  # the driver role installs this branch
        want_driver = f"branch {desired.get('driver_branch')}"
        driver_ok = _parts(driver)[:1] == [str(desired.get("driver_branch"))]
    elif action == "adopt":  # the loaded driver is new enough and stays
        want_driver, driver_ok = f">= {desired.get('min_driver')} (kept)", True
    else:  # skip: no GPU here (or a CPU build), nothing to install
        want_driver, driver_ok = None, True
    return {
        "tensorflow": tf_row,
        "cuda": _compare(cuda, want_cuda, same_release(cuda, want_cuda)),
        "cudnn": _compare(cudnn, want_cudnn, same_release(cudnn, want_cudnn)),
        "driver": {**_compare(driver, want_driver, driver_ok), "action": action},
    }


def host_row(name: str, host: dict, changes: dict[str, list[str]]) -> dict:
    """One host's drift record: state (drift, in sync, failed, unreachable, not reached), versions, changes."""
    found = (host.get("data") or {}).get("drift")
    failures = [f"{f['task']}: {f['message']}" for f in host.get("failed_tasks") or []]
    row = {"host": name, "components": {}, "would_change": {role: list(tasks) for role, tasks in changes.items()},
           "changed_tasks": sum(len(tasks) for tasks in changes.values()), "problems": failures}
    if host.get("status") in ("failed", "unreachable"):
        return {**row, "state": host["status"]}
    if not found:  # the run stopped before this host's stack was read (another host failed the resolve play)
        return {**row, "state": "not reached"}
    if found.get("recorded_at"):  # its last converge stands: a run would skip the install (converge_check.yml)
        row["converge_recorded_at"] = found["recorded_at"]
    row["components"] = components(found.get("installed") or {}, found.get("desired") or {})
    row["python"] = {"installed": (found.get("installed") or {}).get("python"),
                     "desired": (found.get("desired") or {}).get("python")}
    drifting = row["changed_tasks"] > 0 or any(c["differs"] for c in row["components"].values())
    return {**row, "state": "drift" if drifting else "in sync"}


def rows(report: dict, changes: dict[str, dict[str, list[str]]]) -> list[dict]:
    return [host_row(name, host, changes.get(name, {})) for name, host in sorted(report["hosts"].items())]


def summary(found: list[dict]) -> str:
    drifting = sum(row["state"] == "drift" for row in found)
    text = f"{drifting} of {len(found)} host{'s' if len(found) != 1 else ''} drift"
    others = defaultdict(int)
    for row in found:
        if row["state"] not in ("drift", "in sync"):
            others[row["state"]] += 1
    return text + "".join(f", {count} {state}" for state, count in sorted(others.items()))


def write_json(found: list[dict], report: dict, path: Path) -> Path:
    record = {"summary": summary(found), "drifting": [row["host"] for row in found if row["state"] == "drift"],
              "inventory": report.get("inventory"), "limit": report.get("limit"), "status": report.get("status"),
              "report": str(Path(report["run_dir"]) / "report.json"), "hosts": {row["host"]: row for row in found}}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return path
