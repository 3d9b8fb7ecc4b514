"""roles/idle_stop/files/tfprov_idle_check.py with a fake nvidia-smi and a fake session lister: the idle timer
starts and resets, the threshold, nodes without a GPU, the dry run, the stop methods, the read-only report."""

import importlib.util
import json
import re
import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

CHECKER = Path(__file__).resolve().parents[2] / "roles" / "idle_stop" / "files" / "tfprov_idle_check.py"
spec = importlib.util.spec_from_file_location("tfprov_idle_check", CHECKER)
checker = importlib.util.module_from_spec(spec)
spec.loader.exec_module(checker)

T0 = datetime(2026, 11, 22, 7, 0, tzinfo=UTC)


class Node:
    """A fake node: what nvidia-smi prints (None: no nvidia-smi), the sessions loginctl lists, the CPU load."""

    def __init__(self, tmp_path, utilization=(0.0,), sessions=(), load=50.0, smi_rc=0):
        self.utilization, self.sessions, self.load, self.smi_rc = utilization, list(sessions), load, smi_rc
        self.calls = []
        self.smi = tmp_path / "nvidia-smi"
        self.smi.write_text("#!/bin/sh\n")
        self.smi.chmod(self.smi.stat().st_mode | stat.S_IEXEC)

    def runner(self, argv):
        self.calls.append(argv)
        if argv[0] == str(self.smi):
            return self.smi_rc, "\n".join(f"{i}, {u}" for i, u in enumerate(self.utilization)) + "\n"
        if argv[0] == "loginctl":
            return 0, "".join(f"{n} 1000 {user} seat0 tty{n}\n" for n, user in enumerate(self.sessions))
        if argv[:2] == ["systemctl", "poweroff"]:
            return 0, ""
        return 1, "unexpected"

    def args(self, tmp_path, *extra):
        smi = str(self.smi) if self.utilization is not None else str(tmp_path / "no-such-nvidia-smi")
        boot = tmp_path / "boot_id"
        if not boot.exists():
            boot.write_text("boot-1\n")
        return checker.parser().parse_args(["--minutes", "30", "--threshold", "5", "--state",
                                            str(tmp_path / "state" / "idle.json"), "--nvidia-smi", smi,
                                            "--timer", str(tmp_path / "timer"), "--boot-id", str(boot), *extra])

    def check(self, tmp_path, at, *extra, stopper=None):
        kwargs = {"stopper": stopper} if stopper else {}
        return checker.check(self.args(tmp_path, *extra), now=at, runner=self.runner, load=lambda: self.load,
                             **kwargs)


def stored(tmp_path):
    return json.loads((tmp_path / "state" / "idle.json").read_text())


def test_the_idle_timer_starts_at_the_first_idle_check_and_stops_the_vm_after_the_minutes(tmp_path):
    node, stops = Node(tmp_path, utilization=(0.0, 3.0)), []
    first = node.check(tmp_path, T0, stopper=lambda *a: stops.append(a) or "stopped")
    assert first["idle"] and first["idle_since"] == T0.isoformat() and first["decision"] == "stay up"
    later = node.check(tmp_path, T0 + timedelta(minutes=29), stopper=lambda *a: stops.append(a) or "stopped")
    assert later["idle_minutes"] == 29 and later["decision"] == "stay up" and not stops
    due = node.check(tmp_path, T0 + timedelta(minutes=30), stopper=lambda *a: stops.append(a) or "stopped")
    assert due["decision"] == "stop (shutdown)" and due["stop_result"] == "stopped" and len(stops) == 1
    assert stored(tmp_path)["idle_since"] == T0.isoformat()
    assert stored(tmp_path)["gpus"] == [{"index": 0, "utilization": 0.0}, {"index": 1, "utilization": 3.0}]


def test_a_busy_gpu_or_an_open_session_resets_the_timer(tmp_path):
    node = Node(tmp_path)
    node.check(tmp_path, T0)
    node.utilization = (0.0, 5.0)  # at the threshold is busy
    busy = node.check(tmp_path, T0 + timedelta(minutes=20))
    assert not busy["idle"] and busy["idle_since"] is None and "GPU 1 at or above 5 %" in busy["reason"]
    node.utilization = (0.0, 4.9)
    again = node.check(tmp_path, T0 + timedelta(minutes=25))
    assert again["idle_since"] == (T0 + timedelta(minutes=25)).isoformat()
    node.sessions = ["alice"]
    session = node.check(tmp_path, T0 + timedelta(minutes=60))
    assert not session["idle"] and session["sessions"] == 1 and session["session_users"] == ["alice"]
    assert stored(tmp_path)["idle_since"] is None


def test_a_node_without_a_gpu_is_idle_only_without_sessions_and_with_a_low_cpu_load(tmp_path):
    node = Node(tmp_path, utilization=None, load=50.0)
    busy = node.check(tmp_path, T0)
    assert not busy["gpu_present"] and not busy["idle"] and "CPU load 50 %" in busy["reason"]
    node.load = 2.0
    assert node.check(tmp_path, T0 + timedelta(minutes=1))["idle"]
    assert not any(call[0].endswith("nvidia-smi") for call in node.calls)


def test_an_unreadable_gpu_is_never_idle(tmp_path):
    node = Node(tmp_path, smi_rc=9)
    state = node.check(tmp_path, T0 + timedelta(hours=5))
    assert not state["idle"] and state["reason"].startswith("nvidia-smi failed")


def test_the_dry_run_decides_and_records_but_never_stops(tmp_path):
    node, stops = Node(tmp_path), []
    node.check(tmp_path, T0, "--dry-run")
    state = node.check(tmp_path, T0 + timedelta(minutes=31), "--dry-run", stopper=lambda *a: stops.append(a))
    assert state["decision"] == "would stop (shutdown, dry run)" and not stops
    assert stored(tmp_path)["decision"] == "would stop (shutdown, dry run)"


def test_shutdown_powers_the_os_off(tmp_path):
    node = Node(tmp_path)
    node.check(tmp_path, T0)
    state = node.check(tmp_path, T0 + timedelta(minutes=31))
    assert ["systemctl", "poweroff"] in node.calls and state["stop_result"] == "systemctl poweroff"


def test_gcp_api_stops_the_vm_as_its_own_service_account_without_writing_the_token(tmp_path, monkeypatch):
    requests = []

    class Response:
        def __init__(self, body, status=200):
            self.body, self.status = body, status

        def read(self):
            return self.body.encode()

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    answers = {"instance/service-accounts/default/token": json.dumps({"access_token": "SECRET-TOKEN"}),
               "project/project-id": "proj", "instance/zone": "projects/123/zones/us-central1-a",
               "instance/name": "demo-chief-0"}

    def urlopen(request, timeout):
        requests.append(request)
        for path, body in answers.items():
            if request.full_url.endswith(path):
                assert request.get_header("Metadata-flavor") == "Google"
                return Response(body)
        return Response("{}")

    monkeypatch.setattr(checker.urllib.request, "urlopen", urlopen)
    node = Node(tmp_path)
    node.check(tmp_path, T0, "--method", "gcp_api")
    state = node.check(tmp_path, T0 + timedelta(minutes=30), "--method", "gcp_api")
    stop = requests[-1]
    assert stop.get_method() == "POST"
    assert stop.full_url == "https://compute.googleapis.com/compute/v1/projects/proj/zones/us-central1-a/instances/demo-chief-0/stop"
    assert stop.get_header("Authorization") == "Bearer SECRET-TOKEN"
    assert state["stop_result"].startswith("instances.stop proj/us-central1-a/demo-chief-0")
    assert "SECRET-TOKEN" not in (tmp_path / "state" / "idle.json").read_text()


def test_a_failed_stop_is_recorded_and_retried_at_the_next_check(tmp_path):
    node = Node(tmp_path)
    node.check(tmp_path, T0)

    def broken(*args):
        raise OSError("metadata server unreachable")

    state = node.check(tmp_path, T0 + timedelta(minutes=31), stopper=broken)
    assert state["stop_result"] == "stop failed: OSError: metadata server unreachable"
    assert stored(tmp_path)["idle_since"] == T0.isoformat()


def test_the_report_reads_without_writing_and_takes_idle_since_from_the_timer(tmp_path):
    node = Node(tmp_path)
    args = node.args(tmp_path, "--report")
    fresh = checker.report(args, now=T0, runner=node.runner, load=lambda: 1.0)
    assert fresh["idle"] and fresh["idle_minutes"] == 0 and not fresh["enabled"] and fresh["stop_after_minutes"] is None
    assert not (tmp_path / "state").exists()
    node.check(tmp_path, T0)
    (tmp_path / "timer").write_text("")
    before = (tmp_path / "state" / "idle.json").read_text()
    later = checker.report(args, now=T0 + timedelta(minutes=12), runner=node.runner, load=lambda: 1.0)
    assert later["enabled"] and later["idle_minutes"] == 12 and later["stop_after_minutes"] == 30
    assert (tmp_path / "state" / "idle.json").read_text() == before


def test_main_prints_one_line_per_check(tmp_path, capsys):
    smi = tmp_path / "nvidia-smi"  # a real stand-in script: main runs the real runner
    smi.write_text("#!/bin/sh\necho '0, 1'\n")
    smi.chmod(0o755)
    assert checker.main(["--dry-run", "--state", str(tmp_path / "s.json"), "--nvidia-smi", str(smi)]) == 0
    assert re.fullmatch(r"idle 0/60 min \(.+\): stay up\n", capsys.readouterr().out)
    assert json.loads((tmp_path / "s.json").read_text())["gpus"] == [{"index": 0, "utilization": 1.0}]


@pytest.mark.parametrize("line", ["0, [N/A]", "garbage"])
def test_unreadable_utilization_lines(tmp_path, line):
    node = Node(tmp_path)
    result = checker.read_gpus(str(node.smi), runner=lambda argv: (0, line + "\n"))
    assert result["error"]


class BusyNode(Node):
    """Idle on GPU, load and sessions, with a cluster unit active or the serving container running."""

    def __init__(self, tmp_path, units=(), containers=(), **kwargs):
        super().__init__(tmp_path, utilization=None, load=0.5, **kwargs)
        self.units, self.containers = list(units), list(containers)

    def runner(self, argv):
        if argv[:2] == ["systemctl", "list-units"]:
            return 0, "".join(f"{unit} loaded active running tfprov TensorFlow task\n" for unit in self.units)
        if argv[:2] == ["docker", "ps"]:
            name = next(f.split("=", 1)[1].strip("^$") for f in argv if f.startswith("name="))
            return 0, "3f2a9c1b7d10\n" if name in self.containers else ""
        return super().runner(argv)


BUSY = ("--busy-unit", "tfprov-tf-*", "--busy-container", "tfprov-serving")


def test_a_parameter_server_idle_on_load_is_busy_while_its_cluster_unit_is_active(tmp_path):
    ps = BusyNode(tmp_path, units=["tfprov-tf-server.service"])
    state = ps.check(tmp_path, T0, *BUSY, stopper=lambda *a: pytest.fail("a working ps was stopped"))
    assert not state["idle"] and state["reason"] == "running: tfprov-tf-server.service"
    later = ps.check(tmp_path, T0 + timedelta(hours=3), *BUSY, stopper=lambda *a: pytest.fail("stopped"))
    assert later["decision"] == "stay up" and later["idle_since"] is None


def test_a_serving_node_idle_on_gpu_and_load_is_busy_while_tf_serving_runs(tmp_path):
    serving = BusyNode(tmp_path, containers=["tfprov-serving"])
    state = serving.check(tmp_path, T0, *BUSY, stopper=lambda *a: pytest.fail("a serving node was stopped"))
    assert not state["idle"] and state["reason"] == "running: container tfprov-serving"


def test_the_same_node_without_its_workloads_is_idle(tmp_path):
    assert BusyNode(tmp_path).check(tmp_path, T0, *BUSY)["idle"]


def test_idle_time_before_a_stop_does_not_count_after_the_vm_is_started_again(tmp_path):
    # Found on a real VM (make test-vm): started again after the guard stopped it, the VM was powered off at the
    # first check after boot, since the idle time from before the stop still counted.
    node, stops = Node(tmp_path), []
    node.check(tmp_path, T0)
    assert node.check(tmp_path, T0 + timedelta(minutes=31), stopper=lambda *a: "stopped")["stop_due"]
    (tmp_path / "boot_id").write_text("boot-2\n")  # the VM started again, hours later
    state = node.check(tmp_path, T0 + timedelta(hours=5), stopper=lambda *a: stops.append(a))
    assert state["idle_since"] == (T0 + timedelta(hours=5)).isoformat() and not state["stop_due"] and not stops
    assert stored(tmp_path)["boot_id"] == "boot-2"
    later = node.check(tmp_path, T0 + timedelta(hours=5, minutes=31), stopper=lambda *a: stops.append(a))
    assert later["stop_due"] and stops  # idle for the whole window within this boot: stopped


RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "gpu-health"


@pytest.mark.parametrize(("lent", "when", "utilization"), [
    ("h100-80gb-hbm3.580-lent", "idle", 0.0), ("h100-80gb-hbm3.580-lent", "loaded", 99.0),
    ("h200.580-lent", "idle", 0.0), ("h200.580-lent", "loaded", 100.0)])
def test_a_real_card_idle_would_stop_and_computing_stays_up_as_it_did_on_the_card(tmp_path, capsys, monkeypatch,
                                                                                   lent, when, utilization):
    # Recorded on a lent H100 and a lent H200 (tests/support/record_gpu_node.py): nvidia-smi's answer and the
    # checker's own line there, with --minutes 0 --dry-run, idle and while PyTorch multiplied matrices. Replayed:
    # the same decision.
    answer = RECORDED / f"{lent}.utilization.{when}.csv.txt"
    smi = tmp_path / "nvidia-smi"
    smi.write_text(f'#!/bin/sh\ncat "{answer}"\n')
    smi.chmod(0o755)
    assert checker.read_gpus(str(smi))["gpus"] == [{"index": 0, "utilization": utilization}]
    monkeypatch.setattr(checker, "read_sessions", lambda runner=None: [])  # the lent machine had no session open
    assert checker.main(["--dry-run", "--minutes", "0", "--state", str(tmp_path / "s.json"), "--nvidia-smi",
                         str(smi)]) == 0
    assert capsys.readouterr().out == (RECORDED / f"{lent}.idle-check.{when}.decision.txt").read_text()
