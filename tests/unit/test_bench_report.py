"""The CLI's bench output: JSON per node, the table and the PNG, from a run report."""

import json
import sys

from rich.console import Console

from tfprov import bench, terminal

BENCH = {
    "host": "n1",
    "results": [
        {"device": "/CPU:0", "name": "x86_64", "dtype": "float32", "n": 512, "gflops": 40.0,
         "peak": None, "percent_of_peak": None},
        {"device": "/CPU:0", "name": "x86_64", "dtype": "float32", "n": 1024, "gflops": 90.0,
         "peak": None, "percent_of_peak": None},
        {"device": "/GPU:0", "name": "Tesla T4", "dtype": "float16", "n": 1024, "gflops": 30000.0,
         "peak": "fp16", "percent_of_peak": 46.2},
    ],
    "numpy": [{"n": 512, "gflops": 50.0}, {"n": 1024, "gflops": 100.0}],
    "cpu_vs_numpy_by_size": {"512": 0.8, "1024": 0.9},  # string keys, as they come back from JSON
    "cpu_vs_numpy": 0.9,
    "problems": [],
}
REPORT = {"hosts": {"n1": {"data": {"bench": BENCH}}, "n2": {"data": {"preflight": {}}}, "n3": {}}}


def test_only_hosts_with_a_bench_are_results():
    assert list(bench.results(REPORT)) == ["n1"]


def test_table_compares_the_cpu_with_numpy_at_every_size_and_shows_gpus_at_the_largest():
    console = Console(width=200, record=True)
    console.print(terminal.bench_table(bench.results(REPORT)))
    lines = console.export_text().splitlines()
    cpu = [line.split("│") for line in lines if "/CPU:0" in line]
    assert [[cell.strip() for cell in row[4:9]] for row in cpu] == [
        ["512", "40.0", "-", "50.0", "0.80"], ["1024", "90.0", "-", "100.0", "0.90"]]
    [gpu] = [line for line in lines if "/GPU:0" in line]
    assert "46.2% (fp16)" in gpu and "30000.0" in gpu


def test_gpu_rows_below_the_largest_size_stay_in_the_json():
    small_gpu = {"device": "/GPU:0", "name": "Tesla T4", "dtype": "float16", "n": 512, "gflops": 9000.0,
                 "peak": "fp16", "percent_of_peak": 13.8}
    rows = bench.table_rows({**BENCH, "results": [*BENCH["results"], small_gpu]})
    assert small_gpu not in rows and len(rows) == 3


def test_json_and_png_are_written(tmp_path):
    [path] = bench.write_json(bench.results(REPORT), tmp_path / "bench")
    assert json.loads(path.read_text())["cpu_vs_numpy"] == 0.9
    png = bench.plot(bench.results(REPORT), tmp_path / "bench" / "throughput.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000


def test_the_bench_view_names_its_json_and_its_plot(tmp_path):
    console = Console(width=300, record=True)
    terminal.show_bench(REPORT, tmp_path / "bench", console)
    png = tmp_path / "bench" / "throughput.png"
    assert f"bench: 1 JSON file(s) and {png}" in console.export_text() and png.is_file()


def test_without_matplotlib_the_json_is_written_and_the_line_says_how_to_get_the_plot(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib: ImportError, as where it is missing
    assert bench.plot(bench.results(REPORT), tmp_path / "bench" / "throughput.png") is None
    console = Console(width=300, record=True)
    terminal.show_bench(REPORT, tmp_path / "bench", console)
    assert "bench: 1 JSON file(s) (no plot: pip install 'tfprov[local]')" in console.export_text()
    assert (tmp_path / "bench" / "n1.json").is_file() and not (tmp_path / "bench" / "throughput.png").exists()


CHECK = {
    "host": "n1", "mode": "quick", "tensorflow": {"version": "2.21.0", "gpus_visible": 1},
    "results": [
        {"device": "/CPU:0", "name": "x86_64", "dtype": "float32", "n": 512, "gflops": 61.2,
         "relative_error": 2.0e-7, "ok": True},
        {"device": "/GPU:0", "name": "Tesla T4", "dtype": "float32", "n": 512, "ok": False,
         "error": "RuntimeError: CUDA_ERROR_ILLEGAL_ADDRESS"},
    ],
    "problems": ["a 512x512 matmul on /GPU:0 (Tesla T4) failed: RuntimeError: CUDA_ERROR_ILLEGAL_ADDRESS"],
}


def test_quick_checks_are_read_apart_from_benches():
    report = {"hosts": {"n1": {"data": {"gpu_check": CHECK}}, "n2": {"data": {"bench": BENCH}}, "n3": {}}}
    assert bench.checks(report) == {"n1": CHECK}
    assert list(bench.results(report)) == ["n2"]


def test_check_table_has_a_row_per_device_and_the_problems():
    console = Console(width=240, record=True)
    console.print(terminal.check_table({"n1": CHECK}))
    lines = console.export_text().splitlines()
    assert any("error vs NumPy (relative)" in line for line in lines)  # a relative error, not a speed ratio
    [cpu] = [[cell.strip() for cell in line.split("│")] for line in lines if "/CPU:0" in line]
    assert cpu[1:8] == ["n1", "2.21.0", "/CPU:0 x86_64", "512", "61.2", "2.0e-07", "ok"]
    [gpu] = [[cell.strip() for cell in line.split("│")] for line in lines if "/GPU:0 Tesla T4" in line]
    assert gpu[5:8] == ["-", "-", "RuntimeError: CUDA_ERROR_ILLEGAL_ADDRESS"]
    assert any("a 512x512 matmul on /GPU:0 (Tesla T4) failed" in line for line in lines)


def test_a_reused_check_says_when_it_ran():
    passed = {**CHECK, "results": CHECK["results"][:1], "problems": [], "reused_from": "2026-11-27T16:14:15Z"}
    console = Console(width=240, record=True)
    console.print(terminal.check_table({"n1": passed}))
    [cpu] = [line for line in console.export_text().splitlines() if "/CPU:0" in line]
    assert "ok (checked 2026-11-27T16:14:15Z)" in cpu
    assert bench.reused_note(CHECK) == ""  # a check that ran in this run says nothing more
