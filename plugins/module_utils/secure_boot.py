# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""UEFI Secure Boot state: it decides whether a DKMS-built NVIDIA module must be signed to load."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import os

_SECURE_BOOT_VAR = "firmware/efi/efivars/SecureBoot-*"


def secure_boot_state(sysfs_root="/sys"):
    """'enabled', 'disabled', 'not_uefi' (legacy BIOS boot) or 'unknown' (not readable here)."""
    firmware = os.path.join(sysfs_root, "firmware")
    if not os.path.isdir(os.path.join(firmware, "efi")):
        # Containers mask /sys/firmware with an empty directory: that tells nothing.
        return "not_uefi" if os.path.isdir(firmware) and os.listdir(firmware) else "unknown"
    for path in glob.glob(os.path.join(sysfs_root, _SECURE_BOOT_VAR)):
        try:
            with open(path, "rb") as handle:
                data = handle.read()
        except (IOError, OSError):
            return "unknown"
        # 4 bytes of attributes, then the one-byte value.
        if len(data) >= 5:
            return "enabled" if data[4] == 1 else "disabled"
    return "unknown"
