"""The VM flavour's pieces that need no QEMU: the NoCloud seed, QEMU's command line (no way out but the SSH
port on loopback), host keys read from a console, the live inventory, and the segment's hub."""

import asyncio
import json
import subprocess

import pytest
import yaml
from rich.console import Console

from tfprov.cli import main
from tfprov.errors import TfprovError
from tfprov.local import vm_hub, vms
from tfprov.local.vm_image import VmImage


def make_vm(index=1, role="chief", port=50001):
    return vms.Vm(index, role, "t", port, f"t-{index}-abcd", "/img/disk.raw", "/img")


def test_the_seed_makes_debian_with_the_key_and_sudo_and_a_fixed_segment_address():
    vm = make_vm(2, "worker")
    data = yaml.safe_load(vms.user_data(vm, "ssh-ed25519 AAAA tfprov"))
    user = data["users"][0]
    assert (user["name"], user["sudo"], user["ssh_authorized_keys"]) == ("debian", "ALL=(ALL) NOPASSWD:ALL",
                                                                         ["ssh-ed25519 AAAA tfprov"])
    assert data["ssh_pwauth"] is False and data["disable_root"] is True and data["hostname"] == "tfprov-t-2"
    net = json.loads(vms.network_config(vm))["ethernets"]
    assert net["eth0"] == {"dhcp4": True} and net["eth1"] == {"addresses": ["10.220.0.12/24"]}


def test_the_seed_hands_the_vm_the_hosts_ca_bundle_when_there_is_one(tmp_path, monkeypatch):
    bundle = tmp_path / "ca.crt"
    monkeypatch.setattr(vms.nodes, "HOST_CA_BUNDLE", bundle)
    assert yaml.safe_load(vms.user_data(make_vm(), "k"))["write_files"] == []
    bundle.write_text("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
    written = yaml.safe_load(vms.user_data(make_vm(), "k"))["write_files"]
    assert written == [{"path": vms.nodes.NODE_CA_BUNDLE, "content": bundle.read_text(), "permissions": "0644"}]


def test_qemu_forwards_only_ssh_on_loopback_and_restricts_the_rest(tmp_path, monkeypatch):
    monkeypatch.setenv("TFPROV_HOME", str(tmp_path))
    (tmp_path / "galaxy.yml").write_text("")
    (tmp_path / "playbooks").mkdir()
    cmd = " ".join(vms.qemu_command(vms.VmCloud("t"), make_vm(port=50123), VmImage(tmp_path / "img")))
    assert "user,id=user,restrict=on,hostfwd=tcp:127.0.0.1:50123-:22" in cmd
    assert cmd.count("hostfwd") == 1 and "tcg,tb-size=" in cmd and "-accel kvm" not in cmd
    assert "-cpu max" in cmd  # AVX for TensorFlow's wheels
    assert f"addr.path={tmp_path}/.tfprov/local/clouds/t/segment.sock" in cmd  # the segment: a Unix socket


CONSOLE = """[  OK  ] Started ssh.service
ci-info: no authorized SSH keys fingerprints found for user debian.\r
-----BEGIN SSH HOST KEY KEYS-----\r
ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOLD root@old\r
-----END SSH HOST KEY KEYS-----\r
reboot
-----BEGIN SSH HOST KEY KEYS-----
ecdsa-sha2-nistp256 AAAAE2VjZHNh root@tfprov-t-1
ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAINEW root@tfprov-t-1
-----END SSH HOST KEY KEYS-----
"""


def test_host_keys_are_the_newest_block_cloud_init_printed(tmp_path):
    log = tmp_path / "console.log"
    assert vms.host_keys(log) == []
    log.write_text("booting\n")
    assert vms.host_keys(log) == []
    log.write_text(CONSOLE)
    assert vms.host_keys(log) == ["ecdsa-sha2-nistp256 AAAAE2VjZHNh", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAINEW"]


def test_the_inventory_has_the_group_contract_and_reads_state_live(tmp_path, monkeypatch):
    monkeypatch.setenv("TFPROV_HOME", str(tmp_path))
    (tmp_path / "galaxy.yml").write_text("")
    (tmp_path / "playbooks").mkdir()
    cloud = vms.VmCloud("t")
    cloud.save([make_vm(1, "chief", 50001), make_vm(2, "worker", 50002)])
    listed = vms.inventory(cloud)
    assert listed["tfprov_nodes"]["hosts"] == ["tfprov-t-1", "tfprov-t-2"]
    assert listed["tfprov_worker"]["hosts"] == ["tfprov-t-2"]
    host = listed["_meta"]["hostvars"]["tfprov-t-2"]
    assert (host["ansible_port"], host["ansible_user"], host["tfprov_tf_address"]) == (50002, "debian", "10.220.0.12")
    assert "StrictHostKeyChecking=yes" in host["ansible_ssh_common_args"] and host["ansible_ssh_retries"] == 3
    assert "HostKeyAlias=tfprov-t-2" in host["ansible_ssh_common_args"]
    assert host["tfprov_node_state"] == "stopped"  # no QEMU running
    assert host["tfprov_require_gpu"] is False and host["preflight_min_memory_mb"] < vms.MEMORY_MIB
    vm_dir = cloud.vm_dir(make_vm(2))
    vm_dir.mkdir(parents=True)
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        (vm_dir / "qemu.pid").write_text(str(sleeper.pid))
        assert vms.inventory(cloud)["_meta"]["hostvars"]["tfprov-t-2"]["tfprov_node_state"] == "running"
    finally:
        sleeper.kill()
    script = vms.write_inventory(cloud)
    out = subprocess.run([str(script), "--list"], capture_output=True, text=True, check=True).stdout
    assert json.loads(out)["tfprov_chief"]["hosts"] == ["tfprov-t-1"]


def test_a_node_name_names_its_vm_cloud_only_when_there_is_one(tmp_path, monkeypatch):
    monkeypatch.setenv("TFPROV_HOME", str(tmp_path))
    (tmp_path / "galaxy.yml").write_text("")
    (tmp_path / "playbooks").mkdir()
    assert vms.cloud_named_by("tfprov-lab-2") is None
    vms.VmCloud("lab").save([make_vm()])
    assert vms.cloud_named_by("tfprov-lab-2") == "lab" and vms.cloud_named_by("lab-2") is None


def frame(source_mac: str) -> bytes:
    payload = bytes(6) + bytes.fromhex(source_mac.replace(":", "")) + b"\x08\x00" + b"x" * 46
    return len(payload).to_bytes(4, "big") + payload


def test_the_hub_passes_frames_between_vms_and_drops_a_cut_ones(tmp_path):
    async def scenario():
        sock = tmp_path / "segment.sock"
        server = asyncio.create_task(vm_hub.main(str(sock)))
        while not sock.exists():
            await asyncio.sleep(0.01)
        (a_r, a_w), (b_r, b_w) = [await asyncio.open_unix_connection(str(sock)) for _ in range(2)]
        a, b = "52:54:00:00:0b:02", "52:54:00:00:0c:02"
        a_w.write(frame(a))
        b_w.write(frame(b))
        # Generous limits: on a loaded machine (CI's molecule lanes beside it) the hub's task runs late, not wrong.
        got_b = await asyncio.wait_for(b_r.readexactly(len(frame(a))), 30)
        got_a = await asyncio.wait_for(a_r.readexactly(len(frame(b))), 30)
        assert got_b == frame(a) and got_a == frame(b)
        sock.with_suffix(".cut").write_text(b + "\n")
        a_w.write(frame(a))
        b_w.write(frame(b))
        for reader in (a_r, b_r):
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(reader.readexactly(4), 0.3)
        sock.unlink()  # the cloud's directory removed: the hub stops (it looks once a second)
        await asyncio.wait_for(server, 30)

    asyncio.run(scenario())


def test_container_only_options_are_refused_for_vms(capsys):
    assert main(["up", "local", "--kind", "vm", "--suite", "trixie"]) == 2
    assert "--suite is for container nodes" in capsys.readouterr().err


def test_a_vm_cloud_and_a_container_cloud_never_share_a_name(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TFPROV_HOME", str(tmp_path))
    (tmp_path / "galaxy.yml").write_text("")
    (tmp_path / "playbooks").mkdir()
    vms.VmCloud("lab").save([make_vm()])
    assert main(["up", "local", "--name", "lab"]) == 2
    assert "local cloud lab is a VM cloud: add --kind vm" in capsys.readouterr().err
    containers = tmp_path / ".tfprov" / "local" / "clouds" / "box"
    containers.mkdir(parents=True)
    (containers / "gateway.json").write_text("{}")
    with pytest.raises(Exception, match="local cloud box holds container nodes"):
        vms.up(1, None, "box", None)


def test_a_vm_that_had_to_be_killed_is_not_baked(tmp_path, monkeypatch):
    monkeypatch.setenv("TFPROV_HOME", str(tmp_path))
    (tmp_path / "galaxy.yml").write_text("")
    (tmp_path / "playbooks").mkdir()
    vms.VmCloud("t").save([make_vm()])
    monkeypatch.setattr(vms, "stop", lambda cloud, vm, timeout: False)  # no clean power-off: writes may be lost
    monkeypatch.setattr(vms, "run", lambda *a, **k: pytest.fail("a killed VM's disk was imaged"))
    with pytest.raises(TfprovError, match="did not power off within 3 minutes and was killed"):
        vms.bake("t", "1", str(tmp_path / "img.qcow2"), Console())
    assert not (tmp_path / "img.qcow2").exists()
