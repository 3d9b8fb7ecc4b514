#!/usr/bin/env python3
"""How `tfprov run node` scales with nodes: a fresh run, then a no-op run, on 1, 2, 4, 8 local nodes. Prints JSON.

With --full-too each no-op run is followed by one with `--full` (every play on every node, the converge record
not reused), on the same nodes: the fast path and the whole no-op path side by side, interleaved. With --image
the nodes start from that image (a baked one: the "fresh" run is then its first converge on these nodes).

A benchmark, not a test: it asserts nothing, it measures. For each node count it removes the local cloud, starts
that many fresh nodes (`tfprov up local --nodes N`), runs `tfprov run node` twice, and reports per run the wall
time, the tasks (distinct, and results over all hosts), the wall time per task, the changed count, and the
controller's CPU time (user + sys of tfprov and everything it started: ansible-playbook and its workers; node-side
work runs in the containers and is not in it). The load average before each run says what else the machine did.

Nodes install TensorFlow from a wheelhouse when one is given (--wheelhouse, e.g. /var/cache/tfprov/wheelhouse,
served by the private cloud's gateway: the nodes' --find-links is its URL), else from PyPI through the gateway's
proxy and the host's CA bundle.
Run it alone: it removes the local cloud before each node count and at the end.

    .venv/bin/python bench/converge_scale.py --nodes 1 2 4 8 --wheelhouse /var/cache/tfprov/wheelhouse
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULT_EVENTS = ("runner_on_ok", "runner_on_failed", "runner_on_skipped", "runner_on_unreachable")
TARGET_NOOP_ONE_NODE_S = 5.0
TARGET_FOUR_OVER_ONE = 2.0
TARGET_CONTROLLER_CPU_PER_NODE_S = 1.0  # at 8 nodes, a no-op


def task_counts(run_dir: Path) -> dict:
    """Distinct tasks started and task results over all hosts, from ansible-runner's job events."""
    tasks, results = 0, 0
    for path in run_dir.glob("artifacts/*/job_events/*.json"):
        event = json.loads(path.read_text(encoding="utf-8")).get("event")
        tasks += event == "playbook_on_task_start"
        results += event in RESULT_EVENTS
    return {"tasks": tasks, "task_results": results}


def controller_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def wait_for_quiet(max_load: float | None, max_wait_s: float) -> None:
    """Start when other work has calmed down (1-minute load below max_load), or after max_wait_s anyway."""
    deadline = time.monotonic() + max_wait_s
    while max_load is not None and os.getloadavg()[0] > max_load and time.monotonic() < deadline:
        time.sleep(10)


def tfprov(*args: str, runs_dir: Path) -> subprocess.CompletedProcess:
    exe = str(Path(sys.executable).parent / "tfprov")
    env = {**os.environ, "TFPROV_RUNS_DIR": str(runs_dir)}
    return subprocess.run([exe, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=3600)


def measure_run(nodes: int, kind: str, extra: list[str], runs_dir: Path, plan: str = "node",
                details=None) -> dict:
    """One `tfprov run PLAN`, timed from outside, with what its report and events say (and details(report))."""
    before_runs = set(runs_dir.glob(f"*-{plan}*"))
    load = os.getloadavg()[0]
    cpu0, wall0 = controller_cpu_seconds(), time.monotonic()
    proc = tfprov("run", plan, *extra, runs_dir=runs_dir)
    wall, cpu = time.monotonic() - wall0, controller_cpu_seconds() - cpu0
    new = sorted(set(runs_dir.glob(f"*-{plan}*")) - before_runs)
    report = json.loads((new[-1] / "report.json").read_text()) if new else {"hosts": {}}
    counts = task_counts(new[-1]) if new else {"tasks": 0, "task_results": 0}
    return {
        "nodes": nodes, "run": kind, "rc": proc.returncode, "wall_s": round(wall, 1),
        **counts,
        "per_task_s": round(wall / counts["tasks"], 3) if counts["tasks"] else None,
        "changed": sum(host.get("changed", 0) for host in report["hosts"].values()),
        "hosts_ok": sum(host.get("status") in ("ok", "changed") for host in report["hosts"].values()),
        "controller_cpu_s": round(cpu, 1),
        "load_1m_before": round(load, 2),
        **(details(report) if details else {}),
        "run_dir": str(new[-1]) if new else None,
        **({"output_tail": (proc.stdout + proc.stderr)[-1500:]} if proc.returncode else {}),
    }


def measure_node_counts(args, extra: list[str], runs_dir: Path, plan: str = "node", up_args: tuple = (),
                        details=None) -> list[dict]:
    """For each of args.nodes: a fresh local cloud of that many nodes, a fresh run, args.noop_runs no-op runs (each
    printed on stderr as it ends); the local cloud is removed at the end."""
    runs: list[dict] = []
    try:
        for nodes in args.nodes:
            wait_for_quiet(args.wait_load, args.max_wait)
            tfprov("down", "local", runs_dir=runs_dir)
            up = tfprov("up", "local", "--nodes", str(nodes), *up_args, runs_dir=runs_dir)
            if up.returncode:
                runs.append({"nodes": nodes, "run": "up", "rc": up.returncode, "output_tail": up.stderr[-1500:]})
                break
            full_too = getattr(args, "full_too", False)
            for kind in ["fresh"] + (["noop", "noop_full"] if full_too else ["noop"]) * args.noop_runs:
                more = ["--full"] if kind == "noop_full" else []
                runs.append(measure_run(nodes, kind, extra + more, runs_dir, plan, details))
                print(json.dumps({k: v for k, v in runs[-1].items() if k != "output_tail"}), file=sys.stderr)
                if runs[-1]["rc"]:
                    break
    finally:
        tfprov("down", "local", runs_dir=runs_dir)
    return runs


def emit(report: dict, out: str | None) -> int:
    """Print the JSON (and write it to out); the exit status says whether every run passed."""
    text = json.dumps(report, indent=2)
    if out:
        Path(out).write_text(text + "\n", encoding="utf-8")
    print(text)
    return 0 if all(r["rc"] == 0 for r in report["runs"]) else 1


def _best(runs: list[dict], kind: str, key: str) -> dict[int, float]:
    best: dict[int, float] = {}
    for r in runs:
        if r["run"] == kind and r["rc"] == 0 and r.get(key) is not None:
            best[r["nodes"]] = min(r[key], best.get(r["nodes"], r[key]))
    return best


def summary(runs: list[dict]) -> dict:
    """The issue's targets: a no-op on one node within 5 s, on 4 nodes within twice that, and the controller's CPU
    per node of a no-op at 8 nodes within 1 s; beside them the same of the no-op runs with --full, when measured."""
    noop = _best(runs, "noop", "wall_s")
    out = {}
    if 1 in noop:
        out["noop_1_node_s"] = noop[1]
        out["noop_1_node_within_5_s"] = noop[1] <= TARGET_NOOP_ONE_NODE_S
        for n in sorted(noop):
            out[f"noop_{n}_over_1"] = round(noop[n] / noop[1], 2)
        if 4 in noop:
            out["noop_4_within_2x_1"] = noop[4] / noop[1] <= TARGET_FOUR_OVER_ONE
    for kind in ("noop", "noop_full"):
        cpu = _best(runs, kind, "controller_cpu_s")
        if cpu:
            out[f"{kind}_controller_cpu_per_node_s"] = {n: round(cpu[n] / n, 2) for n in sorted(cpu)}
        if kind == "noop" and 8 in cpu:
            out["noop_8_controller_within_1_s_per_node"] = cpu[8] / 8 <= TARGET_CONTROLLER_CPU_PER_NODE_S
    full = _best(runs, "noop_full", "wall_s")
    if full:
        out["noop_full_s"] = {n: full[n] for n in sorted(full)}
    return out


@contextlib.contextmanager
def served(directory: str | None):
    """The wheelhouse the local cloud's gateway serves (`tfprov up local` reads TFPROV_WHEELHOUSE), as pip's
    --find-links: the nodes' own variable, templated on each node."""
    if not directory:
        yield None
        return
    before = os.environ.get("TFPROV_WHEELHOUSE")
    os.environ["TFPROV_WHEELHOUSE"] = str(Path(directory).resolve())
    try:
        yield "{{ tfprov_local_wheelhouse }}"
    finally:
        os.environ.pop("TFPROV_WHEELHOUSE") if before is None else os.environ.update(TFPROV_WHEELHOUSE=before)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--wheelhouse", help="a directory of wheels the nodes install from (no index)")
    parser.add_argument("--noop-runs", type=int, default=1, help="no-op runs per node count (the best is kept too)")
    parser.add_argument("--full-too", action="store_true",
                        help="follow each no-op run with one with --full (the whole no-op path), interleaved")
    parser.add_argument("--image", help="start the nodes from this image (tfprov up local --image)")
    parser.add_argument("--wait-load", type=float, help="before each node count, wait until the 1-min load is below")
    parser.add_argument("--max-wait", type=float, default=600, help="seconds to wait for --wait-load at most")
    parser.add_argument("--runs-dir", help="keep the run directories here (default: a temporary directory)")
    parser.add_argument("--out", help="write the JSON here too")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="tfprov-converge-scale-") as tmp, served(args.wheelhouse) as url:
        runs_dir = Path(args.runs_dir or tmp)
        runs_dir.mkdir(parents=True, exist_ok=True)
        extra = ["-e", f"tfprov_pip_find_links={url}", "-e", "tfprov_pip_no_index=true"] if url else []
        runs = measure_node_counts(args, extra, runs_dir, up_args=("--image", args.image) if args.image else ())
    report = {"cpus": os.cpu_count(), "wheelhouse": bool(args.wheelhouse), "image": args.image, "runs": runs,
              "summary": summary(runs)}
    return emit(report, args.out)


if __name__ == "__main__":
    sys.exit(main())
