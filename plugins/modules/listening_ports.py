#!/usr/bin/python
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: listening_ports
short_description: List the TCP ports listening on a node, with the process holding each
version_added: 1.2.0
description:
  - Reads C(/proc/net/tcp) and C(/proc/net/tcp6) (no C(ss) or C(netstat) needed) and maps each listening socket
    to the process holding it through C(/proc/<pid>/fd) when that is readable (as root, every process's).
  - With O(container), tells which listeners belong to that Docker container (its processes, or the
    C(docker-proxy) publishing its ports), so a role can refuse a port held by anything else. The engine is
    asked over its Unix socket with the standard library; no engine or no such container means none are ours.
  - Changes nothing.
author:
  - tfprov maintainers (@tfprov)
options:
  ports:
    description: Only report these ports; empty for every listening port.
    type: list
    elements: int
    default: []
  container:
    description: Name of a Docker container whose own listeners are marked C(ours).
    type: str
    default: ""
  docker_socket:
    description: The Docker engine's socket.
    type: path
    default: /var/run/docker.sock
extends_documentation_fragment:
  - tfprov.gpu.read_only
"""

EXAMPLES = r"""
- name: Find who holds the serving ports
  tfprov.gpu.listening_ports:
    ports: [8500, 8501]
    container: tfprov-serving
  register: __ports
"""

RETURN = r"""
listeners:
  description: One entry per listening socket.
  returned: always
  type: list
  elements: dict
  sample: [{port: 8501, address: "0.0.0.0", family: ipv4, pid: 123, process: nginx, ours: false}]
container:
  description: The container asked for (C(id), C(pid), C(running), C(ip)); null when absent or no engine answers.
  returned: always
  type: dict
"""

import glob
import http.client as http_client
import json
import os
import re
import socket

from ansible.module_utils.basic import AnsibleModule

LISTEN = "0A"


def _ipv4(hex_addr):
    # One 32-bit word in host (little-endian) order.
    return socket.inet_ntop(socket.AF_INET, bytes.fromhex(hex_addr)[::-1])


def _ipv6(hex_addr):
    raw = bytes.fromhex(hex_addr)
    words = b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4))
    return socket.inet_ntop(socket.AF_INET6, words)


def parse_proc_net_tcp(text, family):
    """[{port, address, family, inode}] of the LISTEN sockets in a /proc/net/tcp or tcp6 text."""
    decode = _ipv4 if family == "ipv4" else _ipv6
    result = []
    for line in text.splitlines()[1:]:
        fields = line.split()
        if len(fields) < 10 or fields[3] != LISTEN:
            continue
        address, dummy, port = fields[1].partition(":")
        result.append({"port": int(port, 16), "address": decode(address), "family": family,
                       "inode": int(fields[9])})
    return result


def socket_owners(proc="/proc"):
    """{inode: pid} of the sockets whose holders this user may read (all of them as root)."""
    owners = {}
    for fd_dir in glob.glob(os.path.join(proc, "[0-9]*", "fd")):
        pid = int(fd_dir.split(os.sep)[-2])
        try:
            names = os.listdir(fd_dir)
        except OSError:
            continue
        for name in names:
            try:
                target = os.readlink(os.path.join(fd_dir, name))
            except OSError:
                continue
            match = re.match(r"^socket:\[(\d+)\]$", target)
            if match:
                owners.setdefault(int(match.group(1)), pid)
    return owners


def _read(path, default=""):
    try:
        with open(path, "rb") as handle:
            return handle.read().decode("utf-8", "replace")
    except (IOError, OSError):
        return default


def _link(path):
    try:
        return os.readlink(path)
    except OSError:
        return None


class _UnixHTTPConnection(http_client.HTTPConnection):
    def __init__(self, path, timeout=5):
        http_client.HTTPConnection.__init__(self, "localhost", timeout=timeout)
        self.unix_path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.unix_path)


def inspect_container(name, docker_socket):
    """{id, pid, running, ip} of a container from the engine's API; None without engine or container."""
    if not name or not os.path.exists(docker_socket):
        return None
    try:
        conn = _UnixHTTPConnection(docker_socket)
        conn.request("GET", "/containers/%s/json" % name)
        response = conn.getresponse()
        body = response.read()
        conn.close()
    except (OSError, socket.error, http_client.HTTPException):
        return None
    if response.status != 200:
        return None
    data = json.loads(body.decode("utf-8"))
    state = data.get("State") or {}
    settings = data.get("NetworkSettings") or {}
    ips = [settings.get("IPAddress")] + [n.get("IPAddress") for n in (settings.get("Networks") or {}).values()]
    return {"id": data.get("Id", ""), "pid": int(state.get("Pid") or 0), "running": bool(state.get("Running")),
            "ip": sorted(set(ip for ip in ips if ip))}


def is_ours(pid, container, proc="/proc"):
    """A listener belongs to the container when its process runs in the container (its cgroup names the
    container's id, or it shares the container's PID namespace), or is the docker-proxy publishing its port."""
    if not container or not pid:
        return False
    if container["id"] and container["id"] in _read(os.path.join(proc, str(pid), "cgroup")):
        return True
    if container["pid"]:
        mine = _link(os.path.join(proc, str(pid), "ns", "pid"))
        theirs = _link(os.path.join(proc, str(container["pid"]), "ns", "pid"))
        host = _link(os.path.join(proc, "1", "ns", "pid"))
        if mine and mine == theirs and theirs != host:
            return True
    cmdline = _read(os.path.join(proc, str(pid), "cmdline")).split("\0")
    if cmdline and os.path.basename(cmdline[0]) == "docker-proxy" and "-container-ip" in cmdline:
        target = cmdline[cmdline.index("-container-ip") + 1] if cmdline.index("-container-ip") + 1 < len(cmdline) \
            else ""
        return target in container["ip"]
    return False


def listeners(ports=None, container=None, proc="/proc"):
    found = []
    for family, name in (("ipv4", "tcp"), ("ipv6", "tcp6")):
        found += parse_proc_net_tcp(_read(os.path.join(proc, "net", name)), family)
    if ports:
        found = [entry for entry in found if entry["port"] in ports]
    owners = socket_owners(proc) if found else {}
    result = []
    for entry in sorted(found, key=lambda e: (e["port"], e["family"], e["address"])):
        pid = owners.get(entry["inode"])
        process = _read(os.path.join(proc, str(pid), "comm")).strip() if pid else ""
        result.append({"port": entry["port"], "address": entry["address"], "family": entry["family"],
                       "pid": pid, "process": process or None, "ours": is_ours(pid, container, proc)})
    return result


def main():
    module = AnsibleModule(
        argument_spec=dict(
            ports=dict(type="list", elements="int", default=[]),
            container=dict(type="str", default=""),
            docker_socket=dict(type="path", default="/var/run/docker.sock"),
        ),
        supports_check_mode=True,
    )
    container = inspect_container(module.params["container"], module.params["docker_socket"])
    module.exit_json(changed=False, container=container,
                     listeners=listeners(module.params["ports"], container))


if __name__ == "__main__":
    main()
