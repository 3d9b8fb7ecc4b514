import os
import stat
import subprocess

import pytest

from tfprov.errors import TfprovError
from tfprov.local import ssh

HOST_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl root@tfprov-node"


def test_sshd_listens_on_loopback_only_with_keys_only():
    config = ssh.render_sshd_config(22003, "debian")
    lines = set(config.splitlines())
    assert {"Port 22003", "ListenAddress 127.0.0.1", "AllowUsers debian", "PermitRootLogin no",
            "PasswordAuthentication no", "KbdInteractiveAuthentication no",
            "AuthenticationMethods publickey", f"HostKey {ssh.HOST_KEY}"} <= lines
    assert not [line for line in lines if line.startswith("ListenAddress") and "127.0.0.1" not in line]


def test_sshd_on_the_private_network_listens_on_the_nodes_address_only():
    lines = set(ssh.render_sshd_config(22, "debian", "10.210.0.11").splitlines())
    assert {"Port 22", "ListenAddress 10.210.0.11"} <= lines
    assert "ListenAddress 127.0.0.1" not in lines and "ListenAddress 0.0.0.0" not in lines


def test_known_hosts_line_names_the_loopback_port():
    assert ssh.known_hosts_line("127.0.0.1", 22001, HOST_KEY) == f"[127.0.0.1]:22001 {' '.join(HOST_KEY.split()[:2])}"


def test_known_hosts_line_of_a_private_address_on_port_22_is_the_bare_address():
    assert ssh.known_hosts_line("10.210.0.12", 22, HOST_KEY) == f"10.210.0.12 {' '.join(HOST_KEY.split()[:2])}"


def test_each_cloud_records_its_own_host_keys(tmp_path):
    # Two clouds may use the same private addresses: one known_hosts for both would mix their keys up.
    assert ssh.ssh_files(tmp_path).known_hosts.name == "known_hosts.local"
    assert ssh.ssh_files(tmp_path, "ci-a").known_hosts.name == "known_hosts.ci-a"
    assert ssh.ssh_files(tmp_path, "ci-a").key == ssh.ssh_files(tmp_path).key


@pytest.mark.parametrize("bad", ["", "no such key", "ssh-ed25519 not*base64", "Permission denied"])
def test_anything_but_a_host_key_is_refused(bad):
    with pytest.raises(TfprovError, match="not an SSH host public key"):
        ssh.known_hosts_line("127.0.0.1", 22001, bad)


def test_key_pair_is_made_once_and_private(tmp_path):
    files = ssh.ssh_files(tmp_path)
    public = ssh.ensure_key_pair(files)
    assert public.startswith("ssh-ed25519 ") and public == files.public_key.read_text().strip()
    assert stat.S_IMODE(files.key.stat().st_mode) == 0o600
    assert stat.S_IMODE(files.directory.stat().st_mode) == 0o700
    first = files.key.read_bytes()
    os.chmod(files.key, 0o644)  # loosened by hand: put back, not replaced
    assert ssh.ensure_key_pair(files) == public and files.key.read_bytes() == first
    assert stat.S_IMODE(files.key.stat().st_mode) == 0o600


def test_known_hosts_holds_exactly_the_current_nodes(tmp_path):
    files = ssh.ssh_files(tmp_path)
    ssh.write_known_hosts(files, ["[127.0.0.1]:22001 ssh-ed25519 AAAA1", "[127.0.0.1]:22002 ssh-ed25519 AAAA2"])
    ssh.write_known_hosts(files, ["[127.0.0.1]:22001 ssh-ed25519 AAAA3"])
    assert files.known_hosts.read_text() == "[127.0.0.1]:22001 ssh-ed25519 AAAA3\n"
    assert stat.S_IMODE(files.known_hosts.stat().st_mode) == 0o600


def test_setup_script_is_valid_shell_and_quotes_the_key():
    key = "ssh-ed25519 AAAAC3 it's 'quoted' $(not run)"
    script = ssh.render_setup_script(22002, key, "debian")
    subprocess.run(["sh", "-n"], input=script, text=True, check=True)
    # The key reaches printf as one literal argument: run just that line with a stand-in home.
    line = next(line for line in script.splitlines() if "authorized_keys\"" in line and "printf" in line)
    out = subprocess.run(["sh", "-c", line.replace('> "$home/.ssh/authorized_keys"', "")],
                         capture_output=True, text=True, check=True).stdout
    assert out == key + "\n"
    assert "Port 22002" in script and "NOPASSWD: ALL" in script and "sshd -t" in script
