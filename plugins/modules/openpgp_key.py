#!/usr/bin/python
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: openpgp_key
short_description: Install a repository signing key only if it is exactly the one key expected
version_added: 1.0.0
description:
  - Downloads an OpenPGP public key (or takes it from O(content)) into memory, parses it (ASCII armor with its
    CRC24 checksum, or binary packets) and requires exactly one primary public key whose v4 fingerprint equals
    O(fingerprint).
  - Writes only that key's own packets (primary key, user IDs, signatures, subkeys) as a binary keyring to
    O(dest), the format apt's C(signed-by) and rpm read. Other keys and stray packets are not written.
  - Nothing touches O(dest) before verification passes; a refusal leaves it as it was and no temporary file behind.
  - The key is fetched on every run and O(dest) is replaced when its bytes differ, so a key that the publisher
    re-signed (new expiry, same fingerprint) is picked up.
  - Needs no GnuPG on the node. Version 4 keys only; version 3, 5 and 6 keys are refused by name.
author:
  - tfprov maintainers (@tfprov)
attributes:
  check_mode:
    description: Downloads, parses and compares, then reports whether it would write; writes nothing.
    support: full
  diff_mode:
    description: The keyring is binary; no diff is shown.
    support: none
options:
  url:
    description:
      - Where the key is published (C(https://), C(http://) or C(file://)).
      - Exactly one of O(url) and O(content) is given.
    type: str
  content:
    description:
      - The key itself, ASCII-armored, instead of O(url). Binary keys travel through O(url) (module arguments
        are text).
    type: str
  fingerprint:
    description:
      - The fingerprint the key must have, 40 hex digits; spaces, case and a C(0x) prefix are ignored.
      - An empty value is refused, never read as "any key".
    type: str
    required: true
  fingerprint_var:
    description: The variable users set O(fingerprint) with, named in refusals so they know what to change.
    type: str
    default: fingerprint
  dest:
    description: The keyring file to write (mode C(0644)); its directory must exist.
    type: path
    required: true
  format:
    description:
      - C(binary) for apt's C(signed-by) (a C(.gpg) keyring), C(armored) for rpm and dnf's C(gpgkey).
    type: str
    choices: [binary, armored]
    default: binary
  timeout:
    description: Seconds to wait for the download.
    type: int
    default: 30
  validate_certs:
    description: Verify the server's TLS certificate. Leave it on outside tests.
    type: bool
    default: true
  ca_path:
    description: A PEM file of CA certificates to verify the server with, instead of the system's.
    type: path
notes:
  - A key file larger than 1 MiB is refused; repository keys are a few KiB.
"""

EXAMPLES = r"""
- name: Install NVIDIA's CUDA repository key, pinned by fingerprint
  tfprov.gpu.openpgp_key:
    url: https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/3bf863cc.pub
    fingerprint: EB693B3035CD5710E231E123A4B469963BF863CC
    fingerprint_var: nvidia_repo_key_fingerprint
    dest: /usr/share/keyrings/tfprov-nvidia-cuda.gpg
"""

RETURN = r"""
fingerprint:
  description: The verified key's fingerprint, upper-case hex without spaces.
  returned: success
  type: str
  sample: EB693B3035CD5710E231E123A4B469963BF863CC
dest:
  description: The keyring written (or that would be written in check mode).
  returned: success
  type: str
  sample: /usr/share/keyrings/tfprov-nvidia-cuda.gpg
user_ids:
  description: The key's user IDs, for the log.
  returned: success
  type: list
  elements: str
  sample: ["cudatools <cudatools@nvidia.com>"]
"""

import os
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.urls import fetch_url
from ansible_collections.tfprov.gpu.plugins.module_utils.openpgp import (
    OpenPGPError,
    armor,
    normalize_fingerprint,
    public_keys,
)

MAX_KEY_BYTES = 1024 * 1024
KEYRING_MODE = 0o644


def one_line(text):
    return " ".join(str(text).split())


def download(module, url):
    """The bytes at url, or a refusal that says the download failed (not that the key is bad)."""
    response, info = fetch_url(module, url, timeout=module.params["timeout"], ca_path=module.params["ca_path"])
    status = info.get("status")
    if response is None or (status != 200 and not url.startswith("file:")):
        reason = info.get("msg") or "no response"
        module.fail_json(msg=one_line("could not download the key from %s: %s (HTTP status %s): check the URL "
                                      "and the node's network or proxy; no key was checked or written"
                                      % (url, reason, status)))
    try:
        data = response.read(MAX_KEY_BYTES + 1)
    except Exception as error:  # a dropped connection mid-body surfaces as many exception types
        module.fail_json(msg=one_line("could not download the key from %s: %s" % (url, error)))
    if len(data) > MAX_KEY_BYTES:
        module.fail_json(msg="%s is larger than 1 MiB: that is not a repository key file" % url)
    return data


def the_expected_key(module, data, source, expected):
    """The one public key in data with the expected fingerprint, or a one-line refusal naming what to change."""
    try:
        keys = public_keys(data)
        fingerprints = [key.fingerprint for key in keys]
    except OpenPGPError as error:
        module.fail_json(msg=one_line("%s is not an OpenPGP public key: %s: point %s at the repository's armored "
                                      "or binary key file" % (source, error, _source_option(module))))
    if not keys:
        module.fail_json(msg="%s holds no OpenPGP public key: point %s at the repository's key file"
                         % (source, _source_option(module)))
    if len(keys) > 1:
        module.fail_json(msg="%s holds %d keys (%s) where exactly one was expected: point %s at a file with "
                             "only the repository key" % (source, len(keys), ", ".join(fingerprints),
                                                          _source_option(module)))
    if fingerprints[0] != expected:
        module.fail_json(msg="%s holds key %s, not %s: refusing to trust the repository (if the publisher "
                             "rotated its key, check the new fingerprint with them and set %s)"
                             % (source, fingerprints[0], expected, module.params["fingerprint_var"]))
    return keys[0]


def _source_option(module):
    return "url" if module.params["url"] is not None else "content"


def write_if_different(module, dest, data):
    """Atomically replace dest with data when its bytes differ; True when it did (or would, in check mode)."""
    directory = os.path.dirname(dest) or "."
    if not os.path.isdir(directory):
        module.fail_json(msg="%s does not exist: create the directory for %s first" % (directory, dest))
    if os.path.isdir(dest):
        module.fail_json(msg="%s is a directory: set dest to a file path" % dest)
    try:
        with open(dest, "rb") as handle:
            if handle.read() == data:
                return False
    except (IOError, OSError):
        pass  # missing or unreadable: (re)write it
    if module.check_mode:
        return True
    handle, temp_path = tempfile.mkstemp(dir=directory, prefix=".tfprov-key-")
    try:
        with os.fdopen(handle, "wb") as temp:
            temp.write(data)
        os.chmod(temp_path, KEYRING_MODE)
        module.atomic_move(temp_path, dest)
    finally:
        if os.path.exists(temp_path):
            os.unlink(temp_path)
    return True


def main():
    module = AnsibleModule(
        argument_spec={
            "url": {"type": "str"},
            "content": {"type": "str"},
            "fingerprint": {"type": "str", "required": True},
            "fingerprint_var": {"type": "str", "default": "fingerprint"},
            "dest": {"type": "path", "required": True},
            "format": {"type": "str", "choices": ["binary", "armored"], "default": "binary"},
            "timeout": {"type": "int", "default": 30},
            "validate_certs": {"type": "bool", "default": True},
            "ca_path": {"type": "path"},
        },
        mutually_exclusive=[("url", "content")],
        required_one_of=[("url", "content")],
        supports_check_mode=True,
    )
    params = module.params
    raw_expected = (params["fingerprint"] or "").strip()
    if not raw_expected:
        module.fail_json(msg="%s is empty: set the expected fingerprint; an empty one would trust any key"
                         % params["fingerprint_var"])
    expected = normalize_fingerprint(raw_expected)
    if expected is None:
        module.fail_json(msg="%s is %r: set it to the key's full 40-hex-digit fingerprint (a short key ID "
                             "can be forged)" % (params["fingerprint_var"], raw_expected))

    if params["url"] is not None:
        source, data = params["url"], download(module, params["url"])
    else:
        source, data = "content", params["content"].encode("utf-8")

    key = the_expected_key(module, data, source, expected)
    dest = params["dest"]
    keyring = key.to_bytes() if params["format"] == "binary" else armor(key.to_bytes())
    changed = write_if_different(module, dest, keyring)
    if os.path.exists(dest):
        changed = module.set_mode_if_different(dest, "0644", changed)
    module.exit_json(changed=changed, fingerprint=expected, dest=dest, user_ids=key.user_ids)


if __name__ == "__main__":
    main()
