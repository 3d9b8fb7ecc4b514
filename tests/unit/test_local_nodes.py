import pytest

from tfprov.errors import TfprovError
from tfprov.local import images, nodes, ssh


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
    assert nodes.assign_roles(count) == roles


def test_explicit_roles_are_checked():
    assert nodes.assign_roles(2, ["worker", "worker"]) == ["worker", "worker"]
    with pytest.raises(TfprovError, match="unknown node role 'gpu'"):
        nodes.assign_roles(1, ["gpu"])
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


def test_a_node_records_the_image_recipe_it_was_made_from():
    # A node from an image of another recipe (say one without sshd) differs in labels: `up` makes it again.
    assert nodes.Node(1, "chief", "bookworm").labels[images.RECIPE_LABEL] == images.recipe_digest()


def test_ssh_labels_point_at_the_key_and_recorded_host_keys(tmp_path):
    files = ssh.ssh_files(tmp_path)
    labels = nodes.ssh_labels(files)
    assert labels == {"tfprov.ssh_user": "debian", "tfprov.ssh_key": str(tmp_path / ".tfprov/local/ssh/id_ed25519"),
                      "tfprov.ssh_known_hosts": str(tmp_path / ".tfprov/local/ssh/known_hosts")}


def test_only_serving_nodes_get_what_an_engine_inside_needs():
    serving, worker = nodes.Node(2, "serving", "bookworm"), nodes.Node(1, "worker", "bookworm")
    assert serving.runs_engine and not worker.runs_engine
    assert "SYS_ADMIN" in serving.run_args and "/sys/fs/cgroup:/sys/fs/cgroup:rw" in serving.run_args
    assert "SYS_ADMIN" not in worker.run_args and "/sys/fs/cgroup:/sys/fs/cgroup:ro" in worker.run_args
    archives = f"{nodes.serving_image.ARCHIVE_DIR}:{nodes.serving_image.ARCHIVE_DIR}:ro"
    assert archives in serving.mounts and archives not in worker.mounts


def test_serving_labels_name_the_stand_in_and_this_checkouts_example(tmp_path):
    import json

    labels = nodes.serving_labels("tfprov/serving-stand-in:2.21.0", tmp_path / "a.tar", tmp_path)
    assert labels["tfprov.serving_image"] == "tfprov/serving-stand-in:2.21.0"
    assert labels["tfprov.serving_archive"] == str(tmp_path / "a.tar")
    [model] = json.loads(labels["tfprov.serving_models"])
    assert model["name"] == "digits" and model["source"] == str(tmp_path / "examples/digits/export/digits")
