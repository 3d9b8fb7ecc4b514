"""gpu_health (the module) on a node faked from recordings: nvidia-smi replaying tests/fixtures/gpu-health, a sysfs
tree with the node's PCI devices, a saved kernel log."""

import json
import stat
import time
from pathlib import Path

import pytest
from ansible.module_utils.testing import patch_module_args
from ansible_collections.tfprov.gpu.plugins.module_utils import bounded_command
from ansible_collections.tfprov.gpu.plugins.modules import gpu_health

FIXTURES = Path(__file__).parents[3] / "fixtures" / "gpu-health"


def fake_smi(tmp_path, xml=None, failure=None, rc=0, nvlink=""):
    """An nvidia-smi answering -q -x with a recorded file (or a failure) and `nvlink -s` with the given text."""
    script = tmp_path / "nvidia-smi"
    answer = f'echo "{failure}"; exit {rc}' if failure else f'cat "{xml}"'
    (tmp_path / "nvlink.txt").write_text(nvlink)
    script.write_text("#!/bin/sh\n"
                      f'case "$1" in\n  nvlink) cat "{tmp_path / "nvlink.txt"}" ;;\n  *) {answer} ;;\nesac\n')
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script)


def pci(tmp_path, *devices):
    """A sysfs tree with NVIDIA functions: (bus id, class) pairs."""
    root = tmp_path / "sys"
    for bus, pci_class in devices:
        device = root / "bus" / "pci" / "devices" / bus
        device.mkdir(parents=True, exist_ok=True)
        (device / "vendor").write_text("0x10de\n")
        (device / "class").write_text(pci_class + "\n")
        (device / "device").write_text("0x1eb8\n")
    root.mkdir(exist_ok=True)
    return str(root)


def run(capsys, **args):
    with patch_module_args(args), pytest.raises(SystemExit):
        gpu_health.main()
    return json.loads(capsys.readouterr().out)


def test_a_node_without_nvidia_gpus_passes_and_says_why(tmp_path, capsys):
    result = run(capsys, nvidia_smi=None, sysfs_root=pci(tmp_path))
    if result.get("gpu_count"):  # a machine with a real nvidia-smi on PATH: judged for real, not this case
        pytest.skip("this machine has an NVIDIA driver")
    assert result["healthy"] and not result["gpu_node"] and not result["changed"]
    assert result["notes"] == ["no NVIDIA GPU on this node: nothing to judge"]


def test_gpus_on_the_bus_without_a_driver_fail_in_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no nvidia-smi anywhere
    monkeypatch.setattr(gpu_health.AnsibleModule, "get_bin_path", lambda self, *a, **k: None)
    result = run(capsys, sysfs_root=pci(tmp_path, ("0000:00:1e.0", "0x030200")), expected_gpu_count=1)
    assert not result["healthy"] and result["lines"] == [
        "FAIL: 1 GPU(s) but no nvidia-smi (no driver installed): run tfprov run node to install the driver",
        # No journalctl and no dmesg either: the kernel log is still looked for, and its absence said.
        "WARN: the kernel log could not be read (no journalctl; no dmesg): XID errors not checked: run the gate as "
        "root (become), or look at journald and dmesg on the node"]


def test_a_driver_that_is_not_loaded_fails_with_reboot(tmp_path, capsys):
    smi = fake_smi(tmp_path, failure="NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
                   "Make sure that the latest NVIDIA driver is installed and running.", rc=9)
    result = run(capsys, nvidia_smi=smi, sysfs_root=pci(tmp_path, ("0000:00:1e.0", "0x030200")))
    assert result["lines"] == ["FAIL: nvidia-smi cannot reach the driver (not loaded): reboot the node to load it; "
                               "if it still fails, run tfprov run node"]


def test_a_recorded_t4_with_xid_79_in_its_kernel_log_fails_and_reports_what_it_read(tmp_path, capsys):
    log = tmp_path / "kern.log"
    log.write_text("NVRM: Xid (PCI:0000:00:1e): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n")
    result = run(capsys, nvidia_smi=fake_smi(tmp_path, FIXTURES / "tesla-t4.aws-515.xml"), kernel_log=str(log),
                 sysfs_root=pci(tmp_path, ("0000:00:1e.0", "0x030200")), expected_gpu_count=1, min_driver="450.80.02",
                 cuda="11.2")
    assert not result["healthy"] and (result["gpu_count"], result["expected_gpu_count"]) == (1, 1)
    assert result["lines"][0].startswith("FAIL: GPU 0 (00000000:00:1E.0): XID 79 (GPU has fallen off the bus)")
    assert result["gpus"][0]["pcie_width_current"] == 8 and result["driver_version"] == "515.105.01"


def test_nvswitches_on_the_bus_without_fabric_manager_fail(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(gpu_health, "fabric_manager_active", lambda module, seconds: False)
    log = tmp_path / "kern.log"
    log.write_text("")
    result = run(capsys, nvidia_smi=fake_smi(tmp_path, FIXTURES / "a100-sxm4-80gb.535.xml"), kernel_log=str(log),
                 sysfs_root=pci(tmp_path, ("0000:01:00.0", "0x030200"), ("0000:c4:00.0", "0x068000")))
    assert [p["check"] for p in result["problems"] if p["severity"] == "fail"] == ["fabric"]


def test_a_kernel_log_path_that_is_not_a_file_is_refused(tmp_path, capsys):
    result = run(capsys, kernel_log=str(tmp_path / "missing"))
    assert result["failed"] and "is not a file" in result["msg"]


def test_the_pcie_links_are_read_again_while_a_load_computes(tmp_path, capsys):
    # The recorded RTX 3090 idles at generation 1 of 4; under the load its answer is the one at generation 1 in P0.
    idle, loaded = FIXTURES / "rtx-3090.590.xml", tmp_path / "loaded.xml"
    loaded.write_text(idle.read_text().replace("<performance_state>P8</performance_state>",
                                               "<performance_state>P0</performance_state>"))
    marker = tmp_path / "computing"
    smi = tmp_path / "nvidia-smi"
    smi.write_text(f'#!/bin/sh\n[ "$1" = nvlink ] && exit 0\n[ -e "{marker}" ] && cat "{loaded}" || cat "{idle}"\n')
    smi.chmod(0o755)
    python = tmp_path / "python"  # stands in for the environment's Python: says it computes, then holds the load
    python.write_text(f'#!/bin/sh\ntouch "{marker}"\necho "computing on 1 GPU(s)"\nsleep 30\n')
    python.chmod(0o755)
    log = tmp_path / "kern.log"
    log.write_text("")
    result = run(capsys, nvidia_smi=str(smi), kernel_log=str(log), load_python=str(python), load_seconds=5,
                 sysfs_root=pci(tmp_path, ("0000:09:00.0", "0x030000")))
    assert "PCIe links read under load (computing on 1 GPU(s))" in result["notes"]
    assert [p["check"] for p in result["problems"] if p["severity"] == "fail"] == ["pcie"]
    assert "generation 1 under load where the card and the host both offer 4" in result["lines"][0]


def test_a_load_that_cannot_start_is_a_note_not_a_failure(tmp_path, capsys):
    python = tmp_path / "python"
    python.write_text('#!/bin/sh\necho "ModuleNotFoundError: No module named tensorflow"\nexit 1\n')
    python.chmod(0o755)
    log = tmp_path / "kern.log"
    log.write_text("")
    result = run(capsys, nvidia_smi=fake_smi(tmp_path, FIXTURES / "rtx-3090.590.xml"), kernel_log=str(log),
                 load_python=str(python), sysfs_root=pci(tmp_path, ("0000:09:00.0", "0x030000")))
    assert result["healthy"] and any("the GPUs could not be loaded (ModuleNotFoundError: No module named tensorflow)"
                                     in note for note in result["notes"])
    missing = run(capsys, nvidia_smi=fake_smi(tmp_path, FIXTURES / "rtx-3090.590.xml"), kernel_log=str(log),
                  load_python=str(tmp_path / "no-env" / "python"), sysfs_root=str(tmp_path / "sys"))
    assert any(note.startswith("no Python at") for note in missing["notes"])


# Every machine tests/support/record_gpu_node.py recorded (an H100 SXM and an H200 so far): each is replayed.
LENT = sorted(path.name.removesuffix(".recording.json") for path in FIXTURES.glob("*.recording.json"))


def recorded_sysfs(tmp_path, lent):
    """The sysfs tree of the recorded machine's NVIDIA functions, every attribute as it read there."""
    root = tmp_path / "sys"
    for bus, attributes in json.loads((FIXTURES / f"{lent}.sysfs.json").read_text()).items():
        device = root / "bus" / "pci" / "devices" / bus
        device.mkdir(parents=True)
        for name, value in attributes.items():
            (device / name).write_text(value + "\n")
    return str(root)


@pytest.mark.parametrize("lent", LENT)
def test_a_lent_card_replayed_here_gets_the_verdict_it_got_on_the_machine(tmp_path, capsys, lent):
    on_machine = json.loads((FIXTURES / f"{lent}.recording.json").read_text())["verdicts"]["health_idle"]
    result = run(capsys, nvidia_smi=fake_smi(tmp_path, FIXTURES / f"{lent}.idle.xml",
                                             nvlink=(FIXTURES / f"{lent}.nvlink-s.txt").read_text()),
                 kernel_log=str(FIXTURES / f"{lent}.kernel-log.log"), sysfs_root=recorded_sysfs(tmp_path, lent))
    verdict = ("healthy", "gpu_node", "gpu_count", "expected_gpu_count", "driver_version", "cuda_version", "problems",
               "lines", "notes")
    assert {k: result[k] for k in verdict} == {k: on_machine[k] for k in verdict}
    assert result["healthy"] and result["gpu_count"] == 1 and result["lines"] == []
    # What a card is does not change between two reads; its clocks and load do.
    card = ("name", "uuid", "bus_id", "ecc_mode", "pcie_gen_max", "pcie_width_max", "persistence_mode")
    assert [{k: g[k] for k in card} for g in result["gpus"]] == [{k: g[k] for k in card} for g in on_machine["gpus"]]


# Issue 52: hangs, malformed answers, GPUs gone, unreadable kernel logs, run through the module.
XID_79_AT_1E = "NVRM: Xid (PCI:0000:00:1e): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n"


def script(path, text):
    path.write_text("#!/bin/sh\n" + text)
    path.chmod(0o755)
    return str(path)


def kernel_log_file(tmp_path, text=""):
    log = tmp_path / "kern.log"
    log.write_text(text)
    return str(log)


@pytest.mark.parametrize("ignores_term", [False, True])
def test_an_nvidia_smi_that_never_answers_fails_the_node_within_its_time_limit(tmp_path, capsys, monkeypatch,
                                                                                ignores_term):
    monkeypatch.setattr(bounded_command, "KILL_AFTER", 1)
    smi = script(tmp_path / "nvidia-smi", ("trap '' TERM\n" if ignores_term else "") + "exec sleep 600\n")
    started = time.time()
    result = run(capsys, nvidia_smi=smi, smi_timeout=2, kernel_log=kernel_log_file(tmp_path, XID_79_AT_1E),
                 sysfs_root=pci(tmp_path, ("0000:00:1e.0", "0x030200")))
    assert time.time() - started < 2 + 1 + 1 + 3  # the limit, KILL's grace, the wrapper's second, and slack
    assert not result["healthy"] and result["lines"][0] == (
        "FAIL: nvidia-smi -q -x did not answer within 2 s: reboot the node (the driver or a GPU hangs: look for XID "
        "79 in the kernel log); if it recurs, take the node out of service and replace it (report the GPU to the "
        "provider)")
    # The kernel log is read all the same, and says why.
    assert any("XID 79 (GPU has fallen off the bus)" in line for line in result["lines"][1:])


def test_an_nvidia_smi_that_answers_late_but_within_the_limit_is_judged(tmp_path, capsys):
    answer = FIXTURES / "tesla-t4.aws-515.xml"
    smi = script(tmp_path / "nvidia-smi", f'[ "$1" = nvlink ] && exit 0\nsleep 1\ncat "{answer}"\n')
    result = run(capsys, nvidia_smi=smi, smi_timeout=5, kernel_log=kernel_log_file(tmp_path),
                 sysfs_root=pci(tmp_path, ("0000:00:1e.0", "0x030200")))
    assert result["healthy"] and result["gpu_count"] == 1


def test_nvlink_status_that_hangs_fails_in_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(bounded_command, "KILL_AFTER", 1)
    answer = FIXTURES / "tesla-t4.aws-515.xml"
    smi = script(tmp_path / "nvidia-smi", f'[ "$1" = nvlink ] && exec sleep 600\ncat "{answer}"\n')
    result = run(capsys, nvidia_smi=smi, smi_timeout=1, kernel_log=kernel_log_file(tmp_path),
                 sysfs_root=pci(tmp_path, ("0000:00:1e.0", "0x030200")))
    assert [line for line in result["lines"] if line.startswith("FAIL")] == [
        "FAIL: nvidia-smi nvlink -s did not answer within 1 s: reboot the node (the driver or a GPU hangs: look for "
        "XID 79 in the kernel log); if it recurs, take the node out of service and replace it (report the GPU to "
        "the provider)"]


def fake_bins(monkeypatch, **bins):
    """get_bin_path finds only these programs (journalctl, dmesg, systemctl)."""
    monkeypatch.setattr(gpu_health.AnsibleModule, "get_bin_path",
                        lambda self, name, *args, **kwargs: bins.get(name))


def test_a_journalctl_that_hangs_falls_back_to_dmesg_and_both_hanging_fail(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(bounded_command, "KILL_AFTER", 1)
    smi = fake_smi(tmp_path, FIXTURES / "tesla-t4.aws-515.xml")
    hung = script(tmp_path / "journalctl", "exec sleep 600\n")
    dmesg = script(tmp_path / "dmesg", f"printf '%s' \"{XID_79_AT_1E}\"\n")
    fake_bins(monkeypatch, journalctl=hung, dmesg=dmesg)
    result = run(capsys, nvidia_smi=smi, command_timeout=1, sysfs_root=pci(tmp_path, ("0000:00:1e.0", "0x030200")))
    assert "XID 79 (GPU has fallen off the bus)" in result["lines"][0]
    assert "journalctl -k did not answer within 1 s: the kernel log was read from dmesg" in result["notes"]
    fake_bins(monkeypatch, journalctl=hung, dmesg=script(tmp_path / "dmesg2", "exec sleep 600\n"))
    result = run(capsys, nvidia_smi=smi, command_timeout=1, sysfs_root=pci(tmp_path, ("0000:00:1e.0", "0x030200")))
    assert [line.split(": look")[0] for line in result["lines"] if line.startswith("FAIL")] == [
        "FAIL: journalctl -k did not answer within 1 s", "FAIL: dmesg did not answer within 1 s"]


def test_an_unreadable_kernel_log_is_a_warn_line_naming_why(tmp_path, capsys, monkeypatch):
    denied = script(tmp_path / "dmesg",
                    'echo "dmesg: read kernel buffer failed: Operation not permitted" >&2\nexit 1\n')
    fake_bins(monkeypatch, journalctl=script(tmp_path / "journalctl", "exit 1\n"), dmesg=denied)
    result = run(capsys, nvidia_smi=fake_smi(tmp_path, FIXTURES / "tesla-t4.aws-515.xml"),
                 sysfs_root=pci(tmp_path, ("0000:00:1e.0", "0x030200")))
    assert result["healthy"] and [line for line in result["lines"] if "kernel log" in line] == [
        "WARN: the kernel log could not be read (journalctl: exit 1, nothing read; dmesg: dmesg: read kernel buffer "
        "failed: Operation not permitted): XID errors not checked: run the gate as root (become), or look at "
        "journald and dmesg on the node"]


@pytest.mark.parametrize(("answer", "shown"), [
    (b"\x00\x01garbage\x02\x03 from a broken driver\n", '"garbage"'),
    ((FIXTURES / "tesla-t4.aws-515.xml").read_bytes()[:900], '"<?xml version="1.0" ?> <!DOCTYPE nvidia_smi_log'),
    (b"\xff\xfe\x00\x00", "nothing printable"),
])
def test_a_malformed_answer_is_a_fail_line_with_its_first_printable_part(tmp_path, capsys, answer, shown):
    (tmp_path / "answer").write_bytes(answer)
    smi = script(tmp_path / "nvidia-smi", f'[ "$1" = nvlink ] && exit 0\ncat "{tmp_path / "answer"}"\n')
    result = run(capsys, nvidia_smi=smi, kernel_log=kernel_log_file(tmp_path),
                 sysfs_root=pci(tmp_path, ("0000:00:1e.0", "0x030200")))
    assert "failed" not in result and not result["healthy"] and result["gpu_node"]
    [line] = result["lines"]
    assert line.startswith("FAIL: nvidia-smi -q -x answered something that is not its XML (") and shown in line
    assert not any(ord(ch) < 32 or 0x7f <= ord(ch) <= 0x9f for ch in line)


def test_a_failing_nvidia_smi_echoes_no_control_bytes(tmp_path, capsys):
    smi = script(tmp_path / "nvidia-smi",
                 "printf 'Unable to determine the device handle\\033[0m\\001 for GPU\\n'; exit 15\n")
    result = run(capsys, nvidia_smi=smi, kernel_log=kernel_log_file(tmp_path),
                 sysfs_root=pci(tmp_path, ("0000:00:1e.0", "0x030200")))
    assert result["lines"] == ["FAIL: nvidia-smi -q -x failed (exit 15): Unable to determine the device handle: "
                               "reboot the node"]


def converge_record(tmp_path, count):
    path = tmp_path / "node.json"
    path.write_text(json.dumps({"facts": {"nvidia_gpu": {"source": "nvidia-smi", "count": count}}}))
    return str(path)


NO_DEVICES = "No devices were found"


def test_a_node_whose_gpu_is_gone_fails_against_its_last_converge_and_its_kernel_log_is_read(tmp_path, capsys):
    # A static inventory (no count), nothing left on the PCI bus, the driver finds no device: the old verdict was
    # "no NVIDIA GPU on this node: nothing to judge".
    log = "NVRM: Xid (PCI:0000:a1:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n"
    result = run(capsys, nvidia_smi=fake_smi(tmp_path, failure=NO_DEVICES, rc=6), sysfs_root=pci(tmp_path),
                 kernel_log=kernel_log_file(tmp_path, log), converge_record=converge_record(tmp_path, 1))
    assert not result["healthy"] and result["gpu_node"] and result["expected_from"] == "its last converge"
    assert [line.split(": look")[0].split(": reboot")[0] for line in result["lines"]] == [
        "FAIL: expected 1 GPU, found none (its last converge had 1)",
        'FAIL: GPU at a1:00: XID 79 (GPU has fallen off the bus) in the kernel log since boot ("GPU has fallen off the '
        'bus")']


def test_without_a_record_an_xid_79_still_fails_a_node_that_shows_no_gpu(tmp_path, capsys):
    log = "NVRM: Xid (PCI:0000:a1:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n"
    result = run(capsys, nvidia_smi=fake_smi(tmp_path, failure=NO_DEVICES, rc=6), sysfs_root=pci(tmp_path),
                 kernel_log=kernel_log_file(tmp_path, log), converge_record=str(tmp_path / "none.json"))
    assert not result["healthy"] and result["gpu_node"] and "XID 79" in result["lines"][0]


def test_a_cpu_node_with_a_clean_kernel_log_and_a_record_of_none_passes(tmp_path, capsys):
    result = run(capsys, nvidia_smi=fake_smi(tmp_path, failure=NO_DEVICES, rc=6), sysfs_root=pci(tmp_path),
                 kernel_log=kernel_log_file(tmp_path, "usb 1-1: new device\n"),
                 converge_record=converge_record(tmp_path, 0))
    assert result["healthy"] and not result["gpu_node"] and result["lines"] == []
    assert result["notes"] == ["no NVIDIA GPU on this node: nothing to judge"]


def test_the_inventory_count_wins_over_the_record(tmp_path, capsys):
    result = run(capsys, nvidia_smi=fake_smi(tmp_path, FIXTURES / "tesla-t4.aws-515.xml"),
                 kernel_log=kernel_log_file(tmp_path), sysfs_root=pci(tmp_path, ("0000:00:1e.0", "0x030200")),
                 converge_record=converge_record(tmp_path, 4), expected_gpu_count=1)
    assert result["healthy"] and (result["expected_gpu_count"], result["expected_from"]) == (1, "its instance type")
    result = run(capsys, nvidia_smi=fake_smi(tmp_path, FIXTURES / "tesla-t4.aws-515.xml"),
                 kernel_log=kernel_log_file(tmp_path), sysfs_root=pci(tmp_path, ("0000:00:1e.0", "0x030200")),
                 converge_record=converge_record(tmp_path, 4))
    assert result["lines"][0].startswith("FAIL: 1 of 4 GPUs visible to the driver (its last converge had 4)")


def test_an_h100_on_580_with_uncorrectable_sram_errors_is_not_admitted(tmp_path, capsys):
    lent = "h100-80gb-hbm3.580-lent"
    edited = tmp_path / "answer.xml"
    edited.write_text((FIXTURES / f"{lent}.idle.xml").read_text().replace(
        "<sram_uncorrectable_parity>0</sram_uncorrectable_parity>",
        "<sram_uncorrectable_parity>2</sram_uncorrectable_parity>", 1))
    result = run(capsys, nvidia_smi=fake_smi(tmp_path, edited), kernel_log=str(FIXTURES / f"{lent}.kernel-log.log"),
                 sysfs_root=recorded_sysfs(tmp_path, lent))
    assert not result["healthy"] and "2 uncorrectable ECC error(s) since the driver loaded" in result["lines"][0]


def test_a_timeout_below_one_second_is_refused(tmp_path, capsys):
    result = run(capsys, smi_timeout=0, sysfs_root=pci(tmp_path))
    assert result["failed"] and result["msg"] == "smi_timeout is 0: give the seconds to wait, 1 or more"


def test_an_error_of_the_gate_itself_is_a_fail_line_not_a_traceback(tmp_path, capsys, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("no gpus\x00\x07 after this")
    monkeypatch.setattr(gpu_health, "evaluate", broken)
    result = run(capsys, nvidia_smi=fake_smi(tmp_path, FIXTURES / "tesla-t4.aws-515.xml"),
                 kernel_log=kernel_log_file(tmp_path), sysfs_root=pci(tmp_path, ("0000:00:1e.0", "0x030200")))
    assert "failed" not in result and "exception" not in result and result["lines"] == [
        "FAIL: the gate could not judge the node (RuntimeError: no gpus): run the gate again; if it recurs, report it "
        "with the node's nvidia-smi -q -x"]
