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
    printable,
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
    "rtx-3060.570.xml": (1, "NVIDIA GeForce RTX 3060", "570.124.04"),
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



# Issue 52: what the gate missed on newer drivers' answers. Each fault is written into a real recorded answer of the
# layout it belongs to (the files stay as recorded): R535's SRAM/DRAM counts (the A100), R570's split SRAM counts and
# retired reset_status (the RTX 3060's), R580's (the lent H100's: no reset_status, gpu_recovery_action).
LAYOUTS = {"535": "a100-sxm4-80gb.535.xml", "570": "rtx-3060.570.xml", "580": "h100-80gb-hbm3.580-lent.idle.xml"}


@pytest.mark.parametrize(("layout", "tag"), [
    ("580", "sram_uncorrectable_parity"), ("580", "sram_uncorrectable_secded"), ("580", "dram_uncorrectable"),
    ("570", "sram_uncorrectable_parity"), ("570", "sram_uncorrectable_secded"),
    ("535", "sram_uncorrectable"), ("535", "dram_uncorrectable"),
])
def test_two_uncorrectable_errors_in_any_field_of_any_layout_fail(layout, tag):
    root = tree(LAYOUTS[layout])
    put(root.find("gpu"), f"ecc_errors/volatile/{tag}", "2")
    [line] = fails(evaluate(answer(root)))
    assert "2 uncorrectable ECC error(s) since the driver loaded: reset the GPU" in line


def test_parity_and_secded_and_dram_errors_add_up():
    root = tree(LAYOUTS["580"])
    for tag, count in (("sram_uncorrectable_parity", "1"), ("sram_uncorrectable_secded", "2"),
                       ("dram_uncorrectable", "3")):
        put(root.find("gpu"), f"ecc_errors/volatile/{tag}", count)
    assert answer(root)["gpus"][0]["ecc_uncorrectable_volatile"] == 6


def test_split_sram_errors_only_in_the_past_warn():
    root = tree(LAYOUTS["580"])
    put(root.find("gpu"), "ecc_errors/aggregate/sram_uncorrectable_secded", "4")
    problems = evaluate(answer(root))
    assert fails(problems) == [] and [p["check"] for p in problems if p["severity"] == "warn"] == ["ecc"]


def test_a_double_bit_block_without_its_total_counts_its_units():
    # Some drivers leave the total N/A and count per unit (device memory, register file, L1, L2, ...).
    root = tree("grid-p4-1q.vgpu-513.xml")
    put(root.find("gpu"), "ecc_errors/volatile/double_bit/device_memory", "1")
    put(root.find("gpu"), "ecc_errors/volatile/double_bit/l2_cache", "1")
    [line] = fails(evaluate(answer(root)))
    assert "2 uncorrectable ECC error(s) since the driver loaded" in line


def test_sram_errors_past_the_drivers_threshold_fail_with_replace():
    root = tree(LAYOUTS["580"])
    put(root.find("gpu"), "ecc_errors/aggregate/sram_threshold_exceeded", "Yes")
    [line] = fails(evaluate(answer(root)))
    assert "sram_threshold_exceeded: Yes" in line and "take the node out of service and replace it" in line


def test_reset_required_of_a_535_driver_fails():
    root = tree(LAYOUTS["535"])  # records <gpu_reset_status><reset_required>No</reset_required>
    assert answer(root)["gpus"][0]["reset_required"] is False
    put(root.find("gpu"), "gpu_reset_status/reset_required", "Yes")
    assert fails(evaluate(answer(root))) == [
        "FAIL: GPU 0 (00000000:01:00.0): the driver says the GPU needs a reset (reset_required: Yes): reset the GPU "
        "(nvidia-smi -r, no process on it) or reboot the node"]


def test_drain_and_reset_recommended_fails():
    root = tree(LAYOUTS["535"])
    put(root.find("gpu"), "gpu_reset_status/drain_and_reset_recommended", "Yes")
    [line] = fails(evaluate(answer(root)))
    assert "(drain_and_reset_recommended: Yes): drain the node" in line


def test_a_570_drivers_deprecated_reset_status_and_no_recovery_action_pass():
    # R570 answers reset_required with "Requested functionality has been deprecated": not a Yes.
    gpu = parse_smi_xml((FIXTURES / LAYOUTS["570"]).read_text())["gpus"][0]
    assert (gpu["reset_required"], gpu["drain_and_reset_recommended"], gpu["recovery_action"]) == (None, None, "None")
    assert fails(evaluate({"gpus": [gpu]})) == []


@pytest.mark.parametrize(("layout", "action", "todo"), [
    ("580", "Reset", "reset the GPU (nvidia-smi -r"), ("580", "GPU Reset", "reset the GPU (nvidia-smi -r"),
    ("580", "Reboot", "reboot the node (a GPU reset is not enough)"),
    ("570", "Node Reboot", "reboot the node (a GPU reset is not enough)"),
    ("580", "Drain P2P", "drain the node's peer-to-peer work"),
    ("570", "Drain and Reset", "drain the node (let its jobs end, start none), then reset the GPU"),
    ("580", "Something New", "do what the driver asks (Something New)"),
])
def test_a_recovery_action_other_than_none_fails_with_the_drivers_action(layout, action, todo):
    root = tree(LAYOUTS[layout])
    put(root.find("gpu"), "gpu_recovery_action", action)
    [line] = fails(evaluate(answer(root)))
    assert f'the driver asks for "{action}" (gpu_recovery_action): {todo}' in line


def test_a_node_that_had_a_gpu_and_shows_none_fails_against_its_last_converge():
    smi = {"gpus": [], "driver_version": None, "cuda_version": None}
    assert fails(evaluate(smi, expected_gpu_count=1, pci_gpu_count=0, expected_from="its last converge")) == [
        "FAIL: expected 1 GPU, found none (its last converge had 1): look for XID 79 or a GPU off the bus in the "
        "kernel log; reboot the node; if one stays missing, take the node out of service and replace it (report the "
        "GPU to the provider)"]
    assert "expected 8 GPUs, found none (its instance type has 8)" in fails(evaluate(smi, expected_gpu_count=8))[0]


def eighteen_down(count):
    return "".join(f"GPU {i}: NVIDIA H100 80GB HBM3 (UUID: GPU-{i})\n"
                   + "".join(f"\t Link {n}: <inactive>\n" for n in range(18)) for i in range(count))


def h100s(count):
    [gpu] = parse_smi_xml((FIXTURES / LAYOUTS["580"]).read_text())["gpus"]
    return {"driver_version": "580.159.04", "cuda_version": "13.0",
            "gpus": [dict(gpu, index=i, bus_id=f"00000000:{i + 0x18:02X}:00.0") for i in range(count)]}


def test_an_sxm_board_with_every_link_down_fails_when_the_matrix_names_the_part():
    names = ["NVIDIA H100 80GB HBM3", "NVIDIA H200"]
    links = parse_nvlink_status(eighteen_down(2))
    assert fails(evaluate(h100s(2), nvlink=links)) == []  # the old verdict: no inventory flag, no failure
    failed = fails(evaluate(h100s(2), nvlink=links, nvlink_names=names))
    assert len(failed) == 2 and "NVLink link(s) 0, 1, 2" in failed[0] and "(0 of 18 up)" in failed[0]


def test_one_sxm_gpu_alone_or_a_part_the_matrix_does_not_name_passes():
    # A single SXM GPU in a VM has no peer to link to; a PCIe card lists its links inactive.
    names = ["NVIDIA H100 80GB HBM3"]
    assert fails(evaluate(h100s(1), nvlink=parse_nvlink_status(eighteen_down(1)), nvlink_names=names)) == []
    assert fails(evaluate(h100s(2), nvlink=parse_nvlink_status(eighteen_down(2)), nvlink_names=["NVIDIA H200"])) == []


@pytest.mark.parametrize(("text", "shown"), [
    ("\x1b[31mgarbage\x00\x01\x02 more", '"[31mgarbage"'),
    ("segfault at 0 ip 00007f\x00\x00\x00", '"segfault at 0 ip 00007f"'),
    ((FIXTURES / "tesla-t4.aws-515.xml").read_text()[:700], '"<?xml version="1.0" ?> <!DOCTYPE nvidia_smi_log'),
    ("\ufffd\ufffdPK\x03\x04", '"PK"'),
    ("\x00\x01\x02", "nothing printable"),
])
def test_a_malformed_answer_is_refused_with_its_first_printable_part_only(text, shown):
    with pytest.raises(HealthInputError) as refused:
        parse_smi_xml(text)
    message = str(refused.value)
    assert message.startswith("nvidia-smi -q -x answered something that is not its XML (") and shown in message
    assert printable(message, 1000) == message and len(message) < 260


def test_printable_makes_whitespace_one_space_and_stops_at_a_control_byte():
    assert printable("  a\tb\n c \x07 d") == "a b c" and printable("\x1b\x07 \x00x") == "x"
    assert printable("x" * 200, 20) == "x" * 17 + "..."
