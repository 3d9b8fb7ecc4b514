"""playbooks/vars/proxy.yml, rendered by Ansible: the environment of the plays that install."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(not (Path(sys.executable).parent / "ansible-playbook").exists(),
                                reason="no ansible-playbook")


def proxy_env(tmp_path: Path, **host_vars) -> dict:
    playbook = tmp_path / "show.yml"
    playbook.write_text(f"""
- hosts: all
  gather_facts: false
  vars_files: [{ROOT / 'playbooks/vars/proxy.yml'}]
  tasks:
    - ansible.builtin.debug:
        msg: "ENV {{{{ tfprov_proxy_env | to_json }}}}"
""")
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", "node,", "-c", "local",
                           "-e", json.dumps(host_vars), str(playbook)], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    line = next(line for line in proc.stdout.splitlines() if '"msg": "ENV ' in line)
    return json.loads(json.loads("{" + line.strip() + "}")["msg"][4:])


def test_no_proxy_set_means_an_empty_environment(tmp_path):
    assert proxy_env(tmp_path) == {}
    assert proxy_env(tmp_path, tfprov_http_proxy="") == {}


def test_a_proxy_reaches_apt_pip_and_get_url_but_never_the_node_itself_or_its_cluster(tmp_path):
    env = proxy_env(tmp_path, tfprov_http_proxy="http://10.210.1.1:3128", tfprov_no_proxy="10.210.1.0/24",
                    tfprov_tf_address="10.210.1.12")
    assert env["http_proxy"] == env["HTTP_PROXY"] == env["https_proxy"] == env["HTTPS_PROXY"] == \
        "http://10.210.1.1:3128"
    assert env["no_proxy"] == env["NO_PROXY"] == "localhost,127.0.0.1,::1,10.210.1.12,10.210.1.0/24"


def test_an_https_proxy_of_its_own_is_kept(tmp_path):
    env = proxy_env(tmp_path, tfprov_http_proxy="http://proxy:3128", tfprov_https_proxy="http://tls-proxy:3129")
    assert env["http_proxy"] == "http://proxy:3128" and env["https_proxy"] == "http://tls-proxy:3129"
    assert env["no_proxy"] == "localhost,127.0.0.1,::1,node"
