"""The tensorflow_gpu role skips pip when the environment's metadata already meets the requirements: that check."""

import hashlib
import importlib.util
import json
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parents[2] / "roles" / "tensorflow_gpu" / "files" / "requirements_met.py"
SPEC = importlib.util.spec_from_file_location("requirements_met", SCRIPT)
requirements_met = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(requirements_met)

TF_REQUIRES = [
    "numpy>=1.26.0", "keras>=3.10.0",
    'nvidia-cublas-cu12<13.0,>=12.5.3.2; extra == "and-cuda"',
    'nvidia-cudnn-cu12<10.0,>=9.3.0.75; extra == "and-cuda"',
    'tensorflow-io-gcs-filesystem>=0.23.1; python_version < "3.0"',
]


def dist(site: Path, name: str, version: str, requires=()):
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    lines += [f"Requires-Dist: {line}" for line in requires]
    (info / "METADATA").write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.fixture
def site(tmp_path):
    """An environment with the CPU build of TensorFlow 2.21.0 and its (abridged) dependencies."""
    dist(tmp_path, "tensorflow-cpu", "2.21.0", TF_REQUIRES)
    dist(tmp_path, "numpy", "2.4.6")
    dist(tmp_path, "keras", "3.15.1", ["numpy", "rich"])
    dist(tmp_path, "rich", "15.0.0")
    return tmp_path


def unmet(site, *lines):
    return requirements_met.unmet(list(lines), requirements_met.installed_distributions([str(site)]))


def test_the_installed_pin_and_its_whole_tree_are_met(site):
    assert unmet(site, "tensorflow-cpu==2.21.0") == []


def test_names_are_compared_as_pip_does(site):
    assert unmet(site, "TensorFlow_CPU==2.21.0") == []


def test_another_version_is_unmet(site):
    assert unmet(site, "tensorflow-cpu==2.20.0") == ["tensorflow-cpu==2.20.0: 2.21.0 installed"]


def test_the_cpu_build_does_not_meet_the_gpu_build(site):
    assert unmet(site, "tensorflow==2.21.0") == ["tensorflow==2.21.0: not installed"]


def test_an_extra_needs_its_own_requirements(tmp_path):
    dist(tmp_path, "tensorflow", "2.21.0", TF_REQUIRES)
    dist(tmp_path, "numpy", "2.4.6")
    dist(tmp_path, "keras", "3.15.1")
    dist(tmp_path, "nvidia-cublas-cu12", "12.5.3.2")
    assert unmet(tmp_path, "tensorflow==2.21.0") == []
    assert unmet(tmp_path, "tensorflow[and-cuda]==2.21.0") == [
        "nvidia-cudnn-cu12<10.0,>=9.3.0.75: not installed (required by tensorflow)"]
    dist(tmp_path, "nvidia-cudnn-cu12", "9.3.0.75")
    assert unmet(tmp_path, "tensorflow[and-cuda]==2.21.0") == []


def test_a_missing_or_outdated_dependency_deep_in_the_tree_is_unmet(site):
    (site / "rich-15.0.0.dist-info" / "METADATA").unlink()
    (site / "rich-15.0.0.dist-info").rmdir()
    assert unmet(site, "tensorflow-cpu==2.21.0") == ["rich: not installed (required by keras)"]
    dist(site, "rich", "15.0.0")
    (site / "numpy-2.4.6.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: numpy\nVersion: 1.24.0\n")
    assert unmet(site, "tensorflow-cpu==2.21.0") == ["numpy>=1.26.0: 1.24.0 installed (required by tensorflow-cpu)"]


def test_extra_packages_pinned_or_not(site):
    assert unmet(site, "tensorflow-cpu==2.21.0", "rich", "keras==3.15.1") == []
    assert unmet(site, "tensorflow-cpu==2.21.0", "pandas==2.2.3") == ["pandas==2.2.3: not installed"]


def test_what_cannot_be_read_leaves_the_decision_to_pip(site):
    assert unmet(site, "./wheels/x.whl") == ["./wheels/x.whl: not a requirement this check can read"]
    assert unmet(site, "rich @ https://example.invalid/rich.whl") == [
        "rich @ https://example.invalid/rich.whl: a URL requirement (pip decides)"]


def test_a_requirement_whose_marker_excludes_this_python_is_met(site):
    assert unmet(site, 'pandas==2.2.3; python_version < "3.0"') == []


def test_this_real_environment_meets_its_own_tree():
    """Real metadata, real markers: the controller's venv holds ansible-runner and everything under it."""
    installed = requirements_met.installed_distributions()
    runner_version = installed["ansible-runner"][0]
    assert requirements_met.unmet([f"ansible-runner=={runner_version}"], installed) == []
    assert requirements_met.unmet(["ansible-runner==0.0.1"], installed) == [
        f"ansible-runner==0.0.1: {runner_version} installed"]


def test_main_prints_json(capsys, monkeypatch, site):
    read = requirements_met.installed_distributions
    monkeypatch.setattr(requirements_met, "installed_distributions", lambda: read([str(site)]))
    monkeypatch.setattr(requirements_met, "environment_digest", lambda: "d1")
    monkeypatch.setattr(requirements_met, "last_check", lambda: None)
    assert requirements_met.main(["tensorflow-cpu==2.21.0"]) == 0
    assert json.loads(capsys.readouterr().out) == {"met": True, "unmet": [], "digest": "d1", "last_check": None,
                                                   "files": {}}
    requirements_met.main(["tensorflow-cpu==2.21.0", "tensorflow==2.21.0"])
    assert json.loads(capsys.readouterr().out) == {"met": False, "unmet": ["tensorflow==2.21.0: not installed"],
                                                   "digest": "d1", "last_check": None, "files": {}}


def test_each_file_asked_for_is_read_as_copy_would_find_it(capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(requirements_met, "environment_digest", lambda: "d1")
    profile = tmp_path / "tfprov-tensorflow.sh"
    profile.write_text("export TFPROV_TF_ENV=/opt/tf\n")
    profile.chmod(0o640)
    (tmp_path / "link.sh").symlink_to(profile)
    requirements_met.main([f"--file={profile}", f"--file={tmp_path / 'link.sh'}", f"--file={tmp_path / 'none'}",
                           f"--file={tmp_path}"])
    files = json.loads(capsys.readouterr().out)["files"]
    assert files == {str(profile): {"sha1": hashlib.sha1(b"export TFPROV_TF_ENV=/opt/tf\n").hexdigest(),
                                    "mode": "0640"},
                     str(tmp_path / "link.sh"): None, str(tmp_path / "none"): None, str(tmp_path): None}


def test_the_digest_changes_with_any_distribution_and_matches_the_gpu_check(tmp_path, monkeypatch):
    """The role compares the digest read before a run with the one gpu_check.py beside it printed when it checked."""
    gpu_check_spec = importlib.util.spec_from_file_location("gpu_check", SCRIPT.parent / "gpu_check.py")
    gpu_check = importlib.util.module_from_spec(gpu_check_spec)
    gpu_check_spec.loader.exec_module(gpu_check)
    dist(tmp_path, "numpy", "2.4.6")
    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    before = requirements_met.environment_digest()
    assert before == gpu_check.environment_digest()
    dist(tmp_path, "rich", "15.0.0")
    assert requirements_met.environment_digest() != before
    assert requirements_met.environment_digest() == gpu_check.environment_digest()


def test_the_last_check_record_is_read_from_the_environment(tmp_path):
    assert requirements_met.last_check(str(tmp_path)) is None
    (tmp_path / "tfprov-gpu-check.json").write_text('{"key": "k", "result": {"problems": []}}')
    assert requirements_met.last_check(str(tmp_path)) == {"key": "k", "result": {"problems": []}}
    (tmp_path / "tfprov-gpu-check.json").write_text('{"key": ')  # cut short: no record, so the check runs
    assert requirements_met.last_check(str(tmp_path)) is None
