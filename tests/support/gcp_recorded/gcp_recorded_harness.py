"""Answer GCP API calls from a recording, at the HTTP layer (the `responses` library patches `requests`).

The recordings are NOT captures of real GCP traffic: they are responses written by hand after the public API
references (Compute Engine v1, Cloud TPU v2, Cloud Storage JSON v1, OAuth2 token endpoint), shaped like the
documented resources. A request the recording does not hold fails loudly: it is logged as unmatched and raises
ConnectionError, so a test catches any call it did not expect (an insert after a refusal, for instance).

A recording is YAML: `interactions:` a list of
  {method, url | url_regex, query: {k: v}, body_has: {k: v}, when: [flag], unless: [flag],
   sets: [flag], clears: [flag], times: N, status: 200, body: {...}}
The first interaction that matches answers. Flags live in a state file shared by every process of the run
(ansible-playbook, its forks, the modules it starts), so a GET can answer 404 before an insert and the
instance after it. Every request is appended to calls.jsonl in the run directory.
"""

import fcntl
import json
import os
import re
import sys
import tempfile
from contextlib import contextmanager
from urllib.parse import parse_qsl, urlsplit

import requests
import responses
import yaml

ENV_RECORDING = "TFPROV_GCP_RECORDING"
ENV_RUN_DIR = "TFPROV_GCP_RECORDING_DIR"
HERE = os.path.dirname(os.path.abspath(__file__))
RECORDINGS = os.path.join(HERE, "recordings")
TOKEN_URL = "https://oauth2.googleapis.com/token"
ALLOWED_LOCATIONS = re.compile(r"https://iamcredentials\.googleapis\.com/v1/projects/-/serviceAccounts/[^/]+/allowedLocations")
# Both hosts serve the same Compute API; the google.cloud modules use both.
_ALIASES = (("https://www.googleapis.com/compute/", "https://compute.googleapis.com/compute/"),)


def _canonical(url):
    for old, new in _ALIASES:
        if url.startswith(old):
            return new + url[len(old):]
    return url


def run_dir():
    path = os.environ.get(ENV_RUN_DIR) or os.path.join(tempfile.gettempdir(), "tfprov-gcp-recorded")
    os.makedirs(path, exist_ok=True)
    return path


@contextmanager
def _locked_state():
    path = os.path.join(run_dir(), "state.json")
    with open(path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        handle.seek(0)
        text = handle.read()
        state = json.loads(text) if text.strip() else {"flags": [], "used": {}}
        yield state
        handle.seek(0)
        handle.truncate()
        handle.write(json.dumps(state))


def _log(entry):
    with open(os.path.join(run_dir(), "calls.jsonl"), "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        handle.write(json.dumps(entry) + "\n")


def calls(path=None):
    """The requests seen so far: [{method, url, matched, body}] (matched: the interaction's index or None)."""
    try:
        with open(os.path.join(path or run_dir(), "calls.jsonl")) as handle:
            return [json.loads(line) for line in handle if line.strip()]
    except FileNotFoundError:
        return []


def _subset(wanted, got):
    if isinstance(wanted, dict):
        return isinstance(got, dict) and all(k in got and _subset(v, got[k]) for k, v in wanted.items())
    return str(wanted) == str(got)


def _matches(item, method, url, query, body, flags, used, index):
    if item.get("method", "GET").upper() != method:
        return False
    if "url" in item and _canonical(item["url"]) != url:
        return False
    if "url_regex" in item and not re.fullmatch(item["url_regex"], url):
        return False
    if not _subset(item.get("query", {}), query) or not _subset(item.get("body_has", {}), body or {}):
        return False
    if any(flag not in flags for flag in item.get("when", [])) or any(flag in flags for flag in item.get("unless", [])):
        return False
    return "times" not in item or used.get(str(index), 0) < item["times"]


def _answer(interactions, source):
    def callback(request):
        parts = urlsplit(request.url)
        url = _canonical(f"{parts.scheme}://{parts.netloc}{parts.path}")
        query = dict(parse_qsl(parts.query))
        raw = request.body.decode() if isinstance(request.body, bytes) else request.body
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = dict(parse_qsl(raw))
        if request.method == "POST" and url == TOKEN_URL:
            _log({"method": "POST", "url": url, "matched": "token", "body": None})  # the signed JWT is not logged
            return 200, {"Content-Type": "application/json"}, json.dumps(
                {"access_token": "recorded-token", "expires_in": 3600, "token_type": "Bearer"})
        if request.method == "GET" and ALLOWED_LOCATIONS.fullmatch(url):
            # google-auth's regional access boundary lookup for service accounts: "no boundary".
            _log({"method": "GET", "url": url, "matched": "token", "body": None})
            return 200, {"Content-Type": "application/json"}, json.dumps({"locations": [], "encodedLocations": "0x0"})
        with _locked_state() as state:
            flags, used = set(state["flags"]), state["used"]
            for index, item in enumerate(interactions):
                if _matches(item, request.method, url, query, body, flags, used, index):
                    used[str(index)] = used.get(str(index), 0) + 1
                    state["flags"] = sorted((flags | set(item.get("sets", []))) - set(item.get("clears", [])))
                    break
            else:
                index = None
        _log({"method": request.method, "url": url, "query": query, "matched": index, "body": body})
        if index is None:
            message = f"gcp_recorded: no recorded response for {request.method} {url} (recording {source})"
            sys.stderr.write(message + "\n")
            raise requests.exceptions.ConnectionError(message)
        item = interactions[index]
        return item.get("status", 200), {"Content-Type": "application/json"}, json.dumps(item.get("body", {}))

    return callback


def load(path):
    if not os.path.isabs(path) and not os.path.exists(path):
        path = os.path.join(RECORDINGS, path)
    with open(path) as handle:
        # libyaml's loader when PyYAML has it: every module process parses the recording at start-up, and the
        # pure-Python loader took 0.15 s of each (a cloud test's playbook starts dozens).
        return path, yaml.load(handle, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)).get("interactions") or []


def activate(path):
    """Answer every `requests` call of this process from the recording at path (name or file)."""
    try:
        source, interactions = load(path)
    except (OSError, yaml.YAMLError) as exc:  # still intercept: with no recording every call must fail, not go out
        source, interactions = f"{path} (unreadable: {exc})", []
        sys.stderr.write(f"gcp_recorded: recording {source}\n")
    responses.start()
    responses.mock.assert_all_requests_are_fired = False
    callback = _answer(interactions, source)
    for method in ("GET", "POST", "PUT", "PATCH", "DELETE"):
        responses.add_callback(method, re.compile(r".*"), callback=callback)


def deactivate():
    """Undo activate() (tests that activate the harness in their own process)."""
    responses.stop()
    responses.reset()


def environment(recording, directory, key_file=None):
    """The environment a subprocess needs to be answered from recording; state and calls go to directory."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [HERE, env.get("PYTHONPATH")]))
    env[ENV_RECORDING] = recording
    env[ENV_RUN_DIR] = str(directory)
    env["NO_GCE_CHECK"] = "true"  # google-auth: do not probe the metadata server for ADC
    env["HOME"] = str(directory)  # no gcloud ADC file of the operator is read
    # Where `up`'s parallel node jobs leave their results: async_status expands `~` from the account, not HOME.
    env["ANSIBLE_ASYNC_DIR"] = os.path.join(str(directory), ".ansible_async")
    for name in ("GOOGLE_APPLICATION_CREDENTIALS", "GCP_SERVICE_ACCOUNT_FILE", "GCP_AUTH_KIND"):
        env.pop(name, None)
    if key_file:
        env["GOOGLE_APPLICATION_CREDENTIALS"] = str(key_file)
    return env
