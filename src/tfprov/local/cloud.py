"""A local cloud's identity: its name, and what derives from it (node and namespace names, host ports, subnet).

Two clouds never collide: a test's cloud and the user's `local` have different node names, host ports (host
network) and lab namespaces (private network). Each cloud holds a slot: `local` always 0, any other the lowest free
one, recorded on its containers (label tfprov.slot) for as long as it is up.
"""

from __future__ import annotations

import ipaddress
import os
import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import TfprovError

DEFAULT_NAME = "local"
NAME_ENV = "TFPROV_LOCAL_CLOUD"  # the default cloud of `tfprov up|down|local` and of the local inventories
NETWORKS = ("private", "host")
DEFAULT_NETWORK = "private"
MAX_SLOT = 9  # host-network ports move by 1000 per slot (cloud.ports): slot 9 stays below 40000
_NAME = re.compile(r"^[a-z][a-z0-9-]{0,19}$")
FIRST_HOST = 10  # node N has the subnet's host number 10 + N; .1 is the lab's gateway (the jump, the proxies)


def default_name() -> str:
    return os.environ.get(NAME_ENV) or DEFAULT_NAME


def check_name(name: str) -> str:
    if not _NAME.match(name) or name.endswith("-"):
        raise TfprovError(f"local cloud name {name!r}: use 1-20 lower-case letters, digits and '-', starting with a "
                          "letter (it names containers and a network namespace)")
    return name


def default_subnet(slot: int) -> str:
    return f"10.210.{slot}.0/24"


def check_subnet(subnet: str, nodes: int) -> ipaddress.IPv4Network:
    try:
        net = ipaddress.IPv4Network(subnet, strict=True)
    except ValueError as exc:
        raise TfprovError(f"--subnet {subnet}: {exc} (give an IPv4 network such as 10.210.0.0/24)") from None
    if not net.is_private:
        raise TfprovError(f"--subnet {subnet} is not a private range: the local cloud's addresses must never be "
                          "anyone else's (use 10.0.0.0/8, 172.16.0.0/12 or 192.168.0.0/16)")
    if net.num_addresses - 2 < FIRST_HOST + nodes:
        raise TfprovError(f"--subnet {subnet} is too small for {nodes} nodes: node N gets host number {FIRST_HOST}+N")
    return net


@dataclass(frozen=True)
class Cloud:
    name: str = DEFAULT_NAME
    slot: int = 0
    # private: a namespace and address per node (needs a subnet); host: the host's network. `up` picks
    # DEFAULT_NETWORK for a new cloud; a bare Cloud() is the host-network one (it needs no subnet).
    network: str = "host"
    subnet: str = ""  # private only

    @property
    def private(self) -> bool:
        return self.network == "private"

    @property
    def prefix(self) -> str:
        return f"tfprov-{self.name}-"

    @property
    def namespace(self) -> str:
        """The lab namespace: the bridge every node's link hangs on, the jump the controller enters."""
        return f"tfprov-{self.name}"

    @property
    def gateway(self) -> str:
        return str(next(ipaddress.IPv4Network(self.subnet).hosts()))

    @property
    def prefixlen(self) -> int:
        return ipaddress.IPv4Network(self.subnet).prefixlen

    def address(self, index: int) -> str:
        if not self.private:
            return "127.0.0.1"
        return str(ipaddress.IPv4Network(self.subnet).network_address + FIRST_HOST + index)

    def state_dir(self, root: Path) -> Path:
        """The controller's files of this cloud (recorded host keys, the gateway's sockets and pids)."""
        return root / ".tfprov" / "local" / "clouds" / self.name


def pick_slot(name: str, taken: dict[str, int]) -> int:
    """The cloud's own slot if it has one (taken: cloud name -> slot of the clouds up now), else the lowest free."""
    if name in taken:
        return taken[name]
    if name == DEFAULT_NAME:
        return 0
    used = set(taken.values()) | {0}
    free = [slot for slot in range(1, MAX_SLOT + 1) if slot not in used]
    if not free:
        raise TfprovError(f"{MAX_SLOT} local clouds besides '{DEFAULT_NAME}' are up already: take one down first "
                          "(tfprov down local --name NAME)")
    return free[0]
