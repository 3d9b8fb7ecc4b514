"""The private cloud's gateway: what its proxy forwards to, and how it is configured (the processes themselves run
in tests/integration/test_private_network.py, which needs root and network namespaces)."""

import os
from pathlib import Path

from tfprov.local import gateway
from tfprov.local.cloud import Cloud

CLOUD = Cloud("itnet", 3, "private", "10.210.3.0/24")


def test_the_nodes_reach_the_gateway_at_the_bridge_address():
    assert gateway.proxy_url(CLOUD) == "http://10.210.3.1:3128"
    assert gateway.wheelhouse_url(CLOUD) == "http://10.210.3.1:8080/"
    assert gateway.pip_index_url(CLOUD) == "http://10.210.3.1:3141/index/"


def test_the_proxy_forwards_only_to_the_mirror_pypi_and_what_the_user_adds(monkeypatch):
    monkeypatch.delenv(gateway.ALLOW_ENV, raising=False)
    assert gateway.allowed_hosts("http://deb.debian.org/debian") == [
        "deb.debian.org", "files.pythonhosted.org", "pypi.org"]
    monkeypatch.setenv(gateway.ALLOW_ENV, " repo.example.org , ,pypi.org")
    assert gateway.allowed_hosts("http://mirror.local:8080/debian") == [
        "files.pythonhosted.org", "mirror.local", "pypi.org", "repo.example.org"]


def test_the_proxy_listens_on_loopback_and_refuses_every_host_not_listed(tmp_path: Path):
    config, allow = gateway.tinyproxy_config(tmp_path, 41234, ["deb.debian.org", "pypi.org"])
    lines = config.splitlines()
    assert "Port 41234" in lines and "Listen 127.0.0.1" in lines and "Allow 127.0.0.1" in lines
    assert "FilterDefaultDeny Yes" in lines and "FilterType fnmatch" in lines
    assert f'Filter "{tmp_path / "proxy.allow"}"' in lines
    assert [line for line in lines if line.startswith("ConnectPort")] == ["ConnectPort 443"]  # HTTPS only
    assert allow.splitlines() == ["deb.debian.org", "pypi.org"]


def test_a_recorded_pid_counts_only_while_it_is_still_our_process():
    assert not gateway._alive(0, "socat")
    assert gateway._alive(os.getpid(), "pytest")
    assert not gateway._alive(os.getpid(), "tinyproxy")  # a reused pid: another program


def test_what_is_asked_of_the_debian_mirror_goes_through_the_apt_cache_and_nothing_else_does(tmp_path: Path):
    config, _ = gateway.tinyproxy_config(tmp_path, 41234, ["deb.debian.org", "pypi.org"], (41235, "deb.debian.org"))
    assert [line for line in config.splitlines() if line.startswith("Upstream")] == [
        'Upstream http 127.0.0.1:41235 "deb.debian.org"']  # only the mirror's host: PyPI's CONNECTs go straight
    assert "Upstream" not in gateway.tinyproxy_config(tmp_path, 41234, ["pypi.org"])[0]


def test_the_apt_cache_listens_on_loopback_and_keeps_each_clouds_files_apart(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(gateway, "APT_CACHE_DIR", tmp_path / "apt-cache")
    state = tmp_path / "clouds" / "itnet"
    settings = dict(line.split(": ", 1) for line in gateway.apt_cache_config(state, 41235).splitlines())
    assert settings["BindAddress"] == "127.0.0.1" and settings["Port"] == "41235"
    assert settings["CacheDir"] == str(tmp_path / "apt-cache" / "itnet")
    assert settings["LogDir"] == str(state / "apt-cache")  # bench/fleet_download.py reads its log there
    assert settings["ForeGround"] == "1"  # recorded and stopped like the gateway's other processes
    assert gateway.apt_cache_dir(tmp_path / "clouds" / "other") != gateway.apt_cache_dir(state)


def test_only_the_services_tfprov_just_installed_are_disabled(monkeypatch):
    calls = []
    monkeypatch.setattr(gateway.shutil, "which", lambda name: "/bin/systemctl")
    monkeypatch.setattr(gateway.Path, "is_dir", lambda self: True)
    monkeypatch.setattr(gateway.subprocess, "run", lambda cmd, **kw: calls.append(cmd))
    gateway.disable_packaged_services(["socat", "apt-cacher-ng"])
    gateway.disable_packaged_services(["socat"])
    assert calls == [["systemctl", "disable", "--now", "apt-cacher-ng"]]


def test_the_apt_caches_port_is_one_apt_cacher_ng_can_bind():
    assert 20000 <= gateway.free_loopback_port_below_32768() < 32768  # it fails on the kernel's ephemeral ports
