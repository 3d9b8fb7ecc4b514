import json

import pytest
from ansible.module_utils.testing import patch_module_args
from ansible_collections.tfprov.gpu.plugins.modules import preflight_facts


def _run(capsys, **args):
    with patch_module_args(args), pytest.raises(SystemExit) as exit_info:
        preflight_facts.main()
    assert exit_info.value.code == 0
    return json.loads(capsys.readouterr().out)


def test_reports_gpus_disk_and_secure_boot_without_changing_anything(tmp_path, capsys):
    gpu = tmp_path / "bus" / "pci" / "devices" / "0000:00:1e.0"
    gpu.mkdir(parents=True)
    for name, value in (("vendor", "0x10de"), ("device", "0x2330"), ("class", "0x030200")):
        (gpu / name).write_text(value + "\n")
    not_yet = str(tmp_path / "not" / "yet" / "there")
    result = _run(capsys, sysfs_root=str(tmp_path), disk_path=not_yet, _ansible_check_mode=True)
    assert result["changed"] is False
    assert [g["device_id"] for g in result["pci_gpus"]] == ["0x2330"]
    assert result["secure_boot"] == "unknown"
    assert result["disk"]["path"].endswith("not/yet/there")
    assert 0 < result["disk"]["free_gb"] <= result["disk"]["total_gb"]
    assert isinstance(result["package_locks"], list)


def test_disk_space_reads_the_nearest_existing_parent(tmp_path):
    space = preflight_facts.disk_space(str(tmp_path / "a" / "b"))
    assert space == {**space, "path": str(tmp_path / "a" / "b")}
    assert space["total_gb"] > 0


def test_memory_is_read_from_meminfo_as_ansible_reports_it(tmp_path):
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:        3932160 kB\nMemFree:          100 kB\n")
    assert preflight_facts.memory_mb(str(meminfo)) == 3840
    assert preflight_facts.memory_mb(str(tmp_path / "missing")) is None


def test_sets_the_nvidia_gpu_fact_as_nvidia_gpu_facts_does(tmp_path, capsys, monkeypatch):
    """The resolve play reads the node once: preflight's fact is the one nvidia_gpu_facts would set (here, no
    nvidia-smi on the node, a GPU on the bus; the recorded cards' answers are nvidia_gpu_facts' own tests)."""
    from ansible_collections.tfprov.gpu.plugins.modules import nvidia_gpu_facts

    gpu = tmp_path / "bus" / "pci" / "devices" / "0000:00:04.0"
    gpu.mkdir(parents=True)
    for name, value in (("vendor", "0x10de"), ("device", "0x1eb8"), ("class", "0x030200")):
        (gpu / name).write_text(value + "\n")
    monkeypatch.setenv("PATH", str(tmp_path))  # as nvidia_gpu_facts' own test of a node without nvidia-smi
    fact = _run(capsys, sysfs_root=str(tmp_path))["ansible_facts"]["nvidia_gpu"]
    assert fact["source"] == "pci" and fact["count"] == 1 and fact["driver_state"] == "not_installed"
    with patch_module_args({"sysfs_root": str(tmp_path)}), pytest.raises(SystemExit):
        nvidia_gpu_facts.main()
    assert json.loads(capsys.readouterr().out)["ansible_facts"]["nvidia_gpu"] == fact


def test_an_nvidia_smi_that_is_not_executable_is_refused(tmp_path, capsys):
    smi = tmp_path / "nvidia-smi"
    smi.write_text("not a program")
    with patch_module_args({"sysfs_root": str(tmp_path), "nvidia_smi": str(smi)}), pytest.raises(SystemExit):
        preflight_facts.main()
    result = json.loads(capsys.readouterr().out)
    assert result["failed"] and "is not an executable file" in result["msg"]
