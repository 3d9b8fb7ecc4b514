#!/usr/bin/python
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: gpu_health
short_description: Whether a GPU node is fit to admit, from nvidia-smi and the kernel log, one line per problem
version_added: 1.1.0
description:
  - Reads C(nvidia-smi -q -x), C(nvidia-smi nvlink -s), the kernel log since boot and, where the node has
    NVSwitches, whether C(nvidia-fabricmanager) runs; then judges the node. Each command has a time limit
    (I(smi_timeout), I(command_timeout)); one that does not answer fails the node with one line naming it and the
    seconds waited, and the module comes back even when the command cannot be killed (a process stuck in the driver).
  - "Failures: fewer GPUs than the node should have (its instance type's count, else what its last converge recorded,
    or those on the PCI bus); uncorrectable ECC errors since the driver loaded (every SRAM and DRAM count of every
    driver's layout: parity and SEC-DED SRAM errors from about R550, SRAM and DRAM from R450, double-bit before);
    SRAM errors past the driver's threshold, unrepairable memory or a pending channel or TPC repair; the driver's own
    verdict (C(reset_required) or C(drain_and_reset_recommended) Yes, a C(gpu_recovery_action) other than None), with
    its action; pages waiting to be retired; a pending or failed row remapping;
    clocks held down by a hardware slowdown, thermal or power brake; under load (an idle link trains down, so it is
    not judged at idle), a PCIe link narrower than the node's identical GPUs, or of a lower generation than both
    the card and the host's port offer; an NVLink link down (every link, on two or more GPUs of an SXM part or with
    I(expect_nvlink)); NVSwitches without Fabric Manager, or a fabric not
    ready; a driver older than the CUDA needs; XID errors of the GPU or driver (48, 63, 64, 74, 79, 92, 94, 95, ...)
    in the kernel log since boot, read in every case (also where no GPU answers); an answer that is not nvidia-smi's
    XML (garbage, cut short), with its first printable part."
  - "Warnings (the node stays admitted): the application's XID errors (13, 31, 43, 45, 68, ...), an XID not in
    tfprov's catalog, uncorrectable ECC errors in the GPU's past only, the driver's thermal slowdown, persistence
    mode off, a PCIe link below the card's own maximum only (clouds wire some cards at x8), a kernel log that could
    not be read."
  - Each problem comes with NVIDIA's recommended action (reset the GPU, reboot, replace the node).
  - A node without NVIDIA GPUs (none on the PCI bus, none expected, no XID in its kernel log) is healthy, and the
    result says so.
  - Where it cannot judge (an error of its own), the node fails with one line saying so, rather than a traceback.
  - Changes nothing; safe in check mode.
author:
  - tfprov maintainers (@tfprov)
extends_documentation_fragment:
  - tfprov.gpu.read_only
options:
  expected_gpu_count:
    description:
      - How many GPUs the node should have (the inventory's C(tfprov_gpu_count), from the instance type's row of
        the compatibility matrix). Those on the PCI bus count too; the larger number is expected.
      - Not given, the count the node's last converge recorded (I(converge_record)) is expected.
    type: int
  converge_record:
    description:
      - "The node's converge record (M(tfprov.gpu.converge_record), C(state=record)): where no I(expected_gpu_count)
        is given, the GPUs it recorded (its C(nvidia_gpu) fact's count) are expected, so a node that had GPUs and
        now shows none fails. Missing or unreadable, the PCI bus alone says."
    type: path
    default: /var/lib/tfprov/converge/node.json
  min_driver:
    description: The lowest driver version the resolved stack's CUDA runs on.
    type: str
  cuda:
    description: The resolved stack's CUDA version; the driver must support at least it.
    type: str
  expect_nvlink:
    description:
      - Every NVLink link of every GPU must be up (an SXM board). Otherwise only a partly-down set of links fails,
        since a card without an NVLink bridge lists all its links inactive (see also I(nvlink_gpu_names)).
    type: bool
    default: false
  nvlink_gpu_names:
    description:
      - GPU names (as nvidia-smi prints them) of SXM parts, whose boards join them by NVLink. Where the node has two
        or more GPUs of one of these names, every link of each must be up, as with I(expect_nvlink). The gate passes
        the compatibility matrix's C(nvlink_names).
    type: list
    elements: str
    default: []
  smi_timeout:
    description:
      - Seconds each C(nvidia-smi) command may take. One that does not answer fails the node (a driver or GPU that
        hangs); it gets 5 more seconds to die after being stopped, and is left behind if it cannot.
    type: int
    default: 60
  command_timeout:
    description: Seconds each other command may take (C(journalctl), C(dmesg), C(systemctl)).
    type: int
    default: 20
  nvidia_smi:
    description: The nvidia-smi program; looked up on PATH (and C(/usr/bin)) when not given.
    type: path
  sysfs_root:
    description: Where sysfs is mounted, to count the GPUs and NVSwitches on the PCI bus.
    type: path
    default: /sys
  load_python:
    description:
      - A Python with TensorFlow (the node's environment). Given, the GPUs are read a second time while it runs
        matrix products on every one of them, so that the PCIe links are judged under load (the default and deep
        gates pass it; the quick gate judges only links already under load).
    type: path
  load_seconds:
    description: How long the load runs at most; the GPUs are read about 2 seconds after it starts computing.
    type: int
    default: 20
  kernel_log:
    description:
      - A saved kernel log to read the XID errors from, instead of this boot's (C(journalctl -k -b), else
        C(dmesg)).
    type: path
attributes:
  facts:
    description: Returns its findings; sets no facts.
    support: none
notes:
  - Reading the kernel log needs root where C(kernel.dmesg_restrict) is set; the gate runs it with C(become).
"""

EXAMPLES = r"""
- name: Judge the node's GPUs
  tfprov.gpu.gpu_health:
    expected_gpu_count: "{{ tfprov_gpu_count | default(omit) }}"
    min_driver: "{{ ansible_facts.tfprov_stack.min_driver }}"
    cuda: "{{ ansible_facts.tfprov_stack.cuda }}"
  become: true
  register: health

- name: Fail a node that is not fit, one line per problem
  ansible.builtin.fail:
    msg: "{{ health.lines | join('\n') }}"
  when: not health.healthy
"""

RETURN = r"""
healthy:
  description: No failure found (warnings allowed).
  returned: always
  type: bool
gpu_node:
  description: The node has NVIDIA GPUs, on the PCI bus or expected.
  returned: always
  type: bool
gpu_count:
  description: GPUs the driver reports.
  returned: always
  type: int
expected_gpu_count:
  description: GPUs the node should have (the larger of the expected count and those on the PCI bus).
  returned: always
  type: int
expected_from:
  description: Where the expected count comes from, or null when none is expected.
  returned: always
  type: str
  sample: its last converge
driver_version:
  description: The loaded driver, or null.
  returned: always
  type: str
cuda_version:
  description: The highest CUDA the driver supports, or null.
  returned: always
  type: str
gpus:
  description: What was read of each GPU (ECC, retired pages, remapped rows, clock reasons, PCIe, fabric).
  returned: always
  type: list
  elements: dict
problems:
  description: Each problem, failures first.
  returned: always
  type: list
  elements: dict
  contains:
    severity: {description: C(fail) or C(warn)., type: str}
    check: {description: "C(count), C(driver), C(ecc), C(recovery), C(retired_pages), C(remapped_rows), C(clocks),
      C(persistence), C(pcie), C(nvlink), C(fabric), C(xid), C(gate) (it could not judge).", type: str}
    gpu: {description: "The GPU's index, or null for the node.", type: int}
    message: {description: What is wrong., type: str}
    action: {description: NVIDIA's recommended action., type: str}
lines:
  description: "One line per problem: C(FAIL) or C(WARN), what is wrong, the action."
  returned: always
  type: list
  elements: str
notes:
  description: What was not judged, and why (an idle PCIe link, no GPU).
  returned: always
  type: list
  elements: str
  sample: ["no NVIDIA GPU on this node: nothing to judge"]
"""

import json
import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.tfprov.gpu.plugins.module_utils.bounded_command import run_bounded
from ansible_collections.tfprov.gpu.plugins.module_utils.gpu_health import (
    FAIL,
    REBOOT,
    REPLACE,
    WARN,
    HealthInputError,
    evaluate,
    not_judged_idle,
    parse_nvlink_status,
    parse_smi_xml,
    parse_xids,
    printable,
    verdict_lines,
)
from ansible_collections.tfprov.gpu.plugins.module_utils.nvidia_smi import classify_failure
from ansible_collections.tfprov.gpu.plugins.module_utils.pci import NVSWITCH_CLASSES, nvidia_devices, nvidia_gpus

SMI_FAILURES = {
    "driver_not_loaded": ("nvidia-smi cannot reach the driver (not loaded)",
                          "reboot the node to load it; if it still fails, run tfprov run node"),
    "version_mismatch": ("the loaded driver and its libraries differ (driver/library version mismatch)",
                         "reboot the node to load the installed driver"),
    "no_devices": ("the driver is loaded but finds no GPU", "reboot the node; if the GPUs stay missing, take the "
                   "node out of service and replace it"),
}


def kernel_log(module, path, seconds):
    """(this boot's kernel log or None, why it could not be read, [commands that did not answer])."""
    if path:
        try:
            with open(path, errors="replace") as handle:
                return handle.read(), None, []
        except (IOError, OSError) as exc:
            return None, "%s: %s" % (path, exc.strerror or exc), []
    said, hung = [], []
    for argv in (["journalctl", "-k", "-b", "0", "--no-pager", "-q", "-o", "short-monotonic"], ["dmesg"]):
        binary = module.get_bin_path(argv[0])
        if not binary:
            said.append("no %s" % argv[0])
            continue
        rc, out, err, timed_out = run_bounded(module, [binary] + argv[1:], seconds)
        if timed_out:
            hung.append("%s did not answer within %d s" % (" ".join(argv[:2]) if argv[0] == "journalctl"
                                                           else argv[0], seconds))
            said.append(hung[-1])
        elif rc == 0 and out.strip():
            return out, None, hung
        else:
            said.append("%s: %s" % (argv[0], printable(err or out, 80) or "exit %d, nothing read" % rc))
    return None, "; ".join(said), hung


def fabric_manager_active(module, seconds=20):
    """True or False, None without systemd, or the message of a systemctl that did not answer."""
    systemctl = module.get_bin_path("systemctl")
    if not systemctl:
        return None
    rc, out, err, timed_out = run_bounded(module, [systemctl, "is-active", "nvidia-fabricmanager"], seconds)
    if timed_out:
        return "systemctl is-active nvidia-fabricmanager did not answer within %d s" % seconds
    return out.strip() == "active"


# Matrix products on every GPU TensorFlow sees, for a set time; "computing" once the first has run.
LOAD = """
import sys, time
import tensorflow as tf
gpus = tf.config.list_logical_devices("GPU")
end = time.time() + float(sys.argv[1])
first = True
while time.time() < end and gpus:
    for device in gpus:
        with tf.device(device.name):
            a = tf.random.uniform((4096, 4096))
            (a @ a).numpy()
    if first:
        print("computing on %d GPU(s)" % len(gpus), flush=True)
        first = False
"""


# Runs the load in the background, waits for its first product, then reads nvidia-smi while it computes, and stops
# the load: one command through run_command (no process of the module's own). Its answer: LOADED <the load's line>,
# then the XML, then SMI-RC <nvidia-smi's exit code> on a line of its own; or NOT-LOADED <the load's last line>
# when no GPU computed.
UNDER_LOAD = """
python=$1 seconds=$2 smi=$3 smi_timeout=$4 load=$5
log=$(mktemp) || exit 1
TF_CPP_MIN_LOG_LEVEL=2 "$python" -c "$load" "$seconds" > "$log" 2>&1 &
pid=$!
trap 'kill -9 $pid 2>/dev/null; rm -f "$log"' EXIT
waited=0
while [ "$waited" -lt $((seconds + 60)) ]; do
  line=$(grep -m 1 '^computing on' "$log")
  if [ -n "$line" ]; then
    sleep 2
    echo "LOADED $line"
    timeout -k 5 "$smi_timeout" "$smi" -q -x
    rc=$?
    echo
    echo "SMI-RC $rc"
    exit 0
  fi
  kill -0 $pid 2>/dev/null || break
  sleep 1
  waited=$((waited + 1))
done
echo "NOT-LOADED $(grep -v '^[[:space:]]*$' "$log" | tail -n 1)"
"""


def read_under_load(module, smi_path, python, seconds, smi_timeout=60):
    """(nvidia-smi -q -x read while the GPUs compute, or None; a note saying what happened)."""
    limit = int(seconds) + 60 + int(smi_timeout) + 15  # TensorFlow's import takes seconds of its own
    rc, out, err, timed_out = run_bounded(module, ["/bin/sh", "-c", UNDER_LOAD, "tfprov-load", python, str(seconds),
                                                   smi_path, str(int(smi_timeout)), LOAD], limit)
    lines = out.splitlines()
    loaded = [line for line in lines if line.startswith("LOADED ")]
    if not loaded or timed_out:
        said = [line[len("NOT-LOADED "):].strip() for line in lines if line.startswith("NOT-LOADED ")]
        reason = [s for s in said if s][-1:] or ["no GPU computed within %d s" % (int(seconds) + 60)]
        return None, "the GPUs could not be loaded (%s): PCIe links judged only where already under load" % reason[0]
    start = lines.index(loaded[0]) + 1
    ends = [i for i, line in enumerate(lines) if line.startswith("SMI-RC ")]
    smi_rc = lines[ends[-1]].split()[-1] if ends else "124"
    if smi_rc == "124":
        return None, "nvidia-smi -q -x did not answer within %d s under load: PCIe links judged " \
                     "only where already under load" % smi_timeout
    xml = "\n".join(lines[start:ends[-1]]) if ends else ""
    return (xml if smi_rc == "0" else None), "PCIe links read under load (%s)" % loaded[0][len("LOADED "):].strip()


HUNG_SMI = REBOOT + " (the driver or a GPU hangs: look for XID 79 in the kernel log); if it recurs, " + REPLACE
HUNG_OTHER = "look at the node's load and at that service, then run the gate again"


def _fail(check, message, action):
    return {"severity": FAIL, "check": check, "gpu": None, "message": message, "action": action}


def declared_count(params):
    """(GPUs the node should have, where that comes from): the inventory's count, else the node's last converge."""
    if params["expected_gpu_count"] is not None:
        return params["expected_gpu_count"], "its instance type"
    record = params["converge_record"]
    try:
        with open(record) as handle:
            gpu = (json.load(handle).get("facts") or {}).get("nvidia_gpu") or {}
        count = int(gpu.get("count") or 0)
    except (IOError, OSError, ValueError, TypeError, AttributeError):
        return 0, None
    return count, "its last converge"


def read_smi(module, smi_path, seconds):
    """(nvidia-smi -q -x parsed, or None; the problem when it gives no verdict; whether it said no devices)."""
    rc, out, err, timed_out = run_bounded(module, [smi_path, "-q", "-x"], seconds)
    if timed_out:
        return None, _fail("driver", "nvidia-smi -q -x did not answer within %d s" % seconds, HUNG_SMI), False
    answer = out + err
    failure = classify_failure(answer) if rc != 0 or not out.strip().startswith("<") else None
    if failure == "no_devices":
        return None, None, True
    if failure in SMI_FAILURES:
        return None, _fail("driver", *SMI_FAILURES[failure]), False
    if rc != 0:
        said = printable(answer)
        return None, _fail("driver", "nvidia-smi -q -x failed (exit %d): %s" % (rc, said or "nothing printable"),
                           REBOOT), False
    try:
        return parse_smi_xml(out), None, False
    except HealthInputError as exc:
        return None, _fail("driver", str(exc), "run nvidia-smi -q -x on the node; " + REBOOT), False


def judge(module, smi_path, params):
    """The module's result, without exiting."""
    pci = nvidia_gpus(params["sysfs_root"])
    nvswitch = bool(nvidia_devices(params["sysfs_root"], NVSWITCH_CLASSES))
    declared, source = declared_count(params)
    expected = max(declared, len(pci))
    smi_seconds, seconds = params["smi_timeout"], params["command_timeout"]
    result = {"healthy": True, "gpu_node": expected > 0, "gpu_count": 0, "expected_gpu_count": expected,
              "expected_from": (source if declared >= len(pci) else "the PCI bus") if expected else None,
              "driver_version": None, "cuda_version": None, "gpus": [], "problems": [], "lines": [], "notes": []}
    notes, problems = result["notes"], []
    smi, answered = None, False
    if not smi_path and expected:
        problems.append(_fail("driver", "%d GPU(s) but no nvidia-smi (no driver installed)" % expected,
                              "run tfprov run node to install the driver"))
    elif smi_path:
        smi, problem, no_devices = read_smi(module, smi_path, smi_seconds)
        problems += [problem] if problem else []
        answered = smi is not None or no_devices
        if no_devices and not expected:
            notes.append("no NVIDIA GPU on this node: nothing to judge")
    else:
        notes.append("no NVIDIA GPU on this node: nothing to judge")
    nvlink, fabric = {}, None
    if smi and smi["gpus"]:
        if params["load_python"] and not os.access(params["load_python"], os.X_OK):
            notes.append("no Python at %s to load the GPUs with: PCIe links judged only where already under load"
                         % params["load_python"])
        elif params["load_python"]:
            loaded, note = read_under_load(module, smi_path, params["load_python"], params["load_seconds"],
                                           smi_seconds)
            notes.append(note)
            try:
                smi = parse_smi_xml(loaded) if loaded else smi
            except HealthInputError as exc:
                notes.append("the answer under load was not read (%s)" % exc)
        rc, out, err, timed_out = run_bounded(module, [smi_path, "nvlink", "-s"], smi_seconds)
        if timed_out:
            problems.append(_fail("nvlink", "nvidia-smi nvlink -s did not answer within %d s" % smi_seconds,
                                  HUNG_SMI))
        nvlink = parse_nvlink_status(out) if rc == 0 and not timed_out else {}
        if nvswitch:
            fabric = fabric_manager_active(module, seconds)
            if isinstance(fabric, str):
                problems.append(_fail("fabric", fabric, HUNG_OTHER))
                fabric = None
    # The kernel log is read in every case: a GPU that fell off the bus may have left nothing else behind.
    log, unread, hung = kernel_log(module, params["kernel_log"], seconds)
    xids = parse_xids(log or "")
    if log is None:
        problems += [_fail("xid", line, HUNG_OTHER) for line in hung]
        if not hung and (smi_path or expected):
            problems.append({"severity": WARN, "check": "xid", "gpu": None,
                             "message": "the kernel log could not be read (%s): XID errors not checked" % unread,
                             "action": "run the gate as root (become), or look at journald and dmesg on the node"})
        elif not hung:
            notes.append("the kernel log could not be read (%s): XID errors not checked" % unread)
    elif hung:
        notes.append("%s: the kernel log was read from dmesg" % "; ".join(hung))
    problems += evaluate(smi or {"gpus": [], "driver_version": None, "cuda_version": None}, nvlink=nvlink,
                         xids=xids, expected_gpu_count=declared if answered else None,
                         pci_gpu_count=len(pci) if answered else None, expected_from=source,
                         min_driver=params["min_driver"], cuda=params["cuda"], expect_nvlink=params["expect_nvlink"],
                         nvlink_names=params["nvlink_gpu_names"], nvswitch=nvswitch, fabric_manager_active=fabric)
    problems.sort(key=lambda p: p["severity"] != FAIL)
    gpus = smi["gpus"] if smi else []
    idle = not_judged_idle(gpus)
    if idle:
        notes.append("PCIe link of GPU %s not judged: idle links train down (the default and deep gates judge it "
                     "under load)" % ", ".join(str(i) for i in idle))
    return dict(result, healthy=not any(p["severity"] == FAIL for p in problems), gpu_count=len(gpus),
                gpu_node=result["gpu_node"] or bool(gpus) or bool(xids),
                driver_version=smi["driver_version"] if smi else None,
                cuda_version=smi["cuda_version"] if smi else None, gpus=gpus, problems=problems,
                lines=verdict_lines(problems))


def main():
    module = AnsibleModule(
        argument_spec={
            "expected_gpu_count": {"type": "int"},
            "min_driver": {"type": "str"},
            "cuda": {"type": "str"},
            "expect_nvlink": {"type": "bool", "default": False},
            "nvidia_smi": {"type": "path"},
            "sysfs_root": {"type": "path", "default": "/sys"},
            "kernel_log": {"type": "path"},
            "load_python": {"type": "path"},
            "load_seconds": {"type": "int", "default": 20},
            "smi_timeout": {"type": "int", "default": 60},
            "command_timeout": {"type": "int", "default": 20},
            "converge_record": {"type": "path", "default": "/var/lib/tfprov/converge/node.json"},
            "nvlink_gpu_names": {"type": "list", "elements": "str", "default": []},
        },
        supports_check_mode=True,
    )
    smi = module.params["nvidia_smi"]
    if smi and not os.access(smi, os.X_OK):
        module.fail_json(msg="nvidia_smi %s is not an executable file" % smi)
    if module.params["kernel_log"] and not os.path.isfile(module.params["kernel_log"]):
        module.fail_json(msg="kernel_log %s is not a file" % module.params["kernel_log"])
    smi = smi or module.get_bin_path("nvidia-smi", opt_dirs=["/usr/bin"])
    for option in ("smi_timeout", "command_timeout"):
        if module.params[option] < 1:
            module.fail_json(msg="%s is %d: give the seconds to wait, 1 or more" % (option, module.params[option]))
    try:
        result = judge(module, smi, module.params)
    except Exception as exc:  # a verdict, never a traceback: the node's gate record must reach the report
        problems = [_fail("gate", "the gate could not judge the node (%s: %s)" % (type(exc).__name__,
                                                                                  printable(str(exc))),
                          "run the gate again; if it recurs, report it with the node's nvidia-smi -q -x")]
        result = {"healthy": False, "gpu_node": True, "gpu_count": 0, "expected_gpu_count": 0,
                  "expected_from": None, "driver_version": None, "cuda_version": None, "gpus": [],
                  "problems": problems, "lines": verdict_lines(problems), "notes": []}
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
