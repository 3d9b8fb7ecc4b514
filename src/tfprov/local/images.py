"""Node images without a registry: debootstrap a minimal Debian with systemd and `docker import` it.

An image carries a label with the digest of its recipe (package list and build steps), so an image built by an
older tfprov is rebuilt rather than reused.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rich.console import Console

from ..errors import TfprovError
from .commands import apt_install, docker, is_root

SUITES = ("bookworm", "trixie")
# What every node needs before Ansible can manage it (apt module, lspci, ps for lock holders), the SSH path real
# VMs take (sshd, sudo for the login user), and what a cloud image has for its network: iproute2, and nftables
# (installed, inactive, as Debian ships it) for the cluster firewall, since a private-network node has no
# route to a package mirror of its own.
NODE_PACKAGES = ("python3", "python3-apt", "sudo", "systemd", "systemd-sysv", "ca-certificates", "pciutils",
                 "procps", "openssh-server", "openssh-sftp-server", "iproute2", "nftables")
# Bump when the steps after debootstrap (prepare_rootfs, the import's changes) change what an image holds.
BUILD_STEPS = 3
RECIPE_LABEL = "tfprov.recipe"
# sshd units: off in the image. Each node gets its own port, host key and config at `tfprov up local`; sshd
# started from the image would listen on port 22 of the host's network with the image's shared keys.
SSH_UNITS = ("ssh.service", "sshd.service", "ssh.socket")
# Debian's maintenance timers, masked in the image: they change a node on their own clock (apt-daily-upgrade fires
# between 06:00 and 07:00, dpkg-db-backup at midnight), so a test of "a second run changes nothing" failed whenever
# CI ran across that hour (2026-11-27: /var/lib/apt, /var/backups and a timer stamp changed under `fleet drift`).
# Cloud VMs keep them: the roles wait for the package locks they take (lock_timeout; preflight names the holder).
MASKED_TIMERS = ("apt-daily.timer", "apt-daily-upgrade.timer", "dpkg-db-backup.timer", "e2scrub_all.timer",
                 "fstrim.timer", "logrotate.timer", "man-db.timer")


def recipe_digest(packages: tuple[str, ...] = NODE_PACKAGES, steps: int = BUILD_STEPS) -> str:
    recipe = json.dumps({"packages": sorted(packages), "steps": steps}, sort_keys=True)
    return "sha256:" + hashlib.sha256(recipe.encode()).hexdigest()


def debian_mirror(apt_dir: Path = Path("/etc/apt")) -> str:
    """TFPROV_DEBIAN_MIRROR, else the first Debian archive this host's apt already uses."""
    if env := os.environ.get("TFPROV_DEBIAN_MIRROR"):
        return env
    files = [*sorted(apt_dir.glob("sources.list.d/*.sources")), apt_dir / "sources.list",
             *sorted(apt_dir.glob("sources.list.d/*.list"))]
    texts = [p.read_text(encoding="utf-8") for p in files if p.is_file()]
    for text in texts:
        for url in re.findall(r"(?:^URIs:\s*|^deb\s+(?:\[[^\]]*\]\s+)?)(\S+)", text, re.M):
            if url.rstrip("/").endswith("/debian"):
                return url
    raise TfprovError("no Debian mirror found in /etc/apt: set TFPROV_DEBIAN_MIRROR")


def image_name(suite: str) -> str:
    return f"tfprov/node:{suite}"


def image_recipe(suite: str) -> str | None:
    """The recipe digest an existing image was built from ('' for an image without one), None if no image."""
    proc = subprocess.run(["docker", "image", "inspect", "--format", f'{{{{ index .Config.Labels "{RECIPE_LABEL}" }}}}',
                           image_name(suite)], capture_output=True, text=True)
    if proc.returncode != 0:
        return None
    found = proc.stdout.strip()
    return "" if found == "<no value>" else found


@contextmanager
def _build_lock(suite: str) -> Iterator[None]:
    """One build per suite at a time: two `tfprov images` would share the rootfs directory."""
    with open(f"/var/tmp/tfprov-image-{suite}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def prepare_rootfs(rootfs: Path) -> None:
    """What debootstrap leaves that a node image must not carry: sshd enabled, host keys every node would share, and
    maintenance timers that would change the node in the middle of a test."""
    (rootfs / "etc/hostname").write_text("tfprov-node\n")
    for key in (rootfs / "etc/ssh").glob("ssh_host_*"):
        key.unlink()
    units = rootfs / "etc/systemd/system"
    for link in units.rglob("*"):
        if link.is_symlink() and (link.name in SSH_UNITS or link.name in MASKED_TIMERS):
            link.unlink()
    units.mkdir(parents=True, exist_ok=True)
    for timer in MASKED_TIMERS:  # masked, not only disabled: a package upgrade re-enables a disabled unit
        (units / timer).symlink_to("/dev/null")


def import_rootfs(rootfs: Path, name: str, digest: str, log: Path) -> str:
    """tar the root file system into `docker import`; the tag moves only when both succeed."""
    changes = ['CMD ["/lib/systemd/systemd"]', "ENV container=docker", f"LABEL {RECIPE_LABEL}={digest}"]
    with tempfile.TemporaryFile("w+") as errors:
        tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE, stderr=errors)
        try:
            imported = subprocess.run(["docker", "import", *(a for c in changes for a in ("--change", c)), "-"],
                                      stdin=tar.stdout, capture_output=True, text=True)
        finally:
            tar.stdout.close()  # docker gone early: tar gets SIGPIPE instead of blocking
            tar_rc = tar.wait()
        errors.seek(0)
        tar_errors = errors.read()
    with log.open("a") as out:
        out.write(tar_errors)
    if imported.returncode != 0:
        detail = (imported.stderr or imported.stdout).strip().splitlines() or [f"exit {imported.returncode}"]
        raise TfprovError(f"docker import {name} failed: {detail[-1]}")
    image_id = imported.stdout.strip()
    if tar_rc != 0:
        subprocess.run(["docker", "image", "rm", image_id], capture_output=True)  # a truncated root file system
        first = tar_errors.strip().splitlines()[:1] or ["no message"]
        raise TfprovError(f"tar of {rootfs} failed (exit {tar_rc}: {first[0]}): "
                          f"image {name} not changed; see {log}")
    docker("tag", image_id, name, what=f"docker tag {name}")
    return image_id


def debootstrap_command(suite: str, rootfs: Path, packages: tuple[str, ...]) -> list[str]:
    return ["debootstrap", "--variant=minbase", f"--include={','.join(packages)}", suite, str(rootfs),
            debian_mirror()]


def debootstrap(cmd: list[str], log: Path) -> None:
    """Run it into its log; a failure is one line with the log's last."""
    with log.open("w") as out:
        proc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        tail = log.read_text(errors="replace").strip().splitlines()[-1:]
        raise TfprovError(f"debootstrap {cmd[-3]} failed ({tail[0] if tail else 'no output'}): see {log}")


def build_image(suite: str, console: Console, rebuild: bool = False) -> str:
    """debootstrap a minimal Debian with systemd and import it; an image of the current recipe is reused."""
    if suite not in SUITES:
        raise TfprovError(f"unknown suite {suite!r}: use one of {', '.join(SUITES)}")
    name = image_name(suite)
    digest = recipe_digest()
    with _build_lock(suite):
        found = image_recipe(suite)
        if found == digest and not rebuild:
            console.print(f"image {name}: cached")
            return name
        if found is not None and found != digest:
            console.print(f"image {name}: built from another package list or build steps, rebuilding")
        _build(suite, name, digest, console)
    return name


def _build(suite: str, name: str, digest: str, console: Console) -> None:
    if not shutil.which("debootstrap"):
        if not is_root():
            raise TfprovError("debootstrap is not installed: apt-get install debootstrap")
        apt_install(console, "debootstrap")
    rootfs = Path(f"/var/tmp/tfprov-rootfs-{suite}")
    shutil.rmtree(rootfs, ignore_errors=True)  # a build cut off earlier
    log = Path(f"/var/tmp/tfprov-debootstrap-{suite}.log")
    started = time.monotonic()
    cmd = debootstrap_command(suite, rootfs, NODE_PACKAGES)
    # Measured on the 2-core test machine against a nearby mirror: 74-124 s for debootstrap and the import together.
    console.print(f"image {name}: building with debootstrap from {cmd[-1]}, then importing it (about 2 minutes "
                  f"with a nearby mirror, more on a slow link; log: {log})")
    try:
        with console.status(f"debootstrap {suite}"):
            debootstrap(cmd, log)
            prepare_rootfs(rootfs)
            import_rootfs(rootfs, name, digest, log)
    finally:
        shutil.rmtree(rootfs, ignore_errors=True)
    console.print(f"image {name}: built in {time.monotonic() - started:.0f} s")
