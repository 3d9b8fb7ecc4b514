"""The admission gate's table in `tfprov run`'s output, from the verdicts a run's report holds."""

from rich.console import Console

from tfprov import gate, terminal

REPORT = {"hosts": {
    "tfprov-local-1": {"data": {"gate": {
        "level": "quick", "healthy": False, "gpu_node": True, "gpu_count": 7, "expected_gpu_count": 8,
        "driver_version": "535.183.01", "dcgm": "not run", "notes": [],
        "lines": ["FAIL: 7 of 8 GPUs visible to the driver (its instance type has 8): look for XID 79 ..."]}}},
    "tfprov-local-2": {"data": {"gate": {
        "level": "quick", "healthy": True, "gpu_node": False, "gpu_count": 0, "expected_gpu_count": 0,
        "driver_version": None, "dcgm": "not run", "lines": [],
        "notes": ["no NVIDIA GPU on this node: nothing to judge"]}}},
    "tfprov-local-3": {"data": {"bench": {}}},
}}


def test_one_row_per_judged_node_with_its_problems_and_notes():
    found = gate.verdicts(REPORT)
    assert sorted(found) == ["tfprov-local-1", "tfprov-local-2"]
    console = Console(width=200, record=True)
    console.print(terminal.gate_table(found))
    text = console.export_text()
    assert "not admitted" in text and "7 of 8" in text and "FAIL: 7 of 8 GPUs visible" in text
    assert "admitted" in text.split("tfprov-local-2", 1)[1] and "no NVIDIA GPU on this node" in text
