"""The TF Serving stand-in's parts that need no TensorFlow: flags, version policies, status answers; and the
image builder's version resolution and caching (with a fake docker)."""

import importlib.util
import json
import os
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from rich.console import Console

from tfprov.errors import TfprovError
from tfprov.local import serving_image

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("serving_stand_in", ROOT / "tests/support/serving_stand_in/server.py")
server = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = server  # dataclasses look their module up
_spec.loader.exec_module(server)


def test_the_server_module_imports_without_tensorflow():
    assert "tensorflow" not in sys.modules and "grpc" not in sys.modules


# -- flags


def test_flags_take_the_real_defaults():
    flags = server.parse_flags([])
    assert flags["port"] == "8500" and flags["rest_api_port"] == "0"
    assert flags["file_system_poll_wait_seconds"] == "1" and flags["model_name"] == "default"


def test_flags_are_name_equals_value_and_the_last_one_wins():
    flags = server.parse_flags(["--port=9000", "--rest_api_port=9001", "--port=9002",
                                "--model_config_file=/etc/tfprov/serving/models.config",
                                "--model_config_file_poll_wait_seconds=0", "--file_system_poll_wait_seconds=2",
                                "--batching_parameters_file=/etc/b.config", "--enable_batching"])
    assert flags["port"] == "9002" and server.flag_int(flags, "rest_api_port") == 9001
    assert flags["model_config_file"] == "/etc/tfprov/serving/models.config"
    assert server.flag_bool(flags, "enable_batching") and not server.flag_bool(flags, "version")
    assert server.flag_int(flags, "file_system_poll_wait_seconds") == 2


def test_a_single_dash_works_as_in_the_real_parser():
    assert server.parse_flags(["-rest_api_port=8501"])["rest_api_port"] == "8501"


@pytest.mark.parametrize("argv, message", [
    (["--no_such_flag=1"], "unknown command line flag 'no_such_flag'"),
    (["--port"], "flag 'port' needs a value"),
    (["--port=http"], "flag 'port' is an integer"),
    (["--enable_batching=yes"], "flag 'enable_batching' is a boolean"),
    (["8500"], "unexpected argument '8500'"),
])
def test_bad_flags_are_refused(argv, message):
    with pytest.raises(server.FlagError, match=message):
        server.parse_flags(argv)


def test_main_refuses_bad_flags_with_the_real_exit_status(capsys):
    assert server.main(["--bogus=1"]) == 255
    assert "unknown command line flag 'bogus'" in capsys.readouterr().err


# -- version policies


@pytest.mark.parametrize("policy, found, wanted", [
    (dict(), [1, 2, 3], [3]),
    (dict(num_versions=2), [3, 1, 2], [3, 2]),
    (dict(num_versions=5), [1, 2], [2, 1]),
    (dict(policy="specific", versions=(1, 3, 7)), [1, 2, 3], [3, 1]),
    (dict(policy="specific", versions=(9,)), [1, 2], []),
    (dict(policy="all"), [2, 10, 1], [10, 2, 1]),
    (dict(), [], []),
])
def test_version_policies_pick_like_the_real_server(policy, found, wanted):
    assert server.select_versions(found, server.ModelSpec("m", "/models/m", **policy)) == wanted


def test_only_numeric_directories_are_versions():
    assert server.version_dirs(["1", "002", "v3", "10", "tmp", "4.tmp", "-1", ""]) == [1, 2, 10]


def _proto_like(which=None, **kw):
    """Enough of a ModelConfig message for spec_from_proto (the real one needs tensorflow-serving-api)."""
    policy = SimpleNamespace(WhichOneof=lambda _: which, latest=SimpleNamespace(num_versions=kw.get("n", 0)),
                             specific=SimpleNamespace(versions=kw.get("versions", [])))
    return SimpleNamespace(name="digits", base_path="/models/digits", model_platform="tensorflow",
                           model_version_policy=policy, HasField=lambda _: which is not None,
                           version_labels=kw.get("labels", {}))


def test_config_entries_become_specs():
    assert server.spec_from_proto(_proto_like()).policy == "latest"
    assert server.spec_from_proto(_proto_like("latest", n=3)).num_versions == 3
    spec = server.spec_from_proto(_proto_like("specific", versions=[1, 2], labels={"stable": 1, "canary": 2}))
    assert (spec.policy, spec.versions, spec.labels) == ("specific", (1, 2), {"stable": 1, "canary": 2})
    assert server.spec_from_proto(_proto_like("all")).policy == "all"


@pytest.mark.parametrize("specs, message", [
    ([server.ModelSpec("a", "/m/a"), server.ModelSpec("a", "/m/b")], "Illegal to list model a multiple times"),
    ([server.ModelSpec("a", "")], "Model a has no base_path"),
    ([server.ModelSpec("a", "/m/a", platform="pytorch")], "unsupported platform pytorch"),
    ([server.ModelSpec("a", "/m/a", policy="specific")], "lists no versions"),
])
def test_configs_the_real_server_refuses_are_refused(specs, message):
    with pytest.raises(server.FlagError, match=message):
        server.check_specs(specs)


# -- status answers


def _states():
    return {1: server.VersionState("END"), 2: server.VersionState("AVAILABLE"),
            3: server.VersionState("END", "DATA_LOSS", "Can't parse /models/digits/3/saved_model.pb as binary proto")}


def test_status_json_is_the_real_body_newest_first():
    assert server.status_json({1: server.VersionState("AVAILABLE")}) == {"model_version_status": [
        {"version": "1", "state": "AVAILABLE", "status": {"error_code": "OK", "error_message": ""}}]}
    body = server.status_json(_states())
    assert [v["version"] for v in body["model_version_status"]] == ["3", "2", "1"]
    assert body["model_version_status"][0]["status"]["error_code"] == "DATA_LOSS"
    json.dumps(body)


def test_status_requests_name_a_version_a_label_or_all():
    states, labels = _states(), {"stable": 2}
    assert list(server.pick_status_versions("digits", states, labels)) == [1, 2, 3]
    assert list(server.pick_status_versions("digits", states, labels, version=3)) == [3]
    assert list(server.pick_status_versions("digits", states, labels, label="stable")) == [2]


@pytest.mark.parametrize("kwargs, code, message", [
    (dict(version=9), "NOT_FOUND", "Could not find version 9 of model digits"),
    (dict(label="canary"), "INVALID_ARGUMENT", "Unrecognized servable version label: canary"),
])
def test_status_of_an_unknown_version_or_label(kwargs, code, message):
    with pytest.raises(server.ServingError) as caught:
        server.pick_status_versions("digits", _states(), {"stable": 2}, **kwargs)
    assert (caught.value.code, caught.value.message) == (code, message)
    assert server.HTTP_STATUS[code] in (404, 400)


def test_a_model_without_versions_is_not_found():
    with pytest.raises(server.ServingError, match="Could not find any versions of model digits"):
        server.pick_status_versions("digits", {}, {})


def test_predict_goes_to_the_newest_available_version_unless_told():
    states = {**_states(), 4: server.VersionState("LOADING")}
    assert server.pick_serving_version("digits", states, {}) == 2
    assert server.pick_serving_version("digits", states, {"stable": 2}, label="stable") == 2
    with pytest.raises(server.ServingError, match=r"Servable not found for request: Specific\(digits, 4\)"):
        server.pick_serving_version("digits", states, {}, version=4)
    with pytest.raises(server.ServingError, match=r"Servable not found for request: Latest\(digits\)"):
        server.pick_serving_version("digits", {1: server.VersionState("END")}, {})


def test_error_codes_match_tensorflows_numbering():
    assert server.ERROR_CODES.index("NOT_FOUND") == 5 and server.ERROR_CODES.index("DATA_LOSS") == 15
    assert set(server.HTTP_STATUS) == set(server.ERROR_CODES)


def test_load_errors_are_worded_like_the_real_loader():
    code, message = server.load_error(OSError("Cannot parse file b'/m/d/3/saved_model.pb': Error parsing message"),
                                      "/m/d/3")
    assert (code, message) == ("DATA_LOSS", "Can't parse /m/d/3/saved_model.pb as binary proto")
    code, message = server.load_error(OSError("SavedModel file does not exist at: /m/d/4/{saved_model.pbtxt|"
                                              "saved_model.pb}"), "/m/d/4")
    assert code == "NOT_FOUND" and message.startswith("Could not find SavedModel .pb or .pbtxt")
    assert server.load_error(RuntimeError("boom"), "/m")[0] == "UNKNOWN"


def test_the_rest_paths_are_the_real_ones():
    assert server.GET_PATH.fullmatch("/v1/models/digits").groups() == ("digits", None, None, None)
    assert server.GET_PATH.fullmatch("/v1/models/digits/versions/2/metadata").groups() == (
        "digits", "2", None, "metadata")
    assert server.GET_PATH.fullmatch("/v1/models/digits/labels/stable").groups() == ("digits", None, "stable", None)
    assert server.POST_PATH.fullmatch("/v1/models/digits/versions/1:predict").groups() == (
        "digits", "1", None, "predict")
    assert not server.POST_PATH.fullmatch("/v1/models/digits")


# -- the image builder


def test_versions_come_from_the_matrix():
    release, tf_version = serving_image.resolve_versions(None)
    assert release == serving_image.resolve_versions("latest")[0]
    assert serving_image.resolve_versions(".".join(release.split(".")[:2])) == (release, tf_version)
    assert tf_version.split(".")[:2] == release.split(".")[:2]
    with pytest.raises(TfprovError, match="TF Serving 1.15 is not in data/compat.yml"):
        serving_image.resolve_versions("1.15")


def test_names_and_archive_paths():
    assert serving_image.image_name("2.21.0") == "tfprov/serving-stand-in:2.21.0"
    assert serving_image.archive_path("2.21.0") == Path("/var/cache/tfprov/images/serving-stand-in-2.21.0.tar")


def test_a_changed_server_changes_the_recipe():
    a = serving_image.recipe_digest("2.21.0", "2.21.0", b"one")
    assert a == serving_image.recipe_digest("2.21.0", "2.21.0", b"one")
    assert a != serving_image.recipe_digest("2.21.0", "2.21.0", b"two")
    assert a != serving_image.recipe_digest("2.20.0", "2.20.0", b"one")


FAKE_DOCKER = """#!/bin/sh
echo "$*" >> "$DOCKER_CALLS"
case "$1 $2" in
  "image inspect") [ -f "$DOCKER_LABEL" ] && cat "$DOCKER_LABEL" || exit 1 ;;
  "save -o") echo tar > "$3" ;;
esac
"""


@pytest.fixture
def cached(tmp_path, monkeypatch):
    """A fake docker whose image carries the current recipe, and an archive with its marker."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "docker").write_text(FAKE_DOCKER)
    (bin_dir / "docker").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("DOCKER_CALLS", str(tmp_path / "calls"))
    monkeypatch.setenv("DOCKER_LABEL", str(tmp_path / "label"))
    monkeypatch.setattr(serving_image, "ARCHIVE_DIR", tmp_path / "images")
    release, tf_version = serving_image.resolve_versions(None)
    digest = serving_image.recipe_digest(release, tf_version, (ROOT / serving_image.SERVER).read_bytes())
    (tmp_path / "label").write_text(digest + "\n")
    archive = serving_image.archive_path(release)
    archive.parent.mkdir()
    archive.write_bytes(b"tar")
    archive.with_name(archive.name + ".recipe").write_text(digest + "\n")
    return SimpleNamespace(archive=archive, release=release, calls=lambda: (tmp_path / "calls").read_text())


def test_an_image_and_archive_of_the_current_recipe_are_reused(cached):
    name, archive = serving_image.build_serving_image(None, Console(file=open(os.devnull, "w")))
    assert (name, archive) == (serving_image.image_name(cached.release), cached.archive)
    assert "run" not in cached.calls() and "save" not in cached.calls()


def test_a_missing_archive_is_saved_again(cached):
    cached.archive.unlink()
    serving_image.build_serving_image(None, Console(file=open(os.devnull, "w")))
    assert "save -o" in cached.calls() and " run " not in cached.calls()
    assert cached.archive.read_text() == "tar\n"
    assert not list(cached.archive.parent.glob(".*.tmp"))


def test_a_full_wheelhouse_is_not_downloaded_again(tmp_path, monkeypatch):
    release, tf_version = serving_image.resolve_versions(None)
    for wheel in (f"tensorflow_cpu-{tf_version}-cp311-cp311-manylinux_2_27_x86_64.whl",
                  f"tensorflow_serving_api-{release}-py2.py3-none-any.whl"):
        (tmp_path / wheel).write_bytes(b"")
    monkeypatch.setattr(serving_image, "WHEELHOUSE", tmp_path)
    monkeypatch.setattr(serving_image.subprocess, "run", lambda *a, **k: pytest.fail(f"ran {a}"))
    serving_image._fill_wheelhouse(release, tf_version, Console(file=open(os.devnull, "w")))
