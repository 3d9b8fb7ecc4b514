"""gpu_health (the module) on a node faked from recordings: nvidia-smi replaying tests/fixtures/gpu-health, a sysfs
tree with the node's PCI devices, a saved kernel log."""

import json
import stat
from pathlib import Path

import pytest
from ansible.module_utils.testing import patch_module_args
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
        device.mkdir(parents=True)
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
