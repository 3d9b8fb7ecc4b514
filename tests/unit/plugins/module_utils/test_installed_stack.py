"""installed_stack reads fake node trees: each install method's traces give the versions a node has."""

import json

import pytest
from ansible_collections.tfprov.gpu.plugins.module_utils import installed_stack as stack

ENV = "/opt/tfprov/envs/tf"


def write(root, path, text=""):
    target = root / path.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    return target


def dist_info(root, name, version, python="3.11", env=ENV):
    (root / env.lstrip("/") / "lib" / f"python{python}" / "site-packages" / f"{name}-{version}.dist-info").mkdir(
        parents=True)


def dpkg(root, packages):
    stanzas = [f"Package: {name}\nStatus: install ok installed\nVersion: {version}\n"
               for name, version in packages.items()]
    stanzas.append("Package: gone\nStatus: deinstall ok config-files\nVersion: 1.0\n")
    write(root, "/var/lib/dpkg/status", "\n".join(stanzas))


def test_empty_node_has_nothing(tmp_path):
    found = stack.gather(str(tmp_path), ENV)
    assert found["env_exists"] is False and found["python"] is None
    assert found["tensorflow"] == {"version": None, "package": None, "variant": None}
    for part in ("driver", "cuda", "cudnn"):
        assert found[part]["version"] is None and found[part]["source"] is None


def test_cpu_venv_as_the_baked_node_has_it(tmp_path):
    write(tmp_path, f"{ENV}/pyvenv.cfg", "home = /usr/bin\nversion = 3.11.2\n")
    dist_info(tmp_path, "tensorflow_cpu", "2.21.0")
    dist_info(tmp_path, "keras", "3.15.1")
    found = stack.gather(str(tmp_path), ENV)
    assert found["python"] == "3.11.2"
    assert found["tensorflow"] == {"version": "2.21.0", "package": "tensorflow-cpu", "variant": "cpu"}
    assert found["cuda"]["version"] is None


def test_and_cuda_wheels_win_over_the_system_toolkit(tmp_path):
    """TensorFlow loads its environment's NVIDIA wheels first: those are the versions it uses."""
    dist_info(tmp_path, "tensorflow", "2.20.0", python="3.12")
    dist_info(tmp_path, "nvidia_cuda_runtime_cu12", "12.5.82", python="3.12")
    dist_info(tmp_path, "nvidia_cudnn_cu12", "9.3.0.75", python="3.12")
    write(tmp_path, "/usr/local/cuda-12.4/version.json", json.dumps({"cuda": {"version": "12.4.1"}}))
    write(tmp_path, "/usr/include/cudnn_version.h",
          "#define CUDNN_MAJOR 8\n#define CUDNN_MINOR 9\n#define CUDNN_PATCHLEVEL 7\n")
    found = stack.gather(str(tmp_path), ENV)
    assert found["python"] == "3.12"  # no pyvenv.cfg: the lib/pythonX.Y name
    assert found["tensorflow"]["variant"] == "gpu" and found["tensorflow"]["version"] == "2.20.0"
    assert (found["cuda"]["version"], found["cuda"]["source"]) == ("12.5.82", "pip")
    assert found["cuda"]["sources"]["toolkit"] == {"/usr/local/cuda-12.4": "12.4.1"}
    assert (found["cudnn"]["version"], found["cudnn"]["source"]) == ("9.3.0.75", "pip")
    assert found["cudnn"]["sources"]["header"] == {"/usr/include/cudnn_version.h": "8.9.7"}


def test_system_toolkit_headers_and_packages(tmp_path):
    write(tmp_path, "/usr/local/cuda-11.0/version.txt", "CUDA Version 11.0.228\n")
    write(tmp_path, "/opt/tfprov/cudnn/9.3.0.75-cuda12/include/cudnn_version.h",
          "#define CUDNN_MAJOR 9\n#define CUDNN_MINOR 3\n#define CUDNN_PATCHLEVEL 0\n")
    dpkg(tmp_path, {"nvidia-driver": "535.183.01-1~deb12u1", "nvidia-cuda-toolkit": "11.8.89~11.8.0-5~deb12u1",
                    "libcudnn9-cuda-12": "9.3.0.75-1", "bash": "5.2-1"})
    found = stack.gather(str(tmp_path), ENV)
    assert (found["cuda"]["version"], found["cuda"]["source"]) == ("11.0.228", "toolkit")
    assert found["cuda"]["sources"]["package"] == {"nvidia-cuda-toolkit": "11.8.89"}
    assert (found["cudnn"]["version"], found["cudnn"]["source"]) == ("9.3.0", "header")
    assert found["cudnn"]["sources"]["package"] == {"libcudnn9-cuda-12": "9.3.0.75"}
    assert found["driver"] == {"version": "535.183.01", "source": "package", "loaded": None,
                               "packages": {"nvidia-driver": "535.183.01"}, "library": None,
                               "reboot_needed": False}


def test_loaded_driver_wins_and_a_newer_package_means_reboot(tmp_path):
    write(tmp_path, "/proc/driver/nvidia/version",
          "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\n")
    dpkg(tmp_path, {"nvidia-headless-570-server": "570.172.08-0ubuntu0.24.04.1"})
    driver = stack.gather(str(tmp_path), ENV)["driver"]
    assert (driver["version"], driver["source"], driver["reboot_needed"]) == ("550.54.15", "loaded", True)
    write(tmp_path, "/sys/module/nvidia/version", "570.172.08\n")
    driver = stack.gather(str(tmp_path), ENV)["driver"]
    assert (driver["version"], driver["reboot_needed"]) == ("570.172.08", False)


def test_runfile_driver_from_the_library(tmp_path):
    write(tmp_path, "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.580.95.05")
    driver = stack.gather(str(tmp_path), ENV)["driver"]
    assert (driver["version"], driver["source"]) == ("580.95.05", "library")


def test_conda_environment(tmp_path):
    for record in ("python-3.12.4-h5148396_1", "cudnn-9.3.0.75-h93bb076_0", "cuda-cudart-12.5.82-he02047a_0"):
        write(tmp_path, f"{ENV}/conda-meta/{record}.json", "{}")
    dist_info(tmp_path, "tensorflow", "2.18.1", python="3.12")
    found = stack.gather(str(tmp_path), ENV)
    assert found["python"] == "3.12.4"
    assert (found["cuda"]["version"], found["cuda"]["source"]) == ("12.5.82", "conda")
    assert (found["cudnn"]["version"], found["cudnn"]["source"]) == ("9.3.0.75", "conda")


def test_rpm_packages_are_asked_only_on_rpm_systems(tmp_path):
    calls = []

    def run_command(argv):
        calls.append(argv)
        return 0, "nvidia-driver\t570.172.08\ncuda-toolkit-12-8\t12.8.1\n", ""

    assert stack.gather(str(tmp_path), ENV, run_command)["driver"]["version"] is None and not calls
    (tmp_path / "var/lib/rpm").mkdir(parents=True)
    found = stack.gather(str(tmp_path), ENV, run_command)
    assert calls and calls[0][:2] == ["rpm", "-q"]
    assert found["driver"]["version"] == "570.172.08"
    assert found["cuda"]["sources"]["package"] == {"cuda-toolkit-12-8": "12.8.1"}


@pytest.mark.parametrize(("text", "expected"), [
    ("1:535.183.01-1~deb12u1", "535.183.01"), ("8.9.2.26~cuda12+3", "8.9.2.26"), ("12.5.1-1", "12.5.1"),
    ("garbage", None), ("", None),
])
def test_upstream_version(text, expected):
    assert stack.upstream_version(text) == expected
