# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""NVIDIA GPUs on the PCI bus, read from sysfs: works before any driver is installed."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

NVIDIA_VENDOR = "0x10de"
# PCI classes of GPUs: VGA controller (0x0300xx) and 3D controller (0x0302xx, datacenter cards).
GPU_CLASSES = ("0x0300", "0x0302")
# NVSwitch (HGX A100 and later boards): a bridge of class 0x0680 ("other bridge").
NVSWITCH_CLASSES = ("0x0680",)


def _read(path):
    try:
        with open(path) as handle:
            return handle.read().strip()
    except (IOError, OSError):
        return None


def nvidia_gpus(sysfs_root="/sys"):
    """A list of {pci_bus_id, vendor_id, device_id, class, driver} for each NVIDIA GPU function.

    The NVIDIA audio and USB functions of the same card have other classes and are left out.
    """
    return nvidia_devices(sysfs_root, GPU_CLASSES)


def nvidia_devices(sysfs_root, classes):
    """The NVIDIA PCI functions whose class starts with one of `classes`, as nvidia_gpus describes them."""
    devices_dir = os.path.join(sysfs_root, "bus", "pci", "devices")
    try:
        entries = sorted(os.listdir(devices_dir))
    except (IOError, OSError):
        return []
    gpus = []
    for entry in entries:
        base = os.path.join(devices_dir, entry)
        vendor = _read(os.path.join(base, "vendor"))
        pci_class = _read(os.path.join(base, "class")) or ""
        if vendor != NVIDIA_VENDOR or not pci_class.startswith(classes):
            continue
        driver_link = os.path.join(base, "driver")
        driver = os.path.basename(os.readlink(driver_link)) if os.path.islink(driver_link) else None
        gpus.append({
            "pci_bus_id": entry,
            "vendor_id": vendor,
            "device_id": _read(os.path.join(base, "device")),
            "class": pci_class,
            "driver": driver,
        })
    return gpus
