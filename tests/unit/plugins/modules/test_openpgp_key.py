import functools
import json
import os
import shutil
import stat
import subprocess
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from ansible.module_utils.testing import patch_module_args
from ansible_collections.tfprov.gpu.plugins.module_utils.openpgp import dearmor
from ansible_collections.tfprov.gpu.plugins.modules import openpgp_key

FIXTURES = Path(__file__).parents[3] / "fixtures" / "openpgp"
NVIDIA_DRIVER_FPR = "2FB03195DECD49492BD1C17AB1D0D788DB27FD5A"
GPG = shutil.which("gpg")


def text(name):
    return (FIXTURES / name).read_text()


def alpha_fpr():
    return text("alpha.fpr").strip()


def _run(capsys, expect_failure=False, **args):
    with patch_module_args(args), pytest.raises(SystemExit) as exit_info:
        openpgp_key.main()
    result = json.loads(capsys.readouterr().out)
    assert (exit_info.value.code != 0) == expect_failure, result
    return result


def refused(capsys, **args):
    result = _run(capsys, expect_failure=True, **args)
    assert "\n" not in result["msg"]
    return result["msg"]


@pytest.fixture
def www(tmp_path, monkeypatch):
    """A web server on 127.0.0.1 (ephemeral port) serving tmp_path/www."""
    for name in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    root = tmp_path / "www"
    root.mkdir()

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield root, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def leftovers(directory):
    return sorted(p.name for p in Path(directory).iterdir())


def test_writes_only_the_verified_key_as_a_binary_keyring(tmp_path, capsys):
    dest = tmp_path / "key.gpg"
    result = _run(capsys, content=text("alpha-with-subkey.asc"), fingerprint=alpha_fpr(), dest=str(dest))
    assert result["changed"] is True
    assert result["fingerprint"] == alpha_fpr()
    assert result["dest"] == str(dest)
    assert result["user_ids"] == ["Alpha Test <alpha@example.invalid>"]
    assert dest.read_bytes() == (FIXTURES / "alpha-with-subkey.gpg").read_bytes()
    assert stat.S_IMODE(dest.stat().st_mode) == 0o644
    assert leftovers(tmp_path) == ["key.gpg"]


def test_a_second_run_changes_nothing(tmp_path, capsys):
    args = {"content": text("alpha-with-subkey.asc"), "fingerprint": alpha_fpr(), "dest": str(tmp_path / "k.gpg")}
    _run(capsys, **args)
    assert _run(capsys, **args)["changed"] is False


def test_a_wrong_mode_is_corrected(tmp_path, capsys):
    dest = tmp_path / "k.gpg"
    args = {"content": text("alpha-with-subkey.asc"), "fingerprint": alpha_fpr(), "dest": str(dest)}
    _run(capsys, **args)
    dest.chmod(0o600)
    assert _run(capsys, **args)["changed"] is True
    assert stat.S_IMODE(dest.stat().st_mode) == 0o644


def test_spaces_and_case_in_the_expected_fingerprint_are_ignored(tmp_path, capsys):
    spaced = " ".join(alpha_fpr()[i:i + 4] for i in range(0, 40, 4)).lower()
    result = _run(capsys, content=text("alpha-with-subkey.asc"), fingerprint=spaced, dest=str(tmp_path / "k.gpg"))
    assert result["fingerprint"] == alpha_fpr()


def test_check_mode_verifies_but_writes_nothing(tmp_path, capsys):
    dest = tmp_path / "k.gpg"
    args = {"content": text("alpha-with-subkey.asc"), "fingerprint": alpha_fpr(), "dest": str(dest)}
    assert _run(capsys, _ansible_check_mode=True, **args)["changed"] is True
    assert leftovers(tmp_path) == []
    _run(capsys, **args)
    assert _run(capsys, _ansible_check_mode=True, **args)["changed"] is False
    msg = refused(capsys, _ansible_check_mode=True, **{**args, "fingerprint": text("beta.fpr").strip()})
    assert "refusing to trust" in msg


def test_check_mode_reports_a_rotated_key_without_writing_it(tmp_path, capsys):
    dest = tmp_path / "k.gpg"
    _run(capsys, content=text("alpha-with-subkey.asc"), fingerprint=alpha_fpr(), dest=str(dest))
    before = dest.read_bytes()
    result = _run(capsys, _ansible_check_mode=True, content=text("alpha-rotated.asc"), fingerprint=alpha_fpr(),
                  dest=str(dest))
    assert result["changed"] is True
    assert dest.read_bytes() == before


def test_download_installs_the_key_and_picks_up_a_rotation(www, tmp_path, capsys):
    root, base = www
    shutil.copy(FIXTURES / "alpha-with-subkey.asc", root / "key.pub")
    dest = tmp_path / "k.gpg"
    args = {"url": base + "/key.pub", "fingerprint": alpha_fpr(), "dest": str(dest)}
    assert _run(capsys, **args)["changed"] is True
    assert _run(capsys, **args)["changed"] is False
    # Same fingerprint, new self-signature: the file on the server changed, so the keyring must.
    shutil.copy(FIXTURES / "alpha-rotated.asc", root / "key.pub")
    assert _run(capsys, **args)["changed"] is True
    assert dest.read_bytes() == dearmor((FIXTURES / "alpha-rotated.asc").read_bytes())
    assert leftovers(tmp_path) == ["k.gpg", "www"]


def test_a_missing_file_is_a_download_failure_not_a_bad_key(www, tmp_path, capsys):
    _, base = www
    dest = tmp_path / "k.gpg"
    dest.write_bytes(b"previous keyring")
    msg = refused(capsys, url=base + "/nothing.pub", fingerprint=alpha_fpr(), dest=str(dest))
    assert msg.startswith(f"could not download the key from {base}/nothing.pub")
    assert "404" in msg
    assert "not an OpenPGP" not in msg and "refusing to trust" not in msg
    assert dest.read_bytes() == b"previous keyring"


def test_an_unreachable_server_is_a_download_failure(www, tmp_path, capsys):
    _, base = www
    msg = refused(capsys, url="http://127.0.0.1:9/key.pub", fingerprint=alpha_fpr(), dest=str(tmp_path / "k.gpg"),
                  timeout=5)
    assert msg.startswith("could not download the key from http://127.0.0.1:9/key.pub")
    assert leftovers(tmp_path) == ["www"]


def test_a_web_page_served_instead_of_the_key_is_not_a_key(www, tmp_path, capsys):
    root, base = www
    (root / "key.pub").write_text("<html><body>Access denied</body></html>\n")
    msg = refused(capsys, url=base + "/key.pub", fingerprint=alpha_fpr(), dest=str(tmp_path / "k.gpg"))
    assert msg.startswith(f"{base}/key.pub is not an OpenPGP public key: ")
    assert "point url at" in msg


def test_a_wrong_key_is_refused_and_the_old_keyring_kept(www, tmp_path, capsys):
    root, base = www
    shutil.copy(FIXTURES / "nvidia-linux-driver-db27fd5a.asc", root / "key.pub")
    dest = tmp_path / "k.gpg"
    dest.write_bytes(b"previous keyring")
    msg = refused(capsys, url=base + "/key.pub", fingerprint=alpha_fpr(), dest=str(dest),
                  fingerprint_var="nvidia_repo_key_fingerprint")
    assert msg.startswith(
        f"{base}/key.pub holds key {NVIDIA_DRIVER_FPR}, not {alpha_fpr()}: refusing to trust the repository"
    )
    assert "nvidia_repo_key_fingerprint" in msg
    assert dest.read_bytes() == b"previous keyring"
    assert leftovers(tmp_path) == ["k.gpg", "www"]


def test_a_bundle_of_two_keys_is_refused_even_if_one_matches(tmp_path, capsys):
    msg = refused(capsys, content=text("two-keys.asc"), fingerprint=alpha_fpr(), dest=str(tmp_path / "k.gpg"))
    beta = text("beta.fpr").strip()
    assert msg.startswith(f"content holds 2 keys ({alpha_fpr()}, {beta}) where exactly one was expected")
    assert leftovers(tmp_path) == []


def test_corrupt_armor_is_refused(tmp_path, capsys):
    corrupted = text("nvidia-linux-driver-db27fd5a.asc").replace("mQINBGJYmlEBEACKX1pz", "mQINBGJYmlEBEACKX1py")
    msg = refused(capsys, content=corrupted, fingerprint=NVIDIA_DRIVER_FPR, dest=str(tmp_path / "k.gpg"))
    assert msg.startswith("content is not an OpenPGP public key: the armor checksum (CRC24) does not match")


@pytest.mark.parametrize("empty", ["", "   ", None])
def test_an_empty_expected_fingerprint_is_a_refusal_not_any_key(tmp_path, capsys, empty):
    msg = refused(capsys, content=text("alpha-with-subkey.asc"), fingerprint=empty, dest=str(tmp_path / "k.gpg"),
                  fingerprint_var="nvidia_repo_key_fingerprint")
    assert msg == ("nvidia_repo_key_fingerprint is empty: set the expected fingerprint; "
                   "an empty one would trust any key")
    assert leftovers(tmp_path) == []


def test_a_short_key_id_is_not_accepted_as_the_fingerprint(tmp_path, capsys):
    msg = refused(capsys, content=text("alpha-with-subkey.asc"), fingerprint=alpha_fpr()[-16:],
                  dest=str(tmp_path / "k.gpg"))
    assert "40-hex-digit fingerprint" in msg


def test_a_missing_directory_is_named(tmp_path, capsys):
    msg = refused(capsys, content=text("alpha-with-subkey.asc"), fingerprint=alpha_fpr(),
                  dest=str(tmp_path / "no" / "k.gpg"))
    missing = tmp_path / "no"
    assert msg == f"{missing} does not exist: create the directory for {missing / 'k.gpg'} first"


@pytest.fixture
def gnupg_home(tmp_path, monkeypatch):
    if GPG is None:
        pytest.skip("gpg is not installed")
    home = tmp_path / "gnupg"
    home.mkdir(mode=0o700)
    monkeypatch.setenv("GNUPGHOME", str(home))
    yield home
    subprocess.run(["gpgconf", "--kill", "gpg-agent"], check=False, capture_output=True)


def gpg(*args):
    return subprocess.run([GPG, "--batch", "--with-colons", *args], check=True, capture_output=True, text=True).stdout


@pytest.mark.parametrize(
    ("fixture", "expected"),
    [("alpha-with-subkey.asc", None), ("alpha-with-subkey.gpg", None),
     ("nvidia-linux-driver-db27fd5a.asc", NVIDIA_DRIVER_FPR)],
)
def test_gnupg_and_apt_accept_the_written_keyring(www, tmp_path, capsys, gnupg_home, fixture, expected):
    expected = expected or alpha_fpr()
    root, base = www
    shutil.copy(FIXTURES / fixture, root / fixture)
    keys = tmp_path / "keys"
    keys.mkdir()
    dest = keys / "k.gpg"
    _run(capsys, url=f"{base}/{fixture}", fingerprint=expected, dest=str(dest))
    shown = gpg("--show-keys", str(dest))
    assert [line.split(":")[9] for line in shown.splitlines() if line.startswith("fpr:")][0] == expected
    assert sum(line.startswith("pub:") for line in shown.splitlines()) == 1
    # What apt does with signed-by: use the file as the only keyring.
    listed = gpg("--no-default-keyring", "--keyring", str(dest), "--list-keys")
    assert f"fpr:::::::::{expected}:" in listed
    assert os.listdir(keys) == ["k.gpg"]


def test_gnupg_sees_one_key_where_the_bundle_had_junk_around_it(www, tmp_path, capsys, gnupg_home):
    root, base = www
    junk = b"\xa8\x03PGP" + (FIXTURES / "alpha-with-subkey.gpg").read_bytes() + b"\xcb\x06b\x00\x00\x00\x00\x00"
    (root / "key.gpg").write_bytes(junk)
    dest = tmp_path / "k.gpg"
    _run(capsys, url=base + "/key.gpg", fingerprint=alpha_fpr(), dest=str(dest))
    assert dest.read_bytes() == (FIXTURES / "alpha-with-subkey.gpg").read_bytes()
    shown = gpg("--show-keys", str(dest))
    assert [line.split(":")[0] for line in shown.splitlines() if line[:4] in ("pub:", "sub:")] == ["pub", "sub"]


def test_an_armored_keyring_for_rpm_holds_only_the_verified_key(tmp_path, capsys, gnupg_home):
    dest = tmp_path / "RPM-GPG-KEY-test"
    _run(capsys, content=text("alpha-with-subkey.asc"), fingerprint=alpha_fpr(), dest=str(dest), format="armored")
    assert dest.read_bytes().startswith(b"-----BEGIN PGP PUBLIC KEY BLOCK-----\n")
    assert dearmor(dest.read_bytes()) == (FIXTURES / "alpha-with-subkey.gpg").read_bytes()
    shown = gpg("--show-keys", str(dest))
    assert f"fpr:::::::::{alpha_fpr()}:" in shown
