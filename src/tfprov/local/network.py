"""The private network of a local cloud, the local form of a cloud VPC, with nothing in the host's own namespace.

- The lab namespace `tfprov-<cloud>` holds a bridge `br0` with the subnet's first address: the gateway, where
  the controller's jump (SSH ProxyCommand through `ip netns exec`) and the proxies come in. It has no route
  out: neither has any node.
- Each node's network namespace belongs to a holder container, `tfprov-<cloud>-N-net` (`sleep`, network none),
  joined to the bridge by a veth pair (`vN` in the lab, `eth0` in the node) with the node's address. The node
  container shares it (`--network container:`), so the node keeps its address when it is stopped, started or
  rebooted: the holder, like a VM's NIC, stays.
- Faults act on that link from the lab side: cut / restore (link down / up), delay and loss (tc netem).
"""

from __future__ import annotations

import subprocess

from ..errors import TfprovError
from .cloud import Cloud
from .commands import docker, run

BRIDGE = "br0"
HOLDER_LABEL = "tfprov.netholder"  # the cloud whose node's namespace this container holds


def holder_name(node_name: str) -> str:
    return f"{node_name}-net"


def lab_link(index: int) -> str:
    """The lab's end of node N's veth pair (interface names stop at 15 characters)."""
    return f"v{index}"


def _ip(cloud: Cloud, *args: str, what: str) -> str:
    return run(["ip", "-n", cloud.namespace, *args], what).stdout


def lab_exists(cloud: Cloud) -> bool:
    proc = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True)
    return any(line.split()[0] == cloud.namespace for line in proc.stdout.splitlines() if line.strip())


def ensure_lab(cloud: Cloud) -> None:
    """The lab namespace and its bridge with the gateway address (each step idempotent)."""
    if not lab_exists(cloud):
        proc = subprocess.run(["ip", "netns", "add", cloud.namespace], capture_output=True, text=True)
        if proc.returncode != 0:
            detail = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
            raise TfprovError(f"cannot create the network namespace {cloud.namespace} ({detail}): the private "
                              "network needs root and a kernel that allows network namespaces; use --network host")
    _ip(cloud, "link", "set", "lo", "up", what="lab loopback")
    if BRIDGE not in _ip(cloud, "-br", "link", what="lab links"):
        _ip(cloud, "link", "add", BRIDGE, "type", "bridge", what=f"creating the bridge in {cloud.namespace}")
    _ip(cloud, "addr", "replace", f"{cloud.gateway}/{cloud.prefixlen}", "dev", BRIDGE, what="the gateway address")
    _ip(cloud, "link", "set", BRIDGE, "up", what="the bridge up")


def remove_lab(cloud: Cloud) -> bool:
    if not lab_exists(cloud):
        return False
    run(["ip", "netns", "delete", cloud.namespace], f"removing the network namespace {cloud.namespace}")
    return True


def _in_holder(pid: int, *args: str, what: str) -> str:
    return run(["nsenter", f"--net=/proc/{pid}/ns/net", *args], what).stdout


def holder_pid(name: str) -> int:
    return int(docker("inspect", "--format", "{{.State.Pid}}", name, what=f"inspecting {name}") or 0)


def plumb(cloud: Cloud, index: int, holder: str) -> bool:
    """Node N's link: a veth from the lab's bridge into the holder's namespace, with the node's address.

    Idempotent: a holder that has its address keeps its link, which is set up again (a cut link is restored).
    True if the link was (re)made.
    """
    pid = holder_pid(holder)
    if not pid:
        raise TfprovError(f"{holder} is not running: tfprov up local makes it again")
    address = cloud.address(index)
    link = lab_link(index)
    if f" {address}/" in _in_holder(pid, "ip", "-br", "addr", what=f"{holder}: addresses"):
        _ip(cloud, "link", "set", link, "master", BRIDGE, "up", what=f"setting {link} up")
        return False
    if link in _ip(cloud, "-br", "link", what="lab links").split():
        _ip(cloud, "link", "delete", link, what=f"removing the stale link {link}")
    _ip(cloud, "link", "add", link, "type", "veth", "peer", "name", "eth0", "netns", f"/proc/{pid}/ns/net",
        what=f"linking {holder} to the lab")
    _ip(cloud, "link", "set", link, "master", BRIDGE, "up", what=f"attaching {link} to {BRIDGE}")
    _in_holder(pid, "ip", "addr", "add", f"{address}/{cloud.prefixlen}", "dev", "eth0", what=f"{holder}: address")
    _in_holder(pid, "ip", "link", "set", "eth0", "up", what=f"{holder}: eth0 up")
    _in_holder(pid, "ip", "link", "set", "lo", "up", what=f"{holder}: lo up")
    return True


def holder_run_args(cloud: Cloud, index: int, node_name: str, image: str) -> list[str]:
    """`docker run` arguments of node N's holder: no network of Docker's, the node's hostname resolving to its
    address (sudo looks its own name up), restarted with the engine. Forwarding is on in the node's namespace, as a
    VM lets its container engine turn it on (a container cannot: /proc/sys is read-only there); only the node's own
    bridges use it. A local datagram socket queues 512 messages, as systemd's sysctl.d sets on a VM: the kernel's 10
    let a few other messages crowd out PID 1's to a journald that lags (one job's end lost, read as never started)."""
    return ["run", "-d", "--name", holder_name(node_name), "--network", "none", "--hostname", node_name,
            "--sysctl", "net.ipv4.ip_forward=1", "--sysctl", "net.unix.max_dgram_qlen=512",
            "--add-host", f"{node_name}:{cloud.address(index)}", "--restart", "unless-stopped",
            "--label", f"{HOLDER_LABEL}={cloud.name}", "--label", f"tfprov.index={index}",
            "--label", f"tfprov.address={cloud.address(index)}", image, "sleep", "infinity"]


def set_link(cloud: Cloud, index: int, up: bool) -> None:
    """Cut (down) or restore (up) node N's link at the lab's end: the node is unreachable, not stopped."""
    link = lab_link(index)
    _ip(cloud, "link", "set", link, "up" if up else "down", what=f"setting {link} {'up' if up else 'down'}")


def link_state(cloud: Cloud, index: int) -> str:
    out = _ip(cloud, "-br", "link", "show", lab_link(index), what="link state").split()
    return out[1] if len(out) > 1 else "missing"


def shape_link(cloud: Cloud, index: int, delay_ms: int, loss_percent: float) -> None:
    """Latency and loss on node N's link (tc netem at the lab's end); 0 and 0 remove them."""
    link = lab_link(index)
    if not delay_ms and not loss_percent:
        subprocess.run(["ip", "netns", "exec", cloud.namespace, "tc", "qdisc", "del", "dev", link, "root"],
                       capture_output=True)
        return
    proc = subprocess.run(["ip", "netns", "exec", cloud.namespace, "tc", "qdisc", "replace", "dev", link, "root",
                           "netem", "delay", f"{delay_ms}ms", "loss", f"{loss_percent}%"],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        detail = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        if "unknown" in detail.lower():
            raise TfprovError("delay needs tc netem, which this kernel does not have (module sch_netem): "
                              "cut / restore / stop / start / reboot still work")
        raise TfprovError(f"tc netem on {link} failed: {detail}")


def limit_rate(cloud: Cloud, index: int, mbit: float) -> None:
    """Node N's link carries at most `mbit` Mbit/s into the node (tc tbf at the lab's end; this kernel has tbf where
    it lacks netem); 0 removes the limit. Each node limited alike bounds a ring all-reduce at that rate."""
    link = lab_link(index)
    subprocess.run(["ip", "netns", "exec", cloud.namespace, "tc", "qdisc", "del", "dev", link, "root"],
                   capture_output=True)
    if not mbit:
        return
    # A burst of at least 10 ms at the rate (tbf needs one larger than the link's MTU), a queue of at most 50 ms.
    burst = max(int(mbit * 1e6 / 8 * 0.01), 16 * 1024)
    proc = subprocess.run(["ip", "netns", "exec", cloud.namespace, "tc", "qdisc", "add", "dev", link, "root", "tbf",
                           "rate", f"{mbit}mbit", "burst", str(burst), "latency", "50ms"],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        detail = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        raise TfprovError(f"tc tbf on {link} failed: {detail}")
