#!/usr/bin/env python
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Check TF Serving's models from the node and time their predicts; print one JSON line.

Run by the tf_serving role with the node's /usr/bin/python3 (standard library only). Argument: base64 of
{"url": "http://127.0.0.1:8501", "checks": 20, "models": [{"name", "expected": [1, 2], "sample_input": {...}}],
 "wait": 300, "container": "tfprov-serving"}.
First it waits, up to "wait" seconds, for every model at once until each expected version is AVAILABLE or one
failed to load; it stops at once when the container exits or restarts (its log then says why, not a timeout).
Output: {"models": [{model, version, state, versions, p50_ms, p99_ms, predictions}], "errors": [...]}; a version
that failed to load is reported with the server's own error message (the status body, not the HTTP code).
"""

import base64
import json
import subprocess
import sys
import time
from urllib.error import HTTPError, URLError
from urllib.request import Request, urlopen

TIMEOUT = 30
POLL = 1.0


def call(url, body=None, timeout=TIMEOUT):
    data = None if body is None else json.dumps(body).encode("utf-8")
    request = Request(url, data=data, headers={"Content-Type": "application/json"})
    try:
        with urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read().decode("utf-8") or "{}")
    except HTTPError as exc:
        text = exc.read().decode("utf-8", "replace")
        try:
            return exc.code, json.loads(text)
        except ValueError:
            return exc.code, {"error": text.strip()[:300]}


def percentile(values, pct):
    """Nearest-rank percentile in milliseconds, rounded to 0.01."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * pct // 100))
    return round(ordered[int(rank) - 1] * 1000.0, 2)


def probe(url, model, checks):
    name, expected = model["name"], [int(v) for v in model.get("expected") or []]
    row = {"model": name, "version": max(expected) if expected else None, "state": "UNKNOWN", "versions": {},
           "predicts": 0, "p50_ms": None, "p99_ms": None, "predictions": None}
    errors = []
    try:
        code, status = call(f"{url}/v1/models/{name}")
    except (URLError, OSError, ValueError) as exc:
        return row, [f"model {name}: the REST API at {url} did not answer ({exc})"]
    entries = {int(e.get("version", -1)): e for e in status.get("model_version_status") or []}
    row["versions"] = {str(v): e.get("state") for v, e in sorted(entries.items())}
    if not entries:
        return row, ["model {}: no version loaded (HTTP {}: {})".format(name, code, status.get("error", status))]
    for version in expected:
        entry = entries.get(version)
        state = entry.get("state") if entry else "absent"
        error = (entry or {}).get("status") or {}
        if state == "AVAILABLE":
            continue
        if error.get("error_code", "OK") != "OK":
            message = error.get("error_message", "").strip()
            errors.append(f"model {name} version {version} failed to load: {error.get('error_code')} {message}")
        else:
            errors.append(f"model {name} version {version} is {state}, not AVAILABLE (the wait timed out)")
    row["state"] = "AVAILABLE" if not errors else (entries.get(row["version"]) or {}).get("state", "absent")
    sample = model.get("sample_input")
    if errors or not sample:
        return row, errors
    predict = "{}/v1/models/{}/versions/{}:predict".format(url, name, row["version"])
    latencies = []
    for attempt in range(1 + max(0, checks)):
        start = time.monotonic()
        try:
            code, answer = call(predict, sample)
        except (URLError, OSError, ValueError) as exc:
            return row, [f"model {name}: predict failed ({exc})"]
        elapsed = time.monotonic() - start
        if code != 200 or "error" in answer:
            return row, ["model {}: predict failed: HTTP {} {}".format(name, code, answer.get("error", answer))]
        if attempt == 0:
            row["predictions"] = answer.get("predictions", answer.get("outputs"))
            if checks > 0:
                continue  # the first call may warm caches: time the next ones
        latencies.append(elapsed)
    row["predicts"] = len(latencies)
    row["p50_ms"], row["p99_ms"] = percentile(latencies, 50), percentile(latencies, 99)
    return row, errors


def container_state(name):
    """(status, exit code, restart count) of the container; None where the engine cannot be asked."""
    try:
        proc = subprocess.run(["docker", "inspect", "--format", "{{.State.Status}} {{.State.ExitCode}} "
                               "{{.RestartCount}}", name], capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return ("missing", None, 0)
    status, code, restarts = proc.stdout.split()
    return status, int(code), int(restarts)


def settled(url, model):
    """Every expected version AVAILABLE, or one that ended with an error (the probe then says which)."""
    try:
        dummy, status = call("{}/v1/models/{}".format(url, model["name"]), timeout=5)
    except (URLError, OSError, ValueError):
        return False  # not answering yet: the server is starting
    entries = status.get("model_version_status") or []
    available = {int(e.get("version", -1)) for e in entries if e.get("state") == "AVAILABLE"}
    failed = any(e.get("state") == "END" and (e.get("status") or {}).get("error_code", "OK") != "OK"
                 for e in entries)
    return failed or {int(v) for v in model.get("expected") or []} <= available


def wait(url, models, container, seconds, clock=time.monotonic, sleep=time.sleep, state=container_state):
    """Wait for all models at once; an error line when the container exits or restarts meanwhile, else None."""
    first = state(container) if container else None
    deadline = clock() + seconds
    pending = list(models)
    while True:
        now = state(container) if first else None
        if now and (now[0] in ("exited", "dead", "missing", "restarting") or now[2] > first[2]):
            what = {"missing": "is gone", "exited": "exited", "dead": "exited"}.get(now[0], "restarted")
            return "the container {} {} (exit code {}) while its models loaded".format(container, what, now[1])
        pending = [model for model in pending if not settled(url, model)]
        if not pending or clock() > deadline:
            return None  # the probe reports each version that is not AVAILABLE
        sleep(POLL)


def main(argv):
    spec = json.loads(base64.b64decode(argv[1]).decode("utf-8"))
    report = {"models": [], "errors": []}
    stopped = wait(spec["url"].rstrip("/"), spec["models"], spec.get("container"), float(spec.get("wait", 0)))
    if stopped:
        report["errors"].append(stopped)
        print(json.dumps(report, sort_keys=True))
        return 0
    for model in spec["models"]:
        row, errors = probe(spec["url"].rstrip("/"), model, int(spec.get("checks", 20)))
        report["models"].append(row)
        report["errors"] += errors
    print(json.dumps(report, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
