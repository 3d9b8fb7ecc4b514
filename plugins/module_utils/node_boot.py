# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which boot of a node this is: the kernel's boot id and the start time of process 1. The boot id changes when a
VM reboots; a container shares its host's kernel, so there it is the start of its process 1 that changes when the
container restarts (a local node's reboot). Read by the modules node_boot and converge_record."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

BOOT_ID = "/proc/sys/kernel/random/boot_id"
INIT_STAT = "/proc/1/stat"


def _read(path):
    with open(path) as handle:
        return handle.read()


def init_start_ticks(stat):
    """Field 22 of /proc/1/stat; the command name (field 2) may hold spaces and parentheses, so count from its end."""
    return stat.rsplit(")", 1)[1].split()[19]


def boot_id(read=_read):
    return "%s:%s" % (read(BOOT_ID).strip(), init_start_ticks(read(INIT_STAT)))
