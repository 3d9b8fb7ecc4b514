"""The VM flavour's disk image: a Debian 12 cloud image made here, since none can be downloaded.

debootstrap (minbase) with the distribution's cloud kernel, cloud-init, sshd and sudo; the kernel and initrd are
copied out for QEMU's direct kernel boot (no boot loader to install). Cached under the download cache by a digest
of its inputs (suite, packages, build steps): a changed recipe builds a new image, an unchanged one is reused.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from ..errors import TfprovError
from .commands import apt_install, is_root, run
from .images import NODE_PACKAGES, debootstrap, debootstrap_command

# The container nodes' packages, plus what a cloud VM boots with. python3-cffi-backend: debootstrap does not
# resolve the virtual package cloud-init's dependencies need. ifupdown + isc-dhcp-client: cloud-init's renderer
# for the user-mode NIC (DHCP) and the private segment's static address.
VM_PACKAGES = (*NODE_PACKAGES, "linux-image-cloud-amd64", "cloud-init", "python3-cffi-backend", "ifupdown",
               "isc-dhcp-client", "kmod", "dbus")
VM_SUITE = "bookworm"  # Debian 12, what the cloud images are
BUILD_STEPS = 2  # bump when prepare() changes what an image holds
DISK_SIZE = "4G"  # sparse: only what is written takes space
CACHE = Path("/var/cache/tfprov/vm-images")
HOST_DEPENDENCIES = {"qemu-system-x86_64": "qemu-system-x86", "qemu-img": "qemu-utils",
                     "cloud-localds": "cloud-image-utils", "debootstrap": "debootstrap", "mkfs.ext4": "e2fsprogs"}


@dataclass(frozen=True)
class VmImage:
    directory: Path

    @property
    def disk(self) -> Path:
        return self.directory / "disk.raw"

    @property
    def kernel(self) -> Path:
        return self.directory / "vmlinuz"

    @property
    def initrd(self) -> Path:
        return self.directory / "initrd.img"


def recipe_digest(suite: str = VM_SUITE) -> str:
    recipe = json.dumps({"suite": suite, "packages": sorted(VM_PACKAGES), "steps": BUILD_STEPS}, sort_keys=True)
    return hashlib.sha256(recipe.encode()).hexdigest()[:16]


def ensure_host_tools(console: Console) -> None:
    missing = sorted({pkg for tool, pkg in HOST_DEPENDENCIES.items() if not shutil.which(tool)})
    if not missing:
        return
    if not is_root():
        raise TfprovError(f"the VM flavour needs {', '.join(missing)}: apt-get install {' '.join(missing)}")
    apt_install(console, *missing)


def prepare(rootfs: Path) -> None:
    """What a cloud image holds and what it must not: no host keys or machine-id of its own (each VM makes them at
    first boot), a root file system by device, /etc/hosts (sudo waits on name resolution without it), and
    cloud-init told to read only its NoCloud seed; initramfs-tools told to pack only the modules this machine needs
    (MODULES=dep, as a tuned cloud image may: an initramfs rebuilt in the VM, which the driver role does, took
    155 s emulated with Debian's default, most modules). QEMU boots the kernel and initrd taken from the image at
    build time, so this changes only the time of a rebuild inside the VM."""
    for key in (rootfs / "etc/ssh").glob("ssh_host_*"):
        key.unlink()
    (rootfs / "etc/machine-id").write_text("")
    (rootfs / "var/lib/dbus/machine-id").unlink(missing_ok=True)
    (rootfs / "etc/hostname").write_text("localhost\n")
    (rootfs / "etc/hosts").write_text("127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n")
    (rootfs / "etc/fstab").write_text("/dev/vda / ext4 defaults,errors=remount-ro 0 1\n")
    (rootfs / "etc/initramfs-tools/conf.d").mkdir(parents=True, exist_ok=True)
    (rootfs / "etc/initramfs-tools/conf.d/90-tfprov.conf").write_text("MODULES=dep\n")
    (rootfs / "etc/cloud/cloud.cfg.d/90-tfprov.cfg").write_text(
        "datasource_list: [NoCloud, None]\n"
        "locale: false\n"  # minbase has no locales
    )


def build(console: Console, suite: str = VM_SUITE) -> VmImage:
    """The image of the current recipe, built when missing (about 2 minutes: debootstrap, then mkfs)."""
    ensure_host_tools(console)
    image = VmImage(CACHE / f"{suite}-{recipe_digest(suite)}")
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / f"{suite}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one build at a time: two would share the root file system directory
        if (image.directory / "complete").exists():
            console.print(f"VM image {image.directory.name}: cached", highlight=False)
            return image
        _build(image, suite, console)
    return image


def _build(image: VmImage, suite: str, console: Console) -> None:
    rootfs = Path(f"/var/tmp/tfprov-vm-rootfs-{suite}")
    shutil.rmtree(rootfs, ignore_errors=True)
    shutil.rmtree(image.directory, ignore_errors=True)  # a build cut off earlier
    image.directory.mkdir(parents=True)
    log = Path(f"/var/tmp/tfprov-vm-image-{suite}.log")
    started = time.monotonic()
    cmd = debootstrap_command(suite, rootfs, VM_PACKAGES)
    console.print(f"VM image {image.directory.name}: debootstrap from {cmd[-1]} with the cloud kernel and "
                  f"cloud-init (about 2 minutes with a nearby mirror; log: {log})", highlight=False)
    try:
        with console.status(f"debootstrap {suite} (VM image)"):
            debootstrap(cmd, log)
            prepare(rootfs)
            kernels = sorted((rootfs / "boot").glob("vmlinuz-*"))
            initrds = sorted((rootfs / "boot").glob("initrd.img-*"))
            if not kernels or not initrds:
                raise TfprovError(f"the VM image has no kernel or initrd in /boot: see {log}")
            shutil.copy2(kernels[-1], image.kernel)
            shutil.copy2(initrds[-1], image.initrd)
            run(["truncate", "-s", DISK_SIZE, str(image.disk)], "truncate")
            run(["mkfs.ext4", "-q", "-F", "-L", "root", "-d", str(rootfs), str(image.disk)], "mkfs.ext4")
    except BaseException:
        shutil.rmtree(image.directory, ignore_errors=True)
        raise
    finally:
        shutil.rmtree(rootfs, ignore_errors=True)
    (image.directory / "complete").write_text(f"{time.monotonic() - started:.0f}\n")
    console.print(f"VM image {image.directory.name}: built in {time.monotonic() - started:.0f} s", highlight=False)
