"""In node containers (no cloud): bake_image.yml's generalize step on a converged node (tfprov/node-baked), and the
idle_stop role on tfprov/node (systemd runs there) with a stand-in nvidia-smi and the dry run. Check mode changes
nothing; second runs change nothing. Stand-ins: nvidia-smi, cloud-init (a script), SSH host keys and pip cache
(files); the stop itself is only decided (dry run), never done."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
PLAYBOOK = str(Path(sys.executable).parent / "ansible-playbook")
PREFIX = os.environ.get("TFPROV_TEST_PREFIX", "tfprov-it")
SYSTEMD_RUN = ["--tmpfs", "/run", "--tmpfs", "/run/lock", "--tmpfs", "/tmp", "-v", "/sys/fs/cgroup:/sys/fs/cgroup:ro"]


def docker(*args, check=True):
    proc = subprocess.run(["docker", *args], capture_output=True, text=True)
    assert not check or proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def sh(node, script, check=True):
    return docker("exec", node, "sh", "-c", script, check=check)


def write(node, path, text, mode="755"):
    subprocess.run(["docker", "exec", "-i", node, "sh", "-c", f"cat > {path} && chmod {mode} {path}"], input=text,
                   text=True, check=True)


@pytest.fixture
def container(request):
    made = []

    def start(image, suffix):
        if subprocess.run(["docker", "image", "inspect", image], capture_output=True).returncode:
            pytest.skip(f"no image {image} (make images / make baked-image)")
        name = f"{PREFIX}-{suffix}"
        docker("rm", "-f", "-v", name, check=False)
        docker("run", "-d", "--name", name, "--network", "host", "--stop-signal", "SIGRTMIN+3", *SYSTEMD_RUN,
               image, "/lib/systemd/systemd")
        made.append(name)
        sh(name, "timeout 60 systemctl is-system-running --wait || true")
        return name

    yield start
    for name in made:
        docker("rm", "-f", "-v", name, check=False)


def inventory(tmp_path, name, group, **settings):
    host = {"ansible_connection": "community.docker.docker", "ansible_host": name,
            "ansible_python_interpreter": "/usr/bin/python3", **settings}
    path = tmp_path / "inventory.yml"
    path.write_text(yaml.safe_dump({"all": {"children": {group: {"hosts": {name: host}}}}}))
    return str(path)


def play(inv, playbook, *extra):
    env = {**os.environ, "ANSIBLE_SHOW_CUSTOM_STATS": "1", "ANSIBLE_STDOUT_CALLBACK": "default"}
    proc = subprocess.run([PLAYBOOK, "-i", inv, f"playbooks/{playbook}", *extra], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    return proc.stdout


def changed(out):
    recap = out.split("PLAY RECAP")[-1]
    return int(recap.split("changed=")[1].split()[0])


GENERALIZED = ("ls /etc/ssh/ssh_host_* 2>/dev/null | wc -l; wc -c < /etc/machine-id; ls /var/lib/cloud; "
               "ls /var/cache/apt/archives/*.deb /var/cache/apt/*.bin 2>/dev/null | wc -l; ls -d /root/.cache/pip; "
               "ls /etc/systemd/system/multi-user.target.wants/tfprov-ssh-host-keys.service")


def test_generalize_clears_what_makes_a_vm_unique_and_check_mode_changes_nothing(tmp_path, container):
    node = container("tfprov/node-baked:bookworm", "bake")
    # Stand-ins for what a cloud VM has: cloud-init (clean removes its instance state), host keys, a pip cache.
    sh(node, "mkdir -p /var/lib/cloud/instance /root/.cache/pip/http && touch /root/.cache/pip/http/x "
             "/etc/ssh/ssh_host_ed25519_key /etc/ssh/ssh_host_ed25519_key.pub "
             "&& printf '#!/bin/sh\\n[ \"$1\" = clean ] && rm -rf /var/lib/cloud/instance\\n' > /usr/bin/cloud-init "
             "&& chmod 755 /usr/bin/cloud-init && touch /var/cache/apt/archives/stand-in.deb")
    before = sh(node, GENERALIZED, check=False)
    inv = inventory(tmp_path, node, "tfprov_bake")

    out = play(inv, "bake_image.yml", "--tags", "generalize", "--check")
    assert changed(out) > 0
    assert sh(node, GENERALIZED, check=False) == before

    play(inv, "bake_image.yml", "--tags", "generalize")
    lines = sh(node, GENERALIZED, check=False).splitlines()
    assert lines[:3] == ["0", "0", "0"] or lines[:2] == ["0", "0"], lines  # no host keys, an empty machine-id
    assert "instance" not in sh(node, "ls /var/lib/cloud")
    assert sh(node, "ls /var/cache/apt/archives/*.deb /var/cache/apt/*.bin 2>/dev/null | wc -l", check=False) == "0"
    assert sh(node, "test -e /root/.cache/pip && echo left || echo gone") == "gone"
    assert sh(node, "readlink /etc/systemd/system/multi-user.target.wants/tfprov-ssh-host-keys.service")

    assert changed(play(inv, "bake_image.yml", "--tags", "generalize")) == 0


STAND_IN_SMI = "#!/bin/sh\necho '0, 0'\necho '1, 2'\n"  # two GPUs at 0 % and 2 %


def test_idle_stop_installs_a_timer_decides_in_dry_run_and_is_idempotent(tmp_path, container):
    node = container("tfprov/node:bookworm", "idle")
    write(node, "/usr/local/bin/nvidia-smi", STAND_IN_SMI)
    inv = inventory(tmp_path, node, "tfprov_nodes")
    settings = ["-e", json.dumps({"idle_stop_minutes": 5, "idle_stop_dry_run": True})]
    role = str(tmp_path / "role.yml")
    Path(role).write_text(yaml.safe_dump([{"name": "Apply the idle_stop role", "hosts": "tfprov_nodes",
                                           "gather_facts": False, "become": True,
                                           "roles": [{"role": "tfprov.gpu.idle_stop"}]}]))

    def apply(*extra):
        env = {**os.environ, "ANSIBLE_STDOUT_CALLBACK": "default"}
        proc = subprocess.run([PLAYBOOK, "-i", inv, role, *settings, *extra], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
        return proc.stdout

    written = "ls /usr/local/libexec/tfprov /var/lib/tfprov /etc/systemd/system/tfprov-idle-stop.timer 2>/dev/null"
    assert changed(apply("--check")) > 0
    assert sh(node, written, check=False) == ""

    assert changed(apply()) > 0
    assert sh(node, "systemctl is-active tfprov-idle-stop.timer") == "active"
    assert sh(node, "systemctl is-enabled tfprov-idle-stop.timer") == "enabled"
    assert changed(apply()) == 0

    # The timer's own service, as the timer runs it: first idle, then (idle since 10 min ago) due, in dry run.
    sh(node, "systemctl start tfprov-idle-stop.service")
    first = json.loads(sh(node, "cat /var/lib/tfprov/idle.json"))
    assert first["idle"] and first["decision"] == "stay up" and first["gpus"][1] == {"index": 1, "utilization": 2.0}
    first["idle_since"] = "2026-01-01T00:00:00+00:00"
    write(node, "/var/lib/tfprov/idle.json", json.dumps(first), mode="644")
    sh(node, "systemctl start tfprov-idle-stop.service")
    due = json.loads(sh(node, "cat /var/lib/tfprov/idle.json"))
    assert due["decision"] == "would stop (shutdown, dry run)" and due["stop_due"]
    assert sh(node, "systemctl is-system-running", check=False) in ("running", "degraded")  # still up

    out = play(inv, "idle_report.yml")
    stats = out.split("CUSTOM STATS")[-1]  # set_stats, printed as YAML (ansible.cfg)
    assert "decision: would stop (shutdown, dry run)" in stats and "enabled: true" in stats
    assert changed(out) == 0

    apply("-e", "idle_stop_enabled=false")
    gone = ("/usr/local/libexec/tfprov/idle_check.py /var/lib/tfprov/idle.json "
            "/etc/systemd/system/tfprov-idle-stop.timer /etc/systemd/system/tfprov-idle-stop.service")
    assert sh(node, f"ls {gone} 2>/dev/null", check=False) == ""
    assert sh(node, "systemctl is-active tfprov-idle-stop.timer", check=False) == "inactive"
