"""converge_inputs: the same host variables and collection give the same digest; a changed variable, extra var or
collection file gives another; Ansible's per-run variables and gathered facts do not count."""

import shutil
from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.tfprov.gpu.plugins.filter.converge import collection_digest, converge_inputs, host_inputs

ROOT = Path(__file__).resolve().parents[4]
HOST = {"inventory_hostname": "tfprov-local-1", "ansible_host": "10.80.0.2", "tfprov_tf_address": "10.80.0.2",
        "tensorflow_gpu_version": "2.21", "group_names": ["tfprov_nodes"], "groups": {"all": ["tfprov-local-1"]},
        "ansible_forks": 10, "ansible_verbosity": 0, "ansible_run_tags": ["all"], "playbook_dir": "/x/playbooks"}


def test_the_same_host_gives_the_same_digest():
    assert converge_inputs(dict(HOST), "node") == converge_inputs(dict(HOST), "node")
    assert len(converge_inputs(HOST, "node")) == 64


@pytest.mark.parametrize("change", [{"tensorflow_gpu_version": "2.20"}, {"tfprov_http_proxy": "http://p:3128"},
                                    {"group_names": ["tfprov_nodes", "tfprov_serving"]}])
def test_a_changed_or_added_variable_gives_another(change):
    assert converge_inputs({**HOST, **change}, "node") != converge_inputs(HOST, "node")


def test_another_playbook_gives_another():
    assert converge_inputs(HOST, "cluster") != converge_inputs(HOST, "node")


def test_per_run_variables_facts_and_the_other_hosts_do_not_count():
    later = {**HOST, "ansible_forks": 50, "ansible_verbosity": 3, "playbook_dir": "/elsewhere", "ansible_limit": "a",
             "groups": {"all": ["tfprov-local-1", "tfprov-local-2"]}, "ansible_facts": {"distribution": "Debian"},
             "ansible_distribution": "Debian", "__tfprov_converge_inputs": "x", "tfprov_converge_reuse_hours": 0}
    assert converge_inputs(later, "node") == converge_inputs(HOST, "node")
    assert set(host_inputs(later)) == {"inventory_hostname", "ansible_host", "tfprov_tf_address",
                                       "tensorflow_gpu_version", "group_names"}


def test_a_changed_collection_file_gives_another(tmp_path):
    for part in ("roles/tensorflow_gpu/defaults", "roles/tensorflow_gpu/files", "playbooks", "plugins", "data",
                 "bench"):
        (tmp_path / part).mkdir(parents=True)
    shutil.copy(ROOT / "data/compat.yml", tmp_path / "data/compat.yml")
    (tmp_path / "roles/tensorflow_gpu/defaults/main.yml").write_text("tensorflow_gpu_version: latest\n")
    (tmp_path / "roles/tensorflow_gpu/files/gpu_check.py").write_text("print()\n")
    (tmp_path / "bench/other.py").write_text("print()\n")
    before = collection_digest(tmp_path)
    assert converge_inputs(HOST, "node", root=tmp_path) == converge_inputs(HOST, "node", root=tmp_path)
    (tmp_path / "bench/other.py").write_text("print(1)\n")  # not part of what a converge runs
    (tmp_path / "plugins/__pycache__").mkdir()
    (tmp_path / "plugins/__pycache__/x.cpython-311.pyc").write_bytes(b"\0")
    assert collection_digest(tmp_path) == before
    (tmp_path / "data/compat.yml").write_text((tmp_path / "data/compat.yml").read_text() + "\n# edited\n")
    assert collection_digest(tmp_path) != before
    (tmp_path / "roles/tensorflow_gpu/files/gpu_check.py").write_text("print(2)\n")
    assert collection_digest(tmp_path) != before


def test_this_collection_has_a_digest():
    assert collection_digest() == collection_digest(ROOT)


def test_not_a_host_is_refused():
    with pytest.raises(AnsibleFilterError, match=r"hostvars\[inventory_hostname\]"):
        converge_inputs("tfprov-local-1", "node")


class Unresolved(dict):
    """hostvars whose one variable is a template on facts not gathered yet: reading it raises."""

    def __getitem__(self, name):
        if name == "tfprov_tf_address":
            raise KeyError("'ansible_default_ipv4' is undefined")
        return super().__getitem__(name)


def test_a_variable_that_cannot_be_templated_yet_counts_as_its_error_and_does_not_stop_the_run():
    first = converge_inputs(Unresolved(HOST), "node")
    assert first == converge_inputs(Unresolved(HOST), "node") != converge_inputs(HOST, "node")
    assert "ansible_default_ipv4" in host_inputs(Unresolved(HOST))["tfprov_tf_address"]
