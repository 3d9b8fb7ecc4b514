"""The local cloud as a private network (`tfprov up local --network private`), with faults on demand.

Six nodes from the baked image (chief, worker, worker, ps, serving, worker) in a cloud of their own (`itnet`): their
own addresses, the same ports, SSH through the jump into the lab namespace, no route out, the cluster's firewall
(nftables, ufw and firewalld, one on each of three members) applied in each node's own namespace, the gateway's
proxy as the only way out, faults (cut, restore, stop, start, reboot), and the host's own network namespace
unchanged from before `up` to after `down`, the gateway stopped.
"""

import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from local_cloud import label, log_since, log_size

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
TFPROV = str(Path(sys.executable).parent / "tfprov")
ANSIBLE = str(Path(sys.executable).parent / "ansible")
BAKED = os.environ.get("TFPROV_BAKED_IMAGE", "tfprov/node-baked:bookworm")
CLOUD = "itnet"
NODES = [f"tfprov-{CLOUD}-{i}" for i in range(1, 7)]
CHIEF, WORKER_1, WORKER_2, PS, SERVING, WORKER_3 = NODES
ROLES = "chief,worker,worker,ps,serving,worker"
SSH_INVENTORY = "inventories/local_ssh.docker_containers.yml"
ENV = {**os.environ, "TFPROV_LOCAL_CLOUD": CLOUD}
# A TCP connect from inside a node: "open", "refused" (the packet got there, nothing listens) or "dropped".
CONNECT = """
import socket, sys
s = socket.socket(); s.settimeout(float(sys.argv[3]))
try:
    s.connect((sys.argv[1], int(sys.argv[2]))); print("open")
except ConnectionRefusedError: print("refused")
except OSError as exc: print("dropped" if isinstance(exc, TimeoutError) else type(exc).__name__)
"""


def host_network() -> dict[str, str]:
    """What of the host's own namespace the cloud must leave as it was."""
    def out(*cmd):
        return subprocess.run(cmd, capture_output=True, text=True).stdout
    return {"links": out("ip", "-br", "link"), "routes": out("ip", "route"), "routes6": out("ip", "-6", "route"),
            "rules": out("nft", "list", "ruleset")}


def tfprov(*args, runs_dir, check=False, timeout=900):
    proc = subprocess.run([TFPROV, *args], cwd=ROOT, env={**ENV, "TFPROV_RUNS_DIR": str(runs_dir)},
                          capture_output=True, text=True, timeout=timeout)
    if check:
        assert proc.returncode == 0, f"tfprov {' '.join(args)}: {proc.stdout[-4000:]}\n{proc.stderr}"
    return proc


def ansible(host: str, *args: str, inventory: str = SSH_INVENTORY,
            env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([ANSIBLE, "-i", inventory, host, *args], cwd=ROOT, capture_output=True, text=True,
                          env={**ENV, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), **(env or {})}, timeout=180)


def node_sh(node: str, script: str, check: bool = True) -> str:
    proc = subprocess.run(["docker", "exec", node, "sh", "-c", script], capture_output=True, text=True)
    assert proc.returncode == 0 or not check, f"{node}: {script}: {proc.stderr}"
    return proc.stdout.strip()


def connect(node: str, address: str, port: int, timeout: float = 3) -> str:
    return subprocess.run(["docker", "exec", node, "python3", "-c", CONNECT, address, str(port), str(timeout)],
                          capture_output=True, text=True).stdout.strip()


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    runs = tmp_path_factory.mktemp("itnet-runs")
    tfprov("down", "local", runs_dir=runs)
    # The gateway's pip cache starts empty, and logs each file it fetches from PyPI.
    ENV.update(TFPROV_PIP_CACHE_DIR=str(tmp_path_factory.mktemp("itnet-pip-cache")), PROXPI_LOGGING_LEVEL="DEBUG")
    ENV["TFPROV_APT_CACHE_DIR"] = str(tmp_path_factory.mktemp("itnet-apt-cache"))  # and so does its apt cache
    before = host_network()
    started = time.monotonic()
    tfprov("up", "local", "--nodes", "6", "--roles", ROLES, "--image", BAKED, "--network", "private", runs_dir=runs,
           check=True)
    print(f"\nup, 6 private nodes from the baked image: {time.monotonic() - started:.1f} s")
    yield runs, before
    tfprov("down", "local", runs_dir=runs)


def test_each_node_has_its_own_address_and_the_same_ports(lab):
    addresses = [label(node, "tfprov.address") for node in NODES]
    assert len(set(addresses)) == len(NODES) and not any(a.startswith("127.") for a in addresses)
    assert {label(node, "tfprov.tf_port") for node in NODES} == {"2222"}
    assert {label(node, "tfprov.ssh_port") for node in NODES} == {"22"}
    # The node sees that address on its own eth0, and keeps the hostname that resolves to it.
    assert addresses[1] in node_sh(WORKER_1, "ip -br addr show eth0")
    assert node_sh(WORKER_1, "getent hosts $(hostname)").split()[0] == addresses[1]


def test_nodes_reach_each_other_but_nothing_outside(lab):
    chief = label(CHIEF, "tfprov.address")
    assert connect(WORKER_1, chief, 22) == "open"  # sshd on the chief's private address
    # No route out (asked of the routing table: no packet is sent): only the cloud's own subnet is reachable.
    assert node_sh(WORKER_1, "ip route show default") == ""
    assert "unreachable" in node_sh(WORKER_1, "ip route get 192.0.2.10 2>&1", check=False).lower()
    assert node_sh(WORKER_1, "ip -4 route show").split()[0] == label(WORKER_1, "tfprov.subnet")


# From a node, through the gateway's proxy: the status line of the answer, or the error.
FETCH = """
import sys, urllib.request as u
opener = u.build_opener(u.ProxyHandler({"http": sys.argv[1], "https": sys.argv[1]}))
try:
    print(opener.open(sys.argv[2], timeout=30).status)
except Exception as exc:
    print(getattr(exc, "code", None) or str(getattr(exc, "reason", exc)))
"""


def test_the_only_way_out_is_the_gateways_proxy_to_the_mirror_and_pypi(lab):
    proxy = label(WORKER_1, "tfprov.http_proxy")
    assert proxy == f"http://{label(WORKER_1, 'tfprov.subnet').rsplit('.', 1)[0]}.1:3128"

    def fetch(url):
        return subprocess.run(["docker", "exec", WORKER_1, "python3", "-c", FETCH, proxy, url],
                              capture_output=True, text=True).stdout.strip()
    mirror = node_sh(WORKER_1, "grep -rhoE 'https?://[^ ]+' /etc/apt/sources.list /etc/apt/sources.list.d/ | head -1")
    assert fetch(mirror.rstrip("/") + "/dists/bookworm/Release") == "200"  # the mirror, over plain HTTP
    assert fetch("http://example.com/") == "403"  # not on the allow-list: refused, not forwarded
    assert "403" in fetch("https://example.com/")  # nor tunnelled (CONNECT refused)
    log = (ROOT / f".tfprov/local/clouds/{CLOUD}/proxy.log").read_text()
    assert "example.com" in log  # the proxy's log names what was asked, refused or not
    # The wheelhouse, at the gateway, without the proxy (the cloud's subnet is never sent to it).
    wheelhouse = label(WORKER_1, "tfprov.wheelhouse")
    listing = node_sh(WORKER_1, f"python3 -c 'import urllib.request as u; print(u.urlopen(\"{wheelhouse}\").status)'")
    assert listing == "200"


SIX = "six-1.16.0-py2.py3-none-any.whl"  # a package no node image has


def pip_install_six(node: str, index: str, venv: str) -> subprocess.Popen:
    host = index.split("//")[1].split(":")[0]
    return subprocess.Popen(["docker", "exec", node, "sh", "-c", f"python3 -m venv {venv} && {venv}/bin/pip install "
                             f"--no-cache-dir --index-url {index} --trusted-host {host} six==1.16.0"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_nodes_install_through_the_gateways_pip_cache_which_fetches_each_file_once_and_pip_checks_it(lab):
    index = label(WORKER_1, "tfprov.pip_index")
    assert index == label(WORKER_1, "tfprov.http_proxy").replace(":3128", ":3141/index/")
    cache_log = ROOT / f".tfprov/local/clouds/{CLOUD}/pip-cache.log"
    before = log_size(cache_log)
    # Two nodes at once: one of them waits for the other's download instead of fetching the file again.
    procs = [pip_install_six(node, index, "/var/tmp/cache-check") for node in (WORKER_1, WORKER_2)]
    for proc in procs:
        out = proc.communicate(timeout=300)[0]
        assert proc.returncode == 0 and f"{index}six/{SIX}" in out, out
    log = log_since(cache_log, before)
    assert len([line for line in log.splitlines() if "Downloading 'https://" in line and SIX in line]) == 1
    [cached] = Path(ENV["TFPROV_PIP_CACHE_DIR"]).rglob(SIX)
    # pip checks each file against the sha256 of PyPI's index page: a cached file that changed is refused.
    good = cached.read_bytes()
    cached.write_bytes(good + b"tampered")
    try:
        proc = pip_install_six(CHIEF, index, "/var/tmp/cache-tampered")
        out = proc.communicate(timeout=300)[0]
        assert proc.returncode != 0 and "HASH" in out.upper(), out
    finally:
        cached.write_bytes(good)


def apt_download_hello(node: str) -> subprocess.Popen:
    """apt as the roles run it on a private node: through the proxy the inventory gives (tfprov_http_proxy)."""
    return subprocess.Popen(["docker", "exec", "-w", "/tmp", "-e", f"http_proxy={label(node, 'tfprov.http_proxy')}",
                             node, "sh", "-c", "rm -f hello_*.deb; apt-get update -qq && apt-get download hello"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_apt_goes_through_the_gateways_apt_cache_which_fetches_each_package_once_and_apt_checks_it(lab):
    acng_log = ROOT / f".tfprov/local/clouds/{CLOUD}/apt-cache/apt-cacher.log"
    before = log_size(acng_log)
    procs = [apt_download_hello(node) for node in (WORKER_1, WORKER_2)]  # both at once, as a fleet's nodes do
    for proc in procs:
        out = proc.communicate(timeout=300)[0]
        assert proc.returncode == 0, out
    # apt-cacher-ng logs each file it fetched from the mirror (I) and each it served (O): one fetch, two answers.
    log = [line.split("|") for line in log_since(acng_log, before).splitlines()]
    hello = [(kind, int(size)) for _, kind, size, _, path in log if path.endswith(".deb") and "/hello_" in path]
    assert sorted(kind for kind, _ in hello) == ["I", "O", "O"], log
    assert [node_sh(n, "ls /tmp/hello_*.deb") for n in (WORKER_1, WORKER_2)] == ["/tmp/hello_2.10-3_amd64.deb"] * 2
    # apt checks each file against the mirror's signed index: a cached package that changed is refused.
    [cached] = Path(ENV["TFPROV_APT_CACHE_DIR"]).rglob("hello_*.deb")
    good = cached.read_bytes()
    cached.write_bytes(good[:-100] + bytes(b ^ 0xFF for b in good[-100:]))  # same size: served as cached
    try:
        proc = apt_download_hello(CHIEF)
        out = proc.communicate(timeout=300)[0]
        assert proc.returncode != 0 and "Hash Sum mismatch" in out, out
        assert node_sh(CHIEF, "ls /tmp/hello_*.deb 2>/dev/null || true") == ""  # nothing left behind
    finally:
        cached.write_bytes(good)


def test_ssh_goes_through_the_jump_to_the_private_address_with_a_recorded_host_key(lab):
    proc = ansible(WORKER_2, "-b", "-m", "command", "-a", "hostname -I")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert label(WORKER_2, "tfprov.address") in proc.stdout
    known = (ROOT / ".tfprov/local/ssh" / f"known_hosts.{CLOUD}").read_text().split("\n")
    assert any(line.startswith(label(WORKER_2, "tfprov.address") + " ssh-ed25519 ") for line in known)
    # sshd listens on the node's address only, not on every address of the node.
    assert node_sh(WORKER_2, "ss -Hltn 'sport = :22'").split()[3] == f"{label(WORKER_2, 'tfprov.address')}:22"


def test_a_job_that_ended_while_journald_lagged_reads_as_succeeded(lab):
    # systemd forgets a unit that ended well at once; dist_job_status then reads how it ended from systemd's own
    # messages in the journal, which journald stores when it gets to them. Held back here (journald stopped for
    # 8 s), they must still be read: a chief's one-line job once read "did not start" in CI for want of them.
    # On the host's network the node has the kernel's queue of 10 datagrams, and a few other messages while journald
    # is stopped crowd PID 1's out (seen in CI): that is a journal that lost them, not one that lags. The private
    # network's nodes have a VM's 512.
    assert node_sh(PS, "cat /proc/sys/net/unix/max_dgram_qlen") == "512"
    unit = "[Service]\\nType=exec\\nExecStart=/bin/echo tfprov-quick ok\\n"
    node_sh(PS, f"printf '{unit}' > /etc/systemd/system/tfprov-quick.service && systemctl daemon-reload "
                "&& systemctl start tfprov-quick && journalctl --sync "  # an earlier run, logged in time
                "&& kill -STOP $(pidof systemd-journald) && systemctl start tfprov-quick && for i in "
                "$(seq 50); do systemctl show tfprov-quick -p InvocationID --value | grep -q . || break; "
                "sleep 0.1; done; (sleep 8; kill -CONT $(pidof systemd-journald)) >/dev/null 2>&1 &")
    try:
        read = ansible(PS, "-m", "tfprov.gpu.dist_job_status", "-a", "unit=tfprov-quick.service",
                       inventory="inventories/local.docker_containers.yml",  # as root, for journalctl --sync
                       env={"ANSIBLE_LOAD_CALLBACK_PLUGINS": "1", "ANSIBLE_STDOUT_CALLBACK": "json"})
        assert read.returncode == 0, read.stdout + read.stderr
        status = json.loads(read.stdout)["plays"][0]["tasks"][0]["hosts"][PS]
        assert status["state"] == "succeeded" and status["exit_status"] == 0, json.dumps(status)
        # Its line too (journald could not tag it with the run), and only this run's.
        assert status["log_tail"] == ["tfprov-quick ok"], status
    finally:
        node_sh(PS, "kill -CONT $(pidof systemd-journald); rm -f /etc/systemd/system/tfprov-quick.service; "
                    "systemctl daemon-reload", check=False)


def _serve(node: str, port: int = 2222) -> None:
    """Something listening on the cluster port, so that 'open' means the firewall let the packet in (stopped
    before the next run: the role rightly refuses a cluster port held by another process)."""
    node_sh(node, "systemctl stop tfprov-test-listen 2>/dev/null; systemctl reset-failed tfprov-test-listen "
                  "2>/dev/null; true")
    node_sh(node, f"systemd-run --unit tfprov-test-listen python3 -m http.server {port} --bind 0.0.0.0")
    for _ in range(50):
        if node_sh(node, f"ss -Hltn 'sport = :{port}'"):
            return
        time.sleep(0.1)


# The cluster's firewall on each kind of node at once, so that two cluster runs serve all three: the chief runs
# nftables (Debian's, as the image ships it, started), worker:0 ufw and worker:2 firewalld (both installed through the
# gateway's proxy). The first run has node 3 a member; in the second it has left (it became a serving node, keeping
# its address). What each member's port answered from every other node, after each run, is kept for the tests below.
FIREWALLS = {CHIEF: "nftables", WORKER_1: "ufw", WORKER_3: "firewalld"}
ROLES_AFTER_LEAVING = "chief,worker,serving,ps,serving,worker"
APT = "export http_proxy={proxy} DEBIAN_FRONTEND=noninteractive; apt-get update -qq && apt-get install -y -qq"


def _answers() -> dict[tuple[str, str, int], str]:
    """(from, to, port) -> connect's answer, for every firewalled member's cluster port (a listener on each) and,
    from the serving node, its SSH port."""
    for node in FIREWALLS:
        _serve(node)
    probes = [(src, dst, 2222) for dst in FIREWALLS for src in NODES if src != dst]
    probes += [(SERVING, dst, 22) for dst in FIREWALLS]
    with ThreadPoolExecutor(max_workers=8) as pool:  # a dropped probe waits out its timeout: all at once
        found = pool.map(lambda probe: connect(probe[0], label(probe[1], "tfprov.address"), probe[2]), probes)
        return dict(zip(probes, found, strict=True))


@pytest.fixture(scope="module")
def firewalls(lab):
    runs, _ = lab
    proxy = label(CHIEF, "tfprov.http_proxy")
    seen = {}
    for node in set(NODES) - {WORKER_1, WORKER_3}:
        node_sh(node, "systemctl start nftables")
    # The nodes' image has nftables installed and inactive, as Debian ships it; a node that runs it is what
    # dist_tf_cluster's firewall 'auto' acts on. ufw gets an incoming policy that lets everything in: the cluster's
    # rules must close the port themselves, not rely on the policy. firewalld's zone rejects the rest.
    scripts = {WORKER_1: " ufw >/dev/null && ufw default allow incoming && ufw --force enable",
               # netbase's /etc/protocols, which firewalld reads its services with, is in every Debian cloud image
               # but not in the nodes' minimal one (ufw's iptables pulls it in)
               WORKER_3: " --no-install-recommends firewalld netbase >/dev/null && systemctl start firewalld "
                         "&& firewall-cmd --state"}
    installs = [subprocess.Popen(["docker", "exec", node, "sh", "-c", APT.format(proxy=proxy) + script],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                for node, script in scripts.items()]
    for proc in installs:
        out = proc.communicate(timeout=600)[0]
        assert proc.returncode == 0, out
    seen["nftables policy"] = node_sh(CHIEF, "nft list chain inet filter input")
    seen["ufw status"] = node_sh(WORKER_1, "ufw status verbose")
    job = Path(runs) / "quick_job.py"
    job.write_text("print('ok')\n")  # the firewall, not training, is under test here
    limit = ["--limit", "all:!tfprov_serving", "--job", str(job)]
    try:
        tfprov("run", "cluster", *limit, runs_dir=runs, check=True)
        seen["member"] = _answers()
        for node in FIREWALLS:
            node_sh(node, "systemctl stop tfprov-test-listen")
        tfprov("up", "local", "--nodes", "6", "--roles", ROLES_AFTER_LEAVING, "--image", BAKED, runs_dir=runs,
               check=True)
        assert label(WORKER_2, "tfprov.role") == "serving" and label(WORKER_2, "tfprov.address") != ""
        tfprov("run", "cluster", *limit, runs_dir=runs, check=True)
        seen["left"] = _answers()
        seen["ufw rules"] = [line.split(" comment")[0] for line in node_sh(WORKER_1, "ufw show added").splitlines()
                             if "tfprov TensorFlow cluster" in line]
        seen["firewalld rules"] = node_sh(WORKER_3, "firewall-cmd --permanent --list-rich-rules").splitlines()
    finally:  # the later tests find the nodes as they were (but for nftables, still running)
        for node in FIREWALLS:
            node_sh(node, "systemctl stop tfprov-test-listen", check=False)
        node_sh(WORKER_1, "ufw --force disable", check=False)
        node_sh(WORKER_3, "systemctl disable --now firewalld", check=False)
    return seen


def _member_answers(seen: dict, target: str) -> dict[str, str]:
    """What target's cluster port answered the other members of the first run (a listener on it)."""
    return {src: seen["member"][src, target, 2222] for src in (CHIEF, WORKER_1, WORKER_2, WORKER_3) if src != target}


def test_the_cluster_firewall_admits_members_only_and_drops_a_member_that_left(firewalls):
    seen, chief = firewalls, CHIEF
    assert "policy accept" in seen["nftables policy"]  # Debian's default ruleset: checked, not assumed
    assert set(_member_answers(seen, chief).values()) == {"open"}, seen["member"]
    # Under the default strategy (multi_worker_mirrored) the ps takes no part: it is no member, so it is dropped.
    assert seen["member"][PS, chief, 2222] == "dropped"
    assert seen["member"][SERVING, chief, 2222] == "dropped"  # a node outside the cluster
    assert seen["member"][SERVING, chief, 22] == "open"  # only the cluster port is closed to it
    # The rules live in the chief's own namespace: the host's ruleset is untouched.
    assert "tfprov_dist" in node_sh(CHIEF, "nft list tables")
    assert subprocess.run(["nft", "list", "ruleset"], capture_output=True, text=True).stdout == ""
    # Node 3 left the cluster: the members' sets are replaced, not added to, so it is refused too.
    assert seen["left"][WORKER_1, chief, 2222] == seen["left"][WORKER_3, chief, 2222] == "open"
    assert seen["left"][WORKER_2, chief, 2222] == "dropped"


def test_ufw_where_it_is_the_active_firewall_denies_everyone_else_and_forgets_former_members(firewalls):
    seen, node = firewalls, WORKER_1
    assert "Default: allow (incoming)" in seen["ufw status"]
    assert set(_member_answers(seen, node).values()) == {"open"}, seen["member"]
    assert seen["member"][PS, node, 2222] == seen["member"][SERVING, node, 2222] == "dropped"
    assert seen["member"][SERVING, node, 22] == "open"
    assert seen["left"][CHIEF, node, 2222] == seen["left"][WORKER_3, node, 2222] == "open"
    assert seen["left"][WORKER_2, node, 2222] == "dropped"
    # Node 3's rule went, the others stayed, in ufw's order (members, then everyone else denied).
    assert seen["ufw rules"] == [f"ufw allow from {label(member, 'tfprov.address')} to any port 2222 proto tcp"
                                 for member in (CHIEF, WORKER_1, WORKER_3)] + ["ufw deny 2222/tcp"], seen["ufw rules"]


def test_firewalld_where_it_is_the_active_firewall_lets_members_in_and_forgets_former_members(firewalls):
    seen, node = firewalls, WORKER_3
    assert set(_member_answers(seen, node).values()) == {"open"}, seen["member"]
    assert "open" not in (seen["member"][PS, node, 2222], seen["member"][SERVING, node, 2222])
    assert seen["member"][SERVING, node, 22] == "open"
    assert seen["left"][CHIEF, node, 2222] == seen["left"][WORKER_1, node, 2222] == "open"
    assert seen["left"][WORKER_2, node, 2222] != "open"
    # Node 3's rich rule went, the others stayed.
    assert sorted(rule.split('address="')[1].split('"')[0] for rule in seen["firewalld rules"]
                  if 'port="2222"' in rule) == sorted(label(m, "tfprov.address") for m in (CHIEF, WORKER_1, WORKER_3))


def test_a_cut_node_is_unreachable_and_comes_back_when_restored(lab):
    runs, _ = lab
    assert ansible(WORKER_1, "-m", "ping").returncode == 0
    tfprov("local", "fault", WORKER_1, "cut", runs_dir=runs, check=True)
    try:
        started = time.monotonic()
        cut = ansible(WORKER_1, "-m", "ping")
        seconds = time.monotonic() - started
        assert node_sh(WORKER_1, "echo running") == "running"  # cut off, not stopped
    finally:
        tfprov("local", "fault", WORKER_1, "restore", runs_dir=runs, check=True)
    assert cut.returncode == 4 and "UNREACHABLE" in cut.stdout, cut.stdout + cut.stderr
    assert seconds < 60, f"a cut node took {seconds:.0f} s to be found unreachable"
    assert ansible(WORKER_1, "-m", "ping").returncode == 0


def test_a_stopped_or_rebooted_node_keeps_its_address(lab):
    runs, _ = lab
    address = label(PS, "tfprov.address")
    tfprov("local", "fault", PS, "stop", runs_dir=runs, check=True)
    assert subprocess.run(["docker", "inspect", "-f", "{{.State.Running}}", PS], capture_output=True,
                          text=True).stdout.strip() == "false"
    assert connect(CHIEF, address, 22) != "open"
    tfprov("local", "fault", PS, "start", runs_dir=runs, check=True)
    assert ansible(PS, "-m", "ping").returncode == 0
    def started_at():
        return subprocess.run(["docker", "inspect", "-f", "{{.State.StartedAt}}", PS], capture_output=True,
                              text=True, check=True).stdout
    booted = started_at()
    proc = tfprov("local", "fault", PS, "reboot", runs_dir=runs, check=True)
    assert "rebooted in" in proc.stdout and started_at() != booted  # systemd's reboot, back by its restart policy
    assert node_sh(PS, "ip -br addr show eth0").split()[2].startswith(address + "/")
    assert ansible(PS, "-m", "ping").returncode == 0


def test_a_node_rebooted_during_a_run_is_reported_and_a_rerun_converges(lab):
    runs, _ = lab
    node = WORKER_1
    run = [TFPROV, "run", "node", "-i", SSH_INVENTORY, "--limit", node]
    env = {**ENV, "TFPROV_RUNS_DIR": str(runs)}
    # Unbuffered: the progress lines arrive as the run goes (a pipe would hold them to the end).
    proc = subprocess.Popen(run, env={**env, "PYTHONUNBUFFERED": "1"}, cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    seen, plays = [], 0
    for line in proc.stdout:  # the run's progress: reboot the node once the resolve play recorded its boot
        seen.append(line)
        plays += line.startswith("PLAY ")
        if plays == 3:  # the converge check's play, the resolve play, then the package cache's
            # Abrupt (no orderly shutdown), as a crash or a hypervisor's restart would be.
            node_sh(node, "systemctl reboot --force --no-block", check=False)
            break
    out = "".join(seen) + proc.stdout.read()
    assert proc.wait(timeout=600) in (4, 5), out[-3000:]
    assert "report:" in out  # the run ended with its report
    # Caught in the task it broke (unreachable), or, when SSH reconnected across it, by the run's boot check.
    host = json.loads(sorted(Path(runs).glob("*-node/report.json"))[-1].read_text())["hosts"][node]
    assert host["status"] == "unreachable" or (host["status"] == "failed" and "rebooted during the run" in out), \
        (host, out[-3000:])
    # Back through its restart policy, at the same address; a re-run converges, then one changes nothing.
    for _ in range(120):
        if ansible(node, "-m", "ping").returncode == 0:
            break
        time.sleep(1)
    first = subprocess.run(run, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert first.returncode == 0, first.stdout[-3000:]
    again = subprocess.run(run, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert again.returncode == 0, again.stdout[-3000:]
    report = json.loads(sorted(Path(runs).glob("*-node/report.json"))[-1].read_text())
    assert report["hosts"][node]["changed"] == 0, report["hosts"][node]


def test_delay_says_what_this_kernel_lacks_or_shapes_the_link(lab):
    runs, _ = lab
    proc = tfprov("local", "fault", "2", "delay", "--ms", "20", runs_dir=runs)
    if proc.returncode == 0:
        tfprov("local", "fault", "2", "delay", runs_dir=runs, check=True)  # 0 ms, 0 %: unshaped
    else:
        assert proc.returncode == 2 and proc.stderr.startswith("tfprov: error: delay needs tc netem"), proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1


def test_down_leaves_the_hosts_network_as_it_was(lab):
    runs, before = lab
    assert host_network() == before  # while up, too
    state = ROOT / f".tfprov/local/clouds/{CLOUD}"
    pids = [int(pid) for pid in json.loads((state / "gateway.json").read_text())["pids"].values()]
    tfprov("down", "local", runs_dir=runs, check=True)
    assert host_network() == before
    time.sleep(0.5)
    assert not [pid for pid in pids if Path(f"/proc/{pid}/cmdline").exists()
                and Path(f"/proc/{pid}/cmdline").read_bytes()], "the gateway's processes outlived down"
    assert not (state / "proxy.sock").exists()
    netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert f"tfprov-{CLOUD}" not in netns
    left = subprocess.run(["docker", "ps", "-aq", "--filter", f"name=tfprov-{CLOUD}-"], capture_output=True,
                          text=True).stdout.split()
    assert left == []
