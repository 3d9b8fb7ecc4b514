#!/usr/bin/env python3
"""How `tfprov run cluster` scales with nodes: a fresh run, then no-op runs, on 1, 2, 4 local nodes. Prints JSON.

A benchmark, not a test: it asserts nothing, it measures. For each node count it removes the local cloud, starts
that many fresh nodes in the default layout (`tfprov up local --nodes N`: 1 chief; 2 chief, worker; 4 chief, two
workers, ps), runs `tfprov run cluster` once fresh and --noop-runs times more, and reports per run the wall time,
the tasks, the changed count, the controller's CPU time, and what the distributed check measured: the cluster's
examples/s and its scaling efficiency (from the run's report.json). The summary compares the best no-op run on
4 nodes with the one on 1 node (target: within 2x). Helpers shared with converge_scale.py come from there.

--image starts the nodes from an image baked from a converged node (`make baked-image`): the fresh run then skips
the TensorFlow install and measures the cluster itself. Run it alone: it removes the local cloud before each node
count and at the end.

    .venv/bin/python bench/cluster_scale.py --nodes 1 2 4 --wheelhouse /var/cache/tfprov/wheelhouse
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import converge_scale as converge  # noqa: E402 - the sibling benchmark's helpers

from tfprov import cluster  # noqa: E402

TARGET_FOUR_OVER_ONE = converge.TARGET_FOUR_OVER_ONE


def distributed_check(report: dict) -> dict:
    """The built-in check's numbers, as the CLI's table shows them; empty when no task printed a report."""
    reports = cluster.check_reports(cluster.tasks(report))
    if not reports:
        return {}
    found = cluster.summary(reports)
    check = found["check"]
    return {"check_ok": found["ok"], "strategy": check.get("strategy"), "workers": check.get("workers"),
            "cluster_examples_per_s": check.get("cluster_examples_per_s"),
            "single_worker_examples_per_s": check.get("single_worker_examples_per_s"),
            "scaling_efficiency": check.get("scaling_efficiency"), "problems": found["problems"]}


def summary(runs: list[dict]) -> dict:
    """The best no-op run per node count, and no-op(4)/no-op(1) against the target of 2."""
    noop: dict[int, float] = {}
    for r in runs:
        if r["run"] == "noop" and r["rc"] == 0:
            noop[r["nodes"]] = min(r["wall_s"], noop.get(r["nodes"], r["wall_s"]))
    out: dict = {f"noop_{n}_nodes_s": noop[n] for n in sorted(noop)}
    if 1 in noop and 4 in noop:
        out["noop_4_over_1"] = round(noop[4] / noop[1], 2)
        out["noop_4_over_1_target"] = TARGET_FOUR_OVER_ONE
        out["noop_4_within_2x_1"] = noop[4] / noop[1] <= TARGET_FOUR_OVER_ONE
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--image", help="start the nodes from this image (e.g. tfprov/node-baked:bookworm)")
    parser.add_argument("--strategy", choices=("multi_worker_mirrored", "parameter_server"),
                        help="tfprov run cluster --strategy (default: the role's, multi_worker_mirrored)")
    parser.add_argument("--wheelhouse", help="a directory of wheels the nodes install from (no index)")
    parser.add_argument("--noop-runs", type=int, default=1, help="no-op runs per node count (the best is kept too)")
    parser.add_argument("--wait-load", type=float, help="before each node count, wait until the 1-min load is below")
    parser.add_argument("--max-wait", type=float, default=600, help="seconds to wait for --wait-load at most")
    parser.add_argument("--runs-dir", help="keep the run directories here (default: a temporary directory)")
    parser.add_argument("--out", help="write the JSON here too")
    args = parser.parse_args(argv)
    up_args = ["--image", args.image] if args.image else []
    with tempfile.TemporaryDirectory(prefix="tfprov-cluster-scale-") as tmp, converge.served(args.wheelhouse) as url:
        runs_dir = Path(args.runs_dir or tmp)
        runs_dir.mkdir(parents=True, exist_ok=True)
        extra = ["-e", f"tfprov_pip_find_links={url}", "-e", "tfprov_pip_no_index=true"] if url else []
        extra += ["--strategy", args.strategy] if args.strategy else []
        runs = converge.measure_node_counts(args, extra, runs_dir, "cluster", tuple(up_args), distributed_check)
    report = {"cpus": os.cpu_count(), "image": args.image, "wheelhouse": bool(args.wheelhouse),
              "strategy": args.strategy, "runs": runs, "summary": summary(runs)}
    return converge.emit(report, args.out)


if __name__ == "__main__":
    sys.exit(main())
