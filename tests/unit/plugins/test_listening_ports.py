"""tfprov.gpu.listening_ports: recorded /proc/net/tcp and tcp6 text, a fake /proc tree, and the real /proc."""

import os
import socket

from ansible_collections.tfprov.gpu.plugins.modules import listening_ports as lp

# Recorded on a Debian 12 host: sshd on 0.0.0.0:22 and [::]:22, nginx on 0.0.0.0:8501, a client connection
# (ESTABLISHED, not listed), something on 127.0.0.1:9000 and TF Serving's gRPC port on [::]:8500.
TCP = """\
  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1111 1 0 100 0 0 10 0
   1: 00000000:2135 00000000:0000 0A 00000000:00000000 00:00000000 00000000    33        0 2222 1 0 100 0 0 10 0
   2: 0100007F:2328 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 3333 1 0 100 0 0 10 0
   3: 0500000A:0016 0600000A:C350 01 00000000:00000000 02:000A8B3F 00000000     0        0 4444 4 0 20 10 -1
"""
TCP6 = """\
  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when \
retrnsmt   uid  timeout inode
   0: 00000000000000000000000000000000:0016 00000000000000000000000000000000:0000 0A 00000000:00000000 \
00:00000000 00000000     0        0 5555 1 0 100 0 0 10 0
   1: 00000000000000000000000000000000:2134 00000000000000000000000000000000:0000 0A 00000000:00000000 \
00:00000000 00000000     0        0 6666 1 0 100 0 0 10 0
   2: 00000000000000000000000001000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 \
00:00000000 00000000     0        0 7777 1 0 100 0 0 10 0
   3: 0000000000000000FFFF00000100007F:1F91 00000000000000000000000000000000:0000 0A 00000000:00000000 \
00:00000000 00000000     0        0 8888 1 0 100 0 0 10 0
"""

CID = "4f" * 32


def test_parse_tcp_lists_only_listeners():
    assert lp.parse_proc_net_tcp(TCP, "ipv4") == [
        {"port": 22, "address": "0.0.0.0", "family": "ipv4", "inode": 1111},
        {"port": 8501, "address": "0.0.0.0", "family": "ipv4", "inode": 2222},
        {"port": 9000, "address": "127.0.0.1", "family": "ipv4", "inode": 3333},
    ]


def test_parse_tcp6_addresses():
    parsed = lp.parse_proc_net_tcp(TCP6, "ipv6")
    assert [(e["port"], e["address"]) for e in parsed] == [(22, "::"), (8500, "::"), (8080, "::1"),
                                                          (8081, "::ffff:127.0.0.1")]


def fake_proc(root, container_pid_ns="pid:[4026532000]"):
    """A /proc with sshd (pid 10), nginx (123), the server in the container (300) and its init (299)."""
    net = root / "net"
    net.mkdir(parents=True)
    (net / "tcp").write_text(TCP)
    (net / "tcp6").write_text(TCP6)
    procs = {
        1: ("systemd", [], "0::/init.scope\n", "pid:[4026531836]"),
        10: ("sshd", [1111, 5555], "0::/system.slice/ssh.service\n", "pid:[4026531836]"),
        123: ("nginx", [2222], "0::/system.slice/nginx.service\n", "pid:[4026531836]"),
        299: ("tini", [], f"0::/system.slice/docker-{CID}.scope\n", container_pid_ns),
        300: ("tensorflow_mode", [6666], "0::/\n", container_pid_ns),  # cgroup namespace hides the path
        400: ("docker-proxy", [7777], "0::/system.slice/docker.service\n", "pid:[4026531836]"),
    }
    for pid, (comm, inodes, cgroup, pidns) in procs.items():
        pdir = root / str(pid)
        (pdir / "fd").mkdir(parents=True)
        (pdir / "ns").mkdir()
        (pdir / "comm").write_text(comm + "\n")
        (pdir / "cgroup").write_text(cgroup)
        os.symlink(pidns, pdir / "ns" / "pid")
        cmd = [comm] + (["-proto", "tcp", "-host-port", "8080", "-container-ip", "172.17.0.2"] if pid == 400 else [])
        (pdir / "cmdline").write_text("\0".join(cmd) + "\0")
        for n, inode in enumerate(inodes):
            os.symlink(f"socket:[{inode}]", pdir / "fd" / str(n + 3))
        os.symlink("/dev/null", pdir / "fd" / "0")
    return root


def test_owners_and_our_container(tmp_path):
    proc = fake_proc(tmp_path)
    container = {"id": CID, "pid": 299, "running": True, "ip": ["172.17.0.2"]}
    found = {(e["port"], e["family"]): e for e in lp.listeners(container=container, proc=str(proc))}
    assert found[(22, "ipv4")]["process"] == "sshd" and found[(22, "ipv4")]["pid"] == 10
    assert found[(8501, "ipv4")] == {"port": 8501, "address": "0.0.0.0", "family": "ipv4", "pid": 123,
                                     "process": "nginx", "ours": False}
    assert found[(8500, "ipv6")]["ours"] is True  # same PID namespace as the container's init
    assert found[(8080, "ipv6")]["ours"] is True  # the docker-proxy publishing the container's port
    assert found[(9000, "ipv4")]["pid"] is None and found[(9000, "ipv4")]["process"] is None
    assert not found[(22, "ipv4")]["ours"]


def test_without_container_nothing_is_ours_and_ports_filter(tmp_path):
    proc = fake_proc(tmp_path)
    found = lp.listeners(ports=[8500, 8501], container=None, proc=str(proc))
    assert [(e["port"], e["ours"]) for e in found] == [(8500, False), (8501, False)]


def test_a_container_in_the_host_pid_namespace_is_matched_by_cgroup_only(tmp_path):
    proc = fake_proc(tmp_path, container_pid_ns="pid:[4026531836]")  # --pid host
    container = {"id": CID, "pid": 299, "running": True, "ip": []}
    found = {e["port"]: e for e in lp.listeners(container=container, proc=str(proc))}
    assert found[8500]["ours"] is False and found[22]["ours"] is False


def test_no_engine_means_no_container(tmp_path):
    assert lp.inspect_container("tfprov-serving", str(tmp_path / "docker.sock")) is None
    assert lp.inspect_container("", "/var/run/docker.sock") is None


def test_the_real_proc_finds_our_own_listener():
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    try:
        port = server.getsockname()[1]
        found = lp.listeners(ports=[port])
        assert [(e["port"], e["address"], e["pid"]) for e in found] == [(port, "127.0.0.1", os.getpid())]
    finally:
        server.close()
