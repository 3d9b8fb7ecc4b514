"""converge_record: a record written after a converge stands for a later check while nothing it keeps changed; each
kind of change (inputs, boot, age, a witness file edited, added or removed, a unit's state) says why it does not.
Against real files in a temporary directory, through the module's main() as Ansible runs it."""

import json
import os
import time

import pytest
from ansible.module_utils.testing import patch_module_args
from ansible_collections.tfprov.gpu.plugins.modules import converge_record


def run(capsys, **args):
    with patch_module_args(args), pytest.raises(SystemExit):
        converge_record.main()
    return json.loads(capsys.readouterr().out)


@pytest.fixture
def node(tmp_path, monkeypatch):
    """A node: a site-packages and a profile file as witnesses, a fixed boot, no systemd."""
    site = tmp_path / "env/lib/python3.11/site-packages"
    site.mkdir(parents=True)
    (site / "numpy").mkdir()
    profile = tmp_path / "profile.d"
    profile.mkdir()
    (profile / "tfprov-tensorflow.sh").write_text("export TFPROV_TF_ENV=/opt/tfprov/envs/tf\n")
    monkeypatch.setattr(converge_record, "boot_id", lambda: "boot-1")
    monkeypatch.setattr(converge_record, "unit_states", lambda run_command: {})
    witnesses = [str(tmp_path / "env/lib/python*/site-packages"), str(profile), str(tmp_path / "absent")]
    common = dict(name="node", witnesses=witnesses, directory=str(tmp_path / "records"))
    return tmp_path, common


def record_then_check(capsys, common, inputs="in-1", **check):
    run(capsys, state="record", inputs=inputs, report={"stack": {"tensorflow_version": "2.21.0"}},
        facts={"tfprov_stack": {"cuda": "12.5"}}, **common)
    return run(capsys, inputs="in-1", **{**common, **check})


def test_a_record_stands_and_gives_back_its_report_and_facts(capsys, node):
    tmp, common = node
    result = record_then_check(capsys, common)
    assert result["current"] is True and result["reason"] == "" and result["changed"] is False
    assert result["report"] == {"stack": {"tensorflow_version": "2.21.0"}}
    # and the boot it judged: the run's start, which the resolve play then does not ask the node for again
    assert result["ansible_facts"] == {"tfprov_stack": {"cuda": "12.5"}, "tfprov_boot_id": "boot-1"}
    record = tmp / "records/node.json"
    assert oct(record.stat().st_mode & 0o777) == "0o600" and oct(record.parent.stat().st_mode & 0o777) == "0o700"


def test_no_record_is_a_reason_and_a_check_writes_nothing(capsys, node):
    tmp, common = node
    result = run(capsys, inputs="in-1", **common)
    assert result == {**result, "current": False, "reason": "no record of a finished converge", "report": {}}
    assert result["ansible_facts"] == {"tfprov_boot_id": "boot-1"}  # no record's facts, but the boot judged
    assert not (tmp / "records").exists()


def test_other_inputs_do_not_stand(capsys, node):
    _, common = node
    result = record_then_check(capsys, common, inputs="in-0")
    assert not result["current"] and "what the run is given changed" in result["reason"]
    assert result["report"] == {} and result["ansible_facts"] == {"tfprov_boot_id": "boot-1"}  # none of its facts


def test_a_reboot_since_does_not_stand(capsys, node, monkeypatch):
    _, common = node
    run(capsys, state="record", inputs="in-1", **common)
    monkeypatch.setattr(converge_record, "boot_id", lambda: "boot-2")
    assert run(capsys, inputs="in-1", **common)["reason"] == "the node booted since"


def test_an_old_record_and_max_age_zero_do_not_stand(capsys, node):
    tmp, common = node
    run(capsys, state="record", inputs="in-1", **common)
    record = json.loads((tmp / "records/node.json").read_text())
    record["recorded_epoch"] -= 25 * 3600
    (tmp / "records/node.json").write_text(json.dumps(record))
    assert run(capsys, inputs="in-1", **common)["reason"] == "recorded more than 24 h ago"
    assert run(capsys, inputs="in-1", max_age_hours=0, **common)["reason"] == "reuse is off (max age 0)"


@pytest.mark.parametrize("change", ["package added", "package removed", "profile edited", "witness created"])
def test_a_change_to_a_witness_does_not_stand_and_names_the_path(capsys, node, change):
    tmp, common = node
    run(capsys, state="record", inputs="in-1", **common)
    site = tmp / "env/lib/python3.11/site-packages"
    profile = tmp / "profile.d/tfprov-tensorflow.sh"
    if change == "package added":
        (site / "user_pkg-1.0.dist-info").mkdir()
    elif change == "package removed":
        (site / "numpy").rmdir()
    elif change == "profile edited":
        time.sleep(0.01)
        with profile.open("a") as handle:
            handle.write("export TFPROV_TF_ENV=/tmp\n")
    else:
        (tmp / "absent").write_text("")
    result = run(capsys, inputs="in-1", **common)
    assert not result["current"] and result["reason"].endswith(" changed since"), result
    assert result["reason"].split()[0].startswith(str(tmp))


def test_a_unit_that_changed_state_does_not_stand(capsys, node, monkeypatch):
    _, common = node
    monkeypatch.setattr(converge_record, "unit_states", lambda run_command: {"tfprov-idle-stop.timer": "active"})
    run(capsys, state="record", inputs="in-1", **common)
    monkeypatch.setattr(converge_record, "unit_states", lambda run_command: {"tfprov-idle-stop.timer": "inactive"})
    assert run(capsys, inputs="in-1", **common)["reason"] == "tfprov-idle-stop.timer changed state since"


def test_check_mode_records_nothing(capsys, node):
    tmp, common = node
    run(capsys, state="record", inputs="in-1", _ansible_check_mode=True, **common)
    assert not (tmp / "records").exists()


def test_a_name_with_a_slash_is_refused(capsys, node):
    _, common = node
    result = run(capsys, inputs="in-1", **{**common, "name": "../node"})
    assert result["failed"] and "give a plain word" in result["msg"]


def test_a_torn_record_is_no_record(capsys, node):
    tmp, common = node
    os.makedirs(tmp / "records")
    (tmp / "records/node.json").write_text('{"inputs": "in-1", ')
    assert run(capsys, inputs="in-1", **common)["reason"] == "no record of a finished converge"


def test_unit_states_asks_systemctl_about_the_tfprov_units_only_where_systemd_runs(tmp_path):
    units, running = tmp_path / "system", tmp_path / "run-systemd"
    units.mkdir()
    for name in ("tfprov-idle-stop.timer", "tfprov-idle-stop.service", "ssh.service"):
        (units / name).write_text("")
    asked = []

    def systemctl(argv):
        asked.append(argv)
        return 3, "inactive\nactive\n", ""

    assert converge_record.unit_states(systemctl, str(units), str(running)) == {}  # no systemd: not asked
    running.mkdir()
    assert converge_record.unit_states(systemctl, str(units), str(running)) == {
        "tfprov-idle-stop.service": "inactive", "tfprov-idle-stop.timer": "active"}
    assert asked == [["systemctl", "is-active", "tfprov-idle-stop.service", "tfprov-idle-stop.timer"]]
