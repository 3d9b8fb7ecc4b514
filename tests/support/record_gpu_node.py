#!/usr/bin/env python3
"""Record a real GPU node's answers as test fixtures, and judge them with tfprov's own module code.

Run on a machine with an NVIDIA GPU (no Ansible, no TensorFlow needed): `python3 tests/support/record_gpu_node.py OUT`.
It writes, under OUT:
  - every answer the modules read, verbatim: `nvidia-smi` (table), the `--query-gpu` CSV (with and without
    compute_cap), `nvidia-smi -q -x` idle and while the GPU computes (PyTorch, when it is there),
    `nvidia-smi nvlink -s`, `nvidia-smi topo -m`, the NVIDIA devices of sysfs, the kernel log's NVRM lines,
    `dcgmi` where installed;
  - `verdicts.json`: what `nvidia_gpu_facts` and `gpu_health` make of this node, run through their real `gather` and
    `judge` (Ansible's module object stood in by a small class that runs commands as it does), and matmul TFLOP/s
    per precision beside the compatibility matrix's peak for the card.
Every command's exit code and stderr are kept in `commands.json`: a recording says what happened, failures included.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
import types

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLUGINS = os.path.join(ROOT, "plugins")
IDLE_CHECK = os.path.join(ROOT, "roles", "idle_stop", "files", "tfprov_idle_check.py")
UTILIZATION = ["nvidia-smi", "--query-gpu=index,utilization.gpu", "--format=csv,noheader,nounits"]
COMMANDS: dict[str, dict] = {}


def run(key, argv, out_dir, filename=None, timeout=120):
    """Run argv, keep its answer in OUT/filename and its exit code and stderr in commands.json."""
    started = time.time()
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        rc, out, err = proc.returncode, proc.stdout, proc.stderr
    except FileNotFoundError:
        rc, out, err = 127, "", f"{argv[0]}: not found"
    except subprocess.TimeoutExpired:
        rc, out, err = 124, "", f"timed out after {timeout} s"
    COMMANDS[key] = {"argv": argv, "rc": rc, "stderr": err[-2000:], "seconds": round(time.time() - started, 2),
                     "file": filename}
    if filename:
        with open(os.path.join(out_dir, filename), "w") as handle:
            handle.write(out)
    return rc, out, err


def load_module_utils():
    """The collection's plugins as `ansible_collections.tfprov.gpu.plugins...`, with Ansible's module API stood in."""
    names = ["ansible", "ansible.module_utils", "ansible.module_utils.basic", "ansible_collections",
             "ansible_collections.tfprov", "ansible_collections.tfprov.gpu", "ansible_collections.tfprov.gpu.plugins",
             "ansible_collections.tfprov.gpu.plugins.module_utils", "ansible_collections.tfprov.gpu.plugins.modules"]
    for name in names:
        sys.modules.setdefault(name, types.ModuleType(name))
    sys.modules["ansible.module_utils.basic"].AnsibleModule = object  # only imported by name; never built here
    loaded = {}
    for kind, name in [("module_utils", "nvidia_smi"), ("module_utils", "pci"), ("module_utils", "gpu_health"),
                       ("module_utils", "dcgm"), ("module_utils", "compat"), ("modules", "nvidia_gpu_facts"),
                       ("modules", "gpu_health")]:
        path = os.path.join(PLUGINS, kind, name + ".py")
        if not os.path.exists(path):
            continue
        full = f"ansible_collections.tfprov.gpu.plugins.{kind}.{name}"
        spec = importlib.util.spec_from_file_location(full, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[full] = module
        spec.loader.exec_module(module)
        loaded[f"{kind}.{name}"] = module
    return loaded


class StandInModule:
    """The part of AnsibleModule that gather() and judge() use: run_command as a list, no shell, and get_bin_path."""

    @staticmethod
    def get_bin_path(name, opt_dirs=None):
        return shutil.which(name) or next((os.path.join(d, name) for d in opt_dirs or []
                                           if os.access(os.path.join(d, name), os.X_OK)), None)

    def run_command(self, argv, **_ignored):  # errors=, check_rc=: text is decoded as Ansible does by default
        proc = subprocess.run(argv, capture_output=True, text=True)
        return proc.returncode, proc.stdout, proc.stderr


def sysfs_devices():
    """Every NVIDIA PCI function: vendor, device, class and PCIe link, as sysfs reports it."""
    devices = {}
    base = "/sys/bus/pci/devices"
    for address in sorted(os.listdir(base)) if os.path.isdir(base) else []:
        entry = {}
        for attr in ("vendor", "device", "class", "subsystem_vendor", "subsystem_device", "current_link_speed",
                     "current_link_width", "max_link_speed", "max_link_width", "numa_node"):
            try:
                with open(os.path.join(base, address, attr)) as handle:
                    entry[attr] = handle.read().strip()
            except OSError:
                continue
        if entry.get("vendor") == "0x10de":
            devices[address] = entry
    return devices


LOAD = """
import sys, time, torch
end = time.time() + float(sys.argv[1])
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
first = True
while time.time() < end:
    for _ in range(20):
        b = a @ a
    torch.cuda.synchronize()
    if first:
        print("computing", flush=True)
        first = False
"""


def matmul_tflops(peaks):
    """TFLOP/s of an 8192^2 matmul per precision on GPU 0, beside the matrix's peak where known."""
    try:
        import torch
    except ImportError as exc:
        return {"error": f"no PyTorch: {exc}"}
    if not torch.cuda.is_available():
        return {"error": "PyTorch sees no GPU"}
    results = {"torch": torch.__version__, "device": torch.cuda.get_device_name(0)}
    n = 8192
    for label, dtype, tf32 in [("fp32", torch.float32, False), ("tf32", torch.float32, True),
                               ("bf16", torch.bfloat16, False), ("fp16", torch.float16, False)]:
        torch.backends.cuda.matmul.allow_tf32 = tf32
        a = torch.randn(n, n, device="cuda", dtype=dtype)
        for _ in range(3):
            a @ a
        torch.cuda.synchronize()
        times = []
        for _ in range(5):
            start = time.perf_counter()
            for _ in range(10):
                a @ a
            torch.cuda.synchronize()
            times.append((time.perf_counter() - start) / 10)
        tflops = 2.0 * n**3 / sorted(times)[len(times) // 2] / 1e12
        peak = peaks.get(label)
        results[label] = {"tflops": round(tflops, 1), "matrix_peak_tflops": peak,
                          "fraction_of_peak": round(tflops / peak, 3) if peak else None}
    return results


def matrix_peaks(compat, card_name):
    """The compatibility matrix's dense peaks for the card and its key, read by the collection's own compat module
    (its loader needs PyYAML: without it, no peaks)."""
    try:
        row = compat.gpu_model(compat.load_matrix(os.path.join(ROOT, "data", "compat.yml")), card_name)
    except ImportError:
        return {}, None
    if not row:
        return {}, None
    return {k: v for k, v in (row.get("peak_tflops") or {}).items() if isinstance(v, (int, float))}, row["model"]


def record_idle_check(out_dir, when):
    """The idle-stop checker (roles/idle_stop) on this GPU: its nvidia-smi query, its reading, and its decision with
    --minutes 0 and --dry-run (idle: it would stop; under load: busy). Nothing is stopped."""
    run(f"utilization_{when}", UTILIZATION, out_dir, f"utilization.{when}.csv.txt")
    state = os.path.join(out_dir, f".idle-state-{when}.json")
    run(f"idle_check_report_{when}", [sys.executable, IDLE_CHECK, "--report", "--state", state], out_dir,
        f"idle-check.{when}.report.json")
    run(f"idle_check_decision_{when}", [sys.executable, IDLE_CHECK, "--dry-run", "--minutes", "0", "--state", state],
        out_dir, f"idle-check.{when}.decision.txt")


def main(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    mods = load_module_utils()
    smi_utils = mods["module_utils.nvidia_smi"]
    fields = ",".join(smi_utils.QUERY_FIELDS)
    legacy = ",".join(smi_utils.LEGACY_QUERY_FIELDS)
    run("table", ["nvidia-smi"], out_dir, "table.txt")
    run("query", ["nvidia-smi", "--query-gpu=" + fields, "--format=csv,noheader,nounits"], out_dir, "query.csv.txt")
    run("query_legacy", ["nvidia-smi", "--query-gpu=" + legacy, "--format=csv,noheader,nounits"], out_dir,
        "query.no-compute-cap.csv.txt")
    run("q_x_idle", ["nvidia-smi", "-q", "-x"], out_dir, "q-x.idle.xml")
    run("nvlink_s", ["nvidia-smi", "nvlink", "-s"], out_dir, "nvlink-s.txt")
    run("topo_m", ["nvidia-smi", "topo", "-m"], out_dir, "topo-m.txt")
    run("fabricmanager", ["systemctl", "is-active", "nvidia-fabricmanager"], out_dir)
    rc, log, _ = run("dmesg", ["dmesg"], out_dir)
    with open(os.path.join(out_dir, "kernel-log.nvrm.log"), "w") as handle:
        handle.writelines(line + "\n" for line in log.splitlines() if "NVRM" in line or "nvidia" in line.lower())
    if shutil.which("dcgmi"):
        run("dcgmi_version", ["dcgmi", "--version"], out_dir, "dcgmi-version.txt")
        run("dcgmi_diag_r1", ["dcgmi", "diag", "-r", "1", "-j"], out_dir, "dcgmi-diag-r1.json.txt", timeout=240)
    else:
        COMMANDS["dcgmi"] = {"argv": ["dcgmi"], "rc": 127, "stderr": "dcgmi: not installed on this machine"}
    with open(os.path.join(out_dir, "sysfs-nvidia.json"), "w") as handle:
        json.dump(sysfs_devices(), handle, indent=1)

    record_idle_check(out_dir, "idle")

    # Under load: PyTorch multiplies bf16 matrices; -q -x is read once it computes (as gpu_health's load does).
    loaded_xml = None
    load = subprocess.Popen([sys.executable, "-c", LOAD, "25"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    first = load.stdout.readline()
    if first.startswith("computing"):
        time.sleep(3)
        rc, loaded_xml, _ = run("q_x_loaded", ["nvidia-smi", "-q", "-x"], out_dir, "q-x.loaded.xml")
        record_idle_check(out_dir, "loaded")
    else:
        COMMANDS["q_x_loaded"] = {"rc": None, "stderr": first + load.stdout.read()[-1500:]}
    load.kill()
    load.wait()

    smi = shutil.which("nvidia-smi")
    health = mods["module_utils.gpu_health"]
    verdicts = {"facts": mods["modules.nvidia_gpu_facts"].gather(StandInModule(), smi, "/sys")}
    params = {"sysfs_root": "/sys", "expected_gpu_count": None, "min_driver": None, "cuda": None,
              "expect_nvlink": False, "kernel_log": None, "load_python": None, "load_seconds": 20}
    try:
        verdicts["health_idle"] = mods["modules.gpu_health"].judge(StandInModule(), smi, params)
    except Exception as exc:  # a recording must come back even when the code under test fails
        verdicts["health_idle"] = {"error": repr(exc)}
    if loaded_xml:
        try:
            parsed = health.parse_smi_xml(loaded_xml)
            problems = health.evaluate(parsed, expected_gpu_count=len(parsed["gpus"]))
            verdicts["health_loaded"] = {"gpus": parsed["gpus"], "problems": problems,
                                         "lines": health.verdict_lines(problems),
                                         "not_judged_idle": health.not_judged_idle(parsed["gpus"])}
        except Exception as exc:
            verdicts["health_loaded"] = {"error": repr(exc)}
    names = [g.get("name") for g in verdicts["facts"].get("gpus", [])]
    peaks, matrix_key = matrix_peaks(mods["module_utils.compat"], names[0]) if names else ({}, None)
    verdicts["matmul"] = dict(matmul_tflops(peaks), matrix_key=matrix_key)
    with open(os.path.join(out_dir, "verdicts.json"), "w") as handle:
        json.dump(verdicts, handle, indent=1, default=str)
    with open(os.path.join(out_dir, "commands.json"), "w") as handle:
        json.dump(COMMANDS, handle, indent=1)
    print(json.dumps({"facts": verdicts["facts"], "health_idle_lines": verdicts["health_idle"].get("lines"),
                      "health_loaded_lines": verdicts.get("health_loaded", {}).get("lines"),
                      "matmul": verdicts["matmul"]}, indent=1, default=str))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "gpu-recording")
