"""`tfprov run serving` on the local cloud's private network, as a user does it on VMs: two nodes (worker, serving),
the serving node reached over SSH through the jump, an engine installed into it (through the cloud's proxy) under a
daemon.json the user already had, with a bridge of its own; the example model served by the stand-in image,
published on the node's private address and answered by the official gRPC client on the other node; then a second
run that changes nothing.

Bad inputs first, on the fresh node: each is refused with one line and leaves the node byte-for-byte unchanged.
"""

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from local_cloud import label

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
TFPROV = str(Path(sys.executable).parent / "tfprov")
SERVING = "tfprov-itest-2"  # --roles worker,serving: node 2 serves
INVENTORY = "inventories/local_ssh.docker_containers.yml"
SNAPSHOT = (
    "find /etc /opt /srv /usr/share/keyrings /var/lib/apt/lists -xdev "
    "-printf '%p %s %T@ %m %l\\n' 2>/dev/null | sort; dpkg --get-selections"
)
# What the user had before tfprov came: every key must still be there afterwards, beside the settings the run asks
# for (a bridge subnet of its own, as on a VPC whose range overlaps Docker's default; merged in before the engine is
# installed, so that it never starts without them).
USER_DAEMON_JSON = {"log-driver": "json-file", "log-opts": {"max-size": "10m", "max-file": "3"},
                    "max-concurrent-downloads": 2, "labels": ["team=ml"]}
DAEMON_SETTINGS = {"bip": "192.168.217.1/24"}
SETTINGS = ["-e", json.dumps({"tfprov_docker_daemon_settings": DAEMON_SETTINGS})]
EXAMPLE = ROOT / "examples" / "digits"


def tfprov(*args, runs_dir):
    env = {**os.environ, "TFPROV_RUNS_DIR": str(runs_dir)}
    return subprocess.run([TFPROV, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)


def node_sh(script: str, stdin: str | None = None) -> str:
    return subprocess.run(["docker", "exec", "-i", SERVING, "sh", "-c", script], input=stdin, capture_output=True,
                          text=True, check=True).stdout


def node_label(key: str, node: str = SERVING) -> str:
    """What `tfprov up local` recorded on the node: its address, its ports."""
    return label(node, f"tfprov.{key}")


def latest_report(runs_dir: Path) -> dict:
    return json.loads(sorted(runs_dir.glob("*/report.json"))[-1].read_text())


@pytest.fixture(scope="module")
def cloud(tmp_path_factory):
    runs = tmp_path_factory.mktemp("runs")
    subprocess.run([TFPROV, "down", "local"], cwd=ROOT, capture_output=True)
    proc = tfprov("up", "local", "--nodes", "2", "--roles", "worker,serving", runs_dir=runs)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    node_sh("mkdir -p /etc/docker && cat > /etc/docker/daemon.json", json.dumps(USER_DAEMON_JSON, indent=2))
    yield runs, tmp_path_factory.mktemp("models")
    tfprov("down", "local", runs_dir=runs)


def bad_models(tmp: Path) -> dict[str, tuple[dict, str]]:
    """Each bad input, and a piece of the one line that must say what is wrong."""
    flat = tmp / "flat"  # a SavedModel without a version directory: TF Serving would find no versions
    flat.mkdir(exist_ok=True)
    (flat / "saved_model.pb").write_bytes((EXAMPLE / "export/digits/1/saved_model.pb").read_bytes())
    good = str(EXAMPLE / "export" / "digits")
    return {
        "unknown scheme": ({"tf_serving_models": [{"name": "m", "source": "hdfs://nn/models/m"}]}, "hdfs://"),
        "missing path": ({"tf_serving_models": [{"name": "m", "source": str(tmp / "nowhere")}]}, str(tmp / "nowhere")),
        "no numeric version": ({"tf_serving_models": [{"name": "m", "source": str(flat)}]}, "version"),
        "non-numeric version": ({"tf_serving_models": [{"name": "m", "source": good, "version_policy": "specific",
                                                        "versions": ["v2"]}]}, "v2"),
        "two models one name": ({"tf_serving_models": [{"name": "m", "source": good}, {"name": "m", "source": good}]},
                                "m"),
    }


def assert_refused(proc, needle: str):
    assert proc.returncode == 2, proc.stdout  # refused before any change: bad input, not a host failing
    assert "tfprov: error: refused before any change" in proc.stderr, proc.stderr
    failures = [line for line in proc.stdout.splitlines() if ": " in line and needle in line]
    assert failures, f"no line naming {needle!r}:\n{proc.stdout[-3000:]}\n{proc.stderr}"


def test_bad_inputs_are_refused_before_any_change(cloud):
    runs, tmp = cloud
    before = node_sh(SNAPSHOT)
    for name, (extra, needle) in bad_models(tmp).items():
        proc = tfprov("run", "serving", "-i", INVENTORY, *SETTINGS, "-e", json.dumps(extra), runs_dir=runs)
        assert_refused(proc, needle)
        assert node_sh(SNAPSHOT) == before, f"{name}: the node changed"


def test_a_port_held_by_another_service_is_refused(cloud):
    runs, _ = cloud
    address, rest_port = node_label("address"), node_label("serving_rest_port")
    before = node_sh(SNAPSHOT)
    holder = subprocess.Popen(["docker", "exec", SERVING, "python3", "-m", "http.server", "--bind", address,
                               rest_port], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        node_sh(f"for i in $(seq 50); do python3 -c 'import socket; socket.create_connection((\"{address}\", "
                f"{rest_port}))' 2>/dev/null && exit 0; sleep 0.1; done; exit 1")
        proc = tfprov("run", "serving", "-i", INVENTORY, *SETTINGS, runs_dir=runs)
        assert_refused(proc, rest_port)
    finally:
        holder.terminate()
        holder.wait()
        node_sh(f"pkill -f '[h]ttp.server --bind {address} {rest_port}' || true")  # [h]: not this shell
    assert node_sh(SNAPSHOT) == before


def grpc_answers(target: str, client_node: str) -> dict:
    """The official tensorflow-serving-api client, run from the stand-in image (it needs TensorFlow) in the network
    namespace of another node: a client on the private network."""
    client = (ROOT / "tests/support/serving_stand_in/grpc_client.py").read_text()
    image = next(line for line in subprocess.run(
        ["docker", "images", "tfprov/serving-stand-in", "--format", "{{.Repository}}:{{.Tag}}"],
        capture_output=True, text=True, check=True).stdout.splitlines())
    python = "/opt/tfserving/bin/python"
    proc = subprocess.run(["docker", "run", "--rm", "-i", "--network", f"container:{client_node}-net",
                           "--entrypoint", python, "-v", f"{EXAMPLE}:/digits:ro", image, "-", "--target", target,
                           "--samples", "/digits/samples.json"], input=client, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_run_serving_serves_the_example_model(cloud):
    runs, _ = cloud
    proc = tfprov("run", "serving", "-i", INVENTORY, *SETTINGS, runs_dir=runs)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr
    assert re.search(r"digits\s+│\s+1\s+│\s+AVAILABLE", proc.stdout), proc.stdout[-3000:]
    report = latest_report(runs)
    rows = report["hosts"][SERVING]["data"]["serving"]
    assert [(r["model"], str(r["version"]), r["state"]) for r in rows] == [("digits", "1", "AVAILABLE")]
    assert "worker" not in json.dumps(report["hosts"])  # only tfprov_serving hosts are touched


def test_serving_is_published_by_a_bridged_engine_on_the_private_address_only(cloud):
    address = node_label("address")
    published = node_sh("docker ps --filter name=tfprov-serving --format '{{.Networks}} {{.Ports}}'").strip()
    assert published == f"bridge {address}:8500-8501->8500-8501/tcp"
    assert "192.168.217.1/24" in node_sh("ip -br addr show docker0")  # the engine's bridge, inside the node
    host_listeners = subprocess.run(["ss", "-Htln"], capture_output=True, text=True, check=True).stdout
    assert not re.search(r":850[01]\s", host_listeners), host_listeners  # nothing on the host's own network


def test_the_official_grpc_client_gets_the_right_digits(cloud):
    answers = grpc_answers(f"{node_label('address')}:{node_label('serving_grpc_port')}", "tfprov-itest-1")
    samples = json.loads((EXAMPLE / "samples.json").read_text())
    assert answers["status"][0]["state"] == "AVAILABLE"
    assert answers["predictions"] == [s["label"] for s in samples["samples"]] and answers["correct"]


def test_the_users_daemon_json_keys_are_all_kept(cloud):
    merged = json.loads(node_sh("cat /etc/docker/daemon.json"))
    for key, value in (USER_DAEMON_JSON | DAEMON_SETTINGS).items():
        assert merged[key] == value, key
    [backup] = [name for name in node_sh("ls /etc/docker/").split() if name.startswith("daemon.json.")]
    assert json.loads(node_sh(f"cat /etc/docker/{backup}")) == USER_DAEMON_JSON  # the user's file, as it was


def test_a_second_run_changes_nothing(cloud):
    runs, _ = cloud
    proc = tfprov("run", "serving", "-i", INVENTORY, *SETTINGS, runs_dir=runs)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr
    assert latest_report(runs)["hosts"][SERVING]["changed"] == 0, proc.stdout[-4000:]


def test_a_container_that_exits_during_the_health_gate_fails_it_at_once_with_its_log(cloud):
    """A server that dies while its models load (here an image whose server exits at once, as one killed for
    memory does): the gate says so with the container's own log, instead of waiting out its timeout."""
    runs, _ = cloud
    image = node_sh("docker images --format '{{.Repository}}:{{.Tag}}' tfprov/serving-stand-in").split()[0]
    crash = "#!/bin/sh\\necho model server: out of memory while loading digits >&2\\nexit 137\\n"
    node_sh("docker rm -f tfprov-crash-build >/dev/null 2>&1; docker run --name tfprov-crash-build --entrypoint "
            f"/bin/sh {image} -c 'printf \"{crash}\" > /usr/bin/tensorflow_model_server' && "
            "docker commit tfprov-crash-build tfprov/serving-crash:1 && docker rm tfprov-crash-build")
    timeout = 900
    started = time.monotonic()
    proc = tfprov("run", "serving", "-i", INVENTORY, *SETTINGS, "-e", "tfprov_serving_image=tfprov/serving-crash:1",
                  "-e", "tfprov_serving_image_archive=", "-e", f"tf_serving_health_timeout={timeout}", runs_dir=runs)
    seconds = time.monotonic() - started
    assert proc.returncode == 4, proc.stdout[-3000:]
    [line] = [line for line in proc.stdout.splitlines() if "while its models loaded" in line and "|" not in line
              or "server log:" in line][:1]
    assert "tfprov-serving exited (exit code 137)" in line or "restarted" in line, line
    assert "out of memory while loading digits" in line, line
    assert seconds < timeout / 3, f"{seconds:.0f} s: the gate waited instead of stopping when the container exited"
