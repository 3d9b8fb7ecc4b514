"""bench/allreduce_local.py's pure part (its TensorFlow part ran in a node container on logical CPU devices; NCCL on
GPUs never ran here), and the matrix's figure the gate holds a node's GPUs to."""

import importlib.util
import json
from pathlib import Path

import pytest
from ansible_collections.tfprov.gpu.plugins.filter.compat import allreduce_expected

SPEC = importlib.util.spec_from_file_location("allreduce_local",
                                              Path(__file__).parents[3] / "bench" / "allreduce_local.py")
allreduce_local = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(allreduce_local)


def test_bus_bandwidth_of_eight_gpus():
    algbw, busbw = allreduce_local.bus_bandwidth(256 * 2**20, 0.002, 8)
    assert round(algbw, 1) == 134.2 and round(busbw, 1) == 234.9  # 2(n-1)/n = 1.75


def test_the_verdict_against_the_boards_figure():
    assert allreduce_local.verdict(220.0, 230, 0.7) == (95.7, None)
    percent, problem = allreduce_local.verdict(61.0, 230, 0.7)
    assert percent == 26.5 and problem.startswith("all-reduce across the node's GPUs: bus bandwidth 61.0 GB/s is "
                                                  "26.5 % of the 230 GB/s expected, below 70 %")
    assert allreduce_local.verdict(61.0, None, 0.7) == (None, None)


def test_one_json_line_even_when_tensorflow_is_missing(capsys, monkeypatch):
    monkeypatch.setattr(allreduce_local, "run", lambda args: (_ for _ in ()).throw(ImportError("No module named x")))
    assert allreduce_local.main([]) == 1
    report = json.loads(capsys.readouterr().out)["tfprov_allreduce_local"]
    assert report == {"ok": False, "problem": "all-reduce across the node's devices failed: ImportError: No module "
                                              "named x"}


@pytest.mark.parametrize("argv", [["--mb", "0"], ["--reps", "0"], ["--min-fraction", "2"], ["--expected-gbps", "-1"]])
def test_bad_settings_are_refused(argv, capsys):
    with pytest.raises(SystemExit):
        allreduce_local.parse_args(argv)
    assert "--mb and --expected-gbps must be above 0" in capsys.readouterr().err


@pytest.mark.parametrize(("instance_type", "figure"), [
    ("p4d.24xlarge", 230), ("p4de.24xlarge", 230), ("p3.16xlarge", None), ("g4dn.12xlarge", None),
    ("m5.xlarge", None), ("", None)])
def test_the_matrix_gives_a_figure_only_where_a_source_does(instance_type, figure):
    assert allreduce_expected(instance_type) == figure
