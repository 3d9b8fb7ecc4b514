"""Faults on demand in a local cloud (`tfprov local fault NODE ACTION`): what cloud nodes do to a run.

cut / restore: the node's link goes down / up (unreachable, still running); stop / start: the container, with its
address kept by its holder; reboot: systemd's reboot inside the node, back through its restart policy; delay:
latency and loss on its link (tc netem, where the kernel has it); rate: the link's rate into the node, in Mbit/s
(tc tbf; --mbit 0 removes it). Link faults need the private network.
"""

from __future__ import annotations

import subprocess
import time

from rich.console import Console

from ..errors import TfprovError
from . import network, vms
from .cloud import default_name
from .commands import docker
from .nodes import cloud_of, local_nodes, wait_systemd

ACTIONS = ("cut", "restore", "stop", "start", "reboot", "delay", "rate")
LINK_ACTIONS = ("cut", "restore", "delay", "rate")


def find_node(cloud_name: str | None, node: str) -> dict:
    """A node by container name (tfprov-<cloud>-N) or by index N."""
    nodes = local_nodes(cloud_name)
    for entry in nodes:
        if node in (entry["name"], entry["labels"].get("tfprov.index")):
            return entry
    names = ", ".join(entry["name"] for entry in nodes) or "none: tfprov up local first"
    raise TfprovError(f"no node {node!r} in the local cloud {cloud_name or default_name()} (its nodes: {names})")


def _restart_count(name: str) -> int:
    return int(docker("inspect", "--format", "{{.RestartCount}}", name, what=f"inspecting {name}") or 0)


def _wait_booted(name: str, timeout: float) -> None:
    state = wait_systemd(name, timeout)
    if state not in ("running", "degraded"):
        raise TfprovError(f"{name} did not finish booting within {timeout:.0f} s ({state or 'no answer'})")


def _reboot(name: str, wait: bool, timeout: float) -> str:
    before = _restart_count(name)
    started = time.monotonic()
    # Detached: the exec's own process dies with the node.
    subprocess.run(["docker", "exec", "-d", name, "systemctl", "reboot"], capture_output=True, check=False)
    if not wait:
        return "rebooting"
    while _restart_count(name) == before:
        if time.monotonic() - started > timeout:
            raise TfprovError(f"{name} did not come back from its reboot within {timeout:.0f} s: docker logs {name}")
        time.sleep(0.5)
    _wait_booted(name, max(5.0, timeout - (time.monotonic() - started)))
    return f"rebooted in {time.monotonic() - started:.1f} s"


def apply(cloud_name: str | None, node: str, action: str, console: Console, delay_ms: int = 0,
          loss_percent: float = 0.0, wait: bool = True, timeout: float = 120, rate_mbit: float = 0.0) -> str:
    """Apply one fault; returns what happened, in a few words."""
    vm_cloud = cloud_name or vms.cloud_named_by(node) or default_name()
    if vms.is_vm_cloud(vm_cloud):
        done = vms.fault(vm_cloud, node, action, wait, max(timeout, 300))
        console.print(f"{node}: {done}", highlight=False)
        return done
    entry = find_node(cloud_name, node)
    name, cloud = entry["name"], cloud_of(entry)
    index = int(entry["labels"]["tfprov.index"])
    if action in LINK_ACTIONS and not cloud.private:
        raise TfprovError(f"{name} is on the host's network, which has no link of its own to {action}: make the "
                          f"cloud with --network private")
    if action == "cut":
        network.set_link(cloud, index, up=False)
        done = "link cut: unreachable, still running"
    elif action == "restore":
        network.set_link(cloud, index, up=True)
        network.shape_link(cloud, index, 0, 0)
        done = "link restored"
    elif action == "delay":
        network.shape_link(cloud, index, delay_ms, loss_percent)
        done = f"link delayed {delay_ms} ms, {loss_percent}% loss" if delay_ms or loss_percent else "link unshaped"
    elif action == "rate":
        network.limit_rate(cloud, index, rate_mbit)
        done = f"link limited to {rate_mbit:g} Mbit/s into the node" if rate_mbit else "link rate unlimited"
    elif action == "stop":
        docker("stop", "-t", "20", name, what=f"stopping {name}")
        done = "stopped (its address is kept)"
    elif action == "start":
        docker("start", name, what=f"starting {name}")
        if wait:
            _wait_booted(name, timeout)
        done = "started"
    elif action == "reboot":
        if entry["state"] != "running":
            raise TfprovError(f"{name} is {entry['state']}, not running: start it instead")
        done = _reboot(name, wait, timeout)
    else:
        raise TfprovError(f"unknown fault {action!r}: use {', '.join(ACTIONS)}")
    console.print(f"{name}: {done}", highlight=False)
    return done
