import pytest
from ansible_collections.tfprov.gpu.plugins.module_utils.secure_boot import secure_boot_state

GUID = "8be4df61-93ca-11d2-aa0d-00e098032b8c"


@pytest.mark.parametrize(("value", "state"), [(1, "enabled"), (0, "disabled")])
def test_reads_the_efi_variable(tmp_path, value, state):
    efivars = tmp_path / "firmware" / "efi" / "efivars"
    efivars.mkdir(parents=True)
    (efivars / f"SecureBoot-{GUID}").write_bytes(b"\x06\x00\x00\x00" + bytes([value]))
    assert secure_boot_state(str(tmp_path)) == state


def test_legacy_bios_boot_is_not_uefi(tmp_path):
    (tmp_path / "firmware" / "acpi").mkdir(parents=True)
    assert secure_boot_state(str(tmp_path)) == "not_uefi"


def test_masked_firmware_in_a_container_is_unknown(tmp_path):
    (tmp_path / "firmware").mkdir()
    assert secure_boot_state(str(tmp_path)) == "unknown"


def test_uefi_without_the_variable_is_unknown(tmp_path):
    (tmp_path / "firmware" / "efi" / "efivars").mkdir(parents=True)
    assert secure_boot_state(str(tmp_path)) == "unknown"
