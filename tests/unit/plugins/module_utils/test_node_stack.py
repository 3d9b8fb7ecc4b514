"""Whole-node resolution on the real matrix: the returned stack, the driver action, and every refusal in order."""

import pytest
from ansible_collections.tfprov.gpu.plugins.module_utils.compat import CompatError, load_matrix
from ansible_collections.tfprov.gpu.plugins.module_utils.node_stack import resolve_node

MATRIX = load_matrix()
T4 = {"name": "Tesla T4", "compute_capability": "7.5"}
K80 = {"name": "Tesla K80", "compute_capability": None}
P4 = {"name": "Tesla P4", "compute_capability": "6.1"}


def refusal(**args):
    with pytest.raises(CompatError) as exc:
        resolve_node(MATRIX, **args)
    assert "\n" not in str(exc.value)
    return str(exc.value)


def test_defaults_resolve_the_newest_tensorflow_for_a_cpu_node():
    stack = resolve_node(MATRIX)
    assert (stack["tensorflow"], stack["tensorflow_version"], stack["variant"], stack["gpu_node"]) == (
        "2.21", "2.21.0", "cpu", False)
    assert stack["driver_action"] == "skip" and stack["oldest_gpu"] is None
    assert stack["cudnn_full"] == "9.3.0.75" and resolve_node(MATRIX, tensorflow="2.13")["cudnn_full"] is None


def test_a_gpu_node_gets_the_whole_stack():
    stack = resolve_node(MATRIX, tensorflow="2.18", gpus=[T4], python="3.11.2", loaded_driver="")
    assert (stack["cuda"], stack["cudnn"], stack["cudnn_full"], stack["min_driver"]) == (
        "12.5", "9.3", "9.3.0.75", "525.60.13")
    assert (stack["driver_branch"], stack["driver_action"], stack["variant"]) == ("580", "install", "gpu")
    assert stack["oldest_gpu"] == {"name": "Tesla T4", "compute_capability": "7.5", "architecture": "Turing",
                                   "last_driver_branch": None}
    assert stack["python"] == "3.11.2" and (stack["python_min"], stack["python_max"]) == ("3.9", "3.12")
    assert "nvidia-cudnn-cu12==9.3.0.75" in stack["pip_cuda_requirements"]
    assert stack["distro_driver"] is None and stack["distro_cuda"] is None and stack["warnings"] == []


def test_an_exact_version_is_kept():
    assert resolve_node(MATRIX, tensorflow="2.18.0")["tensorflow_version"] == "2.18.0"


@pytest.mark.parametrize(("args", "action"), [
    ({"gpus": [T4], "loaded_driver": "535.183.01"}, "adopt"),
    ({"gpus": [T4], "loaded_driver": "535.183.01", "driver_adopt": "false"}, "install"),
    ({"gpus": [T4], "loaded_driver": "470.256.02"}, "install"),
    ({"gpus": [], "loaded_driver": ""}, "skip"),
    ({"gpus": [], "driver_mode": "install"}, "install"),
    ({"gpus": [], "driver_mode": "bake"}, "install"),
    ({"gpus": [T4], "variant": "cpu"}, "skip"),
    ({"tensorflow": "2.14", "gpus": [K80], "loaded_driver": "470.256.02"}, "adopt"),
    # A 535 driver cannot be loaded on a Kepler card in practice; if reported, it is not adopted.
    ({"tensorflow": "2.14", "gpus": [K80], "loaded_driver": "535.183.01"}, "install"),
])
def test_driver_action(args, action):
    assert resolve_node(MATRIX, **dict({"tensorflow": "2.21"}, **args))["driver_action"] == action


def test_bake_mode_is_a_gpu_node_without_gpus_and_says_the_branch_is_unchecked():
    stack = resolve_node(MATRIX, driver_mode="bake")
    assert stack["gpu_node"] and stack["variant"] == "gpu" and stack["driver_branch"] == "580"
    assert any("bake" in w for w in stack["warnings"])


def test_conda_uses_the_newest_python_the_tensorflow_supports_whatever_the_node_has():
    stack = resolve_node(MATRIX, tensorflow="2.21", manager="conda", python="3.9.2",
                         cuda_method="conda", cudnn_method="conda")
    assert stack["python"] == "3.13"


def test_pinned_branch_is_kept_and_adopting_another_one_is_a_warning():
    stack = resolve_node(MATRIX, gpus=[T4], driver_branch="570", loaded_driver="580.95.05")
    assert stack["driver_branch"] == "570" and stack["driver_action"] == "adopt"
    assert "nvidia_driver_adopt=false" in stack["warnings"][0]


def test_a_gpu_without_a_known_generation_is_a_warning():
    stack = resolve_node(MATRIX, gpus=[{"device_id": "0xabcd"}])
    assert "GPU 0xabcd is not in the matrix" in stack["warnings"][0]


def test_cpu_variant_on_an_old_gpu_is_a_warning_not_a_refusal():
    stack = resolve_node(MATRIX, gpus=[K80], variant="cpu")
    assert stack["variant"] == "cpu" and "cannot run TensorFlow 2.21" in stack["warnings"][0]


# Refusals, each alone, then pairs that show which one wins.

def test_unknown_tensorflow():
    assert refusal(tensorflow="2.99").startswith("TensorFlow 2.99 is not in the compatibility matrix")
    assert refusal(tensorflow=2.2, cuda_method="magic") == (
        'TensorFlow version 2.2 is a number, not a version: quote it (e.g. "2.20")')


@pytest.mark.parametrize(("args", "message"), [
    ({"cuda_method": "magic"}, "cuda_method=magic is not one of pip, distro, nvidia_repo, conda"),
    ({"cudnn_method": ""}, "cudnn_method='' is not one of pip, tarball, nvidia_repo, conda"),
    ({"driver_mode": "always"}, "nvidia_driver_mode=always is not one of auto, install, bake"),
    ({"driver_method": "apt"}, "nvidia_driver_method=apt is not one of distro, cuda_repo, runfile"),
    ({"manager": "pipx"}, "tfprov_tf_manager=pipx is not one of venv, conda"),
    ({"variant": "rocm"}, "tensorflow_gpu_variant=rocm is not one of auto, gpu, cpu, tpu"),
    ({"cuda_method": "conda"}, "cuda_method=conda installs into a conda environment: set tfprov_tf_manager=conda"),
    ({"driver_branch": "r580"}, "nvidia_driver_branch=r580 is not a driver branch"),
    ({"driver_adopt": "maybe"}, "nvidia_driver_adopt=maybe is not a boolean"),
    ({"gpus": "Tesla T4"}, "gpus must be the list ansible_facts.nvidia_gpu.gpus"),
    ({"tensorfow": "2.18"}, "tfprov.gpu.stack does not take tensorfow"),
])
def test_bad_values(args, message):
    assert refusal(**args).startswith(message)


def test_bad_method_in_bake_mode_is_refused_before_anything_else_about_the_node():
    # Issue 7: -e cuda_method=magic in bake mode was refused only after the driver was installed.
    assert refusal(driver_mode="bake", cuda_method="magic", python="3.6").startswith("cuda_method=magic")


def test_cuda_and_cudnn_majors():
    assert refusal(tensorflow="2.21", cuda="11.8").startswith("TensorFlow 2.21 is built for CUDA 12.5; CUDA 11.8")
    assert refusal(tensorflow="2.18", cudnn="8.9").startswith("TensorFlow 2.18 is built for cuDNN 9.3; cuDNN 8.9")
    assert refusal(tensorflow="2.16", cudnn="8.7") == "cuDNN 8.7 has no build for CUDA 12 (it has for CUDA 11)"


def test_k80_is_refused_for_the_gpu_whatever_its_driver():
    for driver in ("", "470.256.02", "580.95.05"):
        assert refusal(tensorflow="2.21", gpus=[K80], loaded_driver=driver, driver_branch="470") == (
            "Tesla K80 (compute capability 3.7, Kepler) cannot run TensorFlow 2.21 (needs 6.0); newest for it: "
            "TensorFlow 2.14 with driver branch 470")


def test_pinned_branches():
    assert refusal(tensorflow="2.14", gpus=[K80], driver_branch="535") == (
        "nvidia_driver_branch=535 cannot drive Tesla K80 (Kepler): its last driver branch is 470; "
        "set nvidia_driver_branch=470 or leave it empty")
    assert refusal(tensorflow="2.21", gpus=[P4], driver_branch="590").startswith(
        "nvidia_driver_branch=590 cannot drive Tesla P4 (Pascal): its last driver branch is 580")
    assert refusal(tensorflow="2.21", gpus=[T4], driver_branch="470") == (
        "nvidia_driver_branch=470 is older than TensorFlow 2.21's CUDA 12.5 needs (driver >= 525.60.13): set "
        "nvidia_driver_branch >= 525 or leave it empty or pick TensorFlow 2.12 to 2.14")


def test_python_outside_the_range_for_venv():
    assert refusal(tensorflow="2.21", python="3.9.2") == (
        "TensorFlow 2.21 supports Python 3.10 to 3.13; this node's Python is 3.9.2: pick TensorFlow 2.12 to 2.20 "
        "(they support Python 3.9) or set tfprov_tf_manager=conda")
    assert refusal(tensorflow="2.21", python="3.7.3").endswith(
        "set tfprov_tf_manager=conda, which brings its own Python")


def test_gpu_refusal_wins_over_branch_and_python():
    assert refusal(tensorflow="2.21", gpus=[T4, K80], driver_branch="470", python="3.9.2").startswith("Tesla K80")


def test_branch_refusal_wins_over_python():
    assert refusal(tensorflow="2.21", gpus=[T4], driver_branch="470", python="3.9.2").startswith(
        "nvidia_driver_branch=470")


DEBIAN12 = {"distribution": "Debian", "distribution_version": "12"}
DEBIAN13 = {"distribution": "Debian", "distribution_version": "13"}


def test_debian_distro_driver_and_toolkit():
    stack = resolve_node(MATRIX, tensorflow="2.21", gpus=[T4], **DEBIAN12)
    assert stack["driver_branch"] == "535" and stack["distro_driver"]["version"] == "535.261.03"
    stack = resolve_node(MATRIX, tensorflow="2.14", gpus=[T4], cuda_method="distro", **DEBIAN12)
    assert stack["distro_cuda"] == {"package": "nvidia-cuda-toolkit", "version": "11.8"}
    stack = resolve_node(MATRIX, tensorflow="2.21", gpus=[T4], cuda_method="distro", **DEBIAN13)
    assert stack["distro_cuda"]["version"] == "12.4" and "older than the 12.5" in stack["warnings"][0]


def test_distro_toolkit_of_another_major():
    assert refusal(tensorflow="2.21", gpus=[T4], cuda_method="distro", **DEBIAN12) == (
        "Debian 12 ships CUDA 11.8: TensorFlow 2.21 needs CUDA 12.x; use cuda_method=pip or nvidia_repo, "
        "or TensorFlow <= 2.14")
    assert refusal(tensorflow="2.14", gpus=[T4], cuda_method="distro", **DEBIAN13).endswith(
        "or TensorFlow >= 2.15")


def test_distro_driver_that_cannot_drive_the_gpu_or_the_pin():
    assert refusal(tensorflow="2.14", gpus=[K80], **DEBIAN12) == (
        "Debian 12 ships driver 535.261.03, which cannot drive Tesla K80 (Kepler; last driver branch 470): "
        "use nvidia_driver_method=runfile with a 470 driver")
    assert refusal(tensorflow="2.21", gpus=[T4], driver_branch="580", **DEBIAN12) == (
        "Debian 12 ships driver branch 535 only; nvidia_driver_branch=580 needs nvidia_driver_method=cuda_repo "
        "or runfile")


def test_distro_driver_too_old_for_the_cuda():
    matrix = dict(MATRIX, distributions={"Debian": {"11": {"driver": {
        "package": "nvidia-driver", "version": "470.256.02", "branch": "470"}}}})
    with pytest.raises(CompatError) as exc:
        resolve_node(matrix, tensorflow="2.21", gpus=[T4], distribution="Debian", distribution_version="11")
    assert str(exc.value) == (
        "Debian 11 ships driver 470.256.02; TensorFlow 2.21 needs CUDA 12.5 (driver >= 525.60.13): use "
        "nvidia_driver_method=cuda_repo with nvidia_driver_branch >= 525")


def test_distro_driver_is_not_checked_when_the_loaded_one_is_adopted():
    stack = resolve_node(MATRIX, tensorflow="2.14", gpus=[K80], loaded_driver="470.256.02", **DEBIAN12)
    assert stack["driver_action"] == "adopt" and stack["distro_driver"] is None


def test_ubuntu_server_branches():
    stack = resolve_node(MATRIX, tensorflow="2.14", gpus=[K80], distribution="Ubuntu", distribution_version="24.04")
    assert stack["distro_driver"]["package"] == "nvidia-headless-470-server"
    assert refusal(tensorflow="2.21", gpus=[T4], driver_branch="590", distribution="Ubuntu",
                   distribution_version="22.04").startswith("Ubuntu 22.04 has no nvidia-headless-590-server")


def test_distro_cuda_where_none_is_shipped():
    assert refusal(gpus=[T4], cuda_method="distro", distribution="Rocky", distribution_version="9") == (
        "cuda_method=distro: Rocky ships no CUDA toolkit; use cuda_method=pip or nvidia_repo")


def test_unknown_distribution_versions_are_warnings():
    stack = resolve_node(MATRIX, gpus=[T4], cuda_method="distro", distribution="Debian", distribution_version="14")
    assert len(stack["warnings"]) == 2 and all("does not know" in w for w in stack["warnings"])


def test_cudnn_full_version_for_tarball_and_repo_methods():
    assert resolve_node(MATRIX, tensorflow="2.18", gpus=[T4], cudnn_method="tarball")["cudnn_full"] == "9.3.0.75"
    assert refusal(tensorflow="2.13", gpus=[T4], cudnn_method="tarball") == (
        "cudnn_method=tarball installs cuDNN 8.6 by its full version, but that is unknown: set cudnn_full_version "
        "(e.g. 8.6.0.x)")
    assert refusal(tensorflow="2.18", gpus=[T4], cudnn_method="nvidia_repo", cudnn_full="9.1.0.70").startswith(
        "cudnn_method=nvidia_repo installs cuDNN 9.3 by its full version, but that is 9.1.0.70")


def test_downloads_need_checksums_and_a_key_when_those_settings_are_passed():
    assert refusal(gpus=[T4], cudnn_method="tarball", cudnn_tarball_checksum="").startswith(
        "cudnn_method=tarball needs cudnn_tarball_checksum as sha256:<64 hex>")
    assert refusal(gpus=[T4], driver_method="runfile", driver_runfile_url="https://x/y.run",
                   driver_runfile_checksum="md5:abc").startswith("nvidia_driver_method=runfile needs")
    assert refusal(gpus=[T4], driver_method="cuda_repo", repo_key_fingerprint="").startswith(
        "NVIDIA's repository needs nvidia_driver_repo_key_fingerprint")
    ok = resolve_node(MATRIX, gpus=[T4], driver_method="cuda_repo", cudnn_method="tarball",
                      repo_key_fingerprint="EB693B3035CD5710E231E123A4B469963BF863CC",
                      cudnn_tarball_checksum="sha256:" + "a" * 64)
    assert ok["driver_action"] == "install"
    # A CPU node downloads none of these: nothing to refuse.
    assert resolve_node(MATRIX, cudnn_method="tarball", cudnn_tarball_checksum="")["variant"] == "cpu"
