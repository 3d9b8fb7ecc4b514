"""The stand-in conda (tests/support/conda_stand_in.py) and its installer: real environments, conda's errors."""

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

SUPPORT = Path(__file__).resolve().parents[1] / "support"


def make_wheel(wheelhouse: Path, name: str, version: str, part: str, libs: list[str]) -> None:
    """A wheel laid out as NVIDIA's: nvidia/<part>/lib/<soname>, plus the Python package files conda has not."""
    with zipfile.ZipFile(wheelhouse / f"{name}-{version}-py3-none-manylinux2014_x86_64.whl", "w") as archive:
        archive.writestr("nvidia/__init__.py", "")
        archive.writestr(f"nvidia/{part}/__init__.py", "")
        archive.writestr(f"nvidia/{part}/lib/__init__.py", "")
        archive.writestr(f"nvidia/{part}/include/{part}.h", "/* header */\n")
        for lib in libs:
            archive.writestr(f"nvidia/{part}/lib/{lib}", "not really ELF")
        archive.writestr(f"{name}-{version}.dist-info/METADATA", f"Name: {name}\nVersion: {version}\n")


@pytest.fixture
def conda(tmp_path, monkeypatch):
    """Install the stand-in with its installer into tmp/miniconda; return a runner for its bin/conda."""
    # The installer writes the python3 on PATH into conda's #! line: this one (pyenv shims are slow).
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    installer = tmp_path / "Miniconda3-stand-in.sh"
    installer.write_text((SUPPORT / "miniconda-stand-in.sh").read_text() + (SUPPORT / "conda_stand_in.py").read_text())
    root = tmp_path / "miniconda"
    subprocess.run(["sh", str(installer), "-b", "-p", str(root)], check=True, capture_output=True)
    (root / ".condarc").write_text("channels:\n  - conda-forge\nchannel_priority: strict\nauto_activate_base: false\n")
    wheelhouse = tmp_path / "wheelhouse"
    wheelhouse.mkdir()
    make_wheel(wheelhouse, "nvidia_cuda_runtime_cu12", "12.5.82", "cuda_runtime", ["libcudart.so.12"])
    make_wheel(wheelhouse, "nvidia_cudnn_cu12", "9.3.0.75", "cudnn", ["libcudnn.so.9", "libcudnn_graph.so.9"])
    monkeypatch.setenv("TFPROV_CONDA_STAND_IN_WHEELHOUSE", str(wheelhouse))

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(root / "bin" / "conda"), *args], capture_output=True, text=True)

    run.root = root
    run.installer = installer
    return run


def records(prefix: Path) -> list[str]:
    return sorted(p.name for p in (prefix / "conda-meta").glob("*.json"))


def test_installer_puts_conda_in_the_prefix_and_refuses_an_existing_one(conda, tmp_path):
    assert conda("--version").stdout == "conda 24.7.1\n"
    assert (conda.root / "conda-meta" / "history").is_file()
    assert os.access(conda.root / "bin" / "conda", os.X_OK)
    again = subprocess.run(["sh", str(conda.installer), "-b", "-p", str(conda.root)], capture_output=True, text=True)
    assert again.returncode == 1
    assert "File or directory already exists" in again.stderr


def test_installer_without_payload_fails(tmp_path):
    result = subprocess.run(["sh", str(SUPPORT / "miniconda-stand-in.sh"), "-b", "-p", str(tmp_path / "mc")],
                            capture_output=True, text=True)
    assert result.returncode == 1
    assert "no conda payload" in result.stderr
    assert not (tmp_path / "mc").exists()


@pytest.mark.parametrize("argv, message", [
    (["frobnicate"], "invalid choice: 'frobnicate'"),
    (["install", "--prefix", "/x", "--frobnicate", "cudnn"], "unrecognized arguments: --frobnicate"),
    (["create", "-n", "a", "-p", "/b"], "not allowed with argument"),
])
def test_bad_command_lines_fail_as_argparse_does(conda, argv, message):
    result = conda(*argv)
    assert result.returncode == 2
    assert message in result.stderr


def test_cuda_runtime_from_the_nvidia_label_lands_in_env_lib_with_its_record(conda, tmp_path):
    env = tmp_path / "env"
    result = conda("create", "--yes", "--prefix", str(env), "--channel", "nvidia/label/cuda-12.5.0",
                   "cuda-runtime=12.5")
    assert result.returncode == 0, result.stderr
    assert "nvidia/label/cuda-12.5.0/linux-64::cuda-runtime-12.5.82" in result.stdout
    assert sorted(p.name for p in (env / "lib").iterdir()) == ["libcudart.so.12"]
    assert (env / "include" / "cuda_runtime.h").is_file()
    assert records(env) == ["cuda-runtime-12.5.82-0_tfprov_stand_in.json"]
    record = json.loads((env / "conda-meta" / "cuda-runtime-12.5.82-0_tfprov_stand_in.json").read_text())
    assert record["files"] == ["include/cuda_runtime.h", "lib/libcudart.so.12"]
    assert "+nvidia/label/cuda-12.5.0/linux-64::cuda-runtime-12.5.82" in (env / "conda-meta" / "history").read_text()
    listed = conda("list", "--prefix", str(env))
    assert listed.returncode == 0
    assert "cuda-runtime" in listed.stdout and "12.5.82" in listed.stdout


def test_cudnn_from_conda_forge_then_a_second_install_changes_nothing(conda, tmp_path):
    env = tmp_path / "env"
    assert conda("create", "--yes", "--prefix", str(env)).returncode == 0
    first = conda("install", "--yes", "--prefix", str(env), "--channel", "conda-forge", "cudnn=9.3")
    assert first.returncode == 0, first.stderr
    assert sorted(p.name for p in (env / "lib").iterdir()) == ["libcudnn.so.9", "libcudnn_graph.so.9"]
    history = (env / "conda-meta" / "history").read_text()
    second = conda("install", "--yes", "--prefix", str(env), "--channel", "conda-forge", "cudnn=9.3")
    assert second.returncode == 0
    assert "All requested packages already installed" in second.stdout
    assert (env / "conda-meta" / "history").read_text() == history


@pytest.mark.parametrize("argv, missing", [
    (["--channel", "conda-forge", "cudnn=9.1"], "cudnn=9.1"),  # no such version in the channel
    (["--override-channels", "--channel", "nvidia", "cudnn=9.3"], "cudnn=9.3"),  # not in that channel
    (["--channel", "nvidia/label/cuda-12.4.0", "--override-channels", "cuda-runtime=12.5"], "cuda-runtime=12.5"),
    (["--channel", "conda-forge", "tensorflow=2.21"], "tensorflow=2.21"),  # nothing the stand-in provides
])
def test_a_package_no_channel_carries_is_packages_not_found_and_changes_nothing(conda, tmp_path, argv, missing):
    env = tmp_path / "env"
    conda("create", "--yes", "--prefix", str(env))
    before = records(env), (env / "conda-meta" / "history").read_text()
    result = conda("install", "--yes", "--prefix", str(env), *argv)
    assert result.returncode == 1
    assert "PackagesNotFoundError: The following packages are not available from current channels" in result.stderr
    assert f"  - {missing}\n" in result.stderr
    assert (records(env), (env / "conda-meta" / "history").read_text()) == before
    assert not (env / "lib").exists()


def test_install_into_a_prefix_that_is_not_an_environment_is_refused(conda, tmp_path):
    result = conda("install", "--yes", "--prefix", str(tmp_path / "nowhere"), "cudnn=9.3")
    assert result.returncode == 1
    assert f"EnvironmentLocationNotFound: Not a conda environment: {tmp_path / 'nowhere'}" in result.stderr
    assert not (tmp_path / "nowhere").exists()


@pytest.mark.parametrize("argv, error", [
    (["install", "--yes", "cudnn~=9"], "InvalidMatchSpec: Invalid spec 'cudnn~=9'"),
    (["install", "--yes", "--override-channels", "cudnn"], "ArgumentError: At least one -c / --channel flag"),
    (["install", "--yes"], "CondaValueError: too few arguments"),
    (["create", "--yes", "cudnn"], "CondaValueError: either -n NAME or -p PREFIX option required"),
])
def test_conda_errors_exit_1_with_their_name(conda, argv, error):
    result = conda(*argv)
    assert result.returncode == 1
    assert error in result.stderr


def test_create_over_an_environment_replaces_it_as_conda_does(conda, tmp_path):
    env = tmp_path / "env"
    conda("create", "--yes", "--prefix", str(env), "--channel", "nvidia", "cuda-runtime")
    result = conda("create", "--yes", "--prefix", str(env), "cudnn")
    assert result.returncode == 0, result.stderr
    assert f"A conda environment already exists at '{env}'" in result.stdout
    assert records(env) == ["cudnn-9.3.0.75-0_tfprov_stand_in.json"]
    assert not (env / "lib" / "libcudart.so.12").exists()


def test_dry_run_writes_nothing(conda, tmp_path):
    result = conda("create", "--dry-run", "--yes", "--prefix", str(tmp_path / "env"), "cudnn=9.3")
    assert result.returncode == 0
    assert "cudnn-9.3.0.75" in result.stdout and "DryRunExit" in result.stdout
    assert not (tmp_path / "env").exists()


def test_python_is_the_nodes_own_and_runs_in_the_environment(conda, tmp_path):
    env = tmp_path / "env"
    wanted = f"{sys.version_info.major}.{sys.version_info.minor}"
    result = conda("create", "--yes", "--prefix", str(env), f"python={wanted}")
    assert result.returncode == 0, result.stderr
    ran = subprocess.run([str(env / "bin" / "python"), "-c", "import sys; print(sys.prefix)"],
                         capture_output=True, text=True, check=True)
    assert ran.stdout.strip() == str(env)
    assert records(env)[0].startswith(f"python-{wanted}.")


def test_a_python_the_node_cannot_make_is_not_found(conda, tmp_path):
    result = conda("create", "--yes", "--prefix", str(tmp_path / "env"), "python=2.7")
    assert result.returncode == 1
    assert "  - python=2.7\n" in result.stderr
    assert not (tmp_path / "env").exists()


def test_pip_without_a_pip_wheel_in_the_wheelhouse_is_not_found(conda, tmp_path):
    wanted = f"{sys.version_info.major}.{sys.version_info.minor}"
    result = conda("create", "--yes", "--prefix", str(tmp_path / "env"), f"python={wanted}", "pip")
    assert result.returncode == 1
    assert "  - pip\n" in result.stderr
    assert not (tmp_path / "env").exists()

