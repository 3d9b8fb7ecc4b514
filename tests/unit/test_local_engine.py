import json

import pytest

from tfprov import cli
from tfprov.errors import TfprovError
from tfprov.local import engine


def test_daemon_json_is_merged_not_replaced(tmp_path):
    path = tmp_path / "daemon.json"
    path.write_text(json.dumps({"storage-driver": "vfs", "iptables": True}))
    assert engine.write_safe_daemon_json(path) is True
    config = json.loads(path.read_text())
    assert config["storage-driver"] == "vfs"
    assert config | engine.SAFE_DAEMON == config
    assert engine.write_safe_daemon_json(path) is False  # already safe: untouched


def test_daemon_json_is_written_when_absent(tmp_path):
    path = tmp_path / "docker" / "daemon.json"
    assert engine.write_safe_daemon_json(path) is True
    assert json.loads(path.read_text()) == engine.SAFE_DAEMON


@pytest.mark.parametrize(("text", "message"), [
    ('{"bridge": "none",}', r"is not valid JSON \(.* at line 1 column 1[89]\)"),  # the comma (3.13) or the brace
    ('["bridge", "none"]', "holds a JSON list, not an object"),
    (b"\xff\xfe{}", "is not UTF-8"),
])
def test_a_malformed_daemon_json_is_refused_and_left_alone(tmp_path, text, message):
    path = tmp_path / "daemon.json"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    before = path.read_bytes()
    with pytest.raises(TfprovError, match=message):
        engine.write_safe_daemon_json(path)
    assert path.read_bytes() == before


def test_tfprov_engine_reports_a_malformed_daemon_json_in_one_line(tmp_path, monkeypatch, capsys):
    path = tmp_path / "daemon.json"
    path.write_text("{ not json")
    monkeypatch.setattr(engine, "DAEMON_JSON", path)
    monkeypatch.setattr(engine, "engine_running", lambda: False)
    monkeypatch.setattr(engine, "is_root", lambda: True)
    monkeypatch.setattr(engine, "apt_install", lambda *a: pytest.fail("must stop before installing anything"))
    assert cli.main(["engine"]) == TfprovError.exit_code
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"tfprov: error: {path} is not valid JSON")
