# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Just enough OpenPGP (RFC 4880 / RFC 9580) to pin a repository key by fingerprint without GnuPG.

Reads ASCII-armored or binary key files, splits them into transferable public keys, computes v4 fingerprints
and re-emits one key's packets as a binary keyring (what apt's signed-by and rpm read).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import binascii
import hashlib
import re

TAG_SIGNATURE = 2
TAG_SECRET_KEY = 5
TAG_PUBLIC_KEY = 6
TAG_SECRET_SUBKEY = 7
TAG_USER_ID = 13
TAG_PUBLIC_SUBKEY = 14
TAG_USER_ATTRIBUTE = 17
# What a transferable public key is made of; anything else (trust, marker, literal data...) is dropped.
_KEY_PARTS = (TAG_PUBLIC_KEY, TAG_SIGNATURE, TAG_USER_ID, TAG_USER_ATTRIBUTE, TAG_PUBLIC_SUBKEY)

_ARMOR_BEGIN = re.compile(r"^-----BEGIN PGP ([A-Z ,/0-9]+)-----\s*$")
_ARMOR_END = re.compile(r"^-----END PGP ([A-Z ,/0-9]+)-----\s*$")
_HEADER = re.compile(r"^[A-Za-z][A-Za-z0-9-]*: ")


class OpenPGPError(Exception):
    """The data is not a usable OpenPGP public key; the text says why, in words a user can act on."""


class Packet:
    def __init__(self, tag, body, raw):
        self.tag = tag
        self.body = body
        self.raw = raw  # header + body exactly as read, so the written keyring keeps the source's bytes


class PublicKey:
    """One transferable public key: the primary key packet and the packets that follow it."""

    def __init__(self, primary):
        self.packets = [primary]

    @property
    def version(self):
        return key_version(self.packets[0].body)

    @property
    def fingerprint(self):
        return fingerprint(self.packets[0].body)

    @property
    def user_ids(self):
        return [p.body.decode("utf-8", "replace") for p in self.packets if p.tag == TAG_USER_ID]

    @property
    def subkeys(self):
        return sum(1 for p in self.packets if p.tag == TAG_PUBLIC_SUBKEY)

    def to_bytes(self):
        return b"".join(p.raw for p in self.packets)


def crc24(data):
    """The armor checksum of RFC 4880 section 6.1."""
    crc = 0xB704CE
    for byte in data:
        crc ^= byte << 16
        for _dummy in range(8):
            crc <<= 1
            if crc & 0x1000000:
                crc ^= 0x1864CFB
    return crc & 0xFFFFFF


def is_armored(data):
    return data.lstrip()[:15] == b"-----BEGIN PGP "


def dearmor(data):
    """Binary packets from every PUBLIC KEY BLOCK in data, checking each block's CRC24 when it has one."""
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError:
        raise OpenPGPError("the armor holds non-ASCII characters") from None
    blocks = []
    lines = iter(text.splitlines())
    for line in lines:
        begin = _ARMOR_BEGIN.match(line.strip())
        if not begin:
            continue
        if begin.group(1) != "PUBLIC KEY BLOCK":
            raise OpenPGPError("it is an armored %s, not a PUBLIC KEY BLOCK" % begin.group(1))
        blocks.append(_armor_block(lines))
    if not blocks:
        raise OpenPGPError("no -----BEGIN PGP PUBLIC KEY BLOCK----- line")
    return b"".join(blocks)


def _armor_block(lines):
    body, checksum, in_headers = [], None, True
    for raw_line in lines:
        line = raw_line.strip()
        if _ARMOR_END.match(line):
            break
        # Armor headers ("Version: ...") run to a blank line; some writers omit both.
        if in_headers and _HEADER.match(line):
            continue
        in_headers = False
        if line.startswith("=") and len(line) == 5:
            checksum = line[1:]
        elif line:
            body.append(line)
    else:
        raise OpenPGPError("the armor has no -----END PGP PUBLIC KEY BLOCK----- line (truncated download?)")
    try:
        packets = base64.b64decode("".join(body), validate=True)
    except (binascii.Error, ValueError):
        raise OpenPGPError("the armor is not valid base64") from None
    if checksum is not None:
        try:
            expected = int(binascii.hexlify(base64.b64decode(checksum, validate=True)), 16)
        except (binascii.Error, ValueError):
            raise OpenPGPError("the armor checksum line is not valid base64") from None
        if crc24(packets) != expected:
            raise OpenPGPError("the armor checksum (CRC24) does not match: the file is corrupt")
    return packets


def packets(data):
    """Split binary OpenPGP data into packets, old (RFC 1991) and new (RFC 4880) header formats."""
    data = bytes(data)
    found, pos = [], 0
    while pos < len(data):
        start, ctb = pos, data[pos]
        if not ctb & 0x80:
            raise OpenPGPError("byte %d is not an OpenPGP packet header" % pos)
        pos += 1
        if ctb & 0x40:
            tag = ctb & 0x3F
            length, pos = _new_length(data, pos)
        else:
            tag = (ctb >> 2) & 0x0F
            length_type = ctb & 0x03
            if length_type == 3:
                length = len(data) - pos  # indeterminate: the packet runs to the end
            else:
                size = (1, 2, 4)[length_type]
                if pos + size > len(data):
                    raise OpenPGPError("packet at byte %d is truncated" % start)
                length = int(binascii.hexlify(data[pos:pos + size]), 16)
                pos += size
        if pos + length > len(data):
            raise OpenPGPError("packet at byte %d is truncated" % start)
        found.append(Packet(tag, data[pos:pos + length], data[start:pos + length]))
        pos += length
    return found


def _new_length(data, pos):
    if pos >= len(data):
        raise OpenPGPError("packet header at byte %d is truncated" % (pos - 1))
    first = data[pos]
    if first < 192:
        return first, pos + 1
    if first < 224:
        if pos + 2 > len(data):
            raise OpenPGPError("packet header at byte %d is truncated" % (pos - 1))
        return ((first - 192) << 8) + data[pos + 1] + 192, pos + 2
    if first == 255:
        if pos + 5 > len(data):
            raise OpenPGPError("packet header at byte %d is truncated" % (pos - 1))
        return int(binascii.hexlify(data[pos + 1:pos + 5]), 16), pos + 5
    # Partial body lengths are for streamed data packets; a key never uses them.
    raise OpenPGPError("packet at byte %d uses a partial body length, which no key packet may" % (pos - 1))


def key_version(body):
    if not body:
        raise OpenPGPError("a public key packet is empty")
    return body[0]


def fingerprint(body):
    """Upper-case hex fingerprint of a public key packet body; only v4 is computed."""
    version = key_version(body)
    if version == 4:
        return hashlib.sha1(b"\x99" + len(body).to_bytes(2, "big") + body).hexdigest().upper()
    if version in (2, 3):
        raise OpenPGPError("it holds a version %d key, obsolete since 1998 and not accepted by apt" % version)
    raise OpenPGPError(
        "it holds a version %d key; only version 4 keys are supported (versions 5 and 6 have other fingerprints)"
        % version
    )


def public_keys(data):
    """Transferable public keys in data (armored or binary), each with only its own key packets."""
    binary = dearmor(data) if is_armored(data) else bytes(data)
    if not binary:
        raise OpenPGPError("it is empty")
    keys = []
    for packet in packets(binary):
        if packet.tag in (TAG_SECRET_KEY, TAG_SECRET_SUBKEY):
            raise OpenPGPError("it holds secret key material, which must never be published or installed")
        if packet.tag == TAG_PUBLIC_KEY:
            keys.append(PublicKey(packet))
        elif keys and packet.tag in _KEY_PARTS:
            keys[-1].packets.append(packet)
    return keys


def armor(binary):
    """ASCII armor for a public key block (what rpm --import and dnf's gpgkey read)."""
    encoded = base64.b64encode(binary).decode("ascii")
    lines = [encoded[i:i + 64] for i in range(0, len(encoded), 64)]
    checksum = base64.b64encode(crc24(binary).to_bytes(3, "big")).decode("ascii")
    return ("-----BEGIN PGP PUBLIC KEY BLOCK-----\n\n" + "\n".join(lines) + "\n=" + checksum
            + "\n-----END PGP PUBLIC KEY BLOCK-----\n").encode("ascii")


def normalize_fingerprint(text):
    """'eb69 3B30 ...' or '0xEB69...' -> 'EB693B30...'; None when it is not 40 hex digits."""
    value = re.sub(r"\s+", "", text or "").upper()
    if value.startswith("0X"):
        value = value[2:]
    return value if re.match(r"^[0-9A-F]{40}$", value) else None
