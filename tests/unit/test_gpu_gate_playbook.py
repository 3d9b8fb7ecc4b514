"""playbooks/tasks/gpu_gate.yml, the admission gate, run by ansible-playbook on local hosts, each a node faked from
recordings (tests/fixtures/gpu-health): nvidia-smi replaying a real T4's answer, a kernel log, a sysfs tree, and a
dcgmi replaying NVIDIA's recorded DCGM report. The gate's own tasks decide; only the node's answers are stood in."""

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "gpu-health"
XID_79 = "NVRM: Xid (PCI:0000:00:1e): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n"
pytestmark = pytest.mark.skipif(not (Path(sys.executable).parent / "ansible-playbook").exists(),
                                reason="no ansible-playbook")


def executable(path: Path, text: str) -> str:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def node(tmp_path: Path, name: str, gpus: int, log: str = "", dcgm_fail: bool = False) -> dict:
    """A host's stand-ins: its sysfs tree, nvidia-smi, kernel log and dcgmi."""
    home = tmp_path / name
    devices = home / "sys" / "bus" / "pci" / "devices"
    devices.mkdir(parents=True)
    for index in range(gpus):
        device = devices / f"0000:00:1{index}.0"
        device.mkdir()
        for key, value in {"vendor": "0x10de", "class": "0x030200", "device": "0x1eb8"}.items():
            (device / key).write_text(value + "\n")
    (home / "kern.log").write_text(log)
    answer = FIXTURES / "tesla-t4.aws-515.xml"
    smi = executable(home / "nvidia-smi", f'#!/bin/sh\n[ "$1" = nvlink ] && exit 0\ncat "{answer}"\n')
    recorded = (FIXTURES / "dcgm-3.1.0.diag-r1.8gpu.json.txt").read_text()
    if dcgm_fail:
        recorded = recorded.replace('"status" : "PASS"', '"status" : "FAIL"', 1)
    (home / "dcgm.json").write_text(recorded)
    dcgmi = executable(home / "dcgmi", f'#!/bin/sh\ncat "{home / "dcgm.json"}"\n')
    return {"__smi": smi if gpus else str(home / "none"), "__sysfs": str(home / "sys"), "__log": str(home / "kern.log"),
            "__dcgmi": dcgmi, "tfprov_gpu_count": gpus}


def run(tmp_path, hosts: dict, *extra):
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(yaml.safe_dump({"tfprov_nodes": {"hosts": hosts}}))
    play = [{"name": "The gate on faked nodes", "hosts": "tfprov_nodes", "gather_facts": False,
             "module_defaults": {
                 "tfprov.gpu.gpu_health": {"nvidia_smi": "{{ __smi if __smi is file else omit }}",
                                           "sysfs_root": "{{ __sysfs }}", "kernel_log": "{{ __log }}"},
                 "tfprov.gpu.dcgm_diag": {"dcgmi": "{{ __dcgmi }}"}},
             "tasks": [{"name": "Run the admission gate",
                        "ansible.builtin.import_tasks": str(ROOT / "playbooks" / "tasks" / "gpu_gate.yml")}]}]
    # Beside a bench/ as in the checkout: the gate's scripts are found from the playbook's directory.
    (tmp_path / "playbooks").mkdir(exist_ok=True)
    if not (tmp_path / "bench").exists():
        (tmp_path / "bench").symlink_to(ROOT / "bench")
    playbook = tmp_path / "playbooks" / "gate.yml"
    playbook.write_text(yaml.safe_dump(play, sort_keys=False))
    stats = tmp_path / "stats.json"
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(inventory), "-c", "local",
         "-e", f"ansible_python_interpreter={sys.executable}", *extra, str(playbook)],
        cwd=ROOT, capture_output=True, text=True,
        env={**os.environ, "ANSIBLE_STDOUT_CALLBACK": "json", "ANSIBLE_SHOW_CUSTOM_STATS": "true",
             "TFPROV_TEST_STATS": str(stats)})
    return proc, json.loads(proc.stdout[proc.stdout.index("{"):])


def stats(result: dict) -> dict:
    """What the gate recorded for the tfprov report (set_stats, aggregated over the run)."""
    return result["global_custom_stats"]["tfprov_hosts"]


def failures(result: dict) -> dict[str, str]:
    found = {}
    for play in result["plays"]:
        for task in play["tasks"]:
            for host, outcome in task["hosts"].items():
                if outcome.get("failed"):
                    found[host] = outcome["msg"]
    return found


def test_a_healthy_t4_passes_an_xid_79_fails_and_a_cpu_node_passes(tmp_path):
    hosts = {"healthy": node(tmp_path, "healthy", 1), "fallen": node(tmp_path, "fallen", 1, XID_79),
             "cpu": node(tmp_path, "cpu", 0)}
    proc, result = run(tmp_path, hosts)
    assert proc.returncode == 2, proc.stdout[-3000:]
    assert failures(result) == {"fallen": (
        'FAIL: GPU 0 (00000000:00:1E.0): XID 79 (GPU has fallen off the bus) in the kernel log since boot ("GPU has '
        'fallen off the bus"): reboot the node; if it recurs, take the node out of service and replace it (report the '
        'GPU to the provider)')}
    gate = stats(result)
    assert gate["healthy"]["gate"]["healthy"] and gate["healthy"]["gate"]["level"] == "quick"
    assert gate["cpu"]["gate"]["notes"] == ["no NVIDIA GPU on this node: nothing to judge"]
    assert gate["healthy"]["gate"]["dcgm"] == "not run"  # quick: no DCGM


def test_a_gpu_missing_against_the_instance_types_count_fails(tmp_path):
    hosts = {"short": dict(node(tmp_path, "short", 1), tfprov_gpu_count=4)}
    proc, result = run(tmp_path, hosts)
    assert failures(result)["short"].startswith("FAIL: 1 of 4 GPUs visible to the driver (its instance type has 4)")


def test_the_default_level_runs_dcgm_and_its_failure_fails_the_node(tmp_path):
    hosts = {"passes": node(tmp_path, "passes", 1), "dcgm": node(tmp_path, "dcgm", 1, dcgm_fail=True)}
    proc, result = run(tmp_path, hosts, "-e", "tfprov_gate_level=default")
    assert list(failures(result)) == ["dcgm"]
    assert failures(result)["dcgm"].startswith("FAIL: GPU 0, 1, 2, 3, 4, 5, 6, 7: DCGM diagnostic Deployment / "
                                               "Denylist (level 1): fail")
    assert stats(result)["passes"]["gate"]["dcgm"] == "3.1.0"


def test_an_unknown_level_is_refused_in_one_line(tmp_path):
    proc, result = run(tmp_path, {"healthy": node(tmp_path, "healthy", 1)}, "-e", "tfprov_gate_level=thorough")
    assert failures(result)["healthy"].startswith("tfprov_gate_level is thorough")


def test_the_deep_level_times_an_all_reduce_against_the_boards_figure(tmp_path):
    env = tmp_path / "env"
    (env / "bin").mkdir(parents=True)
    # Stands in for the environment's Python running bench/allreduce_local.py on eight A100s: a slow all-reduce.
    line = json.dumps({"tfprov_allreduce_local": {
        "devices": 8, "kind": "gpu", "busbw_gbps": 61.0, "percent_of_expected": 26.5, "ok": False,
        "problem": "all-reduce across the node's GPUs: bus bandwidth 61.0 GB/s is 26.5 % of the 230 GB/s expected, "
                   "below 70 %: look for an NVLink link down"}})
    (tmp_path / "allreduce.json").write_text(line + "\n")
    executable(env / "bin" / "python", f'#!/bin/sh\necho "$@" >> "{tmp_path}/args"\ncat "{tmp_path}/allreduce.json"\n'
                                       'exit 3\n')
    eight = dict(node(tmp_path, "eight", 8), tfprov_instance_type="p4d.24xlarge", tensorflow_gpu_env=str(env))
    eight["__smi"] = executable(tmp_path / "eight" / "nvidia-smi8", '#!/bin/sh\n[ "$1" = nvlink ] && exit 0\n'
                                f'cat "{FIXTURES / "v100s-pcie.8gpu-460.xml"}"\n')
    proc, result = run(tmp_path, {"eight": eight}, "-e", "tfprov_gate_level=deep", "-e", "tfprov_gate_dcgm_level=0")
    assert "--expected-gbps 230" in (tmp_path / "args").read_text()  # the matrix's figure for eight A100s on NVSwitch
    assert failures(result)["eight"] == ("FAIL: all-reduce across the node's GPUs: bus bandwidth 61.0 GB/s is 26.5 % "
                                         "of the 230 GB/s expected, below 70 %: look for an NVLink link down")
    assert stats(result)["eight"]["gate"]["allreduce"]["busbw_gbps"] == 61.0


def two_h100s_links_down(home: Path) -> str:
    """An nvidia-smi answering as a node of two H100 SXM GPUs (the lent H100's answer, twice) whose 18 NVLink links
    are all down."""
    text = (FIXTURES / "h100-80gb-hbm3.580-lent.idle.xml").read_text()
    start, end = text.index("<gpu id="), text.index("</gpu>") + len("</gpu>")
    second = text[start:end].replace("00000000:00:06.0", "00000000:00:07.0")
    (home / "two.xml").write_text(text[:end] + "\n" + second + text[end:])
    links = "".join(f"GPU {i}: NVIDIA H100 80GB HBM3 (UUID: GPU-{i})\n"
                    + "".join(f"\t Link {n}: <inactive>\n" for n in range(18)) for i in range(2))
    (home / "links.txt").write_text(links)
    return executable(home / "nvidia-smi", f'#!/bin/sh\n[ "$1" = nvlink ] && exec cat "{home / "links.txt"}"\n'
                                           f'cat "{home / "two.xml"}"\n')


def test_a_hung_nvidia_smi_a_bare_sxm_board_and_a_node_whose_gpu_is_gone_fail(tmp_path):
    hung = node(tmp_path, "hung", 1)
    hung["__smi"] = executable(tmp_path / "hung" / "nvidia-smi", "#!/bin/sh\nexec sleep 600\n")
    sxm = node(tmp_path, "sxm", 2)
    sxm["__smi"] = two_h100s_links_down(tmp_path / "sxm")
    del sxm["tfprov_gpu_count"]  # a static inventory: no count, no tfprov_gpu_nvlink
    gone = node(tmp_path, "gone", 0, XID_79.replace("0000:00:1e", "0000:00:1f"))
    gone["__smi"] = executable(tmp_path / "gone" / "nvidia-smi", '#!/bin/sh\necho "No devices were found"\nexit 6\n')
    del gone["tfprov_gpu_count"]
    (tmp_path / "gone" / "record").mkdir()
    (tmp_path / "gone" / "record" / "node.json").write_text(json.dumps({"facts": {"nvidia_gpu": {"count": 1}}}))
    gone["tfprov_converge_record_dir"] = str(tmp_path / "gone" / "record")
    started = time.time()
    proc, result = run(tmp_path, {"hung": hung, "sxm": sxm, "gone": gone}, "-e", "tfprov_gate_smi_timeout=2")
    assert time.time() - started < 60, "the hung node held the gate"
    failed = failures(result)
    assert failed["hung"].startswith("FAIL: nvidia-smi -q -x did not answer within 2 s: reboot the node")
    assert [line.split(", 3,")[0] for line in failed["sxm"].splitlines()] == [
        "FAIL: GPU 0 (00000000:00:06.0): NVLink link(s) 0, 1, 2",
        "FAIL: GPU 1 (00000000:00:07.0): NVLink link(s) 0, 1, 2"]
    assert "(0 of 18 up)" in failed["sxm"]
    assert failed["gone"].splitlines()[0] == (
        "FAIL: expected 1 GPU, found none (its last converge had 1): look for XID 79 or a GPU off the bus in the "
        "kernel log; reboot the node; if one stays missing, take the node out of service and replace it (report the "
        "GPU to the provider)")
    assert "XID 79 (GPU has fallen off the bus)" in failed["gone"].splitlines()[1]
    gate = stats(result)
    assert not any(gate[host]["gate"]["healthy"] for host in ("hung", "sxm", "gone"))
    assert (gate["gone"]["gate"]["gpu_node"], gate["gone"]["gate"]["expected_gpu_count"]) == (True, 1)


def test_a_gate_task_past_its_own_time_limit_fails_the_node_with_a_line_in_the_report(tmp_path):
    hung = node(tmp_path, "hung", 1)
    hung["__smi"] = executable(tmp_path / "hung" / "nvidia-smi", "#!/bin/sh\nexec sleep 600\n")
    proc, result = run(tmp_path, {"hung": hung}, "-e", "tfprov_gate_timeout=3", "-e", "tfprov_gate_smi_timeout=8")
    line = ("FAIL: the gate did not finish within 3 s (tfprov_gate_timeout): a command on the node hangs: reboot the "
            "node; if it recurs, take the node out of service")
    assert failures(result) == {"hung": line}
    assert stats(result)["hung"]["gate"]["lines"] == [line] and not stats(result)["hung"]["gate"]["healthy"]
