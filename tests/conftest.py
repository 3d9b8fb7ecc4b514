"""Which tests are not pure code, in one list: `make unit` leaves them out, `make e2e-local` runs them.

`make unit` is the edit loop: tests of pure code only, in under two minutes, whatever else the machine is doing.
A test that starts any of the following gets a marker here (registered in pyproject.toml) and runs in a named lane:

- e2e_local: a real ansible-playbook, ansible-inventory or ansible-runner run on localhost (the CLI's runs through
  tests/unit/tiny_project.py, playbooks against a local connection, GCP's modules answered from a recording);
- servers: a network server, even on 127.0.0.1 (moto_server, a file or FTP server, a stand-in REST API);
- browser: headless Chromium (`make browser` installs it);
- build: `ansible-galaxy collection build` or `ansible-builder`.

A new test that does any of these belongs in FILES, FIXTURES or TESTS below (or carries the marker itself).
Paths are relative to tests/; a path ending in "/" is every file under it.
"""

import os
import subprocess
from pathlib import Path

import pytest

TESTS_DIR = Path(__file__).resolve().parent

# Every test in these files (or directories).
FILES = {
    "cloud/": "servers",  # moto_server on 127.0.0.1, with ansible-playbook / ansible-inventory against it
    "unit/test_boot_check.py": "e2e_local",
    "unit/test_converge_playbooks.py": "e2e_local",
    "unit/test_fleet_update_playbook.py": "e2e_local",
    "unit/test_gpu_gate_playbook.py": "e2e_local",
    "unit/test_proxy_env.py": "e2e_local",
    "unit/test_tensorflow_gpu_check_reuse.py": "e2e_local",
    "unit/test_tensorflow_gpu_profile.py": "e2e_local",
    "unit/test_report_browser.py": "browser",
    "unit/test_execution_environment.py": "build",
}

# A test that uses one of these fixtures, directly or through another fixture, in any file.
FIXTURES = {
    "project": "e2e_local",  # tests/unit/tiny_project.py: `tfprov run` through ansible-runner on localhost
    "recorded": "e2e_local",  # tests/unit/gcp: ansible-playbook / ansible-inventory answered from a recording
    "moto_port": "servers",  # tests/cloud/conftest.py: moto_server
}

# A test in this file that uses one of these fixtures (names too common to mean the same everywhere).
FILE_FIXTURES = {
    "unit/plugins/modules/test_download_sources.py": {"server": "servers", "ftp_server": "servers"},
    "unit/plugins/modules/test_openpgp_key.py": {"www": "servers"},
    "unit/plugins/test_model_sources.py": {"gcs": "servers"},
    "unit/plugins/test_serving_probe.py": {"url": "servers"},
}

# Single tests (by function name, parameters left out) in files whose other tests are pure.
TESTS = {
    "unit/plugins/action/test_stack.py": {
        "test_ansible_playbook_refusal_is_the_one_line_msg_without_wrapping": "e2e_local",
        "test_ansible_playbook_sets_the_fact": "e2e_local",
    },
    "unit/plugins/action/test_stack_tpu.py": {
        "test_the_role_installs_tensorflow_tpu_from_the_libtpu_index": "e2e_local",
    },
    "unit/test_cli.py": {
        "test_run_with_an_inventory_ansible_cannot_parse_fails_and_still_writes_a_report": "e2e_local",
        "test_run_against_an_empty_inventory_is_not_a_success": "e2e_local",
    },
    "unit/test_local_vms.py": {
        "test_the_hub_passes_frames_between_vms_and_drops_a_cut_ones": "servers",  # the hub on a Unix socket, timed
    },
}

LANE_MARKERS = ("e2e_local", "servers", "browser", "build")
# Tests marked with any of these may start what a unit test must not (the integration lanes mark their own).
NOT_UNIT = (*LANE_MARKERS, "integration")
# What a unmarked test may not start: it fails at once, naming the marker it needs, rather than slowing make unit.
FORBIDDEN = {"ansible-playbook": "e2e_local", "ansible-inventory": "e2e_local", "ansible-runner": "e2e_local",
             "ansible": "e2e_local", "ansible-galaxy": "build", "ansible-builder": "build",
             "chromium": "browser", "chromium-browser": "browser", "moto_server": "servers"}


def markers_of(relative: str, name: str, fixtures) -> set[str]:
    """The lane markers this list gives the test `name` (no parameters) of the file at `relative` (to tests/)."""
    found = {marker for path, marker in FILES.items()
             if relative == path or (path.endswith("/") and relative.startswith(path))}
    found |= {FIXTURES[f] for f in fixtures if f in FIXTURES}
    found |= {marker for f, marker in FILE_FIXTURES.get(relative, {}).items() if f in fixtures}
    if name in TESTS.get(relative, {}):
        found.add(TESTS[relative][name])
    return found


def pytest_collection_modifyitems(config, items):
    for item in items:
        try:
            relative = item.path.resolve().relative_to(TESTS_DIR).as_posix()
        except ValueError:  # a test outside tests/ (plugins/): none listed there
            continue
        name = getattr(item, "originalname", None) or item.name.split("[")[0]
        for marker in sorted(markers_of(relative, name, getattr(item, "fixturenames", ()))):
            item.add_marker(getattr(pytest.mark, marker))


@pytest.fixture(autouse=True)
def _unit_tests_stay_pure(request, monkeypatch):
    """A test without a lane marker that runs ansible-playbook (or ansible-runner, Chromium, ...) fails at once."""
    if any(request.node.get_closest_marker(marker) for marker in NOT_UNIT):
        return
    where = request.node.nodeid

    def refuse(what: str, marker: str):
        pytest.fail(f"{where} runs {what}: not a unit test. Add it to tests/conftest.py ({marker}), "
                    f"which moves it to make e2e-local", pytrace=False)

    original = subprocess.Popen.__init__

    def checked_init(self, args, *rest, **kwargs):
        first = args.split()[0] if isinstance(args, str) and args.split() else args
        if isinstance(first, (list, tuple)):
            first = first[0] if first else ""
        name = os.path.basename(os.fspath(first)) if isinstance(first, (str, bytes, os.PathLike)) else ""
        name = name.decode() if isinstance(name, bytes) else name
        if name in FORBIDDEN:
            refuse(name, FORBIDDEN[name])
        original(self, args, *rest, **kwargs)

    monkeypatch.setattr(subprocess.Popen, "__init__", checked_init)
    try:
        import ansible_runner
    except ImportError:
        return
    for module in (ansible_runner, ansible_runner.interface):
        monkeypatch.setattr(module, "run", lambda *a, **k: refuse("ansible-runner", "e2e_local"))
