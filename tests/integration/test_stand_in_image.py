"""The TF Serving stand-in image against the example model: REST and the official gRPC client answer the right
digits, a new version directory is picked up, a corrupt one is reported with the loader's error, and start-up
fails like the real server's. Needs a Docker engine and tfprov/node:bookworm (`tfprov images`) and the wheelhouse
(tests/support/wheelhouse.py); the image is built (or reused) here."""

import json
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from rich.console import Console

from tfprov.local.serving_image import build_serving_image

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "digits"
SAMPLES = json.loads((EXAMPLE / "samples.json").read_text())["samples"]
CLIENT = ROOT / "tests" / "support" / "serving_stand_in" / "grpc_client.py"
PREFIX = "tfprov-test-serving"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url: str):
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            return answer.status, json.load(answer)
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def post(url: str, body: dict):
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, json.load(answer)
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def wait_for(check, timeout: float = 180, what: str = "condition"):
    deadline, last = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        try:
            last = check()
            if last:
                return last
        except (OSError, ValueError) as exc:
            last = exc
        time.sleep(1)
    raise AssertionError(f"timed out waiting for {what}: last {last!r}")


def states(rest: str) -> dict[int, dict]:
    code, body = get(f"{rest}/v1/models/digits")
    assert code == 200, body
    return {int(v["version"]): v for v in body["model_version_status"]}


def add_version(base: Path, version: int, source: Path | None = None, corrupt: bool = False) -> None:
    """Write beside, then rename: the server polls every second and must not see half a version."""
    tmp = base / f"{version}.tmp"
    shutil.copytree(source or EXAMPLE / "export" / "digits" / "1", tmp)
    if corrupt:
        (tmp / "saved_model.pb").write_bytes(b"this is not a SavedModel protobuf")
    tmp.rename(base / str(version))


def logs(container: str) -> str:
    proc = subprocess.run(["docker", "logs", container], capture_output=True, text=True)
    return proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def image():
    if not shutil.which("docker") or subprocess.run(["docker", "info"], capture_output=True).returncode:
        pytest.skip("no Docker engine")
    name, archive = build_serving_image(None, Console(stderr=True))
    assert archive.is_file()
    return name


def run_server(image: str, name: str, models: Path, config: Path, *flags: str) -> str:
    container = f"{PREFIX}-{name}"
    subprocess.run(["docker", "rm", "-f", container], capture_output=True)
    subprocess.run(["docker", "run", "-d", "--name", container, "--network", "host",
                    "-v", f"{models}:/models:ro", "-v", f"{config}:/etc/tfprov/serving:ro", image, *flags],
                   check=True, capture_output=True)
    return container


@pytest.fixture(scope="module")
def server(image, tmp_path_factory):
    """The stand-in serving a copy of the example model, as the tf_serving role runs it."""
    models, config = tmp_path_factory.mktemp("models"), tmp_path_factory.mktemp("config")
    (models / "digits").mkdir()
    add_version(models / "digits", 1)
    (config / "models.config").write_text(
        'model_config_list {\n  config {\n    name: "digits"\n    base_path: "/models/digits"\n'
        '    model_platform: "tensorflow"\n    model_version_policy { latest { num_versions: 1 } }\n  }\n}\n')
    (config / "batching.config").write_text("max_batch_size { value: 32 }\nbatch_timeout_micros { value: 1000 }\n")
    (config / "monitoring.config").write_text('prometheus_config { enable: true, path: "/metrics" }\n')
    grpc_port, rest_port = free_port(), free_port()
    container = run_server(image, "main", models, config, f"--port={grpc_port}", f"--rest_api_port={rest_port}",
                           "--model_config_file=/etc/tfprov/serving/models.config",
                           "--model_config_file_poll_wait_seconds=0", "--file_system_poll_wait_seconds=1",
                           "--enable_batching", "--batching_parameters_file=/etc/tfprov/serving/batching.config",
                           "--monitoring_config_file=/etc/tfprov/serving/monitoring.config")
    rest = f"http://127.0.0.1:{rest_port}"
    started = time.monotonic()
    try:
        wait_for(lambda: states(rest).get(1, {}).get("state") == "AVAILABLE", what="version 1 AVAILABLE")
        print(f"\nstand-in serving in {time.monotonic() - started:.1f} s")
        yield {"rest": rest, "grpc": f"127.0.0.1:{grpc_port}", "models": models / "digits", "container": container,
               "image": image}
    finally:
        print(logs(container)[-3000:], file=sys.stderr)
        subprocess.run(["docker", "rm", "-f", container], capture_output=True)


def grpc_client(image: str, target: str, *args: str) -> dict:
    """The official tensorflow-serving-api client, run with the image's Python (it needs TensorFlow)."""
    proc = subprocess.run(["docker", "run", "--rm", "-i", "--network", "host",
                           "--entrypoint", "/opt/tfserving/bin/python", "-v", f"{EXAMPLE}:/digits:ro", image,
                           "-", "--target", target, *args],
                          input=CLIENT.read_text(), capture_output=True, text=True, timeout=300)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    assert lines, proc.stdout + proc.stderr
    return json.loads(lines[-1])


def test_rest_status_is_the_real_body(server):
    code, body = get(f"{server['rest']}/v1/models/digits")
    assert code == 200
    assert body == {"model_version_status": [{"version": "1", "state": "AVAILABLE",
                                              "status": {"error_code": "OK", "error_message": ""}}]}
    assert get(f"{server['rest']}/v1/models/nope")[0] == 404


def test_rest_predict_answers_the_right_digits(server):
    code, body = post(f"{server['rest']}/v1/models/digits:predict", {"instances": [s["pixels"] for s in SAMPLES]})
    assert code == 200, body
    answers = [max(range(10), key=row.__getitem__) for row in body["predictions"]]
    assert answers == [s["label"] for s in SAMPLES]
    code, body = post(f"{server['rest']}/v1/models/digits/versions/1:predict",
                      {"signature_name": "serving_default", "inputs": {"pixels": [SAMPLES[3]["pixels"]]}})
    assert code == 200 and max(range(10), key=body["outputs"][0].__getitem__) == SAMPLES[3]["label"]
    code, body = post(f"{server['rest']}/v1/models/digits:predict", {"nothing": []})
    assert code == 400 and "error" in body


def test_rest_metadata_names_the_signature(server):
    code, body = get(f"{server['rest']}/v1/models/digits/metadata")
    assert code == 200
    signature = body["metadata"]["signature_def"]["signature_def"]["serving_default"]
    assert signature["inputs"]["pixels"]["dtype"] == "DT_FLOAT"
    assert [d["size"] for d in signature["inputs"]["pixels"]["tensor_shape"]["dim"]] == ["-1", "64"]
    assert signature["method_name"] == "tensorflow/serving/predict"


def test_prometheus_metrics_on_the_rest_port(server):
    with urllib.request.urlopen(f"{server['rest']}/metrics", timeout=5) as answer:
        assert ":tensorflow:serving:request_count" in answer.read().decode()


def test_the_official_grpc_client_gets_status_and_the_right_digits(server):
    result = grpc_client(server["image"], server["grpc"], "--samples", "/digits/samples.json")
    assert "error" not in result, result
    assert result["status"][0]["state"] == "AVAILABLE" and result["correct"] is True
    assert result["predictions"] == [s["label"] for s in SAMPLES]


def test_a_new_version_directory_is_picked_up(server):
    add_version(server["models"], 2)
    found = wait_for(lambda: (s := states(server["rest"])).get(2, {}).get("state") == "AVAILABLE"
                     and s[1]["state"] == "END" and s, timeout=120, what="version 2 AVAILABLE, 1 END")
    assert found[1]["status"]["error_code"] == "OK"  # unloaded, not failed
    result = grpc_client(server["image"], server["grpc"], "--samples", "/digits/samples.json")
    assert result["version"] == 2 and result["correct"] is True, result


def test_a_corrupt_version_ends_with_the_loader_error(server):
    add_version(server["models"], 3, corrupt=True)
    found = wait_for(lambda: (s := states(server["rest"])).get(3, {}).get("state") == "END" and s,
                     timeout=120, what="version 3 END")
    status = found[3]["status"]
    assert status["error_code"] != "OK"
    assert "/models/digits/3/saved_model.pb" in status["error_message"], status
    assert found[2]["state"] == "AVAILABLE"  # the working version keeps serving
    assert "Loading servable: {name: digits version: 3} failed" in logs(server["container"])
    code, body = get(f"{server['rest']}/v1/models/digits/versions/3")
    assert code == 200 and body["model_version_status"][0]["state"] == "END"


def test_start_up_waits_for_a_base_path_without_versions(image, tmp_path):
    (tmp_path / "models" / "empty").mkdir(parents=True)
    (tmp_path / "config").mkdir()
    rest_port = free_port()
    container = run_server(image, "empty", tmp_path / "models", tmp_path / "config", f"--port={free_port()}",
                           f"--rest_api_port={rest_port}", "--model_name=empty", "--model_base_path=/models/empty")
    try:
        wait_for(lambda: "No versions of servable empty found under base path /models/empty" in logs(container),
                 timeout=120, what="the no-versions warning")
        with pytest.raises(OSError):  # like the real server: no port before the models are loaded
            socket.create_connection(("127.0.0.1", rest_port), timeout=2).close()
    finally:
        subprocess.run(["docker", "rm", "-f", container], capture_output=True)


def test_start_up_fails_when_the_only_version_is_corrupt(image, tmp_path):
    (tmp_path / "models" / "bad").mkdir(parents=True)
    (tmp_path / "config").mkdir()
    add_version(tmp_path / "models" / "bad", 1, corrupt=True)
    container = run_server(image, "bad", tmp_path / "models", tmp_path / "config", f"--port={free_port()}",
                           f"--rest_api_port={free_port()}", "--model_name=bad", "--model_base_path=/models/bad")
    try:
        code = subprocess.run(["docker", "wait", container], capture_output=True, text=True, timeout=180).stdout
        assert code.strip() == "255"
        assert "Failed to start server. Error: UNKNOWN: 1 servable(s) did not become available" in logs(container)
    finally:
        subprocess.run(["docker", "rm", "-f", container], capture_output=True)
