#!/usr/bin/env python3
"""How long inventories/aws.aws_ec2.yml takes to list 1,000 tfprov instances, cold and cached. Prints JSON.

A benchmark, not a test: it measures. It starts its own moto_server on 127.0.0.1 (a free port of 25000-25099,
dummy keys: no real AWS), runs the instances in bulk with boto3 (batches share a Name tag, so the run also shows
that hosts named by instance id never merge), then times `ansible-inventory --list` with the cache cleared (cold)
and again from the cache (cached). The cache lives in a temporary working directory, not the checkout's.
Targets: cold <= 5 s, cached <= 1 s.

`--list` also computes every host's variables and prints them all as JSON, which no run does. So the cached
inventory is timed a second way, as a run loads it: `ansible-playbook` of a play with no task (its hosts
localhost, so nothing runs), against the same empty play with `-i localhost,` (ansible-core's own floor).

    .venv/bin/python bench/inventory_scale.py --instances 1000 --repeat 3
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
INVENTORY = ROOT / "inventories" / "aws.aws_ec2.yml"
sys.path.insert(0, str(ROOT / "tests" / "support"))

import moto_server  # noqa: E402

# (role, instance type, share of the instances)
LAYOUT = (("chief", "g4dn.xlarge", 0.001), ("worker", "g4dn.xlarge", 0.6), ("worker", "p4d.24xlarge", 0.2),
          ("ps", "m5.xlarge", 0.199))


def run_instances(total: int) -> float:
    import boto3

    ec2 = boto3.client("ec2", region_name="us-east-1")
    image = ec2.describe_images(Owners=["amazon"], MaxResults=5)["Images"][0]["ImageId"]
    started = time.monotonic()
    for role, kind, share in LAYOUT:
        left = max(1, round(total * share))
        while left:
            batch = min(left, 100)
            tags = [{"Key": "tfprov:cluster", "Value": "bench"}, {"Key": "tfprov:role", "Value": role},
                    {"Key": "Name", "Value": f"bench-{role}"}]
            ec2.run_instances(ImageId=image, InstanceType=kind, MinCount=batch, MaxCount=batch,
                              TagSpecifications=[{"ResourceType": "instance", "Tags": tags}])
            left -= batch
    return time.monotonic() - started


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(argv: list[str], workdir: Path, env: dict) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds, stdout) of one ansible command: CPU time does not grow with the machine's load,
    wall time does."""
    cpu = children_cpu()
    started = time.monotonic()
    proc = subprocess.run([str(Path(sys.executable).parent / argv[0]), *argv[1:]], cwd=workdir, env=env,
                          capture_output=True, text=True, check=False)
    seconds = time.monotonic() - started
    if proc.returncode:
        raise SystemExit(f"{argv[0]} failed: {proc.stdout[-800:]}{proc.stderr[-800:]}")
    return seconds, children_cpu() - cpu, proc.stdout


def list_inventory(workdir: Path, env: dict, inventory: Path = INVENTORY) -> tuple[float, float, dict]:
    """(wall seconds, CPU seconds, the listing)."""
    seconds, cpu, out = timed(["ansible-inventory", "-i", str(inventory), "--list"], workdir, env)
    return seconds, cpu, json.loads(out)


# A run that loads the inventory and runs nothing: no host is contacted, no host's variables are computed.
EMPTY_PLAY = "- hosts: localhost\n  gather_facts: false\n  tasks: []\n"


def load_in_a_run(workdir: Path, env: dict, inventory: str) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of ansible-playbook loading the inventory for an empty play."""
    play = workdir / "empty_play.yml"
    if not play.exists():
        play.write_text(EMPTY_PLAY)
    seconds, cpu, _ = timed(["ansible-playbook", "-i", inventory, str(play)], workdir, env)
    return seconds, cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--instances", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3, help="cold and cached runs each (the best is reported)")
    args = parser.parse_args()
    port = moto_server.free_port(range(25000, 25100))
    os.environ.update({"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                       "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}", "AWS_EC2_METADATA_DISABLED": "true"})
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"))
    moto = moto_server.start(port)
    workdir = Path(tempfile.mkdtemp(prefix="tfprov-inventory-bench-"))
    try:
        create_seconds = run_instances(args.instances)
        inventory = INVENTORY
        cold, cached, cold_cpu, cached_cpu, run_load, run_floor = [], [], [], [], [], []
        for _ in range(args.repeat):
            shutil.rmtree(workdir / ".tfprov", ignore_errors=True)
            seconds, cpu, listing = list_inventory(workdir, env, inventory)
            cold.append(seconds)
            cold_cpu.append(cpu)
            seconds, cpu, cached_listing = list_inventory(workdir, env, inventory)
            cached.append(seconds)
            cached_cpu.append(cpu)
            run_load.append(load_in_a_run(workdir, env, str(inventory)))  # from the cache the listing left
            run_floor.append(load_in_a_run(workdir, env, "localhost,"))
        hosts = listing["_meta"]["hostvars"]
        result = {
            "instances": args.instances, "hosts_listed": len(hosts), "cached_hosts_listed":
                len(cached_listing["_meta"]["hostvars"]),
            "groups": {g: len(listing.get(g, {}).get("hosts", [])) for g in
                       ("tfprov_nodes", "tfprov_chief", "tfprov_worker", "tfprov_ps", "gpu_t4", "gpu_a100",
                        "gpu_a100_40gb")},
            "create_seconds": round(create_seconds, 2),
            "cold_seconds": [round(s, 2) for s in cold], "cached_seconds": [round(s, 2) for s in cached],
            "cold_best": round(min(cold), 2), "cached_best": round(min(cached), 2),
            "cold_cpu_seconds": [round(s, 2) for s in cold_cpu],
            "cached_cpu_seconds": [round(s, 2) for s in cached_cpu],
            "cached_run_load_seconds": [round(s, 2) for s, _ in run_load],
            "cached_run_load_cpu_seconds": [round(c, 2) for _, c in run_load],
            "run_floor_seconds": [round(s, 2) for s, _ in run_floor],
            "cached_run_load_best": round(min(s for s, _ in run_load), 2),
            "run_floor_best": round(min(s for s, _ in run_floor), 2),
            "targets": {"cold_seconds": 5, "cached_seconds": 1},
            "listing_bytes": len(json.dumps(listing)),
            "cpus": os.cpu_count(), "load_average_1m": round(os.getloadavg()[0], 2),
        }
        print(json.dumps(result, indent=2))
    finally:
        moto_server.stop(moto)
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
