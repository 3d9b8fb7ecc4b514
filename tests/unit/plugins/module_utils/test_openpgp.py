import base64
import hashlib
from pathlib import Path

import pytest
from ansible_collections.tfprov.gpu.plugins.module_utils import openpgp
from ansible_collections.tfprov.gpu.plugins.module_utils.openpgp import (
    OpenPGPError,
    armor,
    crc24,
    dearmor,
    normalize_fingerprint,
    packets,
    public_keys,
)

FIXTURES = Path(__file__).parents[3] / "fixtures" / "openpgp"
# Published by openSUSE beside the key itself (see tests/fixtures/openpgp/SOURCES.md).
NVIDIA_DRIVER_FPR = "2FB03195DECD49492BD1C17AB1D0D788DB27FD5A"
NVIDIA_CUDA_FPR = "EB693B3035CD5710E231E123A4B469963BF863CC"


def fixture(name):
    return (FIXTURES / name).read_bytes()


def fpr(name):
    return fixture(name).decode().strip()


def new_format(packet_list):
    """The same packets re-encoded with RFC 4880 new-format headers (gpg writes old-format ones)."""
    out = b""
    for packet in packet_list:
        length = len(packet.body)
        if length < 192:
            header = bytes([length])
        elif length < 8384:
            header = bytes([((length - 192) >> 8) + 192, (length - 192) & 0xFF])
        else:
            header = b"\xff" + length.to_bytes(4, "big")
        out += bytes([0xC0 | packet.tag]) + header + packet.body
    return out


def test_nvidia_published_key_has_its_published_fingerprint():
    [key] = public_keys(fixture("nvidia-linux-driver-db27fd5a.asc"))
    assert key.fingerprint == NVIDIA_DRIVER_FPR
    assert key.user_ids == ["NVIDIA Linux Driver Team <linux-bugs@nvidia.com>"]


@pytest.mark.skipif(not (FIXTURES / "nvidia-cuda-3bf863cc.pub").exists(),
                    reason="NVIDIA's CUDA key file is not stored yet (see SOURCES.md)")
def test_nvidia_cuda_repository_key_has_its_published_fingerprint():
    [key] = public_keys(fixture("nvidia-cuda-3bf863cc.pub"))
    assert key.fingerprint == NVIDIA_CUDA_FPR


def test_v4_fingerprint_is_sha1_over_0x99_length_and_body():
    body = b"\x04" + bytes(range(50))
    assert openpgp.fingerprint(body) == hashlib.sha1(b"\x99\x00\x33" + body).hexdigest().upper()


def test_armored_and_binary_exports_agree_with_gnupg():
    armored = public_keys(fixture("alpha-with-subkey.asc"))
    binary = public_keys(fixture("alpha-with-subkey.gpg"))
    assert [k.fingerprint for k in armored] == [k.fingerprint for k in binary] == [fpr("alpha.fpr")]
    assert armored[0].subkeys == 1
    assert armored[0].to_bytes() == fixture("alpha-with-subkey.gpg")


def test_new_format_packet_headers_parse_to_the_same_key():
    binary = fixture("alpha-with-subkey.gpg")
    reencoded = new_format(packets(binary))
    assert reencoded != binary
    [key] = public_keys(reencoded)
    assert key.fingerprint == fpr("alpha.fpr")
    assert [p.tag for p in key.packets] == [p.tag for p in packets(binary)]


def test_large_new_format_lengths():
    body = b"\x04" + b"\x00" * 9000  # needs the five-octet length form
    [packet] = packets(new_format([openpgp.Packet(6, body, b"")]))
    assert packet.body == body


def test_two_key_bundle_is_split_into_its_keys():
    keys = public_keys(fixture("two-keys.asc"))
    assert [k.fingerprint for k in keys] == [fpr("alpha.fpr"), fpr("beta.fpr")]
    assert b"".join(k.to_bytes() for k in keys) == dearmor(fixture("two-keys.asc"))


def test_only_the_keys_own_packets_are_kept():
    key_bytes = fixture("alpha-with-subkey.gpg")
    marker = b"\xa8\x03PGP"  # marker packet (tag 10)
    trust = b"\xb0\x02\x00\x00"  # GnuPG trust packet (tag 12)
    literal = b"\xcb\x06b\x00\x00\x00\x00\x00"  # literal data packet (tag 11)
    parts = [p.raw for p in packets(key_bytes)]
    [key] = public_keys(marker + b"".join(parts[:2]) + trust + b"".join(parts[2:]) + literal)
    assert key.to_bytes() == key_bytes


def test_crc24_of_the_rfc_test_vector():
    assert crc24(b"") == 0xB704CE
    # The published NVIDIA key's armor checksum line is =g062.
    body = dearmor(fixture("nvidia-linux-driver-db27fd5a.asc"))
    assert crc24(body) == int.from_bytes(base64.b64decode("g062"), "big")


def test_a_corrupt_armor_checksum_is_refused():
    text = fixture("alpha-with-subkey.asc").decode()
    lines = text.splitlines()
    checksum = next(i for i, line in enumerate(lines) if line.startswith("=") and len(line) == 5)
    lines[checksum] = "=AAAA" if lines[checksum] != "=AAAA" else "=AAAB"
    with pytest.raises(OpenPGPError, match="CRC24"):
        public_keys("\n".join(lines).encode())


def test_a_flipped_body_character_is_caught_by_the_checksum():
    text = fixture("nvidia-linux-driver-db27fd5a.asc").decode()
    corrupted = text.replace("mQINBGJYmlEBEACKX1pz", "mQINBGJYmlEBEACKX1py")
    with pytest.raises(OpenPGPError, match="CRC24"):
        public_keys(corrupted.encode())


def test_armor_without_checksum_is_accepted():
    text = "\n".join(line for line in fixture("alpha-with-subkey.asc").decode().splitlines()
                     if not (line.startswith("=") and len(line) == 5))
    assert [k.fingerprint for k in public_keys(text.encode())] == [fpr("alpha.fpr")]


def test_truncated_armor_is_refused():
    text = fixture("alpha-with-subkey.asc").decode()
    with pytest.raises(OpenPGPError, match="no -----END"):
        public_keys(text[: len(text) // 2].encode())


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"<html><body>404 Not Found</body></html>", "not an OpenPGP packet header"),
        (b"", "empty"),
        (b"-----BEGIN PGP SIGNATURE-----\n\nAAAA\n-----END PGP SIGNATURE-----\n", "SIGNATURE, not a PUBLIC KEY"),
        (b"-----BEGIN PGP PUBLIC KEY BLOCK-----\n\n!!!!\n-----END PGP PUBLIC KEY BLOCK-----\n", "base64"),
        (b"\x99\x02\x0d\x04\x62", "truncated"),
        (b"\xc6\xe1\x00", "partial body length"),
        (b"\x95\x00\x03\x04\x00\x00", "secret key material"),
        ("-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nclé\n".encode(), "non-ASCII"),
    ],
)
def test_what_is_not_a_public_key_is_refused_with_the_reason(data, reason):
    with pytest.raises(OpenPGPError, match=reason):
        public_keys(data)


@pytest.mark.parametrize(("version", "reason"), [(3, "version 3 key, obsolete"), (5, "only version 4"),
                                                 (6, "only version 4")])
def test_keys_of_other_versions_are_refused_by_name(version, reason):
    [key] = public_keys(bytes([0xC6, 10, version]) + b"\x00" * 9)
    with pytest.raises(OpenPGPError, match=reason):
        key.fingerprint  # noqa: B018 - the property computes it


def test_a_file_of_signatures_only_holds_no_key():
    signature = packets(fixture("alpha-with-subkey.gpg"))[2]
    assert signature.tag == 2
    assert public_keys(signature.raw) == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("EB69 3B30 35CD 5710 E231  E123 A4B4 6996 3BF8 63CC", NVIDIA_CUDA_FPR),
        ("0xeb693b3035cd5710e231e123a4b469963bf863cc", NVIDIA_CUDA_FPR),
        ("A4B469963BF863CC", None),  # a key ID is not a fingerprint
        ("", None),
        (None, None),
        ("ZZ693B3035CD5710E231E123A4B469963BF863CC", None),
    ],
)
def test_normalize_fingerprint(text, expected):
    assert normalize_fingerprint(text) == expected


def test_armor_round_trips_and_matches_the_publishers_checksum():
    binary = dearmor(fixture("nvidia-linux-driver-db27fd5a.asc"))
    armored = armor(binary)
    assert dearmor(armored) == binary
    assert b"\n=g062\n" in armored
    assert max(len(line) for line in armored.splitlines()) == 64
