"""plugin_utils/private_store: the callbacks' stores are read only when private to this user, and their files are
written whole (a temporary file of its own, renamed over the target)."""

import os

import pytest
from ansible_collections.tfprov.gpu.plugins.plugin_utils.private_store import trusted, write_whole


def test_only_a_directory_of_this_user_that_no_one_else_can_write_to_is_trusted(tmp_path):
    store = tmp_path / "store"
    assert not trusted(store)
    store.mkdir(mode=0o700)
    assert trusted(store)
    store.chmod(0o770)
    assert not trusted(store)


def test_a_file_is_written_whole_and_nothing_is_left_beside_it(tmp_path):
    target = tmp_path / "record"
    write_whole(target, b"first")
    write_whole(target, b"second")
    assert target.read_bytes() == b"second"
    assert os.listdir(tmp_path) == ["record"]


def test_a_rename_that_fails_leaves_no_temporary_file(tmp_path):
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "inside").write_text("a directory is not replaced by a file")
    with pytest.raises(OSError):
        write_whole(tmp_path / "taken", b"data")
    assert sorted(os.listdir(tmp_path)) == ["taken"]
