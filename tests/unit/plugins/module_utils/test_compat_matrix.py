"""The real data/compat.yml: complete for TF 2.12-2.21, every row sourced, and the refusals users will meet."""

import pytest
from ansible_collections.tfprov.gpu.plugins.module_utils.compat import (
    CompatError,
    architecture,
    cloud_gpu,
    gpu_model,
    load_matrix,
    major,
    pinned_version,
    resolve_stack,
    tf_versions,
)

MATRIX = load_matrix()


def test_covers_tensorflow_2_12_to_2_21():
    assert tf_versions(MATRIX)[0] == "2.12" and tf_versions(MATRIX)[-1] == "2.21"
    assert len(tf_versions(MATRIX)) == 10


@pytest.mark.parametrize("section", ["tensorflow", "cuda", "gpus", "cudnn"])
def test_every_row_names_its_source(section):
    for key, row in MATRIX[section].items():
        assert row.get("source"), f"{section}.{key} has no source"


def test_every_tensorflow_resolves_with_its_own_cuda_and_cudnn():
    for version in tf_versions(MATRIX):
        stack = resolve_stack(MATRIX, version)
        assert stack["min_driver"] and stack["recommended_driver_branch"], version
        for name, spec in stack["pip_cuda_packages"].items():
            assert pinned_version(spec), f"{version}: {name}{spec} cannot be pinned"


def test_newest_tensorflow_pins_the_wheels_it_was_built_with():
    stack = resolve_stack(MATRIX, "2.21")
    assert pinned_version(stack["pip_cuda_packages"]["nvidia-cudnn-cu12"]) == "9.3.0.75"
    assert pinned_version(stack["pip_cuda_packages"]["nvidia-cuda-runtime-cu12"]) == "12.5.82"


def test_k80_is_refused_for_tensorflow_2_21_with_the_newest_that_runs():
    with pytest.raises(CompatError) as exc:
        resolve_stack(MATRIX, "2.21", gpus=[{"name": "Tesla K80"}])
    assert str(exc.value) == ("Tesla K80 (compute capability 3.7, Kepler) cannot run TensorFlow 2.21 (needs 6.0); "
                              "newest for it: TensorFlow 2.14 with driver branch 470")


@pytest.mark.parametrize(("arch", "last"), [("kepler", "470"), ("maxwell", "580"), ("pascal", "580"),
                                            ("volta", "580"), ("turing", None), ("ampere", None), ("ada", None),
                                            ("hopper", None), ("blackwell", None)])
def test_last_driver_branch_of_each_generation(arch, last):
    row = MATRIX["gpu_architectures"][arch]
    assert row["last_driver_branch"] == last and row["source"].startswith("https://docs.nvidia.com/")


def test_every_gpu_model_has_a_known_generation():
    for key, row in MATRIX["gpus"].items():
        assert row["architecture"] in MATRIX["gpu_architectures"], key
        assert architecture(MATRIX, row["compute_capability"])[0] == row["architecture"], key


def test_recommended_branches_run_every_cuda_of_their_major():
    for cuda_major, branch in MATRIX["recommended_driver_branch"].items():
        for cuda, row in MATRIX["cuda"].items():
            if major(cuda) == cuda_major and row.get("min_driver"):
                assert int(branch) >= int(major(row["min_driver"])), (cuda, branch)


@pytest.mark.parametrize(("name", "version", "driver", "cuda"), [
    ("Debian", "12", "535", "11.8"), ("Debian", "13", "550", "12.4"), ("Ubuntu", "22.04", None, "11.5"),
    ("Ubuntu", "24.04", None, "12.0")])
def test_what_distributions_ship(name, version, driver, cuda):
    row = MATRIX["distributions"][name][version]
    assert row["cuda_toolkit"]["version"] == cuda and row["source"]
    assert (row.get("driver") or {}).get("branch") == driver
    if name == "Ubuntu":
        assert {"470", "535", "580"} <= set(row["server_driver_branches"])


def test_distributions_without_a_cuda_toolkit():
    for name in ("RedHat", "Rocky", "AlmaLinux", "Amazon"):
        assert MATRIX["distributions"][name]["cuda_toolkit"] is None


def test_driver_470_for_tensorflow_2_21():
    with pytest.raises(CompatError, match=r"needs CUDA 12.5 \(driver >= 525.60.13\); driver 470.182.03 is older\. "
                                          r".* or pick TensorFlow <= 2.14 \(CUDA 11\)"):
        resolve_stack(MATRIX, "2.21", driver="470.182.03")


def test_cuda_13_needs_driver_580():
    assert resolve_stack(MATRIX, "2.21", driver="580.95.05")["tensorflow"] == "2.21"
    assert MATRIX["cuda"]["13.0"]["min_driver"].startswith("580")


@pytest.mark.parametrize(("provider", "machine", "model", "count"), [
    ("aws", "p3.2xlarge", "v100", 1), ("aws", "g4dn.xlarge", "t4", 1), ("aws", "p4d.24xlarge", "a100_40gb", 8),
    ("aws", "p5.48xlarge", "h100_sxm", 8), ("aws", "g5.xlarge", "a10g", 1),
    ("gcp", "nvidia-tesla-t4", "t4", None), ("gcp", "a2-highgpu-8g", "a100_40gb", 8),
    ("gcp", "a3-highgpu-8g", "h100_sxm", 8), ("gcp", "g2-standard-4", "l4", 1),
])
def test_cloud_types(provider, machine, model, count):
    row = cloud_gpu(MATRIX, provider, machine)
    assert row["gpu"] == model and row["gpu"] in MATRIX["gpus"]
    if count:
        assert row["count"] == count


def test_every_cloud_gpu_is_a_known_model():
    for provider, table in MATRIX["cloud"].items():
        sections = [table] + [table[k] for k in ("accelerator_types", "machine_types") if k in table]
        for section in sections:
            for machine, row in section.items():
                if isinstance(row, dict) and "gpu" in row:
                    assert row["gpu"] in MATRIX["gpus"], f"{provider} {machine}"


@pytest.mark.parametrize(("name", "model"), [("Tesla T4", "t4"), ("NVIDIA H100 80GB HBM3", "h100_sxm"),
                                             ("NVIDIA A100-SXM4-40GB", "a100_40gb"), ("NVIDIA H200", "h200")])
def test_nvidia_smi_names_map_to_models(name, model):
    assert gpu_model(MATRIX, name=name)["model"] == model


def test_pinned_version_forms():
    assert pinned_version("==9.3.0.75") == "9.3.0.75"
    assert pinned_version("<10.0,>=9.3.0.75") == "9.3.0.75"
    assert pinned_version("12.5.82") == "12.5.82"
    assert pinned_version("<13") is None


@pytest.mark.parametrize(("lent", "model", "device_id"), [("h100-80gb-hbm3.580-lent", "h100_sxm", "0x2330"),
                                                         ("h200.580-lent", "h200", "0x2335")])
def test_the_hopper_peaks_hold_against_what_real_cards_computed(lent, model, device_id):
    # tests/support/record_gpu_node.py on a lent H100 SXM and a lent H200: 8192^2 matmuls in PyTorch, the median of
    # five runs each. Dense peaks (the matrix's) must lie above what a card reaches, and not so far above that a
    # healthy card reads as slow: measured fp32 52, tf32 387, bf16 803, fp16 712 TFLOP/s on the H100 (72-81 % of the
    # figures); fp32 51, tf32 364, bf16 741, fp16 716 on the H200 (72-76 %).
    import json
    from pathlib import Path

    recording = Path(__file__).parents[3] / "fixtures" / "gpu-health" / f"{lent}.recording.json"
    measured = json.loads(recording.read_text())["verdicts"]["matmul"]
    row = gpu_model(MATRIX, measured["device"])
    assert row["model"] == measured["matrix_key"] == model
    assert gpu_model(MATRIX, device_id=device_id)["model"] == model  # the device id its sysfs showed
    peaks = row["peak_tflops"]
    for precision in ("fp32", "tf32", "bf16", "fp16"):
        assert 0.6 < measured[precision]["tflops"] / peaks[precision] < 1.0, precision
