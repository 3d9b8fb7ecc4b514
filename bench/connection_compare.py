#!/usr/bin/env python3
"""What a no-op converge costs the controller over each way of reaching a container node. Prints JSON.

A benchmark, not a test: it measures. It starts N containers from the baked image (`make baked-image`: a node
converged by gpu_node.yml) with no network, runs playbooks/gpu_node.yml once to settle them, then runs it again
--repeat times per variant, the variants interleaved (round after round, so a change in the machine's load falls on
all of them alike), on the same nodes:

- docker_api: community.docker.docker_api, the Docker API from Python on the controller;
- docker: tfprov.gpu.docker_exec, the `docker exec` CLI (community.docker.docker reporting a stopped container as
  unreachable: what the local cloud's inventory uses);
- mitogen: community.docker.docker under Mitogen's mitogen_linear strategy, when --mitogen names a directory holding
  ansible_mitogen (`pip install --target DIR mitogen`); Mitogen is not one of tfprov's dependencies, and knows only
  the connection plugins it ships its own forms of.

Per run: wall time, the controller's CPU (user + sys of ansible-playbook and everything it started, the docker CLI
included; the Docker daemon's and the nodes' own work are not in it), changed and failed counts. The containers are
removed at the end.

    .venv/bin/python bench/connection_compare.py --nodes 4 --repeat 2 --mitogen /tmp/mitogen
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from converge_scale import controller_cpu_seconds  # noqa: E402 - the sibling benchmark's helper

ROOT = Path(__file__).resolve().parents[1]
WHEELHOUSE = "/var/cache/tfprov/wheelhouse"
CONNECTIONS = {"docker_api": "community.docker.docker_api", "docker": "tfprov.gpu.docker_exec",
               "mitogen": "community.docker.docker"}


def start_nodes(names: list[str], image: str) -> None:
    for name in names:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True)
        subprocess.run(["docker", "run", "-d", "--name", name, "--network", "none", "--tmpfs", "/run",
                        "--tmpfs", "/run/lock", "--tmpfs", "/tmp", "-v", "/sys/fs/cgroup:/sys/fs/cgroup:ro",
                        "-v", f"{WHEELHOUSE}:/wheelhouse:ro", image, "/lib/systemd/systemd"],
                       check=True, capture_output=True)


def write_inventory(path: Path, names: list[str]) -> None:
    """The nodes as molecule's cluster scenario sees them: no GPU, the host's disk, wheels from the wheelhouse."""
    settings = {"ansible_pipelining": True, "ansible_python_interpreter": "/usr/bin/python3",
                "tfprov_tf_address": "127.0.0.1", "tfprov_tf_port": 2222, "tfprov_require_gpu": False,
                "preflight_min_disk_gb": 5, "tfprov_pip_find_links": "/wheelhouse", "tfprov_pip_no_index": True}
    groups = {"tfprov_chief": {"hosts": {names[0]: None}},
              "tfprov_worker": {"hosts": {name: None for name in names[1:]}}}
    path.write_text(yaml.safe_dump({"all": {"vars": settings, "children": {"tfprov_nodes": {"children": groups}}}}))


def converge(inventory: Path, variant: str, mitogen: str | None) -> dict:
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    if variant == "mitogen":
        env.update(ANSIBLE_STRATEGY_PLUGINS=str(Path(mitogen) / "ansible_mitogen" / "plugins" / "strategy"),
                   ANSIBLE_STRATEGY="mitogen_linear",
                   PYTHONPATH=os.pathsep.join(filter(None, [mitogen, env.get("PYTHONPATH")])))
    cpu, started = controller_cpu_seconds(), time.monotonic()
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(inventory),
                           "-e", f"ansible_connection={CONNECTIONS[variant]}",
                           # The whole no-op path: a converge that stands would skip it (converge_scale --full-too).
                           "-e", "tfprov_converge_reuse_hours=0", "playbooks/gpu_node.yml"],
                          cwd=ROOT, env=env, capture_output=True, text=True)
    wall, cpu = time.monotonic() - started, controller_cpu_seconds() - cpu
    recap = re.findall(r"changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", proc.stdout)
    return {"variant": variant, "rc": proc.returncode, "wall_s": round(wall, 1), "controller_cpu_s": round(cpu, 1),
            "changed": sum(int(c) for c, _, _ in recap), "unreachable": sum(int(u) for _, u, _ in recap),
            "failed": sum(int(f) for _, _, f in recap), "load_1m": round(os.getloadavg()[0], 2),
            **({"output_tail": proc.stdout[-1500:] + proc.stderr[-1500:]} if proc.returncode else {})}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=2, help="runs per variant, interleaved")
    parser.add_argument("--image", default="tfprov/node-baked:bookworm")
    parser.add_argument("--mitogen", help="a directory holding ansible_mitogen (pip install --target DIR mitogen)")
    args = parser.parse_args(argv)
    variants = ["docker_api", "docker"] + (["mitogen"] if args.mitogen else [])
    names = [f"tfprov-conncmp-{n}" for n in range(1, args.nodes + 1)]
    runs: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="tfprov-conncmp-") as tmp:
        inventory = Path(tmp) / "hosts.yml"
        write_inventory(inventory, names)
        try:
            start_nodes(names, args.image)
            settle = converge(inventory, "docker", None)
            for _ in range(args.repeat):
                for variant in variants:
                    runs.append(converge(inventory, variant, args.mitogen))
                    print(json.dumps({k: v for k, v in runs[-1].items() if k != "output_tail"}), file=sys.stderr)
        finally:
            subprocess.run(["docker", "rm", "-f", *names], capture_output=True)
    per_variant = {v: [r for r in runs if r["variant"] == v and r["rc"] == 0] for v in variants}
    report = {
        "nodes": args.nodes, "cpus": os.cpu_count(), "settle": {k: settle[k] for k in ("rc", "changed", "wall_s")},
        "runs": runs,
        "controller_cpu_per_node_s": {v: [round(r["controller_cpu_s"] / args.nodes, 2) for r in rs]
                                      for v, rs in per_variant.items()},
        "wall_s": {v: [r["wall_s"] for r in rs] for v, rs in per_variant.items()},
    }
    print(json.dumps(report, indent=2))
    return 0 if all(r["rc"] == 0 and r["changed"] == 0 for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
