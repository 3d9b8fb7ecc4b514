"""roles/tf_serving/files/serving_probe.py against a small REST server on 127.0.0.1 that answers as TF Serving."""

import base64
import importlib.util
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
SPEC = importlib.util.spec_from_file_location("serving_probe", ROOT / "roles" / "tf_serving" / "files" /
                                              "serving_probe.py")
probe = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(probe)

OK = {"error_code": "OK", "error_message": ""}
STATES = {
    "digits": [{"version": "2", "state": "AVAILABLE", "status": OK}, {"version": "1", "state": "END", "status": OK}],
    "broken": [{"version": "3", "state": "END", "status": {"error_code": "DATA_LOSS", "error_message":
                "Can't parse /models/broken/3/saved_model.pb as binary proto"}}],
    "slow": [{"version": "1", "state": "LOADING", "status": OK}],
}


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def _send(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        name = self.path.rsplit("/", 1)[-1]
        if name in STATES:
            self._send(200, {"model_version_status": STATES[name]})
        else:
            self._send(404, {"error": f"Servable not found for request: Latest({name})"})

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if "/versions/2:predict" not in self.path:
            self._send(400, {"error": "wrong version"})
        elif body["instances"] == [[1.0]]:
            self._send(200, {"predictions": [[0.1, 0.9]]})
        else:
            self._send(400, {"error": "Input to reshape is a tensor with 2 values"})


@pytest.fixture(scope="module")
def url():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_available_model_is_measured(url):
    row, errors = probe.probe(url, {"name": "digits", "expected": [2], "sample_input": {"instances": [[1.0]]}}, 5)
    assert errors == []
    assert row["state"] == "AVAILABLE" and row["version"] == 2 and row["predictions"] == [[0.1, 0.9]]
    assert row["versions"] == {"1": "END", "2": "AVAILABLE"}
    assert 0 < row["p50_ms"] <= row["p99_ms"] and row["predicts"] == 5  # the warm-up call is not timed


def test_failed_version_carries_the_servers_error(url):
    row, errors = probe.probe(url, {"name": "broken", "expected": [3]}, 5)
    assert errors == ["model broken version 3 failed to load: DATA_LOSS Can't parse "
                      "/models/broken/3/saved_model.pb as binary proto"]
    assert row["state"] == "END" and row["p50_ms"] is None


def test_not_yet_available_and_unknown_models(url):
    _, errors = probe.probe(url, {"name": "slow", "expected": [1]}, 5)
    assert errors == ["model slow version 1 is LOADING, not AVAILABLE (the wait timed out)"]
    _, errors = probe.probe(url, {"name": "digits", "expected": [2, 4]}, 5)
    assert errors == ["model digits version 4 is absent, not AVAILABLE (the wait timed out)"]
    _, errors = probe.probe(url, {"name": "nope", "expected": [1]}, 5)
    assert errors[0].startswith("model nope: no version loaded (HTTP 404: Servable not found")


def test_a_bad_sample_is_the_servers_error(url):
    _, errors = probe.probe(url, {"name": "digits", "expected": [2], "sample_input": {"instances": [[1.0, 2.0]]}}, 3)
    assert errors == ["model digits: predict failed: HTTP 400 Input to reshape is a tensor with 2 values"]


def test_no_server_is_one_error():
    _, errors = probe.probe("http://127.0.0.1:9", {"name": "digits", "expected": [1]}, 1)
    assert errors[0].startswith("model digits: the REST API at http://127.0.0.1:9 did not answer")


def test_main_prints_one_json_line(url, capsys):
    spec = {"url": url, "checks": 2, "models": [{"name": "digits", "expected": [2], "sample_input":
                                                 {"instances": [[1.0]]}}]}
    assert probe.main(["probe", base64.b64encode(json.dumps(spec).encode()).decode()]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and json.loads(out[0])["models"][0]["model"] == "digits"


@pytest.mark.parametrize("values, p50, p99", [([0.001], 1.0, 1.0), ([0.004, 0.001, 0.002, 0.003], 2.0, 4.0)])
def test_percentiles(values, p50, p99):
    assert (probe.percentile(values, 50), probe.percentile(values, 99)) == (p50, p99)


class FakeClock:
    """Seconds that pass only when the probe sleeps."""
    def __init__(self):
        self.now = 0.0
        self.sleeps = 0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds
        self.sleeps += 1


def test_the_wait_ends_at_once_when_every_model_settled(url):
    clock = FakeClock()
    models = [{"name": "digits", "expected": [2]}, {"name": "broken", "expected": [3]}]
    assert probe.wait(url, models, "tfprov-serving", 300, clock, clock.sleep, lambda _: ("running", 0, 0)) is None
    assert clock.sleeps == 0  # AVAILABLE, and a version that failed to load: nothing to wait for


def test_the_wait_polls_every_model_in_one_loop_up_to_one_timeout(url):
    clock = FakeClock()
    models = [{"name": "slow", "expected": [1]}, {"name": "slow", "expected": [1]}]
    assert probe.wait(url, models, "tfprov-serving", 30, clock, clock.sleep, lambda _: ("running", 0, 0)) is None
    assert 30 <= clock.now <= 32  # one timeout for both models, not one each


def test_a_container_that_exits_while_loading_stops_the_wait_at_once(url):
    clock = FakeClock()
    states = iter([("running", 0, 0), ("running", 0, 0), ("exited", 137, 0)])
    message = probe.wait(url, [{"name": "slow", "expected": [1]}], "tfprov-serving", 300, clock, clock.sleep,
                         lambda _: next(states))
    assert message == "the container tfprov-serving exited (exit code 137) while its models loaded"
    assert clock.now < 5


def test_a_container_in_a_restart_loop_stops_the_wait(url):
    clock = FakeClock()
    states = iter([("running", 0, 2), ("running", 1, 3)])  # exited and was restarted between two polls
    message = probe.wait(url, [{"name": "slow", "expected": [1]}], "tfprov-serving", 300, clock, clock.sleep,
                         lambda _: next(states))
    assert message == "the container tfprov-serving restarted (exit code 1) while its models loaded"
