#!/usr/bin/python3
"""tfprov's idle-stop checker (roles/idle_stop), run by tfprov-idle-stop.timer: stops the VM when every GPU has been
idle and no user session has been open for --minutes. Python 3.7+ standard library only (the node's Python).

Idle, per check: GPU nodes, every GPU's utilization below --threshold percent and no session; nodes without a GPU
(no nvidia-smi), no session and the 5-minute load average per CPU below --cpu-threshold percent (a ps or CPU node
serving a training job has no GPU to show it). Never idle, whatever GPU and load say: a node with an active unit
matching --busy-unit (the cluster's tfprov-tf-* services: a parameter server waits at no load) or a running
container named by --busy-container (TF Serving answers at no load). A reading that fails (nvidia-smi errors) is not idle: never stop
on what could not be read. State: --state (idle_since, the reading, the last check, the decision).
--report prints the reading and the state as JSON and changes nothing (the idle report uses it).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import urllib.request
from datetime import datetime, timezone

STATE = "/var/lib/tfprov/idle.json"
BOOT_ID = "/proc/sys/kernel/random/boot_id"
TIMER = "/etc/systemd/system/tfprov-idle-stop.timer"
METADATA = "http://metadata.google.internal/computeMetadata/v1"
COMPUTE = "https://compute.googleapis.com/compute/v1"


def run(argv: list[str]) -> tuple[int, str]:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as err:
        return 127, str(err)
    return proc.returncode, proc.stdout if proc.returncode == 0 else (proc.stderr or proc.stdout)


def read_gpus(nvidia_smi: str = "nvidia-smi", runner=run) -> dict:
    """{'present': bool, 'gpus': [{'index', 'utilization'}], 'error': str}: no nvidia-smi means no GPU."""
    if not shutil.which(nvidia_smi):
        return {"present": False, "gpus": [], "error": ""}
    rc, out = runner([nvidia_smi, "--query-gpu=index,utilization.gpu", "--format=csv,noheader,nounits"])
    if rc != 0:
        return {"present": True, "gpus": [], "error": f"nvidia-smi failed: {out.strip()[:200]}"}
    gpus = []
    for line in out.splitlines():
        parts = [part.strip() for part in line.split(",")]
        if len(parts) != 2:
            continue
        try:
            gpus.append({"index": int(parts[0]), "utilization": float(parts[1])})
        except ValueError:  # "[N/A]" or "[Not Supported]": unreadable, so not idle
            return {"present": True, "gpus": gpus, "error": f"unreadable utilization: {line.strip()}"}
    if not gpus:
        return {"present": True, "gpus": [], "error": "nvidia-smi listed no GPU"}
    return {"present": True, "gpus": gpus, "error": ""}


def read_sessions(runner=run) -> list[str]:
    """Users with an open session: systemd-logind's list, else utmp's (who)."""
    rc, out = runner(["loginctl", "list-sessions", "--no-legend"])
    if rc == 0:
        # SESSION UID USER [SEAT] [TTY ...]; the user is the third column.
        return sorted(line.split()[2] for line in out.splitlines() if len(line.split()) >= 3)
    rc, out = runner(["who"])
    return sorted(line.split()[0] for line in out.splitlines() if line.split()) if rc == 0 else []


def read_workloads(units, containers, runner=run) -> list[str]:
    """What runs that keeps the node busy at any GPU or load: active systemd units matching the patterns, running
    containers of those names. No systemd or no container engine answering means none of them runs."""
    busy = []
    if units:
        rc, out = runner(["systemctl", "list-units", "--state=active", "--no-legend", "--plain", *units])
        if rc == 0:
            busy += [line.split()[0] for line in out.splitlines() if line.split()]
    for name in containers:
        rc, out = runner(["docker", "ps", "--quiet", "--filter", "name=^%s$" % name, "--filter", "status=running"])
        if rc == 0 and out.strip():
            busy.append("container " + name)
    return busy


def cpu_load_percent() -> float:
    return round(os.getloadavg()[1] / (os.cpu_count() or 1) * 100, 1)


def reading(args, runner=run, load=cpu_load_percent) -> dict:
    gpu = read_gpus(args.nvidia_smi, runner)
    sessions = read_sessions(runner)
    workloads = read_workloads(args.busy_unit or [], args.busy_container or [], runner)
    cpu = load()
    if gpu["error"]:
        idle, why = False, gpu["error"]
    elif sessions:
        idle, why = False, f"{len(sessions)} session(s) open: {', '.join(sorted(set(sessions)))}"
    elif workloads:
        idle, why = False, f"running: {', '.join(workloads)}"
    elif gpu["present"]:
        busy = [g for g in gpu["gpus"] if g["utilization"] >= args.threshold]
        idle = not busy
        why = (f"GPU {', '.join(str(g['index']) for g in busy)} at or above {args.threshold:g} %" if busy
               else f"every GPU below {args.threshold:g} % and no session")
    else:
        idle = cpu < args.cpu_threshold
        why = (f"no GPU, no session and CPU load {cpu:g} % below {args.cpu_threshold:g} %" if idle
               else f"no GPU and CPU load {cpu:g} % at or above {args.cpu_threshold:g} %")
    return {"idle": idle, "reason": why, "gpu_present": gpu["present"], "gpus": gpu["gpus"],
            "sessions": len(sessions), "session_users": sorted(set(sessions)), "workloads": workloads,
            "cpu_load_percent": cpu}


def load_state(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as handle:
            state = json.load(handle)
        return state if isinstance(state, dict) else {}
    except (OSError, ValueError):
        return {}


def write_state(path: str, state: dict) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    temp = f"{path}.tmp"
    with open(temp, "w", encoding="utf-8") as handle:
        json.dump(state, handle, indent=2, sort_keys=True)
        handle.write("\n")
    os.replace(temp, path)  # the report never reads half a file


def parse_time(value) -> datetime | None:
    try:
        return datetime.fromisoformat(value) if value else None
    except (TypeError, ValueError):
        return None


def decide(now: datetime, previous: dict, read: dict, minutes: float) -> dict:
    """The new state: the idle timer starts at the first idle reading and resets at the first busy one."""
    since = parse_time(previous.get("idle_since")) if read["idle"] else None
    if read["idle"] and since is None:
        since = now
    idle_minutes = round((now - since).total_seconds() / 60, 1) if since else 0.0
    return {**read, "idle_since": since.isoformat() if since else None, "idle_minutes": idle_minutes,
            "stop_after_minutes": minutes, "last_check": now.isoformat(),
            "stop_due": bool(since) and idle_minutes >= minutes}


# The one GCP call made on the node itself, with the standard library: the node's system Python has no google-auth
# (tfprov's GCP client, plugins/module_utils/gcp_api.py, runs on the controller), and the VM's own token comes from
# the metadata server, which needs no credentials library.
def metadata(path: str, base: str) -> str:
    request = urllib.request.Request(f"{base}/{path}", headers={"Metadata-Flavor": "Google"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.read().decode()


def stop_gcp(metadata_url: str = METADATA, compute_url: str = COMPUTE) -> str:
    """instances.stop on this VM, as the VM's own service account (its token from the metadata server; the
    account needs compute.instances.stop and the VM the compute or cloud-platform scope). The token is never
    printed or written."""
    token = json.loads(metadata("instance/service-accounts/default/token", metadata_url))["access_token"]
    project = metadata("project/project-id", metadata_url)
    zone = metadata("instance/zone", metadata_url).rsplit("/", 1)[-1]
    name = metadata("instance/name", metadata_url)
    request = urllib.request.Request(f"{compute_url}/projects/{project}/zones/{zone}/instances/{name}/stop",
                                     data=b"", method="POST", headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return f"instances.stop {project}/{zone}/{name}: HTTP {response.status}"


def stop(method: str, args, runner=run) -> str:
    if method == "gcp_api":
        return stop_gcp(args.metadata_url, args.compute_url)
    # AWS (EBS-backed) and GCP both stop, not terminate, a VM whose OS shuts down, unless configured otherwise.
    rc, out = runner(["systemctl", "poweroff"])
    return "systemctl poweroff" if rc == 0 else f"systemctl poweroff failed: {out.strip()[:200]}"


def boot_id(path: str = BOOT_ID) -> str | None:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read().strip() or None
    except OSError:
        return None


def this_boots(previous: dict, boot: str | None) -> dict:
    """The previous state if it was written during this boot, else nothing: idle time before a stop never counts
    after the VM is started again (its user started it to use it; the window starts over)."""
    return previous if boot is None or previous.get("boot_id") == boot else {}


def check(args, now: datetime | None = None, runner=run, load=cpu_load_percent, stopper=stop) -> dict:
    now = now or datetime.now(timezone.utc)  # noqa: UP017 - nodes may run Python < 3.11
    boot = boot_id(args.boot_id)
    state = decide(now, this_boots(load_state(args.state), boot), reading(args, runner, load), args.minutes)
    state.update({"method": args.method, "dry_run": args.dry_run, "enabled": True, "boot_id": boot})
    if not state["stop_due"]:
        state["decision"] = "stay up"
    elif args.dry_run:
        state["decision"] = f"would stop ({args.method}, dry run)"
    else:
        state["decision"] = f"stop ({args.method})"
        write_state(args.state, state)  # recorded before the VM goes down
        try:
            state["stop_result"] = stopper(args.method, args, runner)
        except Exception as err:  # noqa: BLE001 - one line in the state and the journal; the next check retries
            state["stop_result"] = f"stop failed: {type(err).__name__}: {err}"
    write_state(args.state, state)
    return state


def report(args, now: datetime | None = None, runner=run, load=cpu_load_percent) -> dict:
    """Read-only: a fresh reading, with the timer's idle_since when the timer's last check saw the node idle too."""
    now = now or datetime.now(timezone.utc)  # noqa: UP017 - nodes may run Python < 3.11
    previous = this_boots(load_state(args.state), boot_id(args.boot_id))
    state = decide(now, previous if previous.get("idle") else {}, reading(args, runner, load),
                   previous.get("stop_after_minutes", args.minutes))
    state.update({"enabled": os.path.exists(args.timer), "timer_last_check": previous.get("last_check"),
                  "decision": previous.get("decision"), "method": previous.get("method"),
                  "dry_run": previous.get("dry_run")})
    if not state["enabled"]:
        state["stop_after_minutes"] = None
    return state


def parser() -> argparse.ArgumentParser:
    out = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    out.add_argument("--minutes", type=float, default=60, help="idle minutes before the VM stops")
    out.add_argument("--threshold", type=float, default=5, help="GPU utilization (%%) below which a GPU is idle")
    out.add_argument("--cpu-threshold", type=float, default=10,
                     help="nodes without a GPU: 5-min load per CPU (%%) below which the node is idle")
    out.add_argument("--busy-unit", action="append", metavar="PATTERN",
                     help="a systemd unit pattern whose active units keep the node busy (repeatable)")
    out.add_argument("--busy-container", action="append", metavar="NAME",
                     help="a container name whose running container keeps the node busy (repeatable)")
    out.add_argument("--method", choices=["shutdown", "gcp_api"], default="shutdown")
    out.add_argument("--dry-run", action="store_true", help="decide and record, never stop")
    out.add_argument("--report", action="store_true", help="print the reading and the state as JSON, change nothing")
    out.add_argument("--state", default=STATE)
    out.add_argument("--timer", default=TIMER, help=argparse.SUPPRESS)
    out.add_argument("--boot-id", default=BOOT_ID, help=argparse.SUPPRESS)
    out.add_argument("--nvidia-smi", default="nvidia-smi", help=argparse.SUPPRESS)
    out.add_argument("--metadata-url", default=METADATA, help=argparse.SUPPRESS)
    out.add_argument("--compute-url", default=COMPUTE, help=argparse.SUPPRESS)
    return out


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.report:
        print(json.dumps(report(args), sort_keys=True))
        return 0
    state = check(args)
    print(f"idle {state['idle_minutes']:g}/{args.minutes:g} min ({state['reason']}): {state['decision']}"
          + (f": {state['stop_result']}" if state.get("stop_result") else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
