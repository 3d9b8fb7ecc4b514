"""Every refusal of `tfprov run node` happens before any change on the node, and reaches the user as one line.

A fresh local node is snapshotted (file metadata under /etc, /opt, the keyrings, apt's lists and the download cache,
plus dpkg's selections); after each bad input the snapshot must be identical.
"""

import json
import os
import re
import subprocess
import sys
import tempfile
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
TFPROV = str(Path(sys.executable).parent / "tfprov")
NODE = "tfprov-itest-1"
INVENTORY = "inventories/local.docker_containers.yml"
SNAPSHOT = (
    "find /etc /opt /usr/share/keyrings /var/lib/apt/lists /var/cache/tfprov -xdev "
    "-printf '%p %s %T@ %m %l\\n' 2>/dev/null | sort; dpkg --get-selections"
)
BAKE = {"nvidia_driver_mode": "bake"}  # a CPU node installs the GPU stack only when baking an image


def tfprov(*args, runs_dir):
    env = {**os.environ, "TFPROV_RUNS_DIR": str(runs_dir)}
    return subprocess.run([TFPROV, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


def snapshot():
    return subprocess.run(["docker", "exec", NODE, "sh", "-c", SNAPSHOT], capture_output=True, text=True,
                          check=True).stdout


@pytest.fixture(scope="module")
def fresh_node(tmp_path_factory):
    runs = tmp_path_factory.mktemp("runs")
    subprocess.run([TFPROV, "down", "local"], cwd=ROOT, capture_output=True)
    # The host's network: the stand-in NVIDIA repository below is served on the host's loopback.
    proc = tfprov("up", "local", "--nodes", "1", "--network", "host", runs_dir=runs)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    yield runs, snapshot()
    tfprov("down", "local", runs_dir=runs)


@pytest.fixture(scope="module")
def wrong_key_repo():
    """A repository tree on 127.0.0.1 whose key is a throw-away one, not NVIDIA's."""
    with tempfile.TemporaryDirectory() as www:
        gnupg = Path(www) / "gnupg"
        gnupg.mkdir(mode=0o700)
        gpg = ["gpg", "--batch", "--homedir", str(gnupg)]
        subprocess.run([*gpg, "--passphrase", "", "--quick-gen-key", "tfprov test <t@tfprov.invalid>", "default",
                        "default", "never"], check=True, capture_output=True)
        key = subprocess.run([*gpg, "--armor", "--export"], check=True, capture_output=True).stdout
        for distro in ("debian12", "debian13"):
            (Path(www) / "repos" / distro / "x86_64").mkdir(parents=True)
            (Path(www) / "repos" / distro / "x86_64" / "3bf863cc.pub").write_bytes(key)
        handler = partial(SimpleHTTPRequestHandler, directory=www)
        handler.log_message = lambda *a: None
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        yield f"http://127.0.0.1:{server.server_port}/repos"
        server.shutdown()


CASES = {
    "unknown TensorFlow": ({"tfprov_tf_version": "2.99"}, "TensorFlow 2.99 is not in the compatibility matrix"),
    "unknown CUDA method": ({**BAKE, "cuda_method": "magic"}, "cuda_method"),
    "unknown TensorFlow build": ({"tensorflow_gpu_variant": "quantum"}, "tensorflow_gpu_variant"),
    "tarball without checksum": ({**BAKE, "cudnn_method": "tarball"}, "needs cudnn_tarball_checksum"),
    "runfile without URL": ({**BAKE, "nvidia_driver_method": "runfile"}, "needs nvidia_driver_runfile_url"),
    "CUDA of another major": ({**BAKE, "tfprov_cuda_version": "11.8"}, "has another major version"),
    "cuDNN of another major": ({**BAKE, "tfprov_cudnn_version": "8.9"}, "has another major version"),
    "distribution CUDA of another major": ({**BAKE, "cuda_method": "distro"}, "Debian 12 .*CUDA 11"),
    "driver branch too old": ({**BAKE, "nvidia_driver_method": "cuda_repo", "nvidia_driver_branch": "470"},
                              "470"),
    "empty key fingerprint": ({**BAKE, "nvidia_driver_method": "cuda_repo", "nvidia_driver_repo_key_fingerprint": ""},
                              "fingerprint is empty"),
    "Miniconda checksum malformed": ({"tfprov_tf_manager": "conda", "miniconda_checksum": "md5:abc"},
                                     "no sha256 for Miniconda|miniconda_checksum"),
    "wheelhouse that is not there": ({"tfprov_pip_find_links": "/no/such/wheelhouse"},
                                     "tensorflow_gpu_pip_find_links \\(tfprov_pip_find_links\\) /no/such/wheelhouse "
                                     "does not exist on the node"),
    "wheelhouse URL that does not answer": ({"tfprov_pip_find_links": "http://127.0.0.1:9/wheels"},
                                            "http://127.0.0.1:9/wheels does not answer from the node"),
    "Miniconda installer that does not answer": (
        {"tfprov_tf_manager": "conda", "miniconda_checksum": "sha256:" + "a" * 64,
         "miniconda_installer_url": "http://127.0.0.1:9/Miniconda3-x.sh"},
        "miniconda_installer_url .* http://127.0.0.1:9/Miniconda3-x.sh does not answer from the node"),
    "driver installer that does not answer": (
        {**BAKE, "nvidia_driver_method": "runfile", "nvidia_driver_runfile_checksum": "sha256:" + "a" * 64,
         "nvidia_driver_runfile_url": "http://127.0.0.1:9/NVIDIA-Linux-x86_64-580.95.05.run"},
        "nvidia_driver_runfile_url http://127.0.0.1:9/NVIDIA-Linux-x86_64-580.95.05.run does not answer from the node"),
    "cuDNN archive that does not answer": (
        {**BAKE, "cudnn_method": "tarball", "cudnn_tarball_checksum": "sha256:" + "a" * 64,
         "cudnn_tarball_url": "ftp://127.0.0.1:9/cudnn-linux-x86_64-9.3.0.75_cuda12-archive.tar.xz"},
        "cudnn_tarball_url .* ftp://127.0.0.1:9/cudnn-linux-x86_64-9.3.0.75_cuda12-archive.tar.xz does not answer"),
    "notebook port out of range": ({"tensorflow_gpu_notebook": True, "tensorflow_gpu_notebook_port": 70000},
                                   "tensorflow_gpu_notebook_port 70000 is not a TCP port"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_refusal_changes_nothing_and_says_why_in_one_line(fresh_node, case):
    runs, before = fresh_node
    extra, expected = CASES[case]
    proc = tfprov("run", "node", "-i", INVENTORY, "-e", json.dumps(extra), runs_dir=runs)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 2, output[-3000:]  # bad input, refused before any change: not 4, a host failing
    lines = [line for line in output.splitlines() if re.search(expected, line)]
    assert lines, f"no line says {expected!r}:\n{output[-3000:]}"
    refused = [line for line in proc.stderr.splitlines() if line.startswith("tfprov: error: refused before any change")]
    assert len(refused) == 1 and re.search(expected, refused[0]), proc.stderr[-2000:]
    assert "Finalization of task args" not in output and "Traceback" not in output, output[-3000:]
    assert snapshot() == before, f"{case}: the node changed"


def test_a_key_that_is_not_nvidias_is_refused_before_any_change(fresh_node, wrong_key_repo):
    runs, before = fresh_node
    extra = {**BAKE, "cuda_method": "nvidia_repo", "tfprov_nvidia_repo_base_url": wrong_key_repo}
    proc = tfprov("run", "node", "-i", INVENTORY, "-e", json.dumps(extra), runs_dir=runs)
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0, output[-3000:]
    assert "not EB693B3035CD5710E231E123A4B469963BF863CC" in output, output[-3000:]
    assert snapshot() == before, "the node changed"


def test_check_mode_on_a_fresh_node_passes_lists_changes_and_writes_nothing(fresh_node):
    runs, before = fresh_node
    proc = tfprov("run", "node", "-C", "-i", INVENTORY, runs_dir=runs)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-4000:]
    report = json.loads(sorted(Path(runs).glob("*/report.json"))[-1].read_text())
    assert report["check"] is True
    assert report["hosts"][NODE]["changed"] > 0, report["hosts"][NODE]
    assert snapshot() == before, "--check changed the node"
