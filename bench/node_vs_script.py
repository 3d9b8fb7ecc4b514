#!/usr/bin/env python3
"""`tfprov run node` beside a plain script that installs the same stack, on fresh private local nodes, interleaved.
Prints JSON.

A benchmark, not a test: it measures. Each round starts two fresh nodes (`tfprov up local --nodes 2 --network
private`, the plain node image: nothing installed), waits for both to finish booting, makes both nodes' apt lists
a day old (age_apt_lists: as on a cloud VM, both variants update them), fills the pip cache's index pages
(warm_pip_index), and runs, in an order that alternates between rounds:
- `tfprov`: `tfprov run node --limit <node 1>` (resolve, preflight, the roles, the admission gate, the quick check);
- `script`: on node 2, through `docker exec`, what a user would type instead (SCRIPT), as issue 21 gives it: apt-get
  update and install python3-venv, a venv, pip install of the same TensorFlow requirement from the same pip cache
  (pip compiles the bytecode, as by default), then import TensorFlow and one small matmul;
then each again on the same node (`noop`: tfprov's no-op run; the script re-run: apt and pip find everything).
Both go through the same gateway (its proxy, pip cache and apt cache); a warm-up round first fills the caches, so
no variant pays for a download from outside. The summary gives, per variant and kind, the range of wall times, and
tfprov's fresh wall over the script's in the same round (target: 1.25 by the rounds' median). Each run also records
the CPU time its node used (its container's cgroup) and, for tfprov, the controller's, and the summary sets tfprov's
CPU (node and controller) against the script's node CPU, round by round: how much more work tfprov does, which wall time
alone does not say (on this shared machine both vary by about half between rounds).

Where tfprov's extra time goes, step by step (`steps` of each fresh run): the script stamps the time after each of
its steps (apt, venv, pip, import: stamps inside the one `docker exec`, so the script's wall is not changed), and
tfprov's run gives the durations of the same steps as the tensorflow_gpu role's tasks (apt, pip, which creates the
environment too, compile: pip's bytecode on every core, check: the quick check's import). What is left of tfprov's
wall, `own_s`, is its own cost: preflight, resolve, the gate, the record, the profile file, Ansible's start and its
per-task work. The summary gives its range (`fresh_tfprov_own_s`) and, round by round, tfprov's shared steps over
the script's (`fresh_steps_tfprov_over_script`): how the install itself compares.

`--connection ssh` reaches both nodes over SSH instead (tfprov through the local SSH inventory, the script through
one `ssh ... sudo sh -c`), as a cloud VM is reached: each `docker exec` costs about 70 ms, and tfprov makes some 25
of them on a fresh node where the script makes one.

Run it alone (it replaces the local cloud), from the checkout:
    .venv/bin/python bench/node_vs_script.py --rounds 3 --out node-vs-script.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import converge_scale as converge  # noqa: E402 - the sibling benchmark's helpers
from check_reuse import container_cpu_seconds  # noqa: E402

from tfprov.local import cloud as cloud_mod  # noqa: E402
from tfprov.local.nodes import local_nodes  # noqa: E402
from tfprov.project import ensure_collection_link  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SSH_INVENTORY = str(ROOT / "inventories" / "local_ssh.docker_containers.yml")

TARGET_FRESH_OVER_SCRIPT = 1.25  # issue 50: by the median of the rounds (issue 21 had 1.2 in every round)
ENV_DIR = "/opt/plain/tf"
# What a user types instead of tfprov, on a Debian node behind the same proxy and pip cache.
# Each `step` line stamps the time a step ended (steps()); `date +%s.%N` is GNU date, as on every Debian node.
SCRIPT = r"""set -e
export DEBIAN_FRONTEND=noninteractive http_proxy="$PROXY" https_proxy="$PROXY" no_proxy="$SUBNET"
echo "step start $(date +%s.%N)"
apt-get update -qq
apt-get install -y -qq --no-install-recommends python3-venv >/dev/null
echo "step apt $(date +%s.%N)"
[ -x "$ENV_DIR/bin/python" ] || python3 -m venv "$ENV_DIR"
echo "step venv $(date +%s.%N)"
"$ENV_DIR/bin/pip" install -q --disable-pip-version-check --index-url "$INDEX" --trusted-host "$INDEX_HOST" "$REQ"
echo "step pip $(date +%s.%N)"
"$ENV_DIR/bin/python" -c 'import tensorflow as tf; x = tf.random.normal((256, 256)); print(tf.__version__,
float(tf.reduce_sum(tf.matmul(x, x))))'
echo "step import $(date +%s.%N)"
"""
# A node image keeps the apt lists of its build. Within the hour after it (cache_valid_time: 3600) the role's apt
# task would skip the update the script always runs; a cloud VM's image is older than that. Both nodes' lists are
# made a day old, so both variants update them (apt's module reads the success stamp, else the lists' directory).
def age_apt_lists(root: str = "") -> str:
    """The shell command that makes the apt lists under root (the node's /) a day old."""
    lists, stamp = (shlex.quote(f"{root}/var/lib/apt/{path}") for path in ("lists", "periodic/update-success-stamp"))
    return f"touch -d '1 day ago' {lists} && if [ -e {stamp} ]; then touch -d '1 day ago' {stamp}; fi"


# The tensorflow_gpu role's tasks that do what the script's steps do, by action and the start of their names.
TFPROV_STEPS = {"apt": ("ansible.builtin.apt", "Install "), "pip": ("ansible.builtin.pip", "Install TensorFlow"),
                "compile": ("ansible.builtin.command", "Compile "),
                "check": ("ansible.builtin.script", "Import TensorFlow")}


def requirement() -> str:
    """What the tensorflow_gpu role installs on a CPU node for the default (latest) TensorFlow, from the matrix."""
    sys.path.insert(0, str(ensure_collection_link(ROOT).parents[2]))
    from ansible_collections.tfprov.gpu.plugins.module_utils.compat import load_matrix, resolve_stack

    return f"tensorflow-cpu=={resolve_stack(load_matrix(), 'latest')['tensorflow_patch']}"


def script_env(labels: dict[str, str], req: str) -> dict[str, str]:
    """The script's settings, from the node's labels (the inventory's tfprov_http_proxy, tfprov_pip_index_url)."""
    index = labels["tfprov.pip_index"]
    return {"PROXY": labels["tfprov.http_proxy"], "SUBNET": labels["tfprov.subnet"], "INDEX": index,
            "INDEX_HOST": index.split("//", 1)[1].split("/", 1)[0].split(":")[0], "REQ": req, "ENV_DIR": ENV_DIR}


def ssh_command(labels: dict[str, str]) -> list[str]:
    """ssh to a private local node as the SSH inventory reaches it: its login user and key, through the cloud's jump,
    checking the host key `tfprov up local` recorded."""
    return ["ssh", "-p", labels["tfprov.ssh_port"], "-i", labels["tfprov.ssh_key"], "-o", "BatchMode=yes",
            "-o", "StrictHostKeyChecking=yes", "-o", "GlobalKnownHostsFile=/dev/null", "-o", "IdentitiesOnly=yes",
            "-o", f"UserKnownHostsFile={labels['tfprov.ssh_known_hosts']}",
            "-o", f"ProxyCommand={labels['tfprov.ssh_proxy']}",
            f"{labels['tfprov.ssh_user']}@{labels['tfprov.address']}"]


def script_command(node: str, env: dict[str, str], ssh: list[str] | None = None) -> list[str]:
    """The script on the node, as root, with its settings: through `docker exec`, or through ssh and sudo."""
    if ssh:
        return [*ssh, "sudo " + shlex.join(["env", *(f"{key}={value}" for key, value in env.items()), "sh", "-c",
                                            SCRIPT])]
    return ["docker", "exec", *(arg for key, value in env.items() for arg in ("-e", f"{key}={value}")), node, "sh",
            "-c", SCRIPT]


def run_script(node: str, env: dict[str, str], ssh: list[str] | None = None) -> dict:
    started = time.monotonic()
    proc = subprocess.run(script_command(node, env, ssh), capture_output=True, text=True)
    wall = round(time.monotonic() - started, 1)
    return {"wall_s": wall, "rc": proc.returncode, "steps": script_steps(proc.stdout, wall),
            **({"output_tail": (proc.stdout + proc.stderr)[-1500:]} if proc.returncode else {})}


def script_steps(stdout: str, wall: float) -> dict[str, float]:
    """Each step's seconds, from the script's `step NAME EPOCH` stamps, and own_s: the wall outside them."""
    stamps = [(parts[1], float(parts[2])) for parts in (line.split() for line in stdout.splitlines())
              if len(parts) == 3 and parts[0] == "step"]
    steps = {name: round(end - begin, 2) for (_, begin), (name, end) in itertools.pairwise(stamps)}
    return steps | {"own_s": round(wall - sum(steps.values()), 1)} if steps else {}


def tfprov_steps(run_dir: Path, wall: float) -> dict[str, float]:
    """The seconds of the role's tasks that match the script's steps (TFPROV_STEPS, from the run's job events), and
    own_s: the rest of the run's wall, tfprov's own cost."""
    steps = dict.fromkeys(TFPROV_STEPS, 0.0)
    for path in run_dir.glob("artifacts/*/job_events/*.json"):
        event = json.loads(path.read_text(encoding="utf-8"))
        data = event.get("event_data", {})
        if event.get("event") not in ("runner_on_ok", "runner_on_failed") or data.get("role") != "tensorflow_gpu":
            continue
        for step, (action, name) in TFPROV_STEPS.items():
            if data.get("task_action") == action and data.get("task", "").startswith(name):
                steps[step] += float(data.get("duration") or 0)
    steps = {step: round(seconds, 2) for step, seconds in steps.items()}
    return steps | {"own_s": round(wall - sum(steps.values()), 1)}


def warm_pip_index(index: str, host: str, req: str) -> None:
    """proxpi keeps PyPI's index pages in memory only: the gateway `up` starts has none, and whichever variant ran
    first would fetch the whole tree's pages from PyPI. Resolved once from the controller, inside the lab namespace
    (pip --dry-run: nothing installed, no pip cache), before either runs."""
    namespace = cloud_mod.Cloud(cloud_mod.default_name()).namespace
    subprocess.run(["ip", "netns", "exec", namespace, sys.executable, "-m", "pip",
                    "install", "--dry-run", "--ignore-installed", "--no-cache-dir", "--quiet",
                    "--disable-pip-version-check", "--index-url", index, "--trusted-host", host, req],
                   capture_output=True)


def one_round(number: int, runs_dir: Path, req: str, connection: str = "docker") -> list[dict]:
    """Two fresh nodes; each variant's fresh and no-op runs, the order alternating with the round's number."""
    converge.tfprov("down", "local", runs_dir=runs_dir)
    up = converge.tfprov("up", "local", "--nodes", "2", "--network", "private", runs_dir=runs_dir)
    if up.returncode:
        return [{"round": number, "variant": "up", "rc": up.returncode, "output_tail": up.stderr[-1500:]}]
    first, second = local_nodes(cloud_mod.default_name())  # by index
    tfprov_node, script_node = first["name"], second["name"]
    for node in (tfprov_node, script_node):  # what runs first would otherwise share the CPUs with both boots
        subprocess.run(["docker", "exec", node, "systemctl", "is-system-running", "--wait"], capture_output=True)
        subprocess.run(["docker", "exec", node, "sh", "-c", age_apt_lists()], capture_output=True, check=True)
    env = script_env(second["labels"], req)
    warm_pip_index(env["INDEX"], env["INDEX_HOST"], req)

    over_ssh = connection == "ssh"

    def tfprov_run(kind):
        run = converge.measure_run(1, kind, ["--limit", tfprov_node, *(["-i", SSH_INVENTORY] if over_ssh else [])],
                                   runs_dir)
        steps = tfprov_steps(Path(run["run_dir"]), run["wall_s"]) if run.get("run_dir") and kind == "fresh" else {}
        return {k: run[k] for k in ("wall_s", "rc", "changed", "controller_cpu_s") if k in run} | (
            {"steps": steps} if steps else {}) | ({"output_tail": run["output_tail"]} if "output_tail" in run else {})

    ssh = ssh_command(second["labels"]) if over_ssh else None
    variants = {"tfprov": tfprov_run, "script": lambda kind: run_script(script_node, env, ssh)}
    containers = {"tfprov": first["id"], "script": second["id"]}
    order = ["tfprov", "script"] if number % 2 else ["script", "tfprov"]
    runs = []
    for kind in ("fresh", "noop"):
        for variant in order:
            before = container_cpu_seconds(containers[variant])
            result = variants[variant](kind)
            node_cpu = round(container_cpu_seconds(containers[variant]) - before, 1)
            runs.append({"round": number, "variant": variant, "kind": kind, **result, "node_cpu_s": node_cpu})
            print(json.dumps({k: v for k, v in runs[-1].items() if k != "output_tail"}), file=sys.stderr, flush=True)
    return runs


def cpu_seconds(run: dict) -> float:
    """All the CPU a run cost: its node's, and for tfprov the controller's too (the script's `docker exec` client
    costs next to nothing)."""
    return run["node_cpu_s"] + run.get("controller_cpu_s", 0.0)


def summary(runs: list[dict]) -> dict:
    """Per variant and kind, the range of wall times (and of CPU times) of the measured rounds (round 0 warms the
    caches), tfprov's fresh wall (and CPU) over the script's in each round, and the median of tfprov's fresh walls
    over the median of the script's."""
    measured = [r for r in runs if r.get("round", 0) > 0 and r.get("rc") == 0 and "kind" in r]
    out: dict = {}
    for figure, value in (("wall_s", lambda r: r["wall_s"]), ("cpu_s", cpu_seconds)):
        for variant in ("tfprov", "script"):
            for kind in ("fresh", "noop"):
                found = sorted(round(value(r), 1) for r in measured if r["variant"] == variant and r["kind"] == kind
                               and (figure == "wall_s" or "node_cpu_s" in r))
                if found:
                    out[f"{variant}_{kind}_{figure}"] = [found[0], found[-1]]
    ratios, cpu_ratios, paired = [], [], []
    for number in sorted({r["round"] for r in measured}):
        fresh = {r["variant"]: r for r in measured if r["round"] == number and r["kind"] == "fresh"}
        if {"tfprov", "script"} <= set(fresh):
            paired.append(fresh)
            ratios.append(round(fresh["tfprov"]["wall_s"] / fresh["script"]["wall_s"], 2))
            if all("node_cpu_s" in r for r in fresh.values()):
                cpu_ratios.append(round(cpu_seconds(fresh["tfprov"]) / cpu_seconds(fresh["script"]), 2))
    if ratios:
        out["fresh_tfprov_over_script"] = ratios
        out["fresh_within_target"] = statistics.median(ratios) <= TARGET_FRESH_OVER_SCRIPT
        # Steadier than any one round on a shared machine, where the same pip install varies by a third.
        medians = {v: statistics.median(pair[v]["wall_s"] for pair in paired) for v in ("tfprov", "script")}
        out["fresh_median_tfprov_over_script"] = round(medians["tfprov"] / medians["script"], 2)
    if cpu_ratios:
        out["fresh_cpu_tfprov_over_script"] = cpu_ratios
    return out | step_summary(measured)


def step_summary(measured: list[dict]) -> dict:
    """tfprov's own cost (the wall outside the install's steps) over the measured fresh runs, and round by round its
    install steps over the script's (apt, venv and pip, the import; tfprov's compile counted with pip, which
    compiles as it installs in the script)."""
    fresh = [r for r in measured if r["kind"] == "fresh" and r.get("steps")]
    own = sorted(r["steps"]["own_s"] for r in fresh if r["variant"] == "tfprov")
    out = {"fresh_tfprov_own_s": [own[0], own[-1]]} if own else {}
    ratios = []
    for number in sorted({r["round"] for r in fresh}):
        pair = {r["variant"]: r["steps"] for r in fresh if r["round"] == number}
        if {"tfprov", "script"} <= set(pair):
            shared = {variant: sum(v for k, v in steps.items() if k != "own_s") for variant, steps in pair.items()}
            if shared["script"]:
                ratios.append(round(shared["tfprov"] / shared["script"], 2))
    return out | ({"fresh_steps_tfprov_over_script": ratios} if ratios else {})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3, help="measured rounds, after one that warms the caches")
    parser.add_argument("--runs-dir", help="keep the run directories here (default: a temporary directory)")
    parser.add_argument("--out", help="write the JSON here too")
    parser.add_argument("--connection", choices=("docker", "ssh"), default="docker",
                        help="reach both nodes with docker exec (default) or over SSH, as a cloud VM")
    args = parser.parse_args(argv)
    req = requirement()
    runs: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="tfprov-node-vs-script-") as tmp:
        runs_dir = Path(args.runs_dir or tmp)
        runs_dir.mkdir(parents=True, exist_ok=True)
        try:
            for number in range(args.rounds + 1):
                runs.extend(one_round(number, runs_dir, req, args.connection))
                if any(r.get("rc") for r in runs):
                    break
        finally:
            converge.tfprov("down", "local", runs_dir=runs_dir)
    return converge.emit({"cpus": os.cpu_count(), "requirement": req, "connection": args.connection, "runs": runs,
                          "summary": summary(runs)}, args.out)


if __name__ == "__main__":
    sys.exit(main())
