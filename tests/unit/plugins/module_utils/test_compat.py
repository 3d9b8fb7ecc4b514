"""Stack resolution and every refusal, on a small matrix of known shape (the real one is tested too)."""

import pytest
from ansible_collections.tfprov.gpu.plugins.module_utils.compat import (
    CompatError,
    architecture,
    cloud_gpu,
    describe_gpu,
    gpu_model,
    resolve_stack,
    version_tuple,
)

MATRIX = {
    "tensorflow": {
        "2.14": {"python": {"min": "3.9", "max": "3.11"}, "cuda": "11.8", "cudnn": "8.7",
                 "min_compute_capability": "3.5",
                 "pip_cuda_packages": {"nvidia-cuda-runtime-cu11": "==11.8.89", "nvidia-cudnn-cu11": "==8.7.0.84"}},
        "2.16": {"python": {"min": "3.9", "max": "3.12"}, "cuda": "12.3", "cudnn": "8.9",
                 "min_compute_capability": "5.0",
                 "pip_cuda_packages": {"nvidia-cuda-runtime-cu12": "==12.3.101", "nvidia-cudnn-cu12": "==8.9.7.29"}},
        "2.18": {"python": {"min": "3.9", "max": "3.12"}, "cuda": "12.5", "cudnn": "9.3",
                 "min_compute_capability": "6.0",
                 "pip_cuda_packages": {"nvidia-cuda-runtime-cu12": "==12.5.82", "nvidia-cudnn-cu12": "==9.3.0.75"}},
    },
    "cuda": {
        "11.8": {"min_driver": "450.80.02"},
        "12.3": {"min_driver": "525.60.13"},
        "12.5": {"min_driver": "525.60.13"},
    },
    "recommended_driver_branch": {"11": "535", "12": "550"},
    "gpu_architectures": {
        "kepler": {"name": "Kepler", "compute_capabilities": ["3.5", "3.7"], "last_driver_branch": "470"},
        "maxwell": {"name": "Maxwell", "compute_capabilities": ["5.0", "5.2"], "last_driver_branch": "580"},
        "turing": {"name": "Turing", "compute_capabilities": ["7.5"], "last_driver_branch": None},
    },
    "cudnn": {"8.7": {"cuda_majors": ["11"]}, "8.9": {"cuda_majors": ["11", "12"]},
              "9.3": {"cuda_majors": ["11", "12"]}},
    "gpus": {
        "k80": {"names": ["Tesla K80"], "pci_device_ids": ["0x102d"], "compute_capability": "3.7"},
        "m60": {"names": ["Tesla M60"], "pci_device_ids": ["0x13f2"], "compute_capability": "5.2"},
        "t4": {"names": ["Tesla T4"], "pci_device_ids": ["0x1eb8"], "compute_capability": "7.5"},
    },
    "cloud": {"aws": {"g4dn.xlarge": {"gpu": "t4", "count": 1}},
              "gcp": {"nvidia-tesla-k80": {"gpu": "k80", "count": 1}}},
}


def test_latest_is_the_newest_version():
    stack = resolve_stack(MATRIX, "latest")
    assert (stack["tensorflow"], stack["cuda"], stack["cudnn"], stack["min_driver"]) == ("2.18", "12.5", "9.3",
                                                                                         "525.60.13")
    assert stack["recommended_driver_branch"] == "550"
    assert stack["pip_cuda_packages"]["nvidia-cudnn-cu12"] == "==9.3.0.75"


def test_patch_versions_resolve_to_their_minor():
    assert resolve_stack(MATRIX, "2.16.2")["cuda"] == "12.3"


def test_unknown_tensorflow():
    with pytest.raises(CompatError, match=r"TensorFlow 2.99 is not in the compatibility matrix \(known: 2.14 to"):
        resolve_stack(MATRIX, "2.99")


def test_cuda_of_another_major_is_refused():
    with pytest.raises(CompatError, match="TensorFlow 2.18 is built for CUDA 12.5; CUDA 11.8 has another major"):
        resolve_stack(MATRIX, "2.18", cuda="11.8")


def test_an_older_cuda_minor_is_a_warning():
    stack = resolve_stack(MATRIX, "2.18", cuda="12.3")
    assert stack["cuda"] == "12.3" and "older than the 12.5" in stack["warnings"][0]


def test_cudnn_of_another_major_is_refused():
    with pytest.raises(CompatError, match="built for cuDNN 9.3; cuDNN 8.9 has another major version"):
        resolve_stack(MATRIX, "2.18", cudnn="8.9")


def test_cudnn_without_a_build_for_the_cuda_is_refused():
    with pytest.raises(CompatError, match="cuDNN 8.7 has no build for CUDA 12"):
        resolve_stack(MATRIX, "2.16", cudnn="8.7")


def test_driver_too_old_names_what_would_work():
    with pytest.raises(CompatError) as exc:
        resolve_stack(MATRIX, "2.18", driver="470.82.01")
    assert str(exc.value) == (
        "TensorFlow 2.18 needs CUDA 12.5 (driver >= 525.60.13); driver 470.82.01 is older. "
        "Install a newer driver (nvidia_driver_branch >= 525) or pick TensorFlow <= 2.14 (CUDA 11)")


def test_driver_too_old_for_everything():
    with pytest.raises(CompatError, match="no TensorFlow in the matrix runs on it"):
        resolve_stack(MATRIX, "2.18", driver="418.67")


def test_new_enough_driver_passes():
    assert resolve_stack(MATRIX, "2.18", driver="535.183.01")["tensorflow"] == "2.18"


def test_gpu_too_old_by_compute_capability():
    with pytest.raises(CompatError) as exc:
        resolve_stack(MATRIX, "2.18", gpus=[{"name": "Tesla K80", "compute_capability": "3.7"}])
    assert str(exc.value) == ("Tesla K80 (compute capability 3.7, Kepler) cannot run TensorFlow 2.18 (needs 6.0); "
                              "newest for it: TensorFlow 2.14 with driver branch 470")


def test_gpu_too_old_wins_over_the_driver():
    with pytest.raises(CompatError, match=r"^Tesla K80 .* cannot run TensorFlow 2.18"):
        resolve_stack(MATRIX, "2.18", driver="470.256.02", gpus=[{"name": "Tesla K80"}])


def test_gpu_capability_looked_up_by_name_or_pci_id_when_unknown():
    with pytest.raises(CompatError, match="Tesla K80"):
        resolve_stack(MATRIX, "2.18", gpus=[{"name": "Tesla K80", "compute_capability": None}])
    with pytest.raises(CompatError, match=r"Tesla K80 \(compute capability 3.7, Kepler\)"):
        resolve_stack(MATRIX, "2.18", gpus=[{"device_id": "0x102D"}])
    assert resolve_stack(MATRIX, "2.18", gpus=[{"device_id": "0x1eb8"}, {"device_id": "0xffff"}])


def test_recommended_branch_is_capped_to_the_oldest_gpu():
    assert resolve_stack(MATRIX, "2.14", gpus=[{"name": "Tesla K80"}])["recommended_driver_branch"] == "470"
    assert resolve_stack(MATRIX, "2.14", gpus=[{"name": "Tesla T4"}])["recommended_driver_branch"] == "535"
    mixed = [{"name": "Tesla T4"}, {"name": "Tesla K80"}, {"name": "Tesla M60"}]
    assert resolve_stack(MATRIX, "2.14", gpus=mixed)["recommended_driver_branch"] == "470"


def test_architecture_of_an_unlisted_capability_is_the_one_below():
    assert architecture(MATRIX, "5.3")[0] == "maxwell"
    assert architecture(MATRIX, "8.9")[0] == "turing"
    assert architecture(MATRIX, "3.0") is None and architecture(MATRIX, None) is None
    assert describe_gpu(MATRIX, {"device_id": "0x13f2"}) == {
        "name": "Tesla M60", "compute_capability": "5.2", "architecture": "Maxwell", "last_driver_branch": "580"}


def test_a_gpu_whose_last_branch_cannot_run_the_cuda_is_refused():
    # A made-up TensorFlow that still builds for Kepler but needs CUDA 12: the branch decides, not the floor.
    matrix = dict(MATRIX, tensorflow=dict(MATRIX["tensorflow"], **{"2.15": {
        "python": {"min": "3.9", "max": "3.11"}, "cuda": "12.3", "cudnn": "8.9", "min_compute_capability": "3.5"}}))
    with pytest.raises(CompatError) as exc:
        resolve_stack(matrix, "2.15", gpus=[{"name": "Tesla K80"}])
    assert str(exc.value) == (
        "Tesla K80 (compute capability 3.7, Kepler) cannot run TensorFlow 2.15 (CUDA 12.3 needs driver branch "
        ">= 525; the last for Kepler is 470); newest for it: TensorFlow 2.14 with driver branch 470")


def test_python_range():
    assert resolve_stack(MATRIX, "2.18", python="3.12.3")["python_max"] == "3.12"
    with pytest.raises(CompatError, match="supports Python 3.9 to 3.12; the environment has Python 3.13"):
        resolve_stack(MATRIX, "2.18", python="3.13")


def test_lookups():
    assert gpu_model(MATRIX, name="tesla t4")["model"] == "t4"
    assert gpu_model(MATRIX, device_id="0x13F2")["compute_capability"] == "5.2"
    assert gpu_model(MATRIX, name="Radeon") is None
    assert cloud_gpu(MATRIX, "aws", "g4dn.xlarge") == {"gpu": "t4", "count": 1}
    assert cloud_gpu(MATRIX, "azure", "x") is None


def test_version_tuple_orders_numerically():
    assert version_tuple("2.9") < version_tuple("2.10") < version_tuple("2.10.1")
    assert version_tuple("525.60.13") > version_tuple("470.256.02")
