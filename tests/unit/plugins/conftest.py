"""Shared by the plugins' tests."""

import stat

import pytest


@pytest.fixture
def stand_in_docker(tmp_path, monkeypatch):
    """Write a stand-in `docker` CLI (a shell script) and return its path; it may log its arguments to $CALLS."""

    def write(script: str) -> str:
        path = tmp_path / "docker"
        path.write_text(script)
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
        monkeypatch.setenv("CALLS", str(tmp_path / "calls"))
        return str(path)

    return write
