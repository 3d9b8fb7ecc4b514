"""execution-environment.yml: ansible-builder's own `create` step accepts it, and its context carries the collection
(as `ansible-galaxy collection build` makes it, installable) and the Python needs of the collection's plugins."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
EE_FILES = ["execution-environment.yml", "requirements.yml", "requirements-ee.txt", "bindep.txt"]
# What plugins/module_utils import on the controller (model_sources: s3:// and gs:// sources; compat: YAML).
PLUGIN_IMPORTS = {"boto3", "botocore", "google-auth", "requests", "PyYAML"}

pytest.importorskip("ansible_builder", reason="ansible-builder is not installed: pip install -e '.[test]'")


def run(*argv, cwd):
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"{' '.join(map(str, argv))} failed:\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def context(tmp_path_factory):
    """A copy of the EE files beside a freshly built collection tarball (as after `make build`), then `create`."""
    work = tmp_path_factory.mktemp("ee")
    for name in EE_FILES:
        shutil.copy(ROOT / name, work / name)
    run(BIN / "ansible-galaxy", "collection", "build", "--output-path", work / "dist", ROOT, cwd=work)
    run(BIN / "ansible-builder", "create", "--file", "execution-environment.yml", "--context", "ctx",
        "--output-filename", "Containerfile", cwd=work)
    return work / "ctx"


def requirement_names(text):
    lines = (line.split("#")[0].strip() for line in text.splitlines())
    return {line.split(">")[0].split("=")[0].split("<")[0].split("[")[0].strip() for line in lines if line}


def test_context_carries_the_python_needs_of_the_plugins(context):
    assert PLUGIN_IMPORTS <= requirement_names((context / "_build" / "requirements.txt").read_text())


def test_context_carries_the_collections_of_requirements_yml(context):
    wanted = yaml.safe_load((ROOT / "requirements.yml").read_text())
    carried = yaml.safe_load((context / "_build" / "requirements.yml").read_text())
    assert carried == wanted
    names = {c["name"] for c in carried["collections"]}
    galaxy = yaml.safe_load((ROOT / "galaxy.yml").read_text())
    assert set(galaxy["dependencies"]) <= names, "every dependency of galaxy.yml must be in the EE"


def test_requirements_yml_asks_for_galaxy_ymls_ranges():
    wanted = {c["name"]: c["version"] for c in yaml.safe_load((ROOT / "requirements.yml").read_text())["collections"]}
    ranges = yaml.safe_load((ROOT / "galaxy.yml").read_text())["dependencies"]
    assert {"amazon.aws", "google.cloud"} <= set(ranges), "the clouds' collections are dependencies, with ranges"
    assert wanted == ranges, "requirements.yml installs what galaxy.yml declares (the range CI tests both ends of)"
    assert all("<" in spec for spec in ranges.values()), "an upper bound on each: a major release may break tfprov"


def test_containerfile_installs_the_collection_tarball(context):
    containerfile = (context / "Containerfile").read_text()
    assert "ansible-galaxy collection install --no-deps" in containerfile
    assert "/build/tfprov/tfprov-gpu-*.tar.gz" in containerfile
    assert "introspect --user-pip=requirements.txt --user-bindep=bindep.txt" in containerfile


def test_collection_in_the_context_is_installable(context, tmp_path):
    tarballs = list((context / "_build" / "tfprov").glob("tfprov-gpu-*.tar.gz"))
    assert len(tarballs) == 1, "the context must carry exactly one build of the collection"
    run(BIN / "ansible-galaxy", "collection", "install", "--no-deps", "--collections-path", tmp_path, tarballs[0],
        cwd=tmp_path)
    installed = tmp_path / "ansible_collections" / "tfprov" / "gpu"
    for needed in ["plugins/module_utils/model_sources.py", "playbooks/gpu_node.yml", "roles/nvidia_driver",
                   "meta/runtime.yml"]:
        assert (installed / needed).exists(), f"{needed} missing from the installed collection"
    # The build's own introspection (the context's script) finds the collection's needs in its
    # meta/execution-environment.yml, as it will in any EE that installs tfprov.gpu.
    found = run(sys.executable, context / "_build" / "scripts" / "introspect.py", "introspect",
                tmp_path, cwd=tmp_path).stdout
    needs = yaml.safe_load(found[found.index("---"):])
    from_us = {line.split("#")[0].strip() for line in needs["python"] if "from collection tfprov.gpu" in line}
    assert {"boto3", "botocore", "google-auth", "requests"} <= requirement_names("\n".join(from_us))
    assert any("openssh" in line for line in needs["system"])
