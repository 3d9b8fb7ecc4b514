"""roles/tensorflow_gpu/files/gpu_check.py, the quick check and the bench: its arithmetic and report, with a stand-in
TensorFlow (the real one runs in molecule/integration)."""

import importlib.util
import json
import sys
import types
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parents[2] / "roles" / "tensorflow_gpu" / "files" / "gpu_check.py"
SPEC = importlib.util.spec_from_file_location("gpu_check", SCRIPT)
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
    tf.sysconfig = types.SimpleNamespace(
        get_build_info=lambda: {"cuda_version": "12.5.1", "cudnn_version": "9"} if built_with_cuda else {})
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


class FakeTensor:
    def __init__(self, value, device):
        self.value, self.device = value, f"/job:localhost/replica:0/task:0/device:{device}"

    def numpy(self):
        return self.value


def add_fake_matmul(monkeypatch, *, runs_on=None, wrong_on=(), broken_on=()):
    """tf.device/constant/linalg.matmul on NumPy: a device may place elsewhere, compute wrong, or raise."""
    import contextlib

    import numpy as np

    tf = sys.modules["tensorflow"]
    current = []

    @contextlib.contextmanager
    def device(name):
        current.append(name.strip("/"))
        yield
        current.pop()

    def matmul(x, y):
        name = current[-1]
        if name in broken_on:
            raise RuntimeError("CUDA_ERROR_ILLEGAL_ADDRESS\nmore lines")
        product = np.asarray(x) @ np.asarray(y)
        return FakeTensor(product * 1.5 if name in wrong_on else product, (runs_on or {}).get(name, name))

    tf.device, tf.constant = device, np.asarray
    tf.linalg = types.SimpleNamespace(matmul=matmul)


def one_gpu(monkeypatch, **fakes):
    fake_tensorflow(monkeypatch, gpus=[types.SimpleNamespace(name="/physical_device:GPU:0")], built_with_cuda=True)
    add_fake_matmul(monkeypatch, **fakes)


def quick_report(capsys, *argv):
    rc = gpu_check.main(["--quick", "--quick-size", "64", *argv])
    [line] = capsys.readouterr().out.splitlines()  # one line: a playbook takes the last line of mixed output
    return rc, __import__("json").loads(line)


def test_quick_runs_one_checked_matmul_per_device_and_no_sweep(monkeypatch, capsys):
    one_gpu(monkeypatch)
    monkeypatch.setattr(gpu_check, "numpy_gflops", lambda *a: pytest.fail("the quick check times no NumPy sweep"))
    monkeypatch.setattr(gpu_check, "tf_matmul_seconds", lambda *a: pytest.fail("the quick check runs no sweep"))
    rc, report = quick_report(capsys, "--require-gpu")
    assert rc == 0 and report["mode"] == "quick" and report["problems"] == []
    assert [(r["device"], r["dtype"], r["n"], r["ok"]) for r in report["results"]] == [
        ("/CPU:0", "float32", 64, True), ("/GPU:0", "float32", 64, True)]
    assert all(r["relative_error"] < 1e-6 and r["gflops"] > 0 for r in report["results"])
    assert report["numpy"] == [] and "cpu_vs_numpy" not in report
    assert report["tensorflow"] == {"version": "2.21.0", "built_with_cuda": True, "cuda_build": "12.5.1",
                                    "cudnn_build": "9", "gpus_visible": 1, "tf32": True}


def test_quick_fails_a_gpu_that_computes_wrong(monkeypatch, capsys):
    one_gpu(monkeypatch, wrong_on={"GPU:0"})
    rc, report = quick_report(capsys)
    assert rc == 3
    assert [r["ok"] for r in report["results"]] == [True, False]
    [problem] = report["problems"]
    assert problem.startswith("a 64x64 matmul on /GPU:0 (Tesla T4) differs from NumPy's by 0.5 (relative")


def test_quick_fails_a_gpu_whose_matmul_raises_with_the_first_line_of_the_error(monkeypatch, capsys):
    one_gpu(monkeypatch, broken_on={"GPU:0"})
    rc, report = quick_report(capsys)
    assert rc == 3
    assert report["problems"] == [
        "a 64x64 matmul on /GPU:0 (Tesla T4) failed: RuntimeError: CUDA_ERROR_ILLEGAL_ADDRESS"]
    assert report["results"][0]["ok"] is True and "gflops" not in report["results"][1]


def test_quick_fails_a_matmul_placed_on_another_device(monkeypatch, capsys):
    one_gpu(monkeypatch, runs_on={"GPU:0": "CPU:0"})
    rc, report = quick_report(capsys)
    assert rc == 3
    assert report["problems"] == ["a 64x64 matmul meant for /GPU:0 (Tesla T4) ran on CPU:0"]


def test_quick_on_a_gpu_node_without_a_visible_gpu_still_says_why(monkeypatch, capsys):
    fake_tensorflow(monkeypatch)
    add_fake_matmul(monkeypatch)
    rc, report = quick_report(capsys, "--require-gpu")
    assert rc == 3 and report["results"] == []
    assert report["problems"][0].startswith(
        "a GPU is required but TensorFlow sees none: this TensorFlow is a CPU build")


def test_quick_on_a_cpu_node_checks_the_cpu(monkeypatch, capsys):
    fake_tensorflow(monkeypatch)
    add_fake_matmul(monkeypatch)
    rc, report = quick_report(capsys)
    assert rc == 0 and [r["device"] for r in report["results"]] == ["/CPU:0"]


def test_the_sweep_prints_its_report_on_one_line(monkeypatch, capsys):
    # bench.yml takes the last line that starts with '{': log lines a terminal mixes into stdout come before it.
    fake_tensorflow(monkeypatch)
    gpu_check.main(["--require-gpu", "--host", "n1"])
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["host"] == "n1"


def test_a_passing_check_is_recorded_for_the_role_to_reuse_and_a_failing_one_is_not(monkeypatch, capsys, tmp_path):
    record = tmp_path / "tfprov-gpu-check.json"
    record.write_text("an older record\n")
    one_gpu(monkeypatch, wrong_on={"GPU:0"})
    rc, _ = quick_report(capsys, "--record", str(record), "--record-key", "k1")
    assert rc == 3 and record.read_text() == "an older record\n"  # a failed check leaves no record of a pass
    one_gpu(monkeypatch)
    rc, report = quick_report(capsys, "--record", str(record), "--record-key", "k1")
    written = json.loads(record.read_text())
    assert rc == 0 and oct(record.stat().st_mode & 0o777) == "0o644" and not list(tmp_path.glob("*.partial"))
    # What the role's vars/main.yml reads back: the key, the environment's digest, the age and the result itself.
    assert written["key"] == "k1" and written["result"] == report
    assert written["digest"] == report["environment_digest"]
    assert isinstance(written["checked_epoch"], int) and written["checked_at"].endswith("Z")


def test_a_record_that_cannot_be_written_fails_the_check_with_one_line(monkeypatch, capsys, tmp_path):
    fake_tensorflow(monkeypatch)
    add_fake_matmul(monkeypatch)
    rc = gpu_check.main(["--quick", "--quick-size", "64", "--record", str(tmp_path / "gone" / "r.json"),
                         "--record-key", "k1"])
    captured = capsys.readouterr()
    assert rc == 4 and json.loads(captured.out)["problems"] == []
    assert captured.err.startswith(f"gpu_check: cannot record the check in {tmp_path / 'gone' / 'r.json'}: ")


def test_record_and_its_key_go_together(capsys):
    with pytest.raises(SystemExit):
        gpu_check.main(["--quick", "--record", "/tmp/r.json"])
    assert "--record and --record-key go together" in capsys.readouterr().err
