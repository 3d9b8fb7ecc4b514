# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse nvidia-smi output: the per-GPU CSV query and the driver/CUDA versions of its default table."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import csv
import re

QUERY_FIELDS = ("index", "name", "uuid", "memory.total", "compute_cap", "pci.bus_id", "driver_version")
# Drivers before 510 do not know compute_cap: query without it, and take it from the matrix by name.
LEGACY_QUERY_FIELDS = tuple(f for f in QUERY_FIELDS if f != "compute_cap")
_NOT_AVAILABLE = ("[N/A]", "N/A", "[Not Supported]", "[Unknown Error]", "")


class NvidiaSmiError(Exception):
    """nvidia-smi ran but could not report GPUs; the message says why."""


def classify_failure(text):
    """A short reason for an nvidia-smi failure, or None when the text is not a known failure."""
    lowered = text.lower()
    if "couldn't communicate with the nvidia driver" in lowered:
        return "driver_not_loaded"
    if "no devices were found" in lowered:
        return "no_devices"
    if "is not a valid field to query" in lowered:
        return "unknown_field"
    if "driver/library version mismatch" in lowered:
        return "version_mismatch"
    return None


def _value(raw):
    raw = raw.strip()
    return None if raw in _NOT_AVAILABLE else raw


def parse_query(text, fields=QUERY_FIELDS):
    """One dict per GPU from `--query-gpu=<fields> --format=csv,noheader,nounits` output."""
    failure = classify_failure(text)
    if failure:
        raise NvidiaSmiError(failure)
    gpus = []
    for row in csv.reader(text.strip().splitlines(), skipinitialspace=True):
        if not row:
            continue
        if len(row) != len(fields):
            raise NvidiaSmiError("unexpected nvidia-smi output: %r" % ", ".join(row))
        values = dict(zip(fields, (_value(v) for v in row)))
        memory = values.get("memory.total")
        try:
            index = int(values["index"])
            memory_mib = int(float(memory)) if memory else None
        except (TypeError, ValueError):
            raise NvidiaSmiError("unexpected nvidia-smi output: %r" % ", ".join(row)) from None
        gpus.append({
            "index": index,
            "name": values["name"],
            "uuid": values["uuid"],
            "memory_mib": memory_mib,
            "compute_capability": values.get("compute_cap"),
            "pci_bus_id": values["pci.bus_id"],
            "driver_version": values["driver_version"],
        })
    return gpus


def parse_versions(table_text):
    """(driver_version, cuda_version) from the header of plain `nvidia-smi`, None where absent."""
    driver = re.search(r"(?:Driver|KMD) Version:\s*([0-9.]+)", table_text)
    cuda = re.search(r"CUDA (?:UMD )?Version:\s*([0-9.]+)", table_text)
    return (driver.group(1) if driver else None, cuda.group(1) if cuda else None)
