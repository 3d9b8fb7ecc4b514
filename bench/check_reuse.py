#!/usr/bin/env python3
"""What reusing the quick check saves: no-op `tfprov run node` (or `cluster`) on N converged local nodes, with the
tensorflow_gpu role's recorded check reused and with TensorFlow imported on every run, interleaved. Prints JSON.

A benchmark, not a test: it asserts nothing, it measures. It starts N nodes from the baked image
(`tfprov up local --nodes N --image IMAGE`), runs the plan once (that run checks and records), then ROUNDS rounds of
two no-op runs on the same nodes: `import` (`-e tensorflow_gpu_check_reuse_hours=0`, as before the record existed)
and `reuse` (the default). With --plan node both run with --full: a converge that stands would skip the check
altogether (converge_scale.py --full-too measures that). Per run: wall time, the controller's CPU (tfprov and
everything it started) and the nodes' CPU (their containers' cgroups: cgroup v1 cpuacct or v2 cpu.stat), and
whether the check was reused.
Run it alone: it removes the local cloud before and after.

    .venv/bin/python bench/check_reuse.py --nodes 4 --plan cluster --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from converge_scale import emit, measure_run, tfprov  # noqa: E402 - the sibling benchmark's helpers

from tfprov.local.nodes import local_nodes  # noqa: E402

IMPORT_EVERY_RUN = ["-e", "tensorflow_gpu_check_reuse_hours=0"]


def node_containers() -> list[str]:
    """The full ids of the local cloud's node containers (their cgroups are named by id)."""
    return [node["id"] for node in local_nodes()]


def container_cpu_seconds(container: str) -> float:
    """CPU time the container has used, from its cgroup (v1 under docker/, or v2's system.slice scope)."""
    v1 = Path(f"/sys/fs/cgroup/cpuacct/docker/{container}/cpuacct.usage")
    if v1.exists():
        return int(v1.read_text()) / 1e9
    v2 = Path(f"/sys/fs/cgroup/system.slice/docker-{container}.scope/cpu.stat")
    usage = next(line for line in v2.read_text().splitlines() if line.startswith("usage_usec "))
    return int(usage.split()[1]) / 1e6


def nodes_cpu_seconds(containers: list[str]) -> float:
    return sum(container_cpu_seconds(container) for container in containers)


def check_reused(report: dict) -> dict:
    """How many hosts' quick check was a reused record (reused_from), of how many checked."""
    checks = [host["data"]["gpu_check"] for host in report["hosts"].values() if "gpu_check" in (host.get("data") or {})]
    return {"checks": len(checks), "checks_reused": sum(bool(check.get("reused_from")) for check in checks)}


def measure(nodes: int, kind: str, extra: list[str], runs_dir: Path, plan: str, containers: list[str]) -> dict:
    before = nodes_cpu_seconds(containers)
    run = measure_run(nodes, kind, extra, runs_dir, plan, check_reused)
    run["nodes_cpu_s"] = round(nodes_cpu_seconds(containers) - before, 1)
    print(json.dumps({k: v for k, v in run.items() if k != "output_tail"}), file=sys.stderr)
    return run


def summary(runs: list[dict]) -> dict:
    """Per variant, the range of each figure over the rounds."""
    out = {}
    for kind in ("import", "reuse"):
        done = [run for run in runs if run["run"] == kind and run["rc"] == 0]
        for figure in ("wall_s", "controller_cpu_s", "nodes_cpu_s"):
            values = [run[figure] for run in done]
            if values:
                out[f"{kind}_{figure}"] = [min(values), max(values)]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=4)
    parser.add_argument("--plan", choices=["node", "cluster"], default="cluster")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--image", default="tfprov/node-baked:bookworm")
    parser.add_argument("--out", help="write the JSON here too")
    args = parser.parse_args(argv)
    runs: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="tfprov-check-reuse-") as tmp:
        runs_dir = Path(tmp)
        try:
            tfprov("down", "local", runs_dir=runs_dir)
            up = tfprov("up", "local", "--nodes", str(args.nodes), "--image", args.image, runs_dir=runs_dir)
            if up.returncode:
                runs.append({"run": "up", "rc": up.returncode, "output_tail": up.stderr[-1500:]})
            else:
                containers = node_containers()
                full = ["--full"] if args.plan == "node" else []  # the check itself, not the converge record
                runs.append(measure(args.nodes, "first", full, runs_dir, args.plan, containers))
                for _ in range(args.rounds if runs[-1]["rc"] == 0 else 0):
                    runs.append(measure(args.nodes, "import", IMPORT_EVERY_RUN + full, runs_dir, args.plan,
                                        containers))
                    runs.append(measure(args.nodes, "reuse", full, runs_dir, args.plan, containers))
        finally:
            tfprov("down", "local", runs_dir=runs_dir)
    report = {"cpus": os.cpu_count(), "plan": args.plan, "nodes": args.nodes, "runs": runs, "summary": summary(runs)}
    return emit(report, args.out)


if __name__ == "__main__":
    sys.exit(main())
