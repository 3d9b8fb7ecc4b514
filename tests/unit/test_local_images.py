import os

import pytest

from tfprov.errors import TfprovError
from tfprov.local import images

FAKE_DOCKER = """#!/bin/sh
echo "$*" >> "$DOCKER_CALLS"
case "$1" in
  import) wc -c > "$DOCKER_CALLS.stdin"; echo sha256:feedbeef ;;
esac
"""


@pytest.fixture
def fake_docker(tmp_path, monkeypatch):
    """A `docker` that records its command lines and reads what `import` is given."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "docker").write_text(FAKE_DOCKER)
    (bin_dir / "docker").chmod(0o755)
    calls = tmp_path / "docker-calls"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("DOCKER_CALLS", str(calls))
    return lambda: calls.read_text().splitlines()


def test_import_tags_the_image_and_labels_its_recipe(tmp_path, fake_docker):
    rootfs = tmp_path / "rootfs"
    (rootfs / "etc").mkdir(parents=True)
    (rootfs / "etc/os-release").write_text("ID=debian\n")
    assert images.import_rootfs(rootfs, "tfprov/node:bookworm", "sha256:abc", tmp_path / "log") == "sha256:feedbeef"
    imported, tagged = fake_docker()
    assert imported.startswith("import ") and "LABEL tfprov.recipe=sha256:abc" in imported
    assert tagged == "tag sha256:feedbeef tfprov/node:bookworm"
    assert int((tmp_path / "docker-calls.stdin").read_text()) > 0  # a tar stream went in


def test_a_failing_tar_is_an_error_and_the_tag_stays_where_it_was(tmp_path, fake_docker):
    log = tmp_path / "build.log"
    with pytest.raises(TfprovError, match=r"tar of .*/no-such-rootfs failed \(exit 2: .*No such file"):
        images.import_rootfs(tmp_path / "no-such-rootfs", "tfprov/node:bookworm", "sha256:abc", log)
    calls = fake_docker()
    assert calls[0].startswith("import ")
    assert calls[1:] == ["image rm sha256:feedbeef"]  # the truncated import is removed, never tagged


def test_recipe_digest_follows_the_package_list_and_build_steps():
    digest = images.recipe_digest()
    assert digest.startswith("sha256:") and len(digest) == 71
    assert images.recipe_digest(tuple(reversed(images.NODE_PACKAGES))) == digest  # order does not matter
    assert images.recipe_digest(images.NODE_PACKAGES + ("vim",)) != digest
    assert images.recipe_digest(steps=images.BUILD_STEPS + 1) != digest
    assert "openssh-server" in images.NODE_PACKAGES


@pytest.mark.parametrize(("found", "rebuilt"), [
    (None, True),  # no image
    ("", True),  # an image from before recipes were labelled
    ("sha256:older", True),
    ("current", False),
])
def test_an_image_of_another_recipe_is_rebuilt(monkeypatch, found, rebuilt):
    built = []
    monkeypatch.setattr(images, "image_recipe", lambda suite: images.recipe_digest() if found == "current" else found)
    monkeypatch.setattr(images, "_build", lambda suite, name, digest, console: built.append((name, digest)))
    monkeypatch.setattr(images, "_build_lock", lambda suite: _NoLock())
    images.build_image("bookworm", _Quiet())
    assert built == ([("tfprov/node:bookworm", images.recipe_digest())] if rebuilt else [])


def test_rootfs_is_prepared_without_sshd_or_shared_host_keys(tmp_path):
    rootfs = tmp_path
    (rootfs / "etc/ssh").mkdir(parents=True)
    for name in ("ssh_host_ed25519_key", "ssh_host_ed25519_key.pub", "ssh_host_rsa_key", "sshd_config"):
        (rootfs / "etc/ssh" / name).write_text("x")
    unit = rootfs / "lib/systemd/system/ssh.service"
    unit.parent.mkdir(parents=True)
    unit.write_text("[Service]\n")
    wants = rootfs / "etc/systemd/system/multi-user.target.wants"
    wants.mkdir(parents=True)
    (wants / "ssh.service").symlink_to(unit)
    (wants / "cron.service").symlink_to(unit)
    (rootfs / "etc/systemd/system/sshd.service").symlink_to(unit)
    timers = rootfs / "etc/systemd/system/timers.target.wants"
    timers.mkdir()
    (timers / "apt-daily-upgrade.timer").symlink_to("/lib/systemd/system/apt-daily-upgrade.timer")
    images.prepare_rootfs(rootfs)
    assert sorted(p.name for p in (rootfs / "etc/ssh").iterdir()) == ["sshd_config"]
    left = sorted(str(p.relative_to(rootfs / "etc/systemd/system")) for p in (rootfs / "etc/systemd/system").rglob("*"))
    assert left == sorted(["multi-user.target.wants", "multi-user.target.wants/cron.service", "timers.target.wants",
                           *images.MASKED_TIMERS])
    assert {str((rootfs / "etc/systemd/system" / timer).readlink()) for timer in images.MASKED_TIMERS} == {"/dev/null"}
    assert unit.is_file() and (rootfs / "etc/hostname").read_text() == "tfprov-node\n"


def test_mirror_from_deb822_sources(tmp_path, monkeypatch):
    monkeypatch.delenv("TFPROV_DEBIAN_MIRROR", raising=False)
    (tmp_path / "sources.list.d").mkdir()
    (tmp_path / "sources.list.d" / "debian.sources").write_text(
        "Types: deb\nURIs: http://mirror.example/debian-security\nSuites: bookworm-security\n\n"
        "Types: deb\nURIs: http://mirror.example/debian\nSuites: bookworm\n")
    assert images.debian_mirror(tmp_path) == "http://mirror.example/debian"


def test_mirror_from_one_line_sources(tmp_path, monkeypatch):
    monkeypatch.delenv("TFPROV_DEBIAN_MIRROR", raising=False)
    (tmp_path / "sources.list").write_text("deb [arch=amd64] http://mirror.example/debian/ bookworm main\n")
    assert images.debian_mirror(tmp_path) == "http://mirror.example/debian/"


def test_mirror_override_and_absence(tmp_path, monkeypatch):
    monkeypatch.setenv("TFPROV_DEBIAN_MIRROR", "http://other.example/debian")
    assert images.debian_mirror(tmp_path) == "http://other.example/debian"
    monkeypatch.delenv("TFPROV_DEBIAN_MIRROR")
    with pytest.raises(TfprovError, match="set TFPROV_DEBIAN_MIRROR"):
        images.debian_mirror(tmp_path)


def test_unknown_suite_is_refused():
    with pytest.raises(TfprovError, match="unknown suite 'sid'"):
        images.build_image("sid", console=None)


class _NoLock:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class _Quiet:
    def print(self, *args, **kwargs):
        pass
