# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Results of `dcgmi diag -r LEVEL -j`, per test and per GPU, in DCGM 3's layout and DCGM 4's.

DCGM 3 writes {"DCGM GPU Diagnostic": {"test_categories": [{"category", "tests": [{"name", "results": [{"gpu_ids"
or "gpu_id", "status", "warnings"?}]}]}]}} (a test list may hold nulls); DCGM 4 writes {"DCGM Diagnostic": ...} with
results per entity ({"entity_group": "GPU", "entity_id", "status", "warnings": [{"warning", "error_id"}]}) and a
"test_summary" per test (NVIDIA/DCGM nvvs/include/NvvsJsonStrings.h and testing/python3/dcgm_diag_schema.json).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.tfprov.gpu.plugins.module_utils.gpu_health import REPLACE

PASSED = ("pass", "skip", "not run")
ACTION = "reset the GPU (nvidia-smi -r) and run dcgmi diag again; if the test fails again, " + REPLACE


class DcgmOutputError(Exception):
    """dcgmi's answer is not a diagnostic report."""


def _gpus(result):
    """The GPU indexes one result is about (DCGM 3: "0,1,2" or 0 or "0"; DCGM 4: an entity of group GPU)."""
    if "entity_id" in result:
        return [int(result["entity_id"])] if result.get("entity_group", "GPU") == "GPU" else []
    ids = result.get("gpu_ids", result.get("gpu_id"))
    if ids is None or ids == "":
        return []
    return [int(i) for i in str(ids).split(",") if i.strip()]


def _warnings(result):
    found = result.get("warnings") or []
    if isinstance(found, dict):
        found = [found]
    said = [w.get("warning", "") if isinstance(w, dict) else str(w) for w in found]
    if result.get("warning"):
        said.append(result["warning"])
    return [" ".join(w.split()) for w in said if w]


def parse_diag(text):
    """{version, runtime_error, tests: [{category, name, gpus, status, warnings}]} from `dcgmi diag -j`."""
    start = text.find("{")
    try:
        report = json.loads(text[start:]) if start >= 0 else None
    except ValueError as exc:
        raise DcgmOutputError("dcgmi diag -j did not answer in JSON (%s): %s" % (exc, text.strip()[:200])) from None
    diag = (report or {}).get("DCGM Diagnostic") or (report or {}).get("DCGM GPU Diagnostic")
    if not isinstance(diag, dict):
        raise DcgmOutputError("dcgmi diag -j answered without a diagnostic report: %s" % text.strip()[:200])
    version = diag.get("version") or (report.get("metadata") or {}).get("version")
    tests = []
    for category in diag.get("test_categories") or []:
        for test in category.get("tests") or []:
            if not test:
                continue
            for result in test.get("results") or []:
                tests.append({"category": category.get("category"), "name": test.get("name"),
                              "gpus": _gpus(result), "status": str(result.get("status", "")).lower(),
                              "warnings": _warnings(result)})
            summary = (test.get("test_summary") or {}).get("status")
            if summary and not test.get("results"):
                tests.append({"category": category.get("category"), "name": test.get("name"), "gpus": [],
                              "status": summary.lower(), "warnings": []})
    return {"version": version, "runtime_error": diag.get("runtime_error"), "tests": tests}


def diag_problems(diag, level):
    """One problem per failed test and GPU (warn for a test's warning), as gpu_health reports them."""
    problems = []
    if diag["runtime_error"]:
        problems.append({"severity": "fail", "check": "dcgm", "gpu": None, "action": ACTION,
                         "message": "DCGM diagnostics (level %s) could not run: %s" % (level, diag["runtime_error"])})
    for test in diag["tests"]:
        if test["status"] in PASSED:
            continue
        severity = "warn" if test["status"].startswith("warn") else "fail"
        where = "GPU %s: " % ", ".join(str(g) for g in test["gpus"]) if test["gpus"] else ""
        why = ": %s" % "; ".join(test["warnings"])[:300] if test["warnings"] else ""
        problems.append({"severity": severity, "check": "dcgm", "gpu": test["gpus"][0] if len(test["gpus"]) == 1
                         else None, "action": ACTION,
                         "message": "%sDCGM diagnostic %s / %s (level %s): %s%s"
                         % (where, test["category"], test["name"], level, test["status"], why)})
    return problems
