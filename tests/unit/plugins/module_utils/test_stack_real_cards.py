"""Recorded nvidia-smi answers of real cards (tests/fixtures/nvidia-smi), parsed as the facts module parses them,
then resolved for several TensorFlow versions: the right stack or the right refusal."""

from pathlib import Path

import pytest
from ansible_collections.tfprov.gpu.plugins.module_utils.compat import CompatError, load_matrix
from ansible_collections.tfprov.gpu.plugins.module_utils.node_stack import resolve_node
from ansible_collections.tfprov.gpu.plugins.module_utils.nvidia_smi import (
    LEGACY_QUERY_FIELDS,
    NvidiaSmiError,
    parse_query,
    parse_versions,
)

FIXTURES = Path(__file__).parents[3] / "fixtures" / "nvidia-smi"
MATRIX = load_matrix()


def card(stem, legacy=False):
    """(gpus, loaded driver) as tfprov.gpu.nvidia_gpu_facts reports them from the recorded files."""
    if legacy:
        gpus = [dict(g, compute_capability=None) for g in parse_query(
            (FIXTURES / f"{stem}.csv.no-compute-cap.txt").read_text(), LEGACY_QUERY_FIELDS)]
    else:
        gpus = parse_query((FIXTURES / f"{stem}.csv.txt").read_text())
    table = FIXTURES / f"{stem}.table.txt"
    driver = parse_versions(table.read_text())[0] if table.exists() else gpus[0]["driver_version"]
    return gpus, driver


K80 = card("tesla-k80", legacy=True)
P4 = card("tesla-p4")
T4 = card("tesla-t4")
V100 = card("tesla-v100-sxm2-16gb")
V100_R470 = card("edge-v100-driver470-truncated-name", legacy=True)
A100 = card("nvidia-a100-sxm4-40gb.8gpu")
H100 = card("nvidia-h100-80gb-hbm3")
H100_580 = card("nvidia-h100-80gb-hbm3.580-lent")  # recorded on a lent H100 machine
H200_580 = card("nvidia-h200.580-lent")  # recorded on a lent H200 machine
H200 = card("edge-r610-kmd-header.nvidia-h200")
GB10 = card("edge-na-memory-total.gb10")


def resolve(gpus_driver, tensorflow, **args):
    gpus, driver = gpus_driver
    return resolve_node(MATRIX, tensorflow=tensorflow, gpus=gpus, loaded_driver=driver, python="3.11.2",
                        driver_method="cuda_repo", **args)


def test_the_k80_fixture_has_no_compute_capability_of_its_own():
    assert K80[0][0]["compute_capability"] is None and K80[1] == "410.104"
    with pytest.raises(NvidiaSmiError, match="unknown_field"):
        parse_query((FIXTURES / "tesla-k80.csv.txt").read_text())


@pytest.mark.parametrize("loaded", ["410.104", "470.256.02", "580.95.05"])
def test_k80_with_tensorflow_2_21_is_refused_for_the_gpu_even_with_a_new_driver(loaded):
    with pytest.raises(CompatError) as exc:
        resolve((K80[0], loaded), "2.21")
    assert str(exc.value) == ("Tesla K80 (compute capability 3.7, Kepler) cannot run TensorFlow 2.21 (needs 6.0); "
                              "newest for it: TensorFlow 2.14 with driver branch 470")


@pytest.mark.parametrize("tensorflow", ["2.15", "2.16", "2.17", "2.18", "2.19", "2.20"])
def test_k80_is_refused_for_every_cuda_12_tensorflow(tensorflow):
    with pytest.raises(CompatError, match=r"^Tesla K80 .* newest for it: TensorFlow 2.14 with driver branch 470$"):
        resolve(K80, tensorflow)


@pytest.mark.parametrize("tensorflow", ["2.12", "2.13", "2.14"])
def test_k80_with_cuda_11_tensorflow_gets_branch_470(tensorflow):
    stack = resolve(K80, tensorflow)
    assert (stack["driver_branch"], stack["cuda"], stack["driver_action"]) == ("470", "11.8", "install")
    assert stack["oldest_gpu"] == {"name": "Tesla K80", "compute_capability": "3.7", "architecture": "Kepler",
                                   "last_driver_branch": "470"}


@pytest.mark.parametrize(("fixture", "name", "arch", "count", "action"), [
    (P4, "Tesla P4", "Pascal", 1, "adopt"),
    (T4, "Tesla T4", "Turing", 1, "adopt"),
    (V100, "Tesla V100-SXM2-16GB", "Volta", 1, "adopt"),
    (V100_R470, "Tesla V100-SXM2-16GB", "Volta", 1, "install"),
    (A100, "NVIDIA A100-SXM4-40GB", "Ampere", 8, "adopt"),
    (H100, "NVIDIA H100 80GB HBM3", "Hopper", 1, "adopt"),
    (H100_580, "NVIDIA H100 80GB HBM3", "Hopper", 1, "adopt"),
    (H200, "NVIDIA H200", "Hopper", 1, "adopt"),
    (H200_580, "NVIDIA H200", "Hopper", 1, "adopt"),
    (GB10, "NVIDIA GB10", "Blackwell", 1, "adopt"),
])
def test_cards_that_run_tensorflow_2_21_get_branch_580(fixture, name, arch, count, action):
    stack = resolve(fixture, "2.21")
    assert (stack["driver_branch"], stack["cuda"], stack["gpu_count"]) == ("580", "12.5", count)
    assert (stack["oldest_gpu"]["name"], stack["oldest_gpu"]["architecture"]) == (name, arch)
    # The recorded driver is adopted when it serves CUDA 12 (>= 525); the V100 capture runs R470.
    assert stack["driver_action"] == action


@pytest.mark.parametrize("fixture", [P4, T4, V100, A100, H100, H100_580, H200_580])
def test_cards_with_cuda_11_tensorflow_get_branch_535(fixture):
    assert resolve(fixture, "2.14")["driver_branch"] == "535"


def test_pascal_and_volta_cannot_take_a_branch_after_580():
    for fixture, name in ((P4, "Tesla P4 (Pascal)"), (V100, "Tesla V100-SXM2-16GB (Volta)")):
        with pytest.raises(CompatError) as exc:
            resolve(fixture, "2.21", driver_branch="590")
        assert str(exc.value).startswith(f"nvidia_driver_branch=590 cannot drive {name}: its last driver branch is 580")
    assert resolve(H100, "2.21", driver_branch="590")["driver_branch"] == "590"


def test_mixed_k80_and_t4_node_the_k80_decides():
    mixed = (T4[0] + K80[0], T4[1])
    with pytest.raises(CompatError, match=r"^Tesla K80 \(compute capability 3.7, Kepler\) cannot run TensorFlow 2.21"):
        resolve(mixed, "2.21")
    stack = resolve(mixed, "2.14")
    assert stack["driver_branch"] == "470" and stack["oldest_gpu"]["name"] == "Tesla K80"
    # The T4's 535 driver cannot serve the K80: install 470 rather than adopt it.
    assert stack["driver_action"] == "install"


def test_mixed_pascal_and_hopper_node_is_capped_at_580():
    assert resolve((H100[0] + P4[0], H100[1]), "2.21")["driver_branch"] == "580"


@pytest.mark.parametrize("stem", ["edge-no-devices", "edge-driver-not-loaded", "edge-empty"])
def test_nodes_whose_nvidia_smi_reports_no_gpu_are_cpu_nodes(stem):
    text = (FIXTURES / f"{stem}.txt").read_text()
    try:
        gpus = parse_query(text)
    except NvidiaSmiError:
        gpus = []
    stack = resolve_node(MATRIX, tensorflow="2.21", gpus=gpus)
    assert (stack["variant"], stack["driver_action"], stack["gpu_node"]) == ("cpu", "skip", False)


def test_a_k80_seen_only_on_the_pci_bus_is_refused_too():
    # Driver not loaded: nvidia_gpu_facts falls back to the PCI scan, which has only the device id.
    pci = [{"pci_bus_id": "0000:00:04.0", "vendor_id": "0x10de", "device_id": "0x102d", "class": "0x030200"}]
    with pytest.raises(CompatError, match=r"^Tesla K80 \(compute capability 3.7, Kepler\) cannot run"):
        resolve_node(MATRIX, tensorflow="2.21", gpus=pci)
