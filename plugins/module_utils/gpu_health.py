# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A GPU node's health from what it reports: `nvidia-smi -q -x`, `nvidia-smi nvlink -s` and the kernel log.

Parsing and the verdict only (no commands run here): the gpu_health module gathers the texts, the unit tests feed
recorded ones. Each problem is one line saying what is wrong and NVIDIA's recommended action for it.

The XML answer is used rather than a --query-gpu list: an older driver rejects a whole query over one field it does
not know, while the XML simply leaves out what a card or driver lacks (retired pages before Ampere, row remapping
from Ampere, fabric state from Hopper), and its tag names changed over the years (clocks_throttle_reasons became
clocks_event_reasons; ECC counts moved from single/double bit to SRAM/DRAM), so both spellings are read.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
from xml.etree import ElementTree

FAIL, WARN = "fail", "warn"

# NVIDIA's XID catalog ("Analyzing Xid Errors with the Xid Catalog", docs.nvidia.com/deploy/xid-errors): what each
# error means, whether it is the application's doing (warn: the node stays admitted) or the GPU's or driver's (fail),
# and the action. Actions follow the catalog's immediate resolution (restart the application, reset the GPU, restart
# the machine); where it says to ignore an event that leaves the GPU needing a reset to apply it (63: a row marked
# for remapping) or that recurs as a hardware fault (92, 94), the gate still fails the node until it is reset.
RESET = "reset the GPU (nvidia-smi -r, no process on it) or reboot the node"
REBOOT = "reboot the node"
REPLACE = "take the node out of service and replace it (report the GPU to the provider)"
APP = "check the application (an error in its GPU code or memory use); run the GPU diagnostics if it recurs"
XID_CATALOG = {
    8: ("GPU stopped processing", WARN, "restart the application; if it recurs, " + RESET),
    13: ("graphics engine exception", WARN, APP),
    31: ("GPU memory page fault", WARN, APP),
    32: ("invalid or corrupted push buffer stream", FAIL, RESET + "; if it recurs, " + REPLACE),
    43: ("GPU stopped processing (the application's channel was reset)", WARN, APP),
    45: ("preemptive cleanup after earlier errors", WARN, "look for the error before it; " + APP),
    48: ("double-bit ECC error", FAIL, RESET + "; if it recurs, " + REPLACE),
    61: ("internal micro-controller breakpoint", FAIL, RESET),
    62: ("internal micro-controller halt", FAIL, RESET),
    63: ("ECC page retirement or row remapping recorded", FAIL, RESET + " to apply it"),
    64: ("ECC page retirement or row remapping failed", FAIL, REPLACE),
    68: ("video decoder exception", WARN, APP),
    69: ("graphics engine class error", WARN, APP),
    74: ("NVLink error", FAIL, RESET + "; if the link stays down, " + REPLACE),
    79: ("GPU has fallen off the bus", FAIL, REBOOT + "; if it recurs, " + REPLACE),
    92: ("high single-bit ECC error rate", FAIL, RESET + "; if it recurs, " + REPLACE),
    94: ("contained ECC error", FAIL, RESET + " (the affected application was stopped)"),
    95: ("uncontained ECC error", FAIL, RESET + "; if it recurs, " + REPLACE),
    109: ("context switch timeout", WARN, "restart the application; if it recurs, " + RESET),
    119: ("GSP RPC timeout", FAIL, RESET),
    120: ("GSP error", FAIL, RESET),
    121: ("C2C link error", FAIL, RESET + "; if it recurs, " + REPLACE),
    140: ("unrecovered ECC error", FAIL, RESET + "; if it recurs, " + REPLACE),
    143: ("GPU initialization error", FAIL, RESET + "; if it recurs, " + REPLACE),
    154: ("GPU recovery action changed", WARN, "do what the message asks (reset the GPU, or reboot the node)"),
}
UNKNOWN_XID = (None, WARN, "look it up in NVIDIA's XID catalog (docs.nvidia.com/deploy/xid-errors)")

XID_LINE = re.compile(r"NVRM: Xid \((?:PCI:)?([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2})[^)]*\): (\d+),\s*(.*)")
# Drivers also say it without an XID: "NVRM: GPU 0000:b3:00.0: GPU has fallen off the bus." or, over several
# lines, "NVRM: The NVIDIA GPU 0000:b3:00.0 (PCI ID: ...) installed in this system has fallen off the bus".
OFF_THE_BUS = re.compile(r"NVRM: (?:The NVIDIA )?GPU (?:at PCI:)?([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2})")
NVLINK_GPU = re.compile(r"^GPU (\d+): (.*?)(?: \(UUID: .*\))?\s*$")
NVLINK_LINK = re.compile(r"^\s*Link (\d+): (.*?)\s*$")
# Drivers from about R575 answer a field they retired with this sentence (reset_required, display_mode, ...).
_DEPRECATED = "Requested functionality has been deprecated"
_ABSENT = ("N/A", "[N/A]", "Not Supported", "[Not Supported]", "Unknown Error", "[Unknown Error]", "", _DEPRECATED,
           "[%s]" % _DEPRECATED)
# Every uncorrectable count of an ECC block, in each layout drivers wrote: SRAM and DRAM (R450 to about R550), SRAM
# split into parity and SEC-DED errors (about R550 and later), and Kepler to Volta's double-bit block (below).
UNCORRECTABLE_TAGS = ("sram_uncorrectable", "sram_uncorrectable_parity", "sram_uncorrectable_secded",
                      "dram_uncorrectable")
# The driver's own verdict from R570 (gpu_recovery_action; NVML's nvmlDeviceGetGpuRecoveryAction). nvidia-smi spells
# the actions "Reset", "Reboot", "Drain P2P" and "Drain and Reset" (some tools "GPU Reset", "Node Reboot"): matched by
# their words, most specific first.
RECOVERY_ACTIONS = (
    (("drain", "reset"), "drain the node (let its jobs end, start none), then reset the GPU (nvidia-smi -r) or "
                         "reboot the node"),
    (("drain", "p2p"), "drain the node's peer-to-peer work (let its jobs end, start none), then reset the GPU "
                       "(nvidia-smi -r) or reboot the node"),
    (("reboot",), "reboot the node (a GPU reset is not enough); if it recurs, take the node out of service and "
                  "replace it (report the GPU to the provider)"),
    (("reset",), "reset the GPU (nvidia-smi -r, no process on it) or reboot the node"),
)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ufffd]")


class HealthInputError(Exception):
    """An answer that cannot be read (not nvidia-smi's XML)."""


def _text(node, path):
    found = node.find(path) if node is not None else None
    value = found.text.strip() if found is not None and found.text else ""
    return None if value in _ABSENT else value


def _int(node, path):
    value = _text(node, path)
    match = re.match(r"\d+", value or "")
    return int(match.group(0)) if match else None


def _first(node, *paths):
    for path in paths:
        value = _text(node, path)
        if value is not None:
            return value
    return None


def _uncorrectable(counts):
    """Uncorrectable ECC errors in a <volatile> or <aggregate> block, every field of whichever layout the driver
    writes added up; None when the block has no count (no ECC, or a vGPU)."""
    if counts is None:
        return None
    values = [_int(counts, tag) for tag in UNCORRECTABLE_TAGS]
    double = counts.find("double_bit")  # Kepler to Volta: a total, or where it is missing, one count per unit
    if double is not None:
        total = _int(double, "total")
        values += [total] if total is not None else [_int(double, child.tag) for child in double]
    values = [v for v in values if v is not None]
    return sum(values) if values else None


def _clock_reasons(gpu):
    """Active clock event reasons, by short name (hw_slowdown, sw_thermal_slowdown, ...)."""
    for block, prefix in (("clocks_event_reasons", "clocks_event_reason_"),
                          ("clocks_throttle_reasons", "clocks_throttle_reason_")):
        reasons = gpu.find(block)
        if reasons is not None:
            return sorted(child.tag[len(prefix):] for child in reasons
                          if child.tag.startswith(prefix) and (child.text or "").strip() == "Active")
    return []


def _yes(value):
    return None if value is None else value.lower() == "yes"


def printable(text, limit=120):
    """The first printable part of an answer, for a one-line message: whitespace runs made one space, then the
    first run between control bytes (or undecodable ones), cut at `limit` characters; '' when nothing is printable."""
    pieces = [piece.strip() for piece in _CONTROL.split(" ".join((text or "").split()))]
    text = next((piece for piece in pieces if piece), "")
    return text if len(text) <= limit else text[:limit - 3].rstrip() + "..."


def _xml_text(text):
    """The XML document of an answer: what precedes its declaration or root (a warning line) left out."""
    text = (text or "").strip()
    start = min([i for i in (text.find("<?xml"), text.find("<nvidia_smi_log")) if i >= 0] or [0])
    return text[start:]


def parse_smi_xml(text):
    """{driver_version, cuda_version, gpus: [...]} from `nvidia-smi -q -x`."""
    try:
        root = ElementTree.fromstring(_xml_text(text))
    except (ElementTree.ParseError, ValueError) as exc:
        said = printable(text)
        raise HealthInputError("nvidia-smi -q -x answered something that is not its XML (%s): %s"
                               % (printable(str(exc), 60), '"%s"' % said if said else "nothing printable")) from None
    if root.tag != "nvidia_smi_log":
        raise HealthInputError("nvidia-smi -q -x answered <%s>, not <nvidia_smi_log>" % printable(root.tag, 40))
    gpus = []
    for position, gpu in enumerate(root.findall("gpu")):
        link = gpu.find("pci/pci_gpu_link_info")
        retired = gpu.find("retired_pages")
        remapped = gpu.find("remapped_rows")
        gpus.append({
            "index": position,  # nvidia-smi lists GPUs in its own index order (nvlink -s and CUDA use it too)
            "name": _text(gpu, "product_name"),
            "uuid": _text(gpu, "uuid"),
            "bus_id": _text(gpu, "pci/pci_bus_id") or gpu.get("id"),
            "persistence_mode": _text(gpu, "persistence_mode"),
            "performance_state": _text(gpu, "performance_state"),
            "utilization_gpu": _int(gpu, "utilization/gpu_util"),
            "ecc_mode": _text(gpu, "ecc_mode/current_ecc"),
            "ecc_uncorrectable_volatile": _uncorrectable(gpu.find("ecc_errors/volatile")),
            "ecc_uncorrectable_aggregate": _uncorrectable(gpu.find("ecc_errors/aggregate")),
            "retired_pages_pending": _yes(_first(retired, "pending_retirement", "pending_blacklist")),
            "retired_pages": sum(_int(retired, tag + "/retired_count") or 0
                                 for tag in ("multiple_single_bit_retirement", "double_bit_retirement"))
            if retired is not None and _text(retired, "double_bit_retirement/retired_count") is not None else None,
            "remapped_rows_pending": _yes(_text(remapped, "remapped_row_pending")),
            "remapped_rows_failure": _yes(_text(remapped, "remapped_row_failure")),
            "clock_event_reasons": _clock_reasons(gpu),
            "pcie_gen_current": _int(link, "pcie_gen/current_link_gen"),
            "pcie_gen_max": _int(link, "pcie_gen/max_link_gen"),
            "pcie_gen_host_max": _int(link, "pcie_gen/max_host_link_gen"),  # drivers from about R520
            "pcie_width_current": _int(link, "link_widths/current_link_width"),
            "pcie_width_max": _int(link, "link_widths/max_link_width"),
            "ecc_sram_threshold_exceeded": _yes(_text(gpu, "ecc_errors/aggregate/sram_threshold_exceeded")),
            "ecc_unrepairable_memory": _yes(_text(gpu, "ecc_errors/unrepairable_memory")),  # about R580
            "ecc_repair_pending": sorted(tag[:-len("_repair_pending")]
                                         for tag in ("channel_repair_pending", "tpc_repair_pending")
                                         if _yes(_text(gpu, "ecc_errors/" + tag))),
            "reset_required": _yes(_text(gpu, "gpu_reset_status/reset_required")),  # R525 to R570
            "drain_and_reset_recommended": _yes(_text(gpu, "gpu_reset_status/drain_and_reset_recommended")),
            "recovery_action": _text(gpu, "gpu_recovery_action"),  # R570 and later
            "fabric_state": _text(gpu, "fabric/state"),
            "fabric_status": _text(gpu, "fabric/status"),
        })
    return {"driver_version": _text(root, "driver_version"), "cuda_version": _text(root, "cuda_version"),
            "attached_gpus": _int(root, "attached_gpus"), "gpus": gpus}


def parse_nvlink_status(text):
    """{gpu index: {link number: "up" | "inactive"}} from `nvidia-smi nvlink -s`."""
    links, current = {}, None
    for line in text.splitlines():
        gpu = NVLINK_GPU.match(line)
        if gpu:
            current = links.setdefault(int(gpu.group(1)), {})
            continue
        link = NVLINK_LINK.match(line)
        if link and current is not None:
            current[int(link.group(1))] = "inactive" if "inactive" in link.group(2).lower() else "up"
    return links


def parse_xids(text):
    """Every XID of a kernel log, {xid, bus, detail, line}; a GPU fallen off the bus without one counts as XID 79."""
    events, lines = [], text.splitlines()
    for number, line in enumerate(lines):
        match = XID_LINE.search(line)
        if match:
            detail = re.sub(r"^pid=[^,]*, name=[^,]*,\s*", "", match.group(3).strip())
            events.append({"xid": int(match.group(2)), "bus": _short_bus(match.group(1)), "detail": detail,
                           "line": line.strip()})
            continue
        gpu = OFF_THE_BUS.search(line)
        said = " ".join(lines[number:number + 4])
        if gpu and "fallen off the bus" in said:
            bus = _short_bus(gpu.group(1))
            if not any(e["xid"] == 79 and e["bus"] == bus for e in events):
                events.append({"xid": 79, "bus": bus, "detail": "GPU has fallen off the bus.", "line": line.strip()})
    return events


def _short_bus(bus_id):
    """bus:device of a PCI address, lower case: 0000:3b:00 (kernel log) and 00000000:3B:00.0 (nvidia-smi) agree."""
    parts = (bus_id or "").lower().split(":")
    return ":".join(parts[-2:]).split(".", 1)[0] if len(parts) >= 2 else (bus_id or "").lower()


def _version_tuple(version):
    return tuple(int(p) for p in re.findall(r"\d+", version or ""))


def _problem(problems, severity, gpu, check, message, action):
    where = "GPU %s (%s): " % (gpu["index"], gpu["bus_id"]) if gpu else ""
    problems.append({"severity": severity, "check": check, "gpu": gpu["index"] if gpu else None,
                     "message": where + message, "action": action})


def _check_gpu(problems, gpu, nvlink, expect_nvlink, widest):
    if gpu["ecc_uncorrectable_volatile"]:
        _problem(problems, FAIL, gpu, "ecc", "%d uncorrectable ECC error(s) since the driver loaded"
                 % gpu["ecc_uncorrectable_volatile"], RESET + "; if they return, " + REPLACE)
    elif gpu["ecc_uncorrectable_aggregate"]:
        _problem(problems, WARN, gpu, "ecc", "%d uncorrectable ECC error(s) in its lifetime, none since the driver "
                 "loaded" % gpu["ecc_uncorrectable_aggregate"], "watch it: if they recur, " + REPLACE)
    if gpu.get("ecc_sram_threshold_exceeded"):
        _problem(problems, FAIL, gpu, "ecc", "uncorrectable SRAM errors passed the driver's threshold "
                 "(sram_threshold_exceeded: Yes)", REPLACE)
    if gpu.get("ecc_unrepairable_memory"):
        _problem(problems, FAIL, gpu, "ecc", "memory the driver cannot repair (unrepairable_memory: Yes)", REPLACE)
    for unit in gpu.get("ecc_repair_pending") or []:
        _problem(problems, FAIL, gpu, "ecc", "a %s repair is pending (%s_repair_pending: Yes)" % (unit.upper(), unit)
                 if unit == "tpc" else "a memory channel repair is pending (channel_repair_pending: Yes)",
                 RESET + " to apply it")
    _check_recovery(problems, gpu)
    if gpu["retired_pages_pending"]:
        _problem(problems, FAIL, gpu, "retired_pages", "memory pages are waiting to be retired", RESET)
    if gpu["remapped_rows_failure"]:
        _problem(problems, FAIL, gpu, "remapped_rows", "row remapping failed (no spare rows left)", REPLACE)
    elif gpu["remapped_rows_pending"]:
        _problem(problems, FAIL, gpu, "remapped_rows", "a row remapping is pending", RESET + " to apply it")
    hardware = [r for r in gpu["clock_event_reasons"] if r.startswith("hw_")]
    if hardware:
        _problem(problems, FAIL, gpu, "clocks", "clocks held down by %s" % ", ".join(hardware),
                 "check the node's cooling and power supply; if it persists, " + REPLACE)
    if "sw_thermal_slowdown" in gpu["clock_event_reasons"]:
        _problem(problems, WARN, gpu, "clocks", "clocks held down by the driver for temperature (sw_thermal_slowdown)",
                 "check the node's cooling and airflow")
    if gpu["persistence_mode"] == "Disabled":
        _problem(problems, WARN, gpu, "persistence", "persistence mode is off (each job pays the driver's start-up)",
                 "enable nvidia-persistenced (nvidia_driver_persistence: true)")
    _check_pcie(problems, gpu, widest)
    _check_nvlink(problems, gpu, nvlink.get(gpu["index"], {}), expect_nvlink)
    if gpu["fabric_state"] and (gpu["fabric_state"] != "Completed" or gpu["fabric_status"] not in (None, "Success")):
        _problem(problems, FAIL, gpu, "fabric", "NVLink fabric not ready (state %s, status %s)"
                 % (gpu["fabric_state"], gpu["fabric_status"]),
                 "start nvidia-fabricmanager and wait for it; if the state stays, " + REBOOT)


def _check_recovery(problems, gpu):
    """The driver's own verdict: a recovery action other than None (R570+), else reset_required or
    drain_and_reset_recommended (R525 to R570). One line, with the driver's action in it."""
    action = gpu.get("recovery_action")
    if action and action.lower() != "none":
        words = action.lower()
        todo = next((todo for keys, todo in RECOVERY_ACTIONS if all(k in words for k in keys)),
                    "do what the driver asks (%s)" % printable(action, 40))
        _problem(problems, FAIL, gpu, "recovery", "the driver asks for \"%s\" (gpu_recovery_action)"
                 % printable(action, 40), todo)
    elif gpu.get("drain_and_reset_recommended"):
        _problem(problems, FAIL, gpu, "recovery", "the driver recommends draining and resetting the GPU "
                 "(drain_and_reset_recommended: Yes)", RECOVERY_ACTIONS[0][1])
    elif gpu.get("reset_required"):
        _problem(problems, FAIL, gpu, "recovery", "the driver says the GPU needs a reset (reset_required: Yes)",
                 RESET)


def _loaded(gpu):
    """Under load: a performance state of P0-P2, or half its time busy (P8 with 2 % is a desktop idling)."""
    return gpu["performance_state"] in ("P0", "P1", "P2") or (gpu["utilization_gpu"] or 0) >= 50


def _check_pcie(problems, gpu, widest=None):
    """A link is judged under load only: idle links train down in generation, and on some boards in width.

    Width: narrower than identical GPUs of the same node (a platform-independent sign of a bad slot or riser) fails;
    narrower than the card's maximum alone only warns, since clouds wire some cards at x8 (g4dn's T4s). Generation:
    below what the host's port offers fails; below the card's maximum, where the driver does not say the host's,
    warns."""
    if not _loaded(gpu):
        return
    width, max_width = gpu["pcie_width_current"], gpu["pcie_width_max"]
    if width and widest and width < widest:
        _problem(problems, FAIL, gpu, "pcie", "PCIe link at x%d under load where its sibling GPUs run x%d"
                 % (width, widest), "reseat or replace the GPU or its riser; on a cloud VM, " + REPLACE)
    elif width and max_width and width < max_width:
        _problem(problems, WARN, gpu, "pcie", "PCIe link at x%d of the card's x%d under load" % (width, max_width),
                 "if this platform wires the card at x%d, nothing; else reseat the GPU or its riser" % max_width)
    gen, max_gen, host_gen = gpu["pcie_gen_current"], gpu["pcie_gen_max"], gpu["pcie_gen_host_max"]
    if gen and host_gen and gen < min(host_gen, max_gen or host_gen):
        _problem(problems, FAIL, gpu, "pcie", "PCIe link at generation %d under load where the card and the host "
                 "both offer %d" % (gen, min(host_gen, max_gen or host_gen)),
                 "check the slot's BIOS settings and riser; on a cloud VM, " + REPLACE)
    elif gen and max_gen and not host_gen and gen < max_gen:
        _problem(problems, WARN, gpu, "pcie", "PCIe link at generation %d of the card's %d under load"
                 % (gen, max_gen), "if the host's slot offers %d, check its BIOS settings and riser" % max_gen)


def not_judged_idle(gpus):
    """The indexes of GPUs whose PCIe link was not judged because they were idle."""
    return [g["index"] for g in gpus if g["pcie_gen_current"] and not _loaded(g)]


def _check_nvlink(problems, gpu, links, expect_nvlink):
    down = sorted(n for n, state in links.items() if state == "inactive")
    # A card with no NVLink bridge lists every link inactive: only a partly-down set, or an SXM board (the inventory
    # says so, or the matrix knows the part and the node has two or more of it), says a fault.
    if down and (expect_nvlink or len(down) < len(links)):
        _problem(problems, FAIL, gpu, "nvlink", "NVLink link(s) %s down (%d of %d up)"
                 % (", ".join(str(n) for n in down), len(links) - len(down), len(links)),
                 RESET + "; if a link stays down, " + REPLACE)


def _check_xids(problems, xids, gpus):
    by_bus = {_short_bus(g["bus_id"]): g for g in gpus}
    seen = {}
    for event in xids:
        seen.setdefault((event["xid"], event["bus"]), []).append(event)
    for (xid, bus), events in sorted(seen.items()):
        name, severity, action = XID_CATALOG.get(xid, UNKNOWN_XID)
        gpu = by_bus.get(bus)
        what = "XID %d (%s)" % (xid, name or "not in tfprov's catalog")
        where = "" if gpu else "GPU at %s: " % bus
        times = " %d times" % len(events) if len(events) > 1 else ""
        _problem(problems, severity, gpu, "xid", "%s%s%s in the kernel log since boot (\"%s\")"
                 % (where, what, times, printable(events[-1]["detail"], 100).rstrip(".")), action)


def _gpus(count):
    return "%d GPU%s" % (count, "" if count == 1 else "s")


def evaluate(smi, nvlink=None, xids=None, expected_gpu_count=None, pci_gpu_count=None, min_driver=None,
             cuda=None, expect_nvlink=False, nvswitch=False, fabric_manager_active=None, expected_from=None,
             nvlink_names=None):
    """The problems of a node: a list of {severity, check, gpu, message, action}, failures first.

    expected_gpu_count is what the node should have, from expected_from ("its instance type", the default, or "its
    last converge"); those on the PCI bus count too, the larger number expected. nvlink_names: the GPU names of SXM
    parts (the matrix's), whose every link must be up where the node has two or more of one."""
    problems = []
    gpus = smi["gpus"]
    expected = max(expected_gpu_count or 0, pci_gpu_count or 0)
    if len(gpus) < expected:
        declared = (expected_gpu_count or 0) >= (pci_gpu_count or 0)
        source = (expected_from or "its instance type") if declared else "the PCI bus"
        said = "%s %s %d" % (source, "had" if "converge" in source else "has", expected)
        message = ("%d of %d GPUs visible to the driver (%s)" % (len(gpus), expected, said) if gpus
                   else "expected %s, found none (%s)" % (_gpus(expected), said))
        _problem(problems, FAIL, None, "count", message,
                 "look for XID 79 or a GPU off the bus in the kernel log; " + REBOOT + "; if one stays missing, "
                 + REPLACE)
    if min_driver and smi["driver_version"] and \
            _version_tuple(smi["driver_version"]) < _version_tuple(min_driver):
        _problem(problems, FAIL, None, "driver", "driver %s is older than %s, the least CUDA %s needs"
                 % (smi["driver_version"], min_driver, cuda or "the stack's"), "run tfprov run node to update it")
    if cuda and smi["cuda_version"] and _version_tuple(smi["cuda_version"]) < _version_tuple(cuda):
        _problem(problems, FAIL, None, "driver", "the driver supports CUDA up to %s; the stack needs %s"
                 % (smi["cuda_version"], cuda), "run tfprov run node to update the driver")
    if nvswitch and fabric_manager_active is False:
        _problem(problems, FAIL, None, "fabric", "NVSwitches present but nvidia-fabricmanager is not running "
                 "(CUDA cannot start on this node)", "start nvidia-fabricmanager (systemctl start "
                 "nvidia-fabricmanager); its version must match the driver's")
    for gpu in gpus:
        siblings = [g["pcie_width_current"] for g in gpus if g["name"] == gpu["name"] and g is not gpu
                    and _loaded(g) and g["pcie_width_current"]]
        board = gpu["name"] in (nvlink_names or ()) and sum(g["name"] == gpu["name"] for g in gpus) >= 2
        _check_gpu(problems, gpu, nvlink or {}, expect_nvlink or board, max(siblings) if siblings else None)
    _check_xids(problems, xids or [], gpus)
    return sorted(problems, key=lambda p: p["severity"] != FAIL)


def verdict_lines(problems):
    """One line per problem: 'FAIL: <what>: <action>'."""
    return ["%s: %s: %s" % (p["severity"].upper(), p["message"], p["action"]) for p in problems]
