"""nvidia_gpu_facts against a fake nvidia-smi replaying recorded outputs (tests/fixtures/nvidia-smi)."""

import json
import stat
from pathlib import Path

import pytest
from ansible.module_utils.testing import patch_module_args
from ansible_collections.tfprov.gpu.plugins.module_utils.nvidia_smi import (
    QUERY_FIELDS,
    NvidiaSmiError,
    parse_query,
    parse_versions,
)
from ansible_collections.tfprov.gpu.plugins.modules import nvidia_gpu_facts

FIXTURES = Path(__file__).parents[3] / "fixtures" / "nvidia-smi"
INDEX = json.loads((FIXTURES / "index.json").read_text())["fixtures"]


def fake_smi(tmp_path, query, table, query_rc=0, legacy=None, table_rc=0):
    """An nvidia-smi that prints recorded files: the query (with or without compute_cap) or the table."""
    script = tmp_path / "nvidia-smi"
    legacy_branch = f'cat "{legacy}"; exit 0' if legacy else f'cat "{query}"; exit {query_rc}'
    script.write_text(
        "#!/bin/sh\n"
        'case "$1" in\n'
        f'  --query-gpu=*compute_cap*) cat "{query}"; exit {query_rc} ;;\n'
        f"  --query-gpu=*) {legacy_branch} ;;\n"
        f'  *) cat "{table}"; exit {table_rc} ;;\n'
        "esac\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script


def run(capsys, **args):
    with patch_module_args(args), pytest.raises(SystemExit):
        nvidia_gpu_facts.main()
    return json.loads(capsys.readouterr().out)


CARDS = [
    ("tesla-p4", "Tesla P4", "6.1", 1, "550.135", "12.4"),
    ("tesla-t4", "Tesla T4", "7.5", 1, "535.183.01", "12.2"),
    ("tesla-v100-sxm2-16gb", "Tesla V100-SXM2-16GB", "7.0", 1, "555.42.06", "12.5"),
    ("nvidia-a100-sxm4-40gb.8gpu", "NVIDIA A100-SXM4-40GB", "8.0", 8, "550.54.15", "12.4"),
    ("nvidia-h100-80gb-hbm3", "NVIDIA H100 80GB HBM3", "9.0", 1, "590.48.01", "13.1"),
    ("nvidia-h100-80gb-hbm3.580-lent", "NVIDIA H100 80GB HBM3", "9.0", 1, "580.159.04", "13.0"),
    ("nvidia-h200.580-lent", "NVIDIA H200", "9.0", 1, "580.159.04", "13.0"),
]


@pytest.mark.parametrize(("card", "name", "cc", "count", "driver", "cuda"), CARDS)
def test_recorded_cards(tmp_path, capsys, card, name, cc, count, driver, cuda):
    smi = fake_smi(tmp_path, FIXTURES / f"{card}.csv.txt", FIXTURES / f"{card}.table.txt")
    facts = run(capsys, nvidia_smi=str(smi), sysfs_root=str(tmp_path))["ansible_facts"]["nvidia_gpu"]
    assert facts["source"] == "nvidia-smi" and facts["driver_state"] == "loaded"
    assert facts["count"] == count == len(facts["gpus"])
    assert {g["name"] for g in facts["gpus"]} == {name}
    assert {g["compute_capability"] for g in facts["gpus"]} == {cc}
    assert facts["driver_version"] == driver and facts["cuda_version"] == cuda
    assert [g["index"] for g in facts["gpus"]] == list(range(count))
    assert all(g["memory_mib"] > 7000 for g in facts["gpus"])


def test_k80_on_driver_410_retries_without_compute_cap(tmp_path, capsys):
    smi = fake_smi(tmp_path, FIXTURES / "tesla-k80.csv.txt", FIXTURES / "tesla-k80.table.txt", query_rc=2,
                   legacy=FIXTURES / "tesla-k80.csv.no-compute-cap.txt")
    facts = run(capsys, nvidia_smi=str(smi), sysfs_root=str(tmp_path))["ansible_facts"]["nvidia_gpu"]
    assert facts["source"] == "nvidia-smi"
    [gpu] = facts["gpus"]
    assert gpu["name"] == "Tesla K80" and gpu["compute_capability"] is None and gpu["memory_mib"] == 11441
    assert (facts["driver_version"], facts["cuda_version"]) == ("410.104", "10.0")


@pytest.mark.parametrize(("fixture", "rc", "state"), [
    ("edge-driver-not-loaded.txt", 9, "not_loaded"),
    ("edge-no-devices.txt", 6, "no_devices"),
    ("edge-nvml-version-mismatch.txt", 18, "version_mismatch"),
])
def test_a_broken_driver_falls_back_to_the_pci_bus(tmp_path, capsys, fixture, rc, state):
    gpu = tmp_path / "bus" / "pci" / "devices" / "0000:00:04.0"
    gpu.mkdir(parents=True)
    for name, value in (("vendor", "0x10de"), ("device", "0x1eb8"), ("class", "0x030200")):
        (gpu / name).write_text(value + "\n")
    smi = fake_smi(tmp_path, FIXTURES / fixture, FIXTURES / fixture, query_rc=rc, table_rc=rc)
    facts = run(capsys, nvidia_smi=str(smi), sysfs_root=str(tmp_path))["ansible_facts"]["nvidia_gpu"]
    assert facts["driver_state"] == state
    assert facts["source"] == "pci" and facts["count"] == 1 and facts["gpus"][0]["device_id"] == "0x1eb8"


def test_no_nvidia_smi_and_no_gpu(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    facts = run(capsys, sysfs_root=str(tmp_path))["ansible_facts"]["nvidia_gpu"]
    assert facts == {"source": "none", "count": 0, "gpus": [], "driver_version": None, "cuda_version": None,
                     "driver_state": "not_installed", "error": None}


def test_a_named_nvidia_smi_that_does_not_exist_fails(tmp_path, capsys):
    with patch_module_args({"nvidia_smi": str(tmp_path / "nope")}), pytest.raises(SystemExit):
        nvidia_gpu_facts.main()
    result = json.loads(capsys.readouterr().out)
    assert result["failed"] and "not an executable file" in result["msg"]


@pytest.mark.parametrize("entry", [e for e in INDEX if e["command"] == "nvidia-smi"], ids=lambda e: e["file"])
def test_versions_from_every_recorded_table(entry):
    text = (FIXTURES / entry["file"]).read_text()
    assert parse_versions(text) == (entry["expect"]["driver_version"], entry["expect"]["cuda_version"])


def test_not_available_memory_is_none():
    [gpu] = parse_query((FIXTURES / "edge-na-memory-total.gb10.csv.txt").read_text())
    assert gpu["memory_mib"] is None and gpu["compute_capability"] == "12.1"


@pytest.mark.parametrize("text", ["0, Tesla T4, GPU-x, 15360\n", "zero, T4, GPU-x, 1, 7.5, 00:04.0, 535\n"])
def test_malformed_rows_are_refused(text):
    with pytest.raises(NvidiaSmiError, match="unexpected nvidia-smi output"):
        parse_query(text)


def test_empty_output_is_no_gpus():
    assert parse_query((FIXTURES / "edge-empty.txt").read_text()) == []


def _query_fields(entry):
    if entry["command"] == "query":
        return QUERY_FIELDS
    return tuple(entry["command"].split("--query-gpu=")[1].split()[0].split(","))


@pytest.mark.parametrize("entry", [e for e in INDEX if "--query-gpu" in e["command"] or e["command"] == "query"
                                   if e["rc"] == 0 and "gpus" in e["expect"]], ids=lambda e: e["file"])
def test_every_recorded_query_reads_as_its_index_says(entry):
    gpus = parse_query((FIXTURES / entry["file"]).read_text(), _query_fields(entry))
    read = [{"index": g["index"], "name": g["name"], "uuid": g["uuid"], "memory_total_mib": g["memory_mib"],
             "compute_cap": g["compute_capability"], "pci_bus_id": g["pci_bus_id"],
             "driver_version": g["driver_version"]} for g in gpus]
    # The index names what a parser must find; an entry that leaves a value out (an unrecorded UUID) checks the rest.
    assert len(read) == len(entry["expect"]["gpus"])
    want = entry["expect"]["gpus"]
    assert [{key: got[key] for key in gpu} for got, gpu in zip(read, want, strict=True)] == want


@pytest.mark.parametrize("recording", sorted((FIXTURES.parent / "gpu-health").glob("*.recording.json")),
                         ids=lambda path: path.name)
def test_a_lent_card_replayed_here_gives_the_facts_it_gave_on_the_machine(tmp_path, capsys, recording):
    # tests/support/record_gpu_node.py ran the module's gather() on lent machines against the real nvidia-smi; the
    # same machine's nvidia-smi answers are here as nvidia-<recording's name>.
    on_machine = json.loads(recording.read_text())["verdicts"]["facts"]
    smi_name = "nvidia-" + recording.name.removesuffix(".recording.json")
    smi = fake_smi(tmp_path, FIXTURES / f"{smi_name}.csv.txt", FIXTURES / f"{smi_name}.table.txt")
    assert run(capsys, nvidia_smi=str(smi), sysfs_root=str(tmp_path))["ansible_facts"]["nvidia_gpu"] == on_machine
    assert on_machine["gpus"][0]["compute_capability"] == "9.0" and on_machine["driver_state"] == "loaded"
