"""tensorflow_gpu_variant=tpu: the stack resolves tensorflow-tpu and its libtpu index from data/compat.yml `tpu`,
with no CUDA/cuDNN wheels and no driver; the tensorflow_gpu role turns it into the pip requirement and options."""

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml
from test_stack import ROOT, run_action

MATRIX = yaml.safe_load((ROOT / "data" / "compat.yml").read_text())["tpu"]


def test_tpu_variant_resolves_tensorflow_tpu_without_cuda_or_driver():
    result = run_action({"tensorflow": "2.18", "variant": "tpu"})
    assert not result.get("failed"), result
    stack = result["ansible_facts"]["tfprov_stack"]
    assert stack["variant"] == "tpu" and stack["tensorflow_version"] == MATRIX["releases"]["2.18"]
    assert (stack["tpu_package"], stack["tpu_find_links"]) == (MATRIX["package"], MATRIX["find_links"])
    assert stack["driver_action"] == "skip"
    assert stack["pip_cuda_requirements"] == [] and stack["pip_cuda_packages"] == {}


def test_gpu_variant_is_unchanged_by_the_tpu_table():
    stack = run_action({"tensorflow": "2.18", "variant": "gpu"})["ansible_facts"]["tfprov_stack"]
    assert stack["tpu_package"] is None and stack["pip_cuda_requirements"]


def test_a_tensorflow_without_a_tpu_release_is_one_line():
    result = run_action({"tensorflow": "2.14", "variant": "tpu"})
    assert result["failed"] and result["msg"] == ("tensorflow_gpu_variant=tpu: TensorFlow 2.14 has no tensorflow-tpu "
                                                  "release tfprov knows: pick TensorFlow 2.16 to 2.20")


PLAYBOOK = """
- name: Render the tensorflow_gpu role's pip requirement for a TPU VM
  hosts: localhost
  gather_facts: false
  vars_files: [%s]
  vars:
    tensorflow_gpu_ca_bundle: ''
    tensorflow_gpu_pip_find_links: ''
    tensorflow_gpu_pip_no_index: false
    tensorflow_gpu_pip_index_url: ''
    tensorflow_gpu_system_cuda: false
  tasks:
    - name: Resolve the stack
      tfprov.gpu.stack:
        tensorflow: "2.19"
        variant: tpu
    - name: Show it
      ansible.builtin.debug:
        msg: "RENDERED {{ {'req': __tensorflow_gpu_requirement, 'args': __tensorflow_gpu_pip_args} | to_json }}"
"""


def test_the_role_installs_tensorflow_tpu_from_the_libtpu_index(tmp_path):
    (tmp_path / "pb.yml").write_text(PLAYBOOK % (ROOT / "roles" / "tensorflow_gpu" / "vars" / "main.yml"))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(ROOT / ".tfprov" / "collections"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"), ANSIBLE_CONFIG=str(tmp_path / "none.cfg"))
    out = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,", "-c", "local",
                          "pb.yml"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    line = next(line for line in out.stdout.splitlines() if "RENDERED" in line)
    rendered = json.loads(line.split("RENDERED ", 1)[1].rstrip('"').replace('\\"', '"'))
    assert rendered["req"] == "tensorflow-tpu==" + MATRIX["releases"]["2.19"]
    assert rendered["args"] == ["--find-links", MATRIX["find_links"]]
