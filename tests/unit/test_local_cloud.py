import json

import pytest

from tfprov import local_cloud
from tfprov.errors import TfprovError


@pytest.mark.parametrize(
    ("count", "roles"),
    [
        (1, ["chief"]),
        (3, ["chief", "worker", "ps"]),
        (4, ["chief", "worker", "ps", "serving"]),
        (6, ["chief", "worker", "ps", "serving", "worker", "worker"]),
    ],
)
def test_default_roles(count, roles):
    assert local_cloud.assign_roles(count) == roles


def test_explicit_roles_are_checked():
    assert local_cloud.assign_roles(2, ["worker", "worker"]) == ["worker", "worker"]
    with pytest.raises(TfprovError, match="unknown node role 'gpu'"):
        local_cloud.assign_roles(1, ["gpu"])
    with pytest.raises(TfprovError, match="at least 1"):
        local_cloud.assign_roles(0)


def test_nodes_on_the_host_network_get_distinct_ports():
    nodes = [local_cloud.Node(i, "worker", "bookworm") for i in range(1, 20)]
    ports = [p for node in nodes for p in node.ports.values()]
    assert len(ports) == len(set(ports))
    assert nodes[0].labels["tfprov.tf_port"] == str(nodes[0].ports["tf_port"])
    assert nodes[0].labels["tfprov.cluster"] == "local"


def test_daemon_json_is_merged_not_replaced(tmp_path):
    path = tmp_path / "daemon.json"
    path.write_text(json.dumps({"storage-driver": "vfs", "iptables": True}))
    assert local_cloud.write_safe_daemon_json(path) is True
    config = json.loads(path.read_text())
    assert config["storage-driver"] == "vfs"
    assert config | local_cloud.SAFE_DAEMON == config
    assert local_cloud.write_safe_daemon_json(path) is False  # already safe: untouched


def test_daemon_json_is_written_when_absent(tmp_path):
    path = tmp_path / "docker" / "daemon.json"
    assert local_cloud.write_safe_daemon_json(path) is True
    assert json.loads(path.read_text()) == local_cloud.SAFE_DAEMON


def test_mirror_from_deb822_sources(tmp_path, monkeypatch):
    monkeypatch.delenv("TFPROV_DEBIAN_MIRROR", raising=False)
    (tmp_path / "sources.list.d").mkdir()
    (tmp_path / "sources.list.d" / "debian.sources").write_text(
        "Types: deb\nURIs: http://mirror.example/debian-security\nSuites: bookworm-security\n\n"
        "Types: deb\nURIs: http://mirror.example/debian\nSuites: bookworm\n")
    assert local_cloud.debian_mirror(tmp_path) == "http://mirror.example/debian"


def test_mirror_from_one_line_sources(tmp_path, monkeypatch):
    monkeypatch.delenv("TFPROV_DEBIAN_MIRROR", raising=False)
    (tmp_path / "sources.list").write_text("deb [arch=amd64] http://mirror.example/debian/ bookworm main\n")
    assert local_cloud.debian_mirror(tmp_path) == "http://mirror.example/debian/"


def test_mirror_override_and_absence(tmp_path, monkeypatch):
    monkeypatch.setenv("TFPROV_DEBIAN_MIRROR", "http://other.example/debian")
    assert local_cloud.debian_mirror(tmp_path) == "http://other.example/debian"
    monkeypatch.delenv("TFPROV_DEBIAN_MIRROR")
    with pytest.raises(TfprovError, match="set TFPROV_DEBIAN_MIRROR"):
        local_cloud.debian_mirror(tmp_path)


def test_unknown_suite_is_refused(capsys):
    with pytest.raises(TfprovError, match="unknown suite 'sid'"):
        local_cloud.build_image("sid", console=None)
