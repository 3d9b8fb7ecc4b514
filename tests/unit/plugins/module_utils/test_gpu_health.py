"""The admission gate's verdicts (module_utils/gpu_health) on recorded nvidia-smi answers of real cards
(tests/fixtures/gpu-health, SOURCES.md there), healthy as recorded and with one fault written into each."""

import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest
from ansible_collections.tfprov.gpu.plugins.module_utils.gpu_health import (
    HealthInputError,
    evaluate,
    not_judged_idle,
    parse_nvlink_status,
    parse_smi_xml,
    parse_xids,
    verdict_lines,
)

FIXTURES = Path(__file__).parents[3] / "fixtures" / "gpu-health"
RECORDED = {  # file: (GPUs, name of the first, driver)
    "tesla-t4.aws-515.xml": (1, "Tesla T4", "515.105.01"),
    "tesla-t4.idle-512.xml": (1, "Tesla T4", "512.78"),
    "a100-sxm4-80gb.535.xml": (1, "NVIDIA A100-SXM4-80GB", "535.54.03"),
    "a100-sxm4-40gb.mig-510.xml": (1, "NVIDIA A100-SXM4-40GB", "510.47.03"),
    "a10g.aws-515.xml": (1, "NVIDIA A10G", "515.105.01"),
    "tesla-p100.510.xml": (1, "Tesla P100-PCIE-16GB", "510.47.03"),
    "grid-p4-1q.vgpu-513.xml": (1, "GRID P4-1Q", "513.46"),
    "v100s-pcie.8gpu-460.xml": (8, "Tesla V100S-PCIE-32GB", "460.73.01"),
    "rtx-3090.590.xml": (1, "NVIDIA GeForce RTX 3090", "590.44.01"),
    "h100-80gb-hbm3.580-lent.idle.xml": (1, "NVIDIA H100 80GB HBM3", "580.159.04"),
    "h100-80gb-hbm3.580-lent.loaded.xml": (1, "NVIDIA H100 80GB HBM3", "580.159.04"),
    "h200.580-lent.idle.xml": (1, "NVIDIA H200", "580.159.04"),
    "h200.580-lent.loaded.xml": (1, "NVIDIA H200", "580.159.04"),
}


def tree(name):
    return ElementTree.parse(FIXTURES / name).getroot()


def answer(root):
    return parse_smi_xml(ElementTree.tostring(root, encoding="unicode"))


def put(gpu, path, value):
    """Write a value into a recorded GPU's element, creating the element where the card's XML lacks it."""
    node = gpu
    for tag in path.split("/"):
        child = node.find(tag)
        node = child if child is not None else ElementTree.SubElement(node, tag)
    node.text = value


def fails(problems):
    return [line for line in verdict_lines(problems) if line.startswith("FAIL")]


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_each_recorded_card_as_recorded_passes(name):
    count, first, driver = RECORDED[name]
    smi = parse_smi_xml((FIXTURES / name).read_text())
    assert (len(smi["gpus"]), smi["gpus"][0]["name"], smi["driver_version"]) == (count, first, driver)
    assert fails(evaluate(smi, expected_gpu_count=count)) == []


@pytest.mark.parametrize("lent", ["h100-80gb-hbm3.580-lent", "h200.580-lent"])
def test_a_real_hopper_at_its_power_cap_under_load_is_healthy_and_judged_at_gen_5_x16(lent):
    # Recorded on a lent H100 and a lent H200 while PyTorch multiplied bf16 matrices: 701 W and 688 W of 700, the
    # software power cap active.
    [gpu] = parse_smi_xml((FIXTURES / f"{lent}.loaded.xml").read_text())["gpus"]
    assert gpu["clock_event_reasons"] == ["sw_power_cap"] and gpu["utilization_gpu"] == 100
    assert (gpu["pcie_gen_current"], gpu["pcie_width_current"], gpu["performance_state"]) == (5, 16, "P0")
    assert not_judged_idle([gpu]) == [] and verdict_lines(evaluate({"gpus": [gpu]}, expected_gpu_count=1)) == []
    [idle] = parse_smi_xml((FIXTURES / f"{lent}.idle.xml").read_text())["gpus"]
    assert idle["clock_event_reasons"] == ["gpu_idle"] and idle["ecc_mode"] == "Enabled"


def test_a_t4_wired_at_x8_by_its_cloud_is_only_a_warning():
    # AWS g4dn's T4s run at x8 of their x16 under load: a cloud's wiring, not a fault.
    problems = evaluate(parse_smi_xml((FIXTURES / "tesla-t4.aws-515.xml").read_text()))
    assert [p["check"] for p in problems if p["severity"] == "warn"] == ["persistence", "pcie"]
    assert "x8 of the card's x16 under load" in verdict_lines(problems)[1]


def test_uncorrectable_ecc_errors_since_the_driver_loaded_fail_with_the_reset_action():
    root = tree("a100-sxm4-80gb.535.xml")
    put(root.find("gpu"), "ecc_errors/volatile/dram_uncorrectable", "2")
    put(root.find("gpu"), "ecc_errors/aggregate/dram_uncorrectable", "2")
    assert fails(evaluate(answer(root))) == [
        "FAIL: GPU 0 (00000000:01:00.0): 2 uncorrectable ECC error(s) since the driver loaded: reset the GPU "
        "(nvidia-smi -r, no process on it) or reboot the node; if they return, take the node out of service and "
        "replace it (report the GPU to the provider)"]


def test_uncorrectable_errors_only_in_the_past_warn():
    root = tree("a100-sxm4-80gb.535.xml")
    put(root.find("gpu"), "ecc_errors/aggregate/sram_uncorrectable", "1")
    problems = evaluate(answer(root))
    assert fails(problems) == [] and any(p["check"] == "ecc" and p["severity"] == "warn" for p in problems)


def test_double_bit_errors_of_a_pre_ampere_card_fail():
    root = tree("tesla-p100.510.xml")
    put(root.find("gpu"), "ecc_errors/volatile/double_bit/total", "1")
    assert ["ecc"] == [p["check"] for p in evaluate(answer(root)) if p["severity"] == "fail"]


def test_pages_waiting_for_retirement_fail():
    root = tree("tesla-t4.aws-515.xml")
    put(root.find("gpu"), "retired_pages/pending_retirement", "Yes")
    assert fails(evaluate(answer(root))) == [
        "FAIL: GPU 0 (00000000:00:1E.0): memory pages are waiting to be retired: reset the GPU (nvidia-smi -r, no "
        "process on it) or reboot the node"]


@pytest.mark.parametrize(("tag", "message", "action"), [
    ("remapped_row_pending", "a row remapping is pending", "reboot the node to apply it"),
    ("remapped_row_failure", "row remapping failed (no spare rows left)", "take the node out of service"),
])
def test_row_remapping_pending_or_failed_fails(tag, message, action):
    root = tree("a10g.aws-515.xml")
    put(root.find("gpu"), f"remapped_rows/{tag}", "Yes")
    [line] = fails(evaluate(answer(root)))
    assert f"GPU 0 (00000000:00:1E.0): {message}: " in line and action in line


def test_a_missing_gpu_of_eight_fails_against_the_instance_types_count():
    root = tree("v100s-pcie.8gpu-460.xml")
    root.remove(root.findall("gpu")[5])
    [line] = fails(evaluate(answer(root), expected_gpu_count=8))
    assert line.startswith("FAIL: 7 of 8 GPUs visible to the driver (its instance type has 8): look for XID 79")


def test_a_gpu_on_the_bus_the_driver_does_not_report_fails():
    smi = parse_smi_xml((FIXTURES / "tesla-t4.aws-515.xml").read_text())
    [line] = fails(evaluate(smi, pci_gpu_count=2))
    assert "1 of 2 GPUs visible to the driver (the PCI bus has 2)" in line


@pytest.mark.parametrize("reason", ["hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown"])
def test_a_hardware_slowdown_fails(reason):
    root = tree("a100-sxm4-80gb.535.xml")
    put(root.find("gpu"), f"clocks_event_reasons/clocks_event_reason_{reason}", "Active")
    [line] = fails(evaluate(answer(root)))
    assert f"clocks held down by {reason}: check the node's cooling and power supply" in line


def test_the_older_throttle_reasons_spelling_is_read_too():
    root = tree("tesla-t4.aws-515.xml")
    put(root.find("gpu"), "clocks_throttle_reasons/clocks_throttle_reason_hw_slowdown", "Active")
    assert ["clocks"] == [p["check"] for p in evaluate(answer(root)) if p["severity"] == "fail"]


def test_a_gpu_trained_narrower_than_its_siblings_under_load_fails():
    root = tree("v100s-pcie.8gpu-460.xml")
    put(root.findall("gpu")[3], "pci/pci_gpu_link_info/link_widths/current_link_width", "4x")
    [line] = fails(evaluate(answer(root), expected_gpu_count=8))
    assert line.startswith("FAIL: GPU 3 (00000000:00:10.0): PCIe link at x4 under load where its sibling GPUs run x16")


def test_a_lower_generation_than_card_and_host_offer_under_load_fails():
    root = tree("rtx-3090.590.xml")
    put(root.find("gpu"), "performance_state", "P0")  # recorded at P8 (idle), gen 1 of 4
    [line] = fails(evaluate(answer(root)))
    assert "PCIe link at generation 1 under load where the card and the host both offer 4" in line


def test_an_idle_link_is_not_judged_and_says_so():
    smi = parse_smi_xml((FIXTURES / "rtx-3090.590.xml").read_text())  # gen 1 of 4 at P8
    assert not [p for p in evaluate(smi) if p["check"] == "pcie"] and not_judged_idle(smi["gpus"]) == [0]


NVLINK = (FIXTURES / "a100-sxm4.8gpu.nvlink-s.txt").read_text()


def test_nvlink_status_of_a_recorded_a100_node_reads_twelve_links_up_per_gpu():
    links = parse_nvlink_status(NVLINK)
    assert sorted(links) == list(range(8)) and all(len(v) == 12 and set(v.values()) == {"up"} for v in links.values())


def test_an_nvlink_link_down_fails():
    text = NVLINK.replace("GPU 2: ", "GPU 2: ", 1)
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("GPU 2:")) + 4
    lines[at] = lines[at].split(":")[0] + ": <inactive>"  # GPU 2's link 3
    smi = {"driver_version": "535.54.03", "cuda_version": "12.2", "gpus": [
        dict(parse_smi_xml((FIXTURES / "a100-sxm4-80gb.535.xml").read_text())["gpus"][0], index=i,
             bus_id=f"00000000:{i:02d}:00.0") for i in range(8)]}
    [line] = fails(evaluate(smi, nvlink=parse_nvlink_status("\n".join(lines))))
    assert line.startswith("FAIL: GPU 2 (00000000:02:00.0): NVLink link(s) 3 down (11 of 12 up): reset the GPU")


def test_a_card_without_a_bridge_lists_every_link_inactive_and_passes_unless_nvlink_is_expected():
    smi = parse_smi_xml((FIXTURES / "tesla-p100.510.xml").read_text())
    inactive = parse_nvlink_status("GPU 0: Tesla P100-PCIE-16GB (UUID: GPU-x)\n\t Link 0: <inactive>\n"
                                   "\t Link 1: <inactive>\n")
    assert fails(evaluate(smi, nvlink=inactive)) == []
    assert "NVLink link(s) 0, 1 down (0 of 2 up)" in fails(evaluate(smi, nvlink=inactive, expect_nvlink=True))[0]


def test_nvswitches_without_fabric_manager_fail():
    smi = parse_smi_xml((FIXTURES / "a100-sxm4-80gb.535.xml").read_text())
    [line] = fails(evaluate(smi, nvswitch=True, fabric_manager_active=False))
    assert line.startswith("FAIL: NVSwitches present but nvidia-fabricmanager is not running")
    assert fails(evaluate(smi, nvswitch=True, fabric_manager_active=True)) == []


def test_a_hopper_fabric_not_ready_fails():
    root = tree("a100-sxm4-80gb.535.xml")
    put(root.find("gpu"), "fabric/state", "In Progress")
    put(root.find("gpu"), "fabric/status", "N/A")
    [line] = fails(evaluate(answer(root)))
    assert "NVLink fabric not ready (state In Progress, status None): start nvidia-fabricmanager" in line


XID_79 = ("[Fri Apr  5 21:29:39 2024] NVRM: Xid (PCI:0000:a1:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen "
          "off the bus.\n[Fri Apr  5 21:29:39 2024] NVRM: GPU 0000:a1:00.0: GPU has fallen off the bus.\n")
XID_13 = ("[Mon Aug  5 03:54:13 2024] NVRM: Xid (PCI:0000:00:1e): 13, pid=2512125, name=python3.10, Graphics SM Warp "
          "Exception on (GPC 0, TPC 0, SM 0): Out Of Range Address\n")


def t4_at(bus):
    root = tree("tesla-t4.aws-515.xml")
    put(root.find("gpu"), "pci/pci_bus_id", bus)
    return answer(root)


def test_xid_79_in_the_kernel_log_fails_the_gpu_it_names_with_reboot():
    problems = evaluate(t4_at("00000000:A1:00.0"), xids=parse_xids(XID_79))
    assert fails(problems) == [
        "FAIL: GPU 0 (00000000:A1:00.0): XID 79 (GPU has fallen off the bus) in the kernel log since boot "
        "(\"GPU has fallen off the bus\"): reboot the node; if it recurs, take the node out of service and replace it "
        "(report the GPU to the provider)"]


def test_fallen_off_the_bus_without_an_xid_counts_as_79():
    log = ("[ 1843.308145] NVRM: The NVIDIA GPU 0000:b3:00.0\n"
           " NVRM: (PCI ID: 10de:26b5) installed in this system has\n"
           " NVRM: fallen off the bus and is not answering commands.\n")
    assert [(e["xid"], e["bus"]) for e in parse_xids(log)] == [(79, "b3:00")]


def test_xid_13_is_the_applications_and_only_warns():
    problems = evaluate(t4_at("00000000:00:1E.0"), xids=parse_xids(XID_13 * 3))
    assert fails(problems) == []
    assert any("XID 13 (graphics engine exception) 3 times" in line for line in verdict_lines(problems))


def test_a_recorded_xid_119_gsp_timeout_fails_a_gpu_not_in_the_answer_by_its_bus():
    xids = parse_xids((FIXTURES / "kernel-log.xid-119.log").read_text())
    [line] = fails(evaluate(t4_at("00000000:00:1E.0"), xids=xids))
    assert line.startswith("FAIL: GPU at 9b:00: XID 119 (GSP RPC timeout) 5 times in the kernel log since boot")


def test_an_xid_missing_from_the_catalog_warns_and_points_to_nvidias():
    log = "NVRM: Xid (PCI:0000:00:1e): 999, pid=1, something new\n"
    [line] = verdict_lines(evaluate(t4_at("00000000:00:1E.0"), xids=parse_xids(log)))[-1:]
    assert line.startswith("WARN: GPU 0 (00000000:00:1E.0): XID 999 (not in tfprov's catalog)")


def test_a_driver_older_than_the_cuda_needs_fails():
    smi = parse_smi_xml((FIXTURES / "tesla-t4.aws-515.xml").read_text())  # 515.105.01, CUDA 11.7
    assert fails(evaluate(smi, min_driver="525.60.13", cuda="12.0")) == [
        "FAIL: driver 515.105.01 is older than 525.60.13, the least CUDA 12.0 needs: run tfprov run node to update it",
        "FAIL: the driver supports CUDA up to 11.7; the stack needs 12.0: run tfprov run node to update the driver"]
    assert fails(evaluate(smi, min_driver="450.80.02", cuda="11.2")) == []


def test_failures_come_before_warnings():
    root = tree("tesla-t4.aws-515.xml")
    put(root.find("gpu"), "retired_pages/pending_retirement", "Yes")
    severities = [p["severity"] for p in evaluate(answer(root), xids=parse_xids(XID_13))]
    assert severities == sorted(severities, key=lambda s: s != "fail") and severities[0] == "fail"


@pytest.mark.parametrize("text", ["", "No devices were found", "<other/>"])
def test_an_answer_that_is_not_nvidia_smis_xml_is_refused(text):
    with pytest.raises(HealthInputError):
        parse_smi_xml(text)


def test_a_recorded_v100_sxm2_node_with_links_down_fails_those_gpus_only():
    links = parse_nvlink_status((FIXTURES / "v100-sxm2.nvlink-s.links-down.txt").read_text())
    down = {gpu: sorted(n for n, state in v.items() if state == "inactive") for gpu, v in links.items()}
    assert {gpu: d for gpu, d in down.items() if d} == {3: [3, 5], 4: [1], 5: [0, 4], 6: [1]}
    smi = parse_smi_xml((FIXTURES / "v100s-pcie.8gpu-460.xml").read_text())  # eight GPUs to hang the links on
    failed = [p for p in evaluate(smi, nvlink=links, expect_nvlink=True) if p["severity"] == "fail"]
    assert [(p["gpu"], p["check"]) for p in failed] == [(3, "nvlink"), (4, "nvlink"), (5, "nvlink"), (6, "nvlink")]
    assert failed[0]["message"] == "GPU 3 (00000000:00:10.0): NVLink link(s) 3, 5 down (4 of 6 up)"


def test_a_recorded_h100_lists_eighteen_links_up():
    links = parse_nvlink_status((FIXTURES / "h100-80gb-hbm3.590.nvlink-s.txt").read_text())
    assert list(links) == [0] and len(links[0]) == 18 and set(links[0].values()) == {"up"}
