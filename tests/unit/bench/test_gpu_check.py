"""The bench's arithmetic and report, with a stand-in TensorFlow (the real one runs in molecule/integration)."""

import importlib.util
import sys
import types
from pathlib import Path

import pytest

SPEC = importlib.util.spec_from_file_location("gpu_check", Path(__file__).parents[3] / "bench" / "gpu_check.py")
gpu_check = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(gpu_check)

H100 = {"NVIDIA H100 80GB HBM3": {"fp32": 67, "tf32": 494.5, "bf16": 989.5, "fp16": 989.5}}


def test_gflops_of_a_matmul():
    assert gpu_check.gflops(1000, 1.0) == pytest.approx(2.0)
    assert gpu_check.gflops(4096, 0.5) == pytest.approx(2 * 4096**3 / 0.5 / 1e9)


def test_percent_of_peak():
    assert gpu_check.percent_of_peak(494_500.0, 989.5) == 50.0
    assert gpu_check.percent_of_peak(100.0, None) is None


@pytest.mark.parametrize(("dtype", "tf32", "expected"), [
    ("float32", True, ("tf32", 494.5)), ("float32", False, ("fp32", 67)),
    ("bfloat16", True, ("bf16", 989.5)), ("float16", False, ("fp16", 989.5)),
])
def test_peak_for_h100(dtype, tf32, expected):
    assert gpu_check.peak_for(H100, "NVIDIA H100 80GB HBM3", dtype, tf32) == expected


def test_no_peak_for_an_unknown_gpu_or_missing_unit():
    assert gpu_check.peak_for(H100, "Radeon", "float32", True) == (None, None)
    t4 = {"Tesla T4": {"fp32": 8.1, "tf32": None, "fp16": 65, "bf16": None}}
    assert gpu_check.peak_for(t4, "Tesla T4", "float32", True) == ("fp32", 8.1)
    assert gpu_check.peak_for(t4, "Tesla T4", "bfloat16", True) == (None, None)


def test_time_median_warms_up_then_takes_the_median():
    calls = []
    assert gpu_check.time_median(lambda: calls.append(1), repeats=5, warmup=2) >= 0
    assert len(calls) == 7


def fake_tensorflow(monkeypatch, gpus=(), built_with_cuda=False):
    tf = types.ModuleType("tensorflow")
    tf.__version__ = "2.21.0"
    tf.config = types.SimpleNamespace(
        threading=types.SimpleNamespace(set_inter_op_parallelism_threads=lambda n: None),
        list_physical_devices=lambda kind: list(gpus),
        experimental=types.SimpleNamespace(tensor_float_32_execution_enabled=lambda: True,
                                           get_device_details=lambda gpu: {"device_name": "Tesla T4",
                                                                           "compute_capability": (7, 5)}))
    tf.test = types.SimpleNamespace(is_built_with_cuda=lambda: built_with_cuda)
    monkeypatch.setitem(sys.modules, "tensorflow", tf)


def test_require_gpu_on_a_cpu_build_says_so_and_exits_3(monkeypatch, capsys):
    fake_tensorflow(monkeypatch)
    assert gpu_check.main(["--require-gpu", "--host", "n1"]) == 3
    out = capsys.readouterr().out
    assert "a GPU is required but TensorFlow sees none: this TensorFlow is a CPU build" in out


def test_require_gpu_without_a_driver(monkeypatch, capsys):
    fake_tensorflow(monkeypatch, built_with_cuda=True)
    monkeypatch.setattr(gpu_check.os.path, "exists", lambda path: False)
    assert gpu_check.main(["--require-gpu"]) == 3
    assert "no NVIDIA driver is loaded" in capsys.readouterr().out


def test_report_shape_with_stubbed_timings(monkeypatch, tmp_path):
    fake_tensorflow(monkeypatch, gpus=[types.SimpleNamespace(name="/physical_device:GPU:0")], built_with_cuda=True)
    monkeypatch.setattr(gpu_check, "tf_matmul_seconds", lambda tf, dev, dtype, n, r, w: 0.01 if "GPU" in dev else 1.0)
    monkeypatch.setattr(gpu_check, "numpy_gflops", lambda n, r, w: gpu_check.gflops(n, 0.8))
    out = tmp_path / "r.json"
    peaks = '{"Tesla T4": {"fp32": 8.1, "tf32": null, "fp16": 65, "bf16": null}}'
    assert gpu_check.main(["--sizes", "1024", "--peaks", peaks, "--out", str(out)]) == 0
    report = __import__("json").loads(out.read_text())
    assert [d["device"] for d in report["devices"]] == ["/CPU:0", "/GPU:0"]
    gpu_rows = {r["dtype"]: r for r in report["results"] if r["device"] == "/GPU:0"}
    assert set(gpu_rows) == {"float32", "bfloat16", "float16"}
    assert gpu_rows["float32"]["peak"] == "fp32" and gpu_rows["float32"]["percent_of_peak"] == pytest.approx(2.7, 0.1)
    assert gpu_rows["bfloat16"]["percent_of_peak"] is None
    assert report["cpu_vs_numpy"] == 0.8 and report["cpu_vs_numpy_by_size"] == {"1024": 0.8}
