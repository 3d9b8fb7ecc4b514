"""daemon.json merge: the pure logic (module_utils/daemon_json.py) and the module's main path on real files."""

import json
import os

import pytest
from ansible.module_utils.testing import patch_module_args
from ansible_collections.tfprov.gpu.plugins.module_utils.daemon_json import DaemonJsonError, merge, parse, plan
from ansible_collections.tfprov.gpu.plugins.modules import docker_daemon_json

NVIDIA = {"runtimes": {"nvidia": {"path": "nvidia-container-runtime", "runtimeArgs": []}}}
NETWORK = {"bridge": "none", "iptables": False, "ip-forward": False, "ip-masq": False}
USER = {
    "log-driver": "json-file",
    "log-opts": {"max-size": "10m", "max-file": "3"},
    "registry-mirrors": ["https://mirror.example.invalid"],
    "data-root": "/srv/docker",
    "runtimes": {"crun": {"path": "/usr/bin/crun"}},
    "features": {"buildkit": True},
}


# --- pure logic -------------------------------------------------------------------------------------------------

def test_no_file_gets_the_settings():
    changed, before, after, text = plan(None, NVIDIA, "/etc/docker/daemon.json")
    assert changed and before == {} and after == NVIDIA
    assert json.loads(text) == NVIDIA and text.endswith("\n")


def test_no_file_and_no_settings_changes_nothing():
    assert plan(None, {}, "/x")[0] is False


@pytest.mark.parametrize("text", ["", "\n", "  \n\t"])
def test_empty_file_is_an_empty_object(text):
    changed, before, after, _ = plan(text, NETWORK, "/x")
    assert changed and before == {} and after == NETWORK


def test_existing_runtimes_are_merged_by_name():
    existing = {"runtimes": {"crun": {"path": "/usr/bin/crun"}, "nvidia": {"path": "old", "runtimeArgs": ["--x"]}}}
    after = merge(existing, {"runtimes": {"nvidia": {"path": "nvidia-container-runtime"}}})
    assert after["runtimes"]["crun"] == {"path": "/usr/bin/crun"}
    # Only the named value is replaced: the user's runtimeArgs stay.
    assert after["runtimes"]["nvidia"] == {"path": "nvidia-container-runtime", "runtimeArgs": ["--x"]}


def test_user_keys_are_all_kept():
    settings = dict(NVIDIA, **NETWORK)
    settings["default-runtime"] = "nvidia"
    settings["log-opts"] = {"max-size": "50m"}
    after = merge(USER, settings)
    for key in USER:
        assert key in after
    assert after["log-opts"] == {"max-size": "50m", "max-file": "3"}
    assert after["runtimes"] == {"crun": {"path": "/usr/bin/crun"}, **NVIDIA["runtimes"]}
    assert after["registry-mirrors"] == USER["registry-mirrors"]
    assert after["data-root"] == "/srv/docker"
    assert after["default-runtime"] == "nvidia"


def test_merge_modifies_neither_argument():
    existing = json.loads(json.dumps(USER))
    settings = json.loads(json.dumps(NVIDIA))
    after = merge(existing, settings)
    after["runtimes"]["nvidia"]["runtimeArgs"].append("changed")
    assert existing == USER and settings == NVIDIA


def test_a_setting_replaces_a_non_object_value():
    assert merge({"runtimes": "oops"}, NVIDIA)["runtimes"] == NVIDIA["runtimes"]
    assert merge({"log-opts": {"a": "1"}}, {"log-opts": None})["log-opts"] is None


def test_second_merge_is_idempotent_and_keeps_the_file_as_is():
    _, _, _, first = plan(json.dumps(USER), dict(NVIDIA, **NETWORK), "/x")
    changed, _, _, _ = plan(first, dict(NVIDIA, **NETWORK), "/x")
    assert changed is False
    # A file that already holds the settings, however formatted, is unchanged.
    compact = json.dumps(dict(USER, **NETWORK), separators=(",", ":"))
    assert plan(compact, NETWORK, "/x")[0] is False


@pytest.mark.parametrize(
    "text, expect",
    [
        ('{\n  // my mirror\n  "log-driver": "json-file"\n}\n', r"line 2 column 3 \(JSON has no comments\)"),
        # Python 3.13 points at the trailing comma itself, earlier versions at the brace after it.
        ('{\n  "log-driver": "json-file",\n}\n', r"line (3 column 1|2 column 28)"),
        ('{"a": 1 /* c */}', r"line 1 column 9 \(JSON has no comments\)"),
        ('{"a": ', r"line 1 column 7"),
    ],
)
def test_invalid_json_is_refused_naming_the_file_and_position(text, expect):
    with pytest.raises(DaemonJsonError, match=r"^/etc/docker/daemon\.json is not valid JSON: .*" + expect) as info:
        parse(text, "/etc/docker/daemon.json")
    assert "\n" not in str(info.value) and "nothing was written" in str(info.value)


@pytest.mark.parametrize("text, kind", [("[]", "array"), ('"x"', "string"), ("3", "number"), ("null", "null"),
                                        ("true", "boolean")])
def test_a_non_object_is_refused(text, kind):
    with pytest.raises(DaemonJsonError, match=r"^/d\.json must hold a JSON object \(\{\.\.\.\}\), it holds a JSON "
                       + kind):
        parse(text, "/d.json")


# --- the module on real files -----------------------------------------------------------------------------------

def run(capsys, expect_failure=False, check=False, diff=False, **args):
    if check:
        args["_ansible_check_mode"] = True
    if diff:
        args["_ansible_diff"] = True
    with patch_module_args(args), pytest.raises(SystemExit) as exit_info:
        docker_daemon_json.main()
    result = json.loads(capsys.readouterr().out)
    assert (exit_info.value.code != 0) == expect_failure, result
    return result


def backups(directory):
    return sorted(p for p in os.listdir(directory) if p.startswith("daemon.json.") and p.endswith("~"))


def test_module_creates_the_file_and_its_directory(tmp_path, capsys):
    path = tmp_path / "docker" / "daemon.json"
    result = run(capsys, path=str(path), settings=NETWORK, diff=True)
    assert result["changed"] and result["backup_file"] == ""
    assert json.loads(path.read_text()) == NETWORK
    assert oct(path.stat().st_mode & 0o777) == "0o644"
    assert result["diff"]["before"] == "" and json.loads(result["diff"]["after"]) == NETWORK
    assert backups(path.parent) == []


def test_module_merges_backs_up_once_and_is_idempotent(tmp_path, capsys):
    path = tmp_path / "daemon.json"
    original = json.dumps(USER, indent=4)
    path.write_text(original)
    path.chmod(0o600)
    settings = dict(NVIDIA, **NETWORK)

    first = run(capsys, path=str(path), settings=settings, diff=True)
    assert first["changed"]
    assert (tmp_path / os.path.basename(first["backup_file"])).read_text() == original
    written = json.loads(path.read_text())
    assert written == merge(USER, settings) == first["config"]
    assert oct(path.stat().st_mode & 0o777) == "0o600"  # the user's mode is kept
    assert '"nvidia"' in first["diff"]["after"] and first["diff"]["before"] == original

    second = run(capsys, path=str(path), settings=settings, diff=True)
    assert second["changed"] is False and second["backup_file"] == "" and "diff" not in second
    assert len(backups(tmp_path)) == 1
    # No temporary file is left behind.
    assert sorted(os.listdir(tmp_path)) == sorted(["daemon.json", os.path.basename(first["backup_file"])])


def test_module_check_mode_writes_nothing(tmp_path, capsys):
    path = tmp_path / "daemon.json"
    path.write_text('{"log-driver": "journald"}')
    result = run(capsys, check=True, diff=True, path=str(path), settings=NVIDIA)
    assert result["changed"] and result["backup_file"] == ""
    assert path.read_text() == '{"log-driver": "journald"}'
    assert os.listdir(tmp_path) == ["daemon.json"]
    absent = tmp_path / "new" / "daemon.json"
    assert run(capsys, check=True, path=str(absent), settings=NVIDIA)["changed"]
    assert not absent.parent.exists()


def test_module_refuses_invalid_json_and_writes_nothing(tmp_path, capsys):
    path = tmp_path / "daemon.json"
    broken = '{\n  "log-driver": "json-file",\n}\n'
    path.write_text(broken)
    result = run(capsys, expect_failure=True, path=str(path), settings=NVIDIA)
    assert result["msg"].startswith(f"{path} is not valid JSON: ")
    assert "line 3 column 1" in result["msg"] or "line 2 column 28" in result["msg"]  # Python < 3.13, 3.13
    assert path.read_text() == broken and os.listdir(tmp_path) == ["daemon.json"]


def test_module_without_backup(tmp_path, capsys):
    path = tmp_path / "daemon.json"
    path.write_text("{}")
    result = run(capsys, path=str(path), settings=NETWORK, backup=False)
    assert result["changed"] and result["backup_file"] == "" and os.listdir(tmp_path) == ["daemon.json"]


def test_a_runtime_change_is_applied_by_a_reload_and_anything_else_by_a_restart():
    from ansible_collections.tfprov.gpu.plugins.module_utils.daemon_json import changed_keys, how_to_apply

    user = {"log-driver": "json-file", "runtimes": {"user-runc": {"path": "/usr/bin/runc"}}}
    nvidia = {**user, "runtimes": {**user["runtimes"], "nvidia": {"path": "nvidia-container-runtime"}},
              "default-runtime": "nvidia"}
    assert changed_keys(user, nvidia) == ["default-runtime", "runtimes"] and how_to_apply(["default-runtime",
                                                                                            "runtimes"]) == "reload"
    assert how_to_apply(changed_keys(user, {**nvidia, "features": {"cdi": True}})) == "restart"
    assert how_to_apply(changed_keys(user, {**user, "bridge": "none"})) == "restart"
    assert how_to_apply(changed_keys(user, user)) == "none"
