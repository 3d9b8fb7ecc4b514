"""cuda_libs loads real shared objects: tiny stand-ins built with the C compiler export the version calls."""

import json
import shutil
import subprocess

import pytest
from ansible.module_utils.testing import patch_module_args
from ansible_collections.tfprov.gpu.plugins.module_utils.cuda_libs import decode_version, probe
from ansible_collections.tfprov.gpu.plugins.modules import cuda_libs_facts

pytestmark = pytest.mark.skipif(not shutil.which("cc"), reason="needs a C compiler to build stand-in libraries")


def run_command(argv):
    """The module's run_command, as probe calls it."""
    done = subprocess.run(argv, capture_output=True, text=True, errors="replace", check=False)
    return done.returncode, done.stdout, done.stderr


def build(directory, soname, source):
    directory.mkdir(parents=True, exist_ok=True)
    src = directory / "stub.c"
    src.write_text(source)
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(directory / soname), str(src)], check=True)
    src.unlink()


def test_cudart_version_is_read_through_dlopen(tmp_path):
    build(tmp_path / "lib", "libcudart.so.12", "int cudaRuntimeGetVersion(int *v) { *v = 12050; return 0; }")
    assert probe("cudart", [str(tmp_path / "lib")], run_command) == {"path": str(tmp_path / "lib" / "libcudart.so.12"),
                                                       "version": "12.5"}


def test_cudnn_9_version(tmp_path):
    build(tmp_path, "libcudnn.so.9", "#include <stddef.h>\nsize_t cudnnGetVersion(void) { return 90300; }")
    assert probe("cudnn", [str(tmp_path)], run_command)["version"] == "9.3.0"


def test_a_failing_runtime_is_an_error_not_a_version(tmp_path):
    build(tmp_path, "libcudart.so.12", "int cudaRuntimeGetVersion(int *v) { return 35; }")
    assert "returned error 35" in probe("cudart", [str(tmp_path)], run_command)["error"]


def test_missing_library_says_so(tmp_path):
    result = probe("cudnn", [str(tmp_path)], run_command)
    assert "version" not in result and result["error"]


@pytest.mark.parametrize(("lib", "number", "text"), [
    ("cudart", 11080, "11.8"), ("cudart", 12090, "12.9"), ("cudart", 13000, "13.0"),
    ("cudnn", 8907, "8.9.7"), ("cudnn", 90300, "9.3.0"), ("cudnn", 91001, "9.10.1"),
])
def test_decode_version(lib, number, text):
    assert decode_version(lib, number) == text


def test_a_library_that_aborts_while_loading_is_an_error(tmp_path):
    build(tmp_path, "libcudnn.so.9", "#include <stdlib.h>\n#include <stddef.h>\n"
          "__attribute__((constructor)) static void boom(void) { abort(); }\n"
          "size_t cudnnGetVersion(void) { return 90300; }")
    assert "error" in probe("cudnn", [str(tmp_path)], run_command)


def test_the_module_loads_each_copy_through_its_run_command(tmp_path, capsys):
    build(tmp_path, "libcudart.so.12", "int cudaRuntimeGetVersion(int *v) { *v = 12050; return 0; }")
    build(tmp_path, "libcudnn.so.9", "#include <stdlib.h>\n#include <stddef.h>\n"
          "__attribute__((constructor)) static void boom(void) { abort(); }\n"
          "size_t cudnnGetVersion(void) { return 90300; }")
    with patch_module_args({"search_paths": [str(tmp_path)]}), pytest.raises(SystemExit):
        cuda_libs_facts.main()
    result = json.loads(capsys.readouterr().out)
    assert result["libraries"]["cudart"] == {"path": str(tmp_path / "libcudart.so.12"), "version": "12.5"}
    assert "version" not in result["libraries"]["cudnn"] and result["libraries"]["cudnn"]["error"]
