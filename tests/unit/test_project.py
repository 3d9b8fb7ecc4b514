from tfprov.project import ansible_env


def test_ansible_runs_check_host_keys(tmp_path):
    # ansible-runner would otherwise set ANSIBLE_HOST_KEY_CHECKING=False for every run: real VMs are reached over SSH.
    (tmp_path / "galaxy.yml").write_text("namespace: tfprov\n")
    assert ansible_env(tmp_path)["ANSIBLE_HOST_KEY_CHECKING"] == "True"
