"""Fixtures for the GCP tests: the recorded-response harness (tests/support/gcp_recorded), a throw-away
service-account key, and runs of ansible-inventory / ansible-playbook answered from a recording."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
HARNESS = ROOT / "tests" / "support" / "gcp_recorded"
sys.path.insert(0, str(HARNESS))

import gcp_recorded_harness as harness  # noqa: E402
import shapes  # noqa: E402,F401
from ansible_collections.tfprov.gpu.plugins.module_utils import gcp_api  # noqa: E402
from fake_key import write_fake_key  # noqa: E402

BIN = Path(sys.executable).parent


@pytest.fixture(scope="session")
def fake_key(tmp_path_factory):
    return write_fake_key(tmp_path_factory.mktemp("gcp-key") / "key.json")


class Recorded:
    """One recorded run: write the interactions, run a command answered from them, read what it asked."""

    def __init__(self, directory, key):
        self.dir = directory
        self.key = key

    def env(self, interactions, credentials=True):
        recording = shapes.write(self.dir / "recording.yml", interactions)
        env = harness.environment(recording, self.dir, self.key if credentials else None)
        env["ANSIBLE_CONFIG"] = str(ROOT / "ansible.cfg")
        env["ANSIBLE_NOCOLOR"] = "1"
        env["ANSIBLE_STDOUT_CALLBACK"] = "default"
        env["ANSIBLE_SHOW_CUSTOM_STATS"] = "1"  # the cloud_node records (set_stats) the CLI prints
        env["ANSIBLE_LOCAL_TEMP"] = str(self.dir / "ansible-tmp")
        return env

    def run(self, interactions, *argv, credentials=True):
        return subprocess.run([str(BIN / argv[0]), *argv[1:]], cwd=ROOT, env=self.env(interactions, credentials),
                              capture_output=True, text=True, timeout=300)

    def calls(self):
        return [c for c in harness.calls(self.dir) if c["matched"] != "token"]

    def unmatched(self):
        return [c for c in self.calls() if c["matched"] is None]

    def inserts(self):
        return [c for c in self.calls() if c["method"] == "POST"]

    @staticmethod
    def json_out(result):
        assert result.returncode == 0, result.stderr[-3000:] + result.stdout[-3000:]
        return _plain(json.loads(result.stdout))


def _plain(value):
    """ansible-inventory marks values from the plugin as unsafe ({"__ansible_unsafe": x}): the plain x."""
    if isinstance(value, dict):
        if set(value) == {"__ansible_unsafe"}:
            return value["__ansible_unsafe"]
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


@pytest.fixture
def recorded(tmp_path, fake_key):
    return Recorded(tmp_path, fake_key)


@pytest.fixture
def answered(tmp_path, fake_key, monkeypatch):
    """Activate the harness in this process with the given interactions; yields a GcpApi on the fake key."""
    monkeypatch.setenv(harness.ENV_RUN_DIR, str(tmp_path))
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(fake_key))
    monkeypatch.delenv("GCP_SERVICE_ACCOUNT_FILE", raising=False)
    started = []

    def start(interactions):
        harness.activate(shapes.write(tmp_path / "recording.yml", interactions))
        started.append(True)
        return gcp_api.GcpApi(sleep=lambda seconds: None)

    yield start
    if started:
        harness.deactivate()
