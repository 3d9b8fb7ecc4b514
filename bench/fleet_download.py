#!/usr/bin/env python3
"""One download per fleet: a fresh `tfprov run node` on 1, 2, 4 and 8 private local nodes through the gateway's pip
cache, the cache emptied before each node count. Prints JSON.

A benchmark, not a test: it measures. Per node count, after `tfprov up local --nodes N` (fresh nodes, the private
network: the gateway is their only way out):
- from_pypi_bytes: what the pip cache fetched from PyPI during the run (the files it stored, each fetched once;
  the index pages, a few kB per project, are not counted);
- pypi_around_the_cache: connections the gateway's proxy opened to PyPI's hosts during the run (a node sent
  around the cache would fetch from outside again; 0 expected);
- from_debian_bytes / debian_served_bytes: what the gateway's apt cache (apt-cacher-ng, behind the proxy) fetched
  from the Debian mirror during the run and what it served to the nodes, from its log (I and O lines; the mirror's
  signed InRelease is asked again by every `apt-get update`, about 150 kB each);
- from_outside_bytes: the two together, everything the fleet fetched from outside;
- node_rx_bytes: what each node received on its interface (pip's downloads from the cache, apt's packages from
  the apt cache, SSH), their sum, and what one node received: without the caches each node fetches its share from
  outside itself;
- wall_s and controller_cpu_s of the run (converge_scale's measure_run).
With --cache-node, each cloud also has a node of role cache (the cluster's pip cache, as a cloud spec's `cache`
role makes one: roles/package_cache), whose upstream is the gateway's pip cache: the N nodes' pip goes through it.
Then cache_node_rx_bytes is what that node received (its fetches from upstream, apt and SSH: what a cloud cluster
takes from outside), and node_rx_bytes are the N nodes' alone.
The summary gives the targets of one download per fleet: bytes from outside for N nodes over 1 node's (8 nodes
within 5 %), the same for PyPI alone, and wall for 4 nodes over 1 node's (within 2x on a 2-core machine).

Run it alone (it replaces the local cloud), from the checkout:
    .venv/bin/python bench/fleet_download.py --nodes 1 2 4 8 --out fleet-download.json
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import converge_scale as converge  # noqa: E402 - the sibling benchmark's helpers

from tfprov.local import cloud as cloud_mod  # noqa: E402
from tfprov.local.gateway import PYPI_HOSTS  # noqa: E402
from tfprov.local.nodes import assign_roles, local_nodes  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TARGET_BYTES_8_OVER_1 = 1.05
TARGET_WALL_4_OVER_1 = 2.0


def stored_bytes(cache: Path) -> int:
    return sum(p.stat().st_size for p in cache.rglob("*") if p.is_file())


def rx_bytes(node: str) -> int:
    out = subprocess.run(["docker", "exec", node, "cat", "/sys/class/net/eth0/statistics/rx_bytes"],
                         capture_output=True, text=True).stdout.strip()
    return int(out or 0)


def proxy_connections_to_pypi(log: Path, offset: int) -> int:
    """CONNECTs the proxy logged to PyPI's hosts after offset (the log's size before the run)."""
    if not log.is_file():
        return 0
    with open(log, encoding="utf-8", errors="replace") as handle:
        handle.seek(offset)
        return sum(1 for line in handle if "Established connection" in line and any(h in line for h in PYPI_HOSTS))


def apt_cache_bytes(log: Path, offset: int) -> dict[str, int]:
    """apt-cacher-ng's log after offset: bytes fetched from the mirror (I lines) and served to the nodes (O)."""
    totals = {"I": 0, "O": 0}
    if log.is_file():
        with open(log, encoding="utf-8", errors="replace") as handle:
            handle.seek(offset)
            for fields in (line.split("|") for line in handle):
                if len(fields) >= 3 and fields[1] in totals and fields[2].isdigit():
                    totals[fields[1]] += int(fields[2])
    return {"from_debian_bytes": totals["I"], "debian_served_bytes": totals["O"]}


def _size(path: Path) -> int:
    return path.stat().st_size if path.is_file() else 0


def up_args(nodes: int, cache_node: bool) -> list[str]:
    """`tfprov up local` for N nodes of the usual layout, and a cache node first when asked."""
    if not cache_node:
        return ["--nodes", str(nodes), "--network", "private"]
    return ["--nodes", str(nodes + 1), "--roles", ",".join(["cache", *assign_roles(nodes)]), "--network", "private"]


def measure(nodes: int, runs_dir: Path, cache: Path, extra: list[str]) -> dict:
    cloud = cloud_mod.default_name()
    state = ROOT / ".tfprov" / "local" / "clouds" / cloud
    proxy_log, apt_log = state / "proxy.log", state / "apt-cache" / "apt-cacher.log"
    found = local_nodes(cloud)
    names = [n["name"] for n in found if n["labels"].get("tfprov.role") != "cache"]
    cache_node = [n["name"] for n in found if n["labels"].get("tfprov.role") == "cache"]
    rx0 = {n: rx_bytes(n) for n in names + cache_node}
    log_offset, apt_offset = _size(proxy_log), _size(apt_log)
    stored0 = stored_bytes(cache)
    run = converge.measure_run(nodes, "fresh", extra, runs_dir)
    received = {n: rx_bytes(n) - rx0[n] for n in names}
    via_cache = {"cache_node_rx_bytes": rx_bytes(cache_node[0]) - rx0[cache_node[0]]} if cache_node else {}
    debian = apt_cache_bytes(apt_log, apt_offset)
    from_pypi = stored_bytes(cache) - stored0
    return {**{k: v for k, v in run.items() if k != "output_tail"},
            "from_pypi_bytes": from_pypi, **debian, "from_outside_bytes": from_pypi + debian["from_debian_bytes"],
            "pypi_around_the_cache": proxy_connections_to_pypi(proxy_log, log_offset),
            "node_rx_bytes": received, "node_rx_total_bytes": sum(received.values()),
            "node_rx_max_bytes": max(received.values(), default=0), **via_cache,
            **({"output_tail": run["output_tail"]} if "output_tail" in run else {})}


def summary(runs: list[dict]) -> dict:
    ok = {r["nodes"]: r for r in runs if r.get("rc") == 0 and "from_pypi_bytes" in r}
    out = {}
    if 1 in ok and ok[1]["from_pypi_bytes"]:
        for n, r in sorted(ok.items()):
            out[f"from_outside_{n}_over_1"] = round(r["from_outside_bytes"] / ok[1]["from_outside_bytes"], 3)
            out[f"from_pypi_{n}_over_1"] = round(r["from_pypi_bytes"] / ok[1]["from_pypi_bytes"], 3)
            out[f"wall_{n}_over_1"] = round(r["wall_s"] / ok[1]["wall_s"], 2)
            # Without the caches every node fetches its share itself: N times one node's from outside.
            out[f"from_outside_{n}_without_cache_bytes"] = n * ok[1]["from_outside_bytes"]
        if 8 in ok:
            out["from_outside_8_within_5_percent_of_1"] = (
                ok[8]["from_outside_bytes"] <= TARGET_BYTES_8_OVER_1 * ok[1]["from_outside_bytes"])
        if 4 in ok:
            out["wall_4_within_2x_1"] = ok[4]["wall_s"] <= TARGET_WALL_4_OVER_1 * ok[1]["wall_s"]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--wait-load", type=float, help="before each node count, wait until the 1-min load is below")
    parser.add_argument("--max-wait", type=float, default=600, help="seconds to wait for --wait-load at most")
    parser.add_argument("--runs-dir", help="keep the run directories here (default: a temporary directory)")
    parser.add_argument("--out", help="write the JSON here too")
    parser.add_argument("--cache-node", action="store_true",
                        help="add a node of role cache: the N nodes' pip goes through it (the cloud layout)")
    parser.add_argument("-e", dest="extra_vars", action="append", default=[], help="extra variables for the runs")
    args = parser.parse_args(argv)
    extra = [arg for var in args.extra_vars for arg in ("-e", var)]
    runs: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="tfprov-fleet-download-") as tmp:
        runs_dir = Path(args.runs_dir or tmp)
        runs_dir.mkdir(parents=True, exist_ok=True)
        try:
            for nodes in args.nodes:
                converge.wait_for_quiet(args.wait_load, args.max_wait)
                cache = Path(tmp) / f"pip-cache-{nodes}"  # empty: the gateway starts with it at `up`
                os.environ["TFPROV_PIP_CACHE_DIR"] = str(cache)
                os.environ["TFPROV_APT_CACHE_DIR"] = str(Path(tmp) / f"apt-cache-{nodes}")  # empty too
                converge.tfprov("down", "local", runs_dir=runs_dir)
                up = converge.tfprov("up", "local", *up_args(nodes, args.cache_node), runs_dir=runs_dir)
                if up.returncode:
                    runs.append({"nodes": nodes, "run": "up", "rc": up.returncode, "output_tail": up.stderr[-1500:]})
                    break
                runs.append(measure(nodes, runs_dir, cache, extra))
                print({k: v for k, v in runs[-1].items() if k != "output_tail"}, file=sys.stderr, flush=True)
                if runs[-1]["rc"]:
                    break
        finally:
            converge.tfprov("down", "local", runs_dir=runs_dir)
    return converge.emit({"cpus": os.cpu_count(), "cache_node": args.cache_node, "runs": runs,
                          "summary": summary(runs)}, args.out)


if __name__ == "__main__":
    sys.exit(main())
