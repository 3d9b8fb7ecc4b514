# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Who holds the package manager's locks (unattended-upgrades on a fresh cloud VM, typically)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

# fcntl-locked files: dpkg/apt and rpm. Their holders show in /proc/locks by inode.
FCNTL_LOCKS = (
    "/var/lib/dpkg/lock-frontend",
    "/var/lib/dpkg/lock",
    "/var/lib/apt/lists/lock",
    "/var/cache/apt/archives/lock",
    "/var/lib/rpm/.rpm.lock",
)
# dnf and yum write their pid to a file while they run.
PID_LOCKS = ("/run/dnf.pid", "/var/run/yum.pid", "/var/cache/dnf/metadata_lock.pid", "/var/lib/dnf/rpmdb_lock.pid")


def parse_proc_locks(text):
    """{(major:minor, inode): pid} from the text of /proc/locks."""
    held = {}
    for line in text.splitlines():
        fields = line.split()
        # "1: POSIX  ADVISORY  WRITE 1234 08:01:131090 0 EOF" ("->" marks a waiter: skip it)
        if len(fields) < 8 or fields[1] == "->":
            continue
        try:
            pid = int(fields[4])
            major, minor, inode = fields[5].split(":")
            held[(int(major, 16), int(minor, 16), int(inode))] = pid
        except ValueError:
            continue
    return held


def _command(pid, proc_root):
    try:
        with open(os.path.join(proc_root, str(pid), "cmdline"), "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
    except (IOError, OSError):
        return None


def lock_holders(proc_root="/proc", fcntl_paths=FCNTL_LOCKS, pid_paths=PID_LOCKS):
    """A list of {path, pid, command} for every package lock some live process holds."""
    try:
        with open(os.path.join(proc_root, "locks")) as handle:
            held = parse_proc_locks(handle.read())
    except (IOError, OSError):
        held = {}
    holders = []
    for path in fcntl_paths:
        try:
            st = os.stat(path)
        except OSError:
            continue
        pid = held.get((os.major(st.st_dev), os.minor(st.st_dev), st.st_ino))
        if pid is not None:
            holders.append({"path": path, "pid": pid, "command": _command(pid, proc_root)})
    for path in pid_paths:
        try:
            with open(path) as handle:
                pid = int(handle.read().strip())
        except (IOError, OSError, ValueError):
            continue
        command = _command(pid, proc_root)
        if command is not None:  # a stale pid file of a process that has gone is no lock
            holders.append({"path": path, "pid": pid, "command": command})
    return holders
