"""The private network's only way out: the controller's HTTP(S) proxy and its wheelhouse, at the gateway address.

A private local cloud has no route out, as nodes behind a proxy or air-gapped have none: packages reach them only
through the controller, so tfprov's proxy and wheelhouse settings run for real.
- The proxy is Debian's tinyproxy, on the host's loopback (a port the kernel picks), forwarding only to the hosts
  on its allow-list (the Debian mirror, PyPI; more with TFPROV_LOCAL_PROXY_ALLOW): anything else is refused.
- socat carries it into the lab namespace over a Unix socket (a file: namespaces do not split it): on the host
  UNIX-LISTEN → TCP 127.0.0.1:<port>, in the lab TCP-LISTEN <gateway>:3128 → UNIX-CONNECT. Nothing listens in
  the host's namespace but on its loopback, and nothing is added to the host's network.
- The wheelhouse (a directory of wheels, when there is one) is served read-only in the lab namespace at
  http://<gateway>:8080/, for pip's --find-links.
- The pip cache (proxpi, a caching PyPI mirror, run by the package_cache role's pip_cache_server.py) on the
  host's loopback, carried into the lab at http://<gateway>:3141/index/ the same way as the proxy: the nodes' pip
  index (tfprov_pip_index_url). Each file is fetched from PyPI once and kept in TFPROV_PIP_CACHE_DIR
  (/var/cache/tfprov/pip-cache), for every node of every local cloud after; pip still checks each file against the
  sha256 PyPI's index gives.
- The apt cache (Debian's apt-cacher-ng) on the host's loopback, behind the proxy: tinyproxy sends what is asked
  of the Debian mirror (plain HTTP) to it as its upstream, so apt on the nodes uses it through the proxy settings it
  already has. Each file is fetched from the mirror once per cloud and kept in TFPROV_APT_CACHE_DIR
  (/var/cache/tfprov/apt-cache/<cloud>); apt still checks every file against the mirror's signed index. Its log
  (apt-cache/apt-cacher.log in the cloud's state directory) has a line per file fetched (I) and served (O).
Their pids are recorded in the cloud's state directory; `up` restarts what died, `down` stops them.
"""

from __future__ import annotations

import grp
import json
import os
import pwd
import random
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit
from urllib.request import urlopen

from ..errors import TfprovError
from ..project import project_root
from .cloud import Cloud

PROXY_PORT = 3128
WHEELHOUSE_PORT = 8080
PIP_CACHE_PORT = 3141
PIP_CACHE_DIR = Path(os.environ.get("TFPROV_PIP_CACHE_DIR", "/var/cache/tfprov/pip-cache"))
# Who asks for a file being fetched waits for that one download (proxpi's default, 0.9 s, then sends pip to PyPI:
# every node would fetch TensorFlow from outside again).
PIP_CACHE_ENV = {"PROXPI_DOWNLOAD_TIMEOUT": "1800", "PROXPI_CACHE_SIZE": str(20 * 2**30)}
APT_CACHE_DIR = Path(os.environ.get("TFPROV_APT_CACHE_DIR", "/var/cache/tfprov/apt-cache"))
# The process each recorded name stands for (a pid is ours only while its command line still says so).
MARKERS = {"proxy": "tinyproxy", "wheelhouse": "http.server", "pip_cache": "pip_cache_server",
           "apt_cache": "apt-cacher-ng"}
ALLOW_ENV = "TFPROV_LOCAL_PROXY_ALLOW"  # extra host names the proxy forwards to, comma-separated
PYPI_HOSTS = ("pypi.org", "files.pythonhosted.org")
STATE_FILE = "gateway.json"


def proxy_url(cloud: Cloud) -> str:
    return f"http://{cloud.gateway}:{PROXY_PORT}"


def wheelhouse_url(cloud: Cloud) -> str:
    return f"http://{cloud.gateway}:{WHEELHOUSE_PORT}/"


def pip_index_url(cloud: Cloud) -> str:
    return f"http://{cloud.gateway}:{PIP_CACHE_PORT}/index/"


def pip_cache_server() -> Path:
    """The same server the package_cache role runs on a cloud cluster's cache node: one file, in the collection."""
    return project_root() / "roles" / "package_cache" / "files" / "pip_cache_server.py"


def allowed_hosts(mirror: str) -> list[str]:
    """Where the nodes may go: the Debian mirror the node images use, PyPI, and what the user adds."""
    extra = [h.strip() for h in os.environ.get(ALLOW_ENV, "").split(",") if h.strip()]
    return sorted({urlsplit(mirror).hostname or mirror, *PYPI_HOSTS, *extra})


def tinyproxy_config(state: Path, port: int, hosts: list[str],
                     apt_cache: tuple[int, str] | None = None) -> tuple[str, str]:
    """tinyproxy.conf and its filter file: loopback only, CONNECT only to 443, every host not listed refused;
    apt_cache (port, the mirror's host): what is asked of that host goes through the apt cache at that port."""
    user = "User nobody\nGroup nogroup\n" if os.geteuid() == 0 else ""
    upstream = f"Upstream http 127.0.0.1:{apt_cache[0]} \"{apt_cache[1]}\"\n" if apt_cache else ""
    return (f"Port {port}\nListen 127.0.0.1\nAllow 127.0.0.1\n{user}Timeout 600\nMaxClients 100\n"
            f"LogLevel Info\nLogFile \"{state / 'proxy.log'}\"\nFilter \"{state / 'proxy.allow'}\"\n"
            f"FilterType fnmatch\nFilterDefaultDeny Yes\nConnectPort 443\nDisableViaHeader Yes\n{upstream}"), \
        "\n".join(hosts)


def apt_cache_dir(state: Path) -> Path:
    """The cloud's own apt cache: two apt-cacher-ng processes never share one (each locks only in itself)."""
    return APT_CACHE_DIR / state.name


def apt_cache_config(state: Path, port: int) -> str:
    """apt-cacher-ng's acng.conf: the host's loopback only, in the foreground, its log unbuffered (read by
    bench/fleet_download.py). No remapping: it keeps what it is asked for under the URL's own host and path."""
    return (f"CacheDir: {apt_cache_dir(state)}\nLogDir: {state / 'apt-cache'}\nPort: {port}\n"
            f"BindAddress: 127.0.0.1\nSocketPath: {state / 'apt-cache' / 'acng.sock'}\n"
            f"PidFile: {state / 'apt-cache' / 'acng.pid'}\nForeGround: 1\nUnbufferLogs: 1\n")


def free_loopback_port_below_32768() -> int:
    """apt-cacher-ng 3.7 cannot bind a port above 32767 ("Error resolving address for binding"), and the kernel
    picks from 32768 up: a free one among 20000-32767, probed."""
    for port in random.sample(range(20000, 32768), 200):
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise TfprovError("no free loopback port between 20000 and 32767 for the local cloud's apt cache")


def start_apt_cache(state: Path, log: Path) -> tuple[int, int]:
    """apt-cacher-ng on the host's loopback, for the proxy's upstream: (its pid, its port)."""
    port = free_loopback_port_below_32768()
    conf = state / "apt-cache"
    conf.mkdir(exist_ok=True)
    apt_cache_dir(state).mkdir(parents=True, exist_ok=True)
    (conf / "acng.conf").write_text(apt_cache_config(state, port))
    pid = spawn(["apt-cacher-ng", "-c", str(conf)], log)
    deadline = time.monotonic() + 10
    while not _listening(port):
        if time.monotonic() > deadline or _exited(pid):  # gone: it says why in its log
            raise TfprovError(f"the local cloud's apt cache did not start on port {port} (see {log})")
        time.sleep(0.05)
    return pid, port


def _exited(pid: int) -> bool:
    """A child of ours that ended (reaped here, or already by subprocess's own clean-up)."""
    try:
        return os.waitpid(pid, os.WNOHANG)[0] != 0
    except ChildProcessError:
        return True


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def _writable_log(log: Path) -> None:
    """The proxy's log, every request it forwarded or refused: tinyproxy writes it as nobody when started by root."""
    log.touch()
    if os.geteuid() == 0:
        os.chown(log, pwd.getpwnam("nobody").pw_uid, grp.getgrnam("nogroup").gr_gid)


def free_loopback_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _alive(pid: int, marker: str) -> bool:
    """The recorded pid is still the process we started (a pid may be reused)."""
    if not pid:
        return False
    try:
        return marker in Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return False


def spawn(cmd: list[str], log: Path) -> int:
    """A process of the cloud's, in a session of its own: it outlives `tfprov up`, as the nodes do."""
    with open(log, "ab") as out:
        try:
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True)
        except FileNotFoundError as exc:
            raise TfprovError(f"the local cloud's gateway: {cmd[0]} is not installed") from exc
    return proc.pid


def _wait_listening(cloud: Cloud, port: int, what: str, log: Path, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    probe = ["ip", "netns", "exec", cloud.namespace, "socat", "-u", "/dev/null", f"TCP:{cloud.gateway}:{port}"]
    while subprocess.run(probe, capture_output=True).returncode != 0:
        if time.monotonic() > deadline:
            raise TfprovError(f"the local cloud's {what} did not start at {cloud.gateway}:{port} (see {log})")
        time.sleep(0.1)


def _read_state(state: Path) -> dict:
    try:
        return json.loads((state / STATE_FILE).read_text())
    except (OSError, ValueError):
        return {}


def start_host_proxy(state: Path, mirror: str) -> dict[str, int]:
    """tinyproxy on the host's loopback (its allow-list), reachable through the Unix socket state/proxy.sock, and
    the apt cache behind it when the mirror is plain HTTP (apt-cacher-ng cannot look into a tunnel); the pids. The
    private network's lab end and the VMs' guestfwd both connect to that socket."""
    sock = state / "proxy.sock"
    port = free_loopback_port()
    log = state / "gateway.log"
    procs, apt_cache = {}, None
    if urlsplit(mirror).scheme == "http":
        procs["apt_cache"], cache_port = start_apt_cache(state, log)
        apt_cache = (cache_port, urlsplit(mirror).hostname or "")
    config, allow = tinyproxy_config(state, port, allowed_hosts(mirror), apt_cache)
    (state / "proxy.conf").write_text(config)
    (state / "proxy.allow").write_text(allow + "\n")
    _writable_log(state / "proxy.log")
    procs |= {"proxy": spawn(["tinyproxy", "-d", "-c", str(state / "proxy.conf")], log),
              "proxy_host_end": spawn(["socat", f"UNIX-LISTEN:{sock},fork,unlink-early,mode=600",
                                        f"TCP:127.0.0.1:{port}"], log)}
    _wait_for_socket(sock)
    return procs


def _wait_for_socket(sock: Path) -> None:
    """What connects to the socket file needs it there: wait for it (5 s at most)."""
    for _ in range(100):
        if sock.exists():
            return
        time.sleep(0.05)


def alive(procs: dict[str, int]) -> bool:
    """Every recorded process (start_host_proxy's, a wheelhouse server, their socat ends) still runs."""
    return bool(procs) and all(_alive(pid, MARKERS.get(name, "socat")) for name, pid in procs.items())


def start_pip_cache(cloud: Cloud, state: Path) -> dict[str, int]:
    """proxpi on the host's loopback, its cache in PIP_CACHE_DIR; socat carries it to <gateway>:3141 through the
    Unix socket state/pip-cache.sock. The pids."""
    sock, port, log = state / "pip-cache.sock", free_loopback_port(), state / "pip-cache.log"
    PIP_CACHE_DIR.mkdir(parents=True, exist_ok=True)
    env = {**PIP_CACHE_ENV, **os.environ, "PROXPI_CACHE_DIR": str(PIP_CACHE_DIR)}
    with open(log, "ab") as out:
        server = subprocess.Popen([sys.executable, str(pip_cache_server()), "127.0.0.1", str(port)],
                                  stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True, env=env)
    procs = {"pip_cache": server.pid,
             "pip_cache_host_end": spawn(["socat", f"UNIX-LISTEN:{sock},fork,unlink-early,mode=600",
                                          f"TCP:127.0.0.1:{port}"], state / "gateway.log")}
    _wait_for_socket(sock)
    procs["pip_cache_lab_end"] = spawn(["ip", "netns", "exec", cloud.namespace, "socat",
                                        f"TCP-LISTEN:{PIP_CACHE_PORT},bind={cloud.gateway},fork,reuseaddr",
                                        f"UNIX-CONNECT:{sock}"], state / "gateway.log")
    deadline = time.monotonic() + 30
    while not _answers(f"http://127.0.0.1:{port}/health"):
        if time.monotonic() > deadline or server.poll() is not None:
            raise TfprovError(f"the local cloud's pip cache did not start (see {log})")
        time.sleep(0.2)
    return procs


def _answers(url: str) -> bool:
    try:
        with urlopen(url, timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def stop_processes(procs: dict[str, int]) -> None:
    for pid in procs.values():
        try:
            os.killpg(pid, signal.SIGTERM)  # the session: socat's forks go too
        except ProcessLookupError:
            pass


def ensure_gateway(cloud: Cloud, root: Path, mirror: str, wheelhouse: Path | None) -> dict[str, str]:
    """Start what is not running (idempotent); the URLs the nodes use: {'proxy': ..., 'wheelhouse': ...}."""
    state = cloud.state_dir(root)
    state.mkdir(parents=True, exist_ok=True)
    recorded = _read_state(state)
    procs = recorded.get("pids", {})
    sock = state / "proxy.sock"
    proxy = [("proxy", "tinyproxy"), ("proxy_host_end", str(sock)), ("proxy_lab_end", str(sock))]
    if "apt_cache" in procs:
        proxy.append(("apt_cache", MARKERS["apt_cache"]))
    if not all(_alive(procs.get(k, 0), marker) for k, marker in proxy):
        stop_gateway(cloud, root)
        procs = start_host_proxy(state, mirror)
        procs["proxy_lab_end"] = spawn(["ip", "netns", "exec", cloud.namespace, "socat",
                                         f"TCP-LISTEN:{PROXY_PORT},bind={cloud.gateway},fork,reuseaddr",
                                         f"UNIX-CONNECT:{sock}"], state / "gateway.log")
    urls = {"proxy": proxy_url(cloud), "pip_index": pip_index_url(cloud)}
    cache = {"pip_cache": MARKERS["pip_cache"], "pip_cache_host_end": "pip-cache.sock",
             "pip_cache_lab_end": "pip-cache.sock"}
    running = {name: procs.pop(name, 0) for name in cache}
    if all(_alive(pid, cache[name]) for name, pid in running.items()):
        procs.update(running)
    else:  # stop what of it still runs (only our own processes: a recorded pid may belong to another by now)
        stop_processes({name: pid for name, pid in running.items() if _alive(pid, cache[name])})
        procs.update(start_pip_cache(cloud, state))
    if wheelhouse and wheelhouse.is_dir():
        served = str(wheelhouse.resolve())
        if not _alive(procs.get("wheelhouse", 0), served):
            procs["wheelhouse"] = spawn(["ip", "netns", "exec", cloud.namespace, sys.executable, "-m", "http.server",
                                          str(WHEELHOUSE_PORT), "--bind", cloud.gateway, "--directory", served],
                                         state / "gateway.log")
        urls["wheelhouse"] = wheelhouse_url(cloud)
    (state / STATE_FILE).write_text(json.dumps({"pids": procs, "urls": urls}, indent=2))
    _wait_listening(cloud, PROXY_PORT, "proxy", state / "gateway.log")
    _wait_listening(cloud, PIP_CACHE_PORT, "pip cache", state / "gateway.log")
    if "wheelhouse" in urls:
        _wait_listening(cloud, WHEELHOUSE_PORT, "wheelhouse server", state / "gateway.log")
    return urls


def stop_gateway(cloud: Cloud, root: Path) -> None:
    state = cloud.state_dir(root)
    for name, pid in _read_state(state).get("pids", {}).items():
        if _alive(pid, MARKERS.get(name, "socat")):
            try:
                os.killpg(pid, signal.SIGTERM)  # the session: `ip netns exec` execs, socat's forks go too
            except ProcessLookupError:
                pass
    (state / STATE_FILE).unlink(missing_ok=True)
    (state / "proxy.sock").unlink(missing_ok=True)
    (state / "pip-cache.sock").unlink(missing_ok=True)


def needed_commands() -> dict[str, str]:
    """Command -> the Debian package that has it, for the controller's side of a private cloud."""
    return {"tinyproxy": "tinyproxy", "socat": "socat", "nsenter": "util-linux", "apt-cacher-ng": "apt-cacher-ng"}


def disable_packaged_services(installed: list[str]) -> None:
    """Debian's tinyproxy and apt-cacher-ng packages start their own services (ports 8888 and 3142, every address)
    where systemd runs: tfprov installed them only for its gateways, so those services are stopped and disabled,
    opening nothing."""
    services = [name for name in ("tinyproxy", "apt-cacher-ng") if name in installed]
    if services and shutil.which("systemctl") and Path("/run/systemd/system").is_dir():
        subprocess.run(["systemctl", "disable", "--now", *services], capture_output=True)
