"""DCGM's diagnostics read per test and GPU (module_utils/dcgm, module dcgm_diag): NVIDIA's recorded DCGM 3.1 level-1
answer of an 8-GPU node (tests/fixtures/gpu-health), with failures written into it, and DCGM 4's layout as its
published schema (NVIDIA/DCGM testing/python3/dcgm_diag_schema.json) defines it."""

import json
import stat
from pathlib import Path

import pytest
from ansible.module_utils.testing import patch_module_args
from ansible_collections.tfprov.gpu.plugins.module_utils.dcgm import DcgmOutputError, diag_problems, parse_diag
from ansible_collections.tfprov.gpu.plugins.modules import dcgm_diag

RECORDED = (Path(__file__).parents[3] / "fixtures" / "gpu-health" / "dcgm-3.1.0.diag-r1.8gpu.json.txt").read_text()


def recorded():
    return json.loads(RECORDED[RECORDED.index("{"):])


def test_the_recorded_level_1_answer_of_eight_gpus_passes_every_test():
    diag = parse_diag(RECORDED)
    assert diag["version"] == "3.1.0" and diag_problems(diag, 1) == []
    deployment = [t for t in diag["tests"] if t["category"] == "Deployment"]
    assert len(deployment) == 9 and all(t["gpus"] == list(range(8)) for t in deployment)
    assert [t["gpus"] for t in diag["tests"] if t["name"] == "software"] == [[g] for g in range(8)]


def test_a_failed_test_on_one_gpu_fails_with_dcgms_message():
    report = recorded()
    software = report["DCGM GPU Diagnostic"]["test_categories"][1]["tests"][0]["results"]
    software[3].update(status="FAIL", warnings=[{"warning": "Found 2 pending row remappings on GPU 3. Reset GPU.",
                                                 "error_id": 81}])
    [problem] = diag_problems(parse_diag(json.dumps(report)), 1)
    assert problem["severity"] == "fail" and problem["gpu"] == 3
    assert problem["message"] == ("GPU 3: DCGM diagnostic Custom / software (level 1): fail: Found 2 pending row "
                                  "remappings on GPU 3. Reset GPU.")


def test_a_level_3_stress_test_that_fails_and_one_that_warns():
    report = recorded()
    report["DCGM GPU Diagnostic"]["test_categories"].append({"category": "Stress", "tests": [
        {"name": "Targeted Stress", "results": [{"gpu_id": "5", "status": "Fail",
                                                  "warning": "GPU 5 clocks throttled: HW slowdown"}]},
        {"name": "Memory Bandwidth", "results": [{"gpu_id": "2", "status": "Warn"}]},
        {"name": "EUD Test", "results": [{"gpu_id": "0", "status": "Skip"}]}]})
    problems = diag_problems(parse_diag(json.dumps(report)), 3)
    assert [(p["severity"], p["gpu"]) for p in problems] == [("fail", 5), ("warn", 2)]
    assert "Stress / Targeted Stress (level 3): fail: GPU 5 clocks throttled: HW slowdown" in problems[0]["message"]


DCGM4 = {
    "DCGM Diagnostic": {"test_categories": [
        {"category": "Deployment", "tests": [{"name": "software", "test_summary": {"status": "Pass"}, "results": [
            {"entity_group": "GPU", "entity_group_id": 1, "entity_id": 0, "status": "Pass"},
            {"entity_group": "GPU", "entity_group_id": 1, "entity_id": 1, "status": "Pass"}]}]},
        {"category": "Hardware", "tests": [{"name": "memory", "test_summary": {"status": "Fail"}, "results": [
            {"entity_group": "GPU", "entity_group_id": 1, "entity_id": 0, "status": "Pass"},
            {"entity_group": "GPU", "entity_group_id": 1, "entity_id": 1, "status": "Fail", "warnings": [
                {"warning": "Uncorrectable ECC error in the memory test", "error_id": 25, "error_category": 3,
                 "error_severity": 1}]}]}]}]},
    "metadata": {"version": "4.2.3", "Driver Version Detected": "570.133.20"},
}


def test_dcgm_4s_layout_per_entity():
    diag = parse_diag(json.dumps(DCGM4))
    assert diag["version"] == "4.2.3" and len(diag["tests"]) == 4
    [problem] = diag_problems(diag, 2)
    assert problem["gpu"] == 1 and "Hardware / memory (level 2): fail: Uncorrectable ECC error" in problem["message"]


def test_a_runtime_error_fails_the_node():
    diag = parse_diag(json.dumps({"DCGM Diagnostic": {"runtime_error": "No GPUs found", "test_categories": []}}))
    assert diag_problems(diag, 1)[0]["message"] == "DCGM diagnostics (level 1) could not run: No GPUs found"


@pytest.mark.parametrize("text", ["", "Error: unable to connect to host engine", '{"other": 1}'])
def test_an_answer_that_is_not_a_report_is_refused(text):
    with pytest.raises(DcgmOutputError):
        parse_diag(text)


def fake_dcgmi(tmp_path, answer, rc=0):
    (tmp_path / "answer.json").write_text(answer)
    script = tmp_path / "dcgmi"
    script.write_text(f'#!/bin/sh\necho "$@" > "{tmp_path}/args"\ncat "{tmp_path / "answer.json"}"\nexit {rc}\n')
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script)


def run(capsys, **args):
    with patch_module_args(args), pytest.raises(SystemExit):
        dcgm_diag.main()
    return json.loads(capsys.readouterr().out)


def test_the_module_runs_the_level_asked_and_reports_a_failed_node(tmp_path, capsys):
    report = recorded()
    report["DCGM GPU Diagnostic"]["test_categories"][0]["tests"][0]["results"][0]["status"] = "FAIL"
    result = run(capsys, dcgmi=fake_dcgmi(tmp_path, json.dumps(report), rc=226), level=2)
    assert (tmp_path / "args").read_text().split() == ["diag", "-r", "2", "-j"]
    assert result["installed"] and not result["passed"] and result["version"] == "3.1.0"
    assert result["problems"][0]["message"].startswith("GPU 0, 1, 2, 3, 4, 5, 6, 7: DCGM diagnostic Deployment / "
                                                       "Denylist (level 2): fail")


def test_without_dcgm_the_module_passes_and_says_so(capsys, monkeypatch):
    monkeypatch.setattr(dcgm_diag.AnsibleModule, "get_bin_path", lambda self, name, *a, **k: None)
    result = run(capsys)
    assert result["installed"] is False and result["passed"] and result["tests"] == []


def test_a_dcgmi_that_cannot_reach_its_host_engine_fails_with_its_own_words(tmp_path, capsys):
    result = run(capsys, dcgmi=fake_dcgmi(tmp_path, "Error: unable to establish a connection to the host engine", 255))
    assert result["failed"] and "exited 255: Error: unable to establish a connection" in result["msg"]
