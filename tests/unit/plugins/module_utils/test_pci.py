from ansible_collections.tfprov.gpu.plugins.module_utils.pci import nvidia_gpus


def _device(root, bus_id, vendor, device, pci_class, driver=None):
    path = root / "bus" / "pci" / "devices" / bus_id
    path.mkdir(parents=True)
    (path / "vendor").write_text(vendor + "\n")
    (path / "device").write_text(device + "\n")
    (path / "class").write_text(pci_class + "\n")
    if driver:
        target = root / "bus" / "pci" / "drivers" / driver
        target.mkdir(parents=True, exist_ok=True)
        (path / "driver").symlink_to(target)


def test_finds_3d_and_vga_controllers_but_not_audio_or_other_vendors(tmp_path):
    _device(tmp_path, "0000:00:04.0", "0x10de", "0x1eb8", "0x030200")  # Tesla T4, no driver yet
    _device(tmp_path, "0000:01:00.0", "0x10de", "0x2684", "0x030000", driver="nvidia")  # RTX 4090
    _device(tmp_path, "0000:01:00.1", "0x10de", "0x22ba", "0x040300")  # its HDMI audio
    _device(tmp_path, "0000:00:02.0", "0x8086", "0x3e92", "0x030000")  # Intel iGPU
    gpus = nvidia_gpus(str(tmp_path))
    assert [g["pci_bus_id"] for g in gpus] == ["0000:00:04.0", "0000:01:00.0"]
    assert gpus[0]["device_id"] == "0x1eb8" and gpus[0]["driver"] is None
    assert gpus[1]["driver"] == "nvidia"


def test_no_pci_bus_means_no_gpus(tmp_path):
    assert nvidia_gpus(str(tmp_path)) == []


def test_unreadable_files_are_skipped(tmp_path):
    path = tmp_path / "bus" / "pci" / "devices" / "0000:00:05.0"
    path.mkdir(parents=True)
    (path / "vendor").write_text("0x10de\n")  # no class file
    assert nvidia_gpus(str(tmp_path)) == []
