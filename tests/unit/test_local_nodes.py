import io
import json
import subprocess

import pytest
from rich.console import Console

from tfprov.errors import TfprovError
from tfprov.local import images, network, nodes, ssh
from tfprov.local.cloud import Cloud


@pytest.mark.parametrize(
    ("count", "roles"),
    [
        (1, ["chief"]),
        (2, ["chief", "worker"]),
        (3, ["chief", "worker", "ps"]),
        (4, ["chief", "worker", "worker", "ps"]),
        (5, ["chief", "worker", "worker", "ps", "serving"]),
        (7, ["chief", "worker", "worker", "ps", "serving", "worker", "worker"]),
    ],
)
def test_default_roles(count, roles):
    assert nodes.assign_roles(count) == roles


def test_explicit_roles_are_checked():
    assert nodes.assign_roles(2, ["worker", "worker"]) == ["worker", "worker"]
    assert nodes.assign_roles(3, ["chief", "worker", "evaluator"]) == ["chief", "worker", "evaluator"]
    with pytest.raises(TfprovError, match="unknown node role 'gpu': use chief, worker, ps, evaluator, serving or "
                                          "cache"):
        nodes.assign_roles(1, ["gpu"])
    assert nodes.assign_roles(2, ["cache", "chief"]) == ["cache", "chief"]
    with pytest.raises(TfprovError, match="names 2 cache nodes: give one"):
        nodes.assign_roles(3, ["cache", "chief", "cache"])
    with pytest.raises(TfprovError, match="names 1 roles for 2 nodes"):
        nodes.assign_roles(2, ["chief"])
    with pytest.raises(TfprovError, match="at least 1"):
        nodes.assign_roles(0)


def test_nodes_on_the_host_network_get_distinct_ports():
    many = [nodes.Node(i, "worker", "bookworm") for i in range(1, 20)]
    ports = [p for node in many for p in node.ports.values()]
    assert len(ports) == len(set(ports))
    assert many[0].ports["ssh_port"] == 22001 and many[2].ports["ssh_port"] == 22003
    assert many[0].labels["tfprov.tf_port"] == str(many[0].ports["tf_port"])
    assert many[0].labels["tfprov.ssh_port"] == "22001"
    assert many[0].labels["tfprov.cluster"] == "local"
    assert many[0].name == "tfprov-local-1" and many[0].address == "127.0.0.1" and many[0].ssh_proxy == ""


def test_clouds_on_the_host_network_never_share_a_port():
    clouds = [Cloud("local", 0), Cloud("ci-a", 1), Cloud("ci-b", 9)]
    ports = [p for cloud in clouds for i in range(1, 100) for p in nodes.Node(i, "worker", "bookworm", "", cloud)
             .ports.values()]
    assert len(ports) == len(set(ports))
    assert max(ports) < 40000
    assert nodes.Node(1, "chief", "bookworm", "", Cloud("ci-a", 1)).ports["ssh_port"] == 23001


def test_nodes_on_the_private_network_have_their_own_address_and_the_same_ports():
    cloud = Cloud("ci-a", 1, "private", "10.210.1.0/24")
    chief, worker = (nodes.Node(i, role, "bookworm", "", cloud) for i, role in ((1, "chief"), (2, "worker")))
    assert chief.ports == worker.ports == {"ssh_port": 22, "tf_port": 2222, "serving_grpc_port": 8500,
                                           "serving_rest_port": 8501}
    assert (chief.name, chief.address, worker.address) == ("tfprov-ci-a-1", "10.210.1.11", "10.210.1.12")
    labels = chief.labels
    assert labels["tfprov.cluster"] == "ci-a" and labels["tfprov.network"] == "private"
    assert labels["tfprov.address"] == "10.210.1.11" and labels["tfprov.subnet"] == "10.210.1.0/24"
    # The jump: ssh reaches the private address from inside the cloud's lab namespace, nowhere else.
    assert labels["tfprov.ssh_proxy"].startswith("nsenter --net=/var/run/netns/tfprov-ci-a socat STDIO TCP:%h:%p")


def test_a_nodes_holder_keeps_its_address_and_hostname():
    cloud = Cloud("ci-a", 1, "private", "10.210.1.0/24")
    args = network.holder_run_args(cloud, 3, "tfprov-ci-a-3", "tfprov/node:bookworm")
    assert args[args.index("--network") + 1] == "none"
    assert args[args.index("--hostname") + 1] == "tfprov-ci-a-3"
    assert args[args.index("--add-host") + 1] == "tfprov-ci-a-3:10.210.1.13"
    # What a VM has (systemd's sysctl.d), which the node cannot set itself: forwarding, and journald's queue.
    assert {"net.ipv4.ip_forward=1", "net.unix.max_dgram_qlen=512"} <= {
        args[i + 1] for i, arg in enumerate(args) if arg == "--sysctl"}
    assert "tfprov.netholder=ci-a" in args and args[-2:] == ["sleep", "infinity"]
    assert network.holder_name("tfprov-ci-a-3") == "tfprov-ci-a-3-net" and network.lab_link(3) == "v3"


def test_a_node_records_the_image_recipe_it_was_made_from():
    # A node from an image of another recipe (say one without sshd) differs in labels: `up` makes it again.
    assert nodes.Node(1, "chief", "bookworm").labels[images.RECIPE_LABEL] == images.recipe_digest()


def test_ssh_labels_point_at_the_key_and_recorded_host_keys(tmp_path):
    files = ssh.ssh_files(tmp_path)
    labels = nodes.ssh_labels(files)
    assert labels == {"tfprov.ssh_user": "debian", "tfprov.ssh_key": str(tmp_path / ".tfprov/local/ssh/id_ed25519"),
                      "tfprov.ssh_known_hosts": str(tmp_path / ".tfprov/local/ssh/known_hosts.local")}


def test_only_serving_nodes_get_what_an_engine_inside_needs():
    serving, worker = nodes.Node(2, "serving", "bookworm"), nodes.Node(1, "worker", "bookworm")
    assert serving.runs_engine and not worker.runs_engine
    assert "SYS_ADMIN" in serving.run_args and "/sys/fs/cgroup:/sys/fs/cgroup:rw" in serving.run_args
    assert "SYS_ADMIN" not in worker.run_args and "/sys/fs/cgroup:/sys/fs/cgroup:ro" in worker.run_args
    archives = f"{nodes.serving_image.ARCHIVE_DIR}:{nodes.serving_image.ARCHIVE_DIR}:ro"
    assert archives in serving.mounts and archives not in worker.mounts


def test_only_nodes_with_a_namespace_of_their_own_may_manage_their_network():
    # On the host's network NET_ADMIN would let a node change the host's network; in its own namespace it runs
    # the node's firewall, as root on a VM does.
    private = Cloud("ci-a", 1, "private", "10.210.1.0/24")
    assert "NET_ADMIN" not in nodes.Node(1, "worker", "bookworm").run_args
    assert "NET_ADMIN" in nodes.Node(1, "worker", "bookworm", "", private).run_args
    assert nodes.Node(2, "serving", "bookworm", "", private).run_args.count("NET_ADMIN") == 1


def test_serving_labels_name_the_stand_in_and_this_checkouts_example(tmp_path):
    import json

    labels = nodes.serving_labels("tfprov/serving-stand-in:2.21.0", tmp_path / "a.tar", tmp_path)
    assert labels["tfprov.serving_image"] == "tfprov/serving-stand-in:2.21.0"
    assert labels["tfprov.serving_archive"] == str(tmp_path / "a.tar")
    [model] = json.loads(labels["tfprov.serving_models"])
    assert model["name"] == "digits" and model["source"] == str(tmp_path / "examples/digits/export/digits")


def test_growing_the_cloud_past_five_nodes_keeps_the_roles_of_the_nodes_it_has():
    for count in range(5, 10):
        assert nodes.assign_roles(count + 1)[:count] == nodes.assign_roles(count)


def test_a_node_records_its_image_so_a_node_from_another_image_is_replaced():
    plain, baked = nodes.Node(1, "chief", "bookworm"), nodes.Node(1, "chief", "bookworm", "tfprov/node-baked:bookworm")
    assert plain.labels[nodes.IMAGE_LABEL] == "tfprov/node:bookworm"
    assert baked.labels[nodes.IMAGE_LABEL] == "tfprov/node-baked:bookworm"
    assert {k: v for k, v in plain.labels.items() if k != nodes.IMAGE_LABEL} == {
        k: v for k, v in baked.labels.items() if k != nodes.IMAGE_LABEL}


def test_converge_replaces_a_node_started_from_another_image(monkeypatch):
    calls = []
    monkeypatch.setattr(nodes, "docker", lambda *args, **kwargs: calls.append(args) or "")
    node = nodes.Node(1, "chief", "bookworm", "tfprov/node-baked:bookworm")
    console = Console(file=io.StringIO())
    nodes._converge_container(node, node.labels, {"state": "running", "labels": node.labels}, node.image_ref, console)
    assert calls == []  # the same labels: left running
    old = nodes.Node(1, "chief", "bookworm").labels
    nodes._converge_container(node, node.labels, {"state": "running", "labels": old}, node.image_ref, console)
    assert calls[0] == ("rm", "-f", "-v", "tfprov-local-1")
    assert calls[1][0] == "run" and "tfprov/node-baked:bookworm" in calls[1]
    assert "tfprov.image=tfprov/node-baked:bookworm" in calls[1]


def _inspect(monkeypatch, labels, rc=0):
    def fake_run(cmd, **kwargs):
        assert cmd[:3] == ["docker", "image", "inspect"]
        return subprocess.CompletedProcess(cmd, rc, json.dumps(labels) + "\n", "Error: No such image")

    monkeypatch.setattr(nodes.subprocess, "run", fake_run)


def test_a_baked_image_gives_its_suite_and_a_missing_one_is_one_line(monkeypatch):
    _inspect(monkeypatch, {"tfprov.suite": "trixie", "tfprov.bake_digest": "x"})
    assert nodes.image_suite("tfprov/node-baked:trixie", None) == "trixie"
    assert nodes.image_suite("tfprov/node-baked:trixie", "trixie") == "trixie"
    with pytest.raises(TfprovError, match="^image tfprov/node-baked:trixie holds Debian trixie, not bookworm"):
        nodes.image_suite("tfprov/node-baked:trixie", "bookworm")
    _inspect(monkeypatch, None)  # an image without labels: --suite, else bookworm
    assert nodes.image_suite("mine", None) == "bookworm" and nodes.image_suite("mine", "trixie") == "trixie"
    _inspect(monkeypatch, None, rc=1)
    with pytest.raises(TfprovError, match=r"^image nope does not exist: bake it first \(make baked-image\)"):
        nodes.image_suite("nope", None)


def test_a_cache_node_is_refused_on_the_hosts_network_before_any_container(monkeypatch):
    """On the host's network its port would be open on the host's own loopback: refused before anything is made."""
    monkeypatch.setattr(nodes, "ensure_engine", lambda console: None)
    monkeypatch.setattr(nodes, "find_cloud", lambda *args: Cloud("ci-a", 1))
    monkeypatch.setattr(nodes, "docker", lambda *args, **kwargs: pytest.fail(f"docker {args} ran"))
    with pytest.raises(TfprovError, match="^a cache node needs the private network: add --network private$"):
        nodes.up(2, None, Console(file=io.StringIO()), roles=["cache", "chief"], network_mode="host")
