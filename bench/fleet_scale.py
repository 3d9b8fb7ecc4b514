#!/usr/bin/env python3
"""How `tfprov fleet drift` and a no-op `tfprov fleet update` scale with nodes: 1, 4 and 8 local nodes started from
the image baked from a converged node (TensorFlow installed: the update has nothing to do). Prints JSON.

A benchmark, not a test: it asserts nothing, it measures. For each node count it replaces the local cloud with that
many nodes (chief, workers, one ps from 4 nodes on; no serving node), then runs `tfprov fleet drift` (a fleet in
sync), `tfprov fleet drift` with a desired TensorFlow version the nodes do not have (every host drifts: the same
work plus what pip's check finds), and `tfprov fleet update` --noop-runs times; then `tfprov run node` (each node's
converge then stands) and, --noop-runs times, `tfprov fleet drift` reading the records beside one looking at every
node in full (`-e tfprov_converge_reuse_hours=0`). Per run: wall time, tasks, changed
count, hosts that drift, the controller's CPU time and the load before. Helpers shared with converge_scale.py come
from there. Run it alone: it removes the local cloud before each node count and at the end.

--inventory measures on nodes you already run instead (no up/down): the first N hosts of its tfprov_nodes group.

    .venv/bin/python bench/fleet_scale.py --nodes 1 4 8 --image tfprov/node-baked:bookworm
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import converge_scale as converge  # noqa: E402 - the sibling benchmark's helpers

BAKED = "tfprov/node-baked:bookworm"
DRIFT_VERSION = "2.20.0"  # a version the baked nodes (2.21.0) do not have


def layout(nodes: int) -> str:
    """chief; chief, worker, worker, ps; ... more workers: no serving node (its engine is another benchmark)."""
    if nodes < 4:
        return ",".join(["chief"] + ["worker"] * (nodes - 1))
    return ",".join(["chief"] + ["worker"] * (nodes - 2) + ["ps"])


def inventory_hosts(inventory: str) -> list[str]:
    exe = str(Path(sys.executable).parent / "ansible-inventory")
    proc = subprocess.run([exe, "-i", inventory, "--list"], cwd=converge.ROOT, capture_output=True, text=True,
                          check=True, env={**os.environ, "ANSIBLE_CONFIG": str(converge.ROOT / "ansible.cfg")})
    return sorted(json.loads(proc.stdout).get("tfprov_nodes", {}).get("hosts", []))


def drifting(run_dir: Path) -> int | None:
    path = run_dir / "fleet" / "drift.json"
    return len(json.loads(path.read_text())["drifting"]) if path.is_file() else None


def measure(nodes: int, kind: str, command: list[str], runs_dir: Path) -> dict:
    """One tfprov command, timed from outside, with what its report and events say."""
    before = set(runs_dir.iterdir())
    load = os.getloadavg()[0]
    cpu0, wall0 = converge.controller_cpu_seconds(), time.monotonic()
    proc = converge.tfprov(*command, runs_dir=runs_dir)
    wall, cpu = time.monotonic() - wall0, converge.controller_cpu_seconds() - cpu0
    new = sorted(path for path in set(runs_dir.iterdir()) - before if path.is_dir())  # not the runs' index.html
    run_dir = new[-1] if new else None
    report = json.loads((run_dir / "report.json").read_text()) if run_dir and (run_dir / "report.json").is_file() \
        else {"hosts": {}}
    counts = converge.task_counts(run_dir) if run_dir else {"tasks": 0, "task_results": 0}
    return {
        "nodes": nodes, "run": kind, "command": " ".join(command[:2]), "rc": proc.returncode, "wall_s": round(wall, 1),
        **counts,
        "changed": sum(host.get("changed", 0) for host in report["hosts"].values()),
        "hosts": len(report["hosts"]),
        "hosts_drifting": drifting(run_dir) if run_dir else None,
        "controller_cpu_s": round(cpu, 1),
        "load_1m_before": round(load, 2),
        "run_dir": str(run_dir) if run_dir else None,
        **({"output_tail": (proc.stdout + proc.stderr)[-1500:]} if proc.returncode else {}),
    }


def measure_fleet(nodes: int, target: list[str], args, runs_dir: Path) -> list[dict]:
    plan = [("drift", ["fleet", "drift", *target]),
            ("drift_all_hosts", ["fleet", "drift", *target, "-e", f"tfprov_tf_version={DRIFT_VERSION}"])]
    plan += [("update_noop", ["fleet", "update", *target])] * args.noop_runs
    # After a `tfprov run node` each node's converge stands: drift reads its record; -e ...=0 looks in full.
    plan += [("run_node", ["run", "node", *target])]
    plan += [("drift_recorded", ["fleet", "drift", *target]),
             ("drift_full", ["fleet", "drift", *target, "-e", "tfprov_converge_reuse_hours=0"])] * args.noop_runs
    runs = []
    for kind, command in plan:
        runs.append(measure(nodes, kind, command, runs_dir))
        print(json.dumps({k: v for k, v in runs[-1].items() if k != "output_tail"}), file=sys.stderr)
    return runs


def measure_node_counts(args, runs_dir: Path) -> list[dict]:
    runs: list[dict] = []
    if args.inventory:
        hosts = inventory_hosts(args.inventory)
        for nodes in args.nodes:
            if nodes > len(hosts):
                reason = f"{args.inventory} has {len(hosts)} hosts"
                runs.append({"nodes": nodes, "run": "skipped", "rc": 0, "reason": reason})
                continue
            converge.wait_for_quiet(args.wait_load, args.max_wait)
            runs += measure_fleet(nodes, ["-i", args.inventory, "-l", ",".join(hosts[:nodes])], args, runs_dir)
        return runs
    try:
        for nodes in args.nodes:
            converge.wait_for_quiet(args.wait_load, args.max_wait)
            converge.tfprov("down", "local", runs_dir=runs_dir)
            up = converge.tfprov("up", "local", "--nodes", str(nodes), "--roles", layout(nodes), "--image", args.image,
                                 runs_dir=runs_dir)
            if up.returncode:
                runs.append({"nodes": nodes, "run": "up", "rc": up.returncode, "output_tail": up.stderr[-1500:]})
                break
            runs += measure_fleet(nodes, [], args, runs_dir)
    finally:
        converge.tfprov("down", "local", runs_dir=runs_dir)
    return runs


def summary(runs: list[dict]) -> dict:
    """The best time of each kind per node count, and 8 (else the largest) over 1."""
    best: dict[str, dict[int, float]] = {}
    for r in runs:
        if r.get("rc") == 0 and "wall_s" in r:
            kind = best.setdefault(r["run"], {})
            kind[r["nodes"]] = min(r["wall_s"], kind.get(r["nodes"], r["wall_s"]))
    out: dict = {}
    for kind, by_nodes in sorted(best.items()):
        out.update({f"{kind}_{n}_nodes_s": by_nodes[n] for n in sorted(by_nodes)})
        if 1 in by_nodes and len(by_nodes) > 1:
            largest = max(by_nodes)
            out[f"{kind}_{largest}_over_1"] = round(by_nodes[largest] / by_nodes[1], 2)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, nargs="+", default=[1, 4, 8])
    parser.add_argument("--image", default=BAKED, help=f"the nodes' image (default {BAKED}: TensorFlow installed)")
    parser.add_argument("--inventory", help="measure on the nodes of this inventory instead (no up/down local)")
    parser.add_argument("--noop-runs", type=int, default=1, help="no-op updates per node count (the best is kept too)")
    parser.add_argument("--wait-load", type=float, help="before each node count, wait until the 1-min load is below")
    parser.add_argument("--max-wait", type=float, default=600, help="seconds to wait for --wait-load at most")
    parser.add_argument("--runs-dir", help="keep the run directories here (default: a temporary directory)")
    parser.add_argument("--out", help="write the JSON here too")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="tfprov-fleet-scale-") as tmp:
        runs_dir = Path(args.runs_dir or tmp)
        runs_dir.mkdir(parents=True, exist_ok=True)
        runs = measure_node_counts(args, runs_dir)
    report = {"cpus": os.cpu_count(), "image": None if args.inventory else args.image, "inventory": args.inventory,
              "runs": runs, "summary": summary(runs)}
    return converge.emit(report, args.out)


if __name__ == "__main__":
    sys.exit(main())
