# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Keep the module payloads Ansible builds from one run to the next, each reused only while its sources stand.

Ansible zips each module with every module_utils file it imports (its AnsiballZ payload) the first time a run uses
it, in the run's own temporary directory, and deletes them all at the end. Finding the imports means parsing each of
those files: 0.1-0.25 s of the controller's CPU per module, about 2 s of a fresh `tfprov run node` (13 modules) and
0.3 s of a no-op one, paid again by every run. This callback keeps the payloads a run built in a store at its end,
and at the start of the next run copies back those whose every file is still the controller's own (SHA-256): a
payload any of whose sources changed, appeared or went away is deleted, and Ansible builds it again as it always
would. Each kept payload carries the SHA-256 of each of its files, taken once when it is kept: the check at a run's
start reads each controller file once and unzips nothing (unzipping all 50 kept payloads took 0.26 s a run). Modules
Ansible finds by bare name (ansible.legacy: a role's library/, ANSIBLE_LIBRARY) are never kept: the same name may be
another file in another project.

It relies on two details of ansible-core's own (2.19): the payloads are files in <local tmp>/ansiballz_cache, each a
pickled record holding the zip. A release that changes either leaves the store unused (each payload is rebuilt),
never a wrong one used: nothing is copied back that could not be read and checked. The store is per ansible-core
version, under ANSIBLE_HOME (mode 0700: Ansible loads these records as it loads its own).
"""

from __future__ import annotations

DOCUMENTATION = r"""
name: payload_cache
type: aggregate
short_description: Reuse the module payloads of earlier runs while their source files are unchanged
description:
  - Ansible builds each module's payload (the module and the module_utils files it imports) once per run and
    deletes it at the end. This callback keeps them in a store under C(ANSIBLE_HOME) (per ansible-core version)
    and copies back, at the start of the next run, each one whose files all still have on the controller the
    SHA-256 they had when it was built. A payload any of whose sources changed is deleted and built again by Ansible.
  - Modules found by bare name (C(ansible.legacy)) are never kept.
  - Enabled in the checkout's C(ansible.cfg) (C(callbacks_enabled)).
author:
  - tfprov maintainers
requirements:
  - enabled in C(callbacks_enabled)
"""

import base64
import hashlib
import importlib
import io
import json
import pickle
import zipfile
from pathlib import Path

import ansible
from ansible import constants as C
from ansible.plugins.callback import CallbackBase
from ansible.release import __version__ as ANSIBLE_VERSION
from ansible.utils.display import Display
from ansible_collections.tfprov.gpu.plugins.plugin_utils.private_store import trusted, write_whole

display = Display()

ANSIBLE_DIR = Path(ansible.__file__).parent
# Written by Ansible itself into every payload (its version is the store's key), not copied from a file.
GENERATED = {"ansible/__init__.py", "ansible/module_utils/__init__.py"}
KEPT_PREFIXES = ("ansible.modules.", "ansible_collections.")  # not ansible.legacy.*: a bare name may be any file
MAGIC = b"tfprov-payload 2\n"  # the store's entry format (entry()); files without it are rebuilt
EMPTY = hashlib.sha256(b"").hexdigest()


def store_dir() -> Path:
    return Path(C.ANSIBLE_HOME).expanduser() / "tfprov" / "payloads" / ANSIBLE_VERSION


def controller_file(member: str) -> Path | None:
    """The controller's file a payload member was copied from, or None when it cannot be found now."""
    parts = member.split("/")
    if parts[0] == "ansible":
        return ANSIBLE_DIR.joinpath(*parts[1:])
    if parts[0] == "ansible_collections" and len(parts) > 3:
        found = collection_dir(f"{parts[1]}.{parts[2]}")
        return found.joinpath(*parts[3:]) if found else None
    return None


def collection_dir(name: str) -> Path | None:
    """Where the collection is found now, as its modules' imports find it: Ansible's collection loader gives the
    package a file inside the collection's directory; a plain namespace package (outside Ansible), its path."""
    try:
        package = importlib.import_module(f"ansible_collections.{name}")
    except ImportError:  # no longer installed
        return None
    if getattr(package, "__file__", None):
        return Path(package.__file__).parent
    return next((Path(entry) for entry in getattr(package, "__path__", [])), None)


def _digest(member: str, digests: dict) -> str | None:
    """The SHA-256 of the controller file a payload member comes from, as it is now (None: there is none), each
    member looked up and read once per run."""
    if member not in digests:
        path = controller_file(member)
        try:
            digests[member] = hashlib.sha256(path.read_bytes()).hexdigest() if path else None
        except OSError:
            digests[member] = None
    return digests[member]


def manifest(record: bytes) -> dict[str, str]:
    """Every file in a payload Ansible built, with its SHA-256 (what Ansible writes itself, GENERATED, left out)."""
    payload = zipfile.ZipFile(io.BytesIO(base64.b64decode(pickle.loads(record).zip_data)))
    return {member.filename: hashlib.sha256(payload.read(member)).hexdigest() for member in payload.infolist()
            if member.filename not in GENERATED}


def stands(files: dict[str, str], digests: dict) -> bool:
    """Whether every file of a kept payload is the controller's file as it is now (digests: files read so far).
    A package's __init__.py that has no file is one Ansible writes empty: it must still have none."""
    for member, digest in files.items():
        current = _digest(member, digests)
        if current is None:
            if not (member.endswith("/__init__.py") and digest == EMPTY):
                return False
        elif current != digest:
            return False
    return True


def entry(record: bytes) -> bytes:
    """A payload as the store keeps it: a line naming the format, its files' digests, then Ansible's record. One
    file, written whole, so a digest and the payload it describes can never come from two different runs."""
    return MAGIC + json.dumps(manifest(record), sort_keys=True).encode() + b"\n" + record


def parse(kept: bytes) -> tuple[dict[str, str], bytes]:
    """The digests and Ansible's record of a stored payload; ValueError for anything else (an older store's file)."""
    if not kept.startswith(MAGIC):
        raise ValueError("not a payload entry of this format")
    header, _, record = kept[len(MAGIC):].partition(b"\n")
    return json.loads(header), record


def _payloads(directory: Path) -> list[Path]:
    return [path for path in directory.glob("*") if path.name.startswith(KEPT_PREFIXES)
            and not path.name.endswith((".lock", "-part"))]


def reuse(store: Path, run_cache: Path) -> tuple[int, int]:
    """Write the store's payloads that still stand into this run's cache; delete those that do not.
    (reused, dropped)."""
    reused = dropped = 0
    digests: dict = {}
    if not trusted(store):
        return reused, dropped
    run_cache.mkdir(parents=True, exist_ok=True)
    for kept in _payloads(store):
        try:
            files, record = parse(kept.read_bytes())
            current = stands(files, digests)
        except Exception:  # unreadable, an older format or another ansible-core's: rebuilt by Ansible
            current = False
        if current:
            write_whole(run_cache / kept.name, record)
            reused += 1
        else:
            kept.unlink(missing_ok=True)
            dropped += 1
    return reused, dropped


def keep(run_cache: Path, store: Path) -> int:
    """Store the payloads this run built (those the store lacks), each with its files' digests. How many."""
    if not run_cache.is_dir():
        return 0
    store.mkdir(mode=0o700, parents=True, exist_ok=True)
    added = 0
    for built in _payloads(run_cache):
        if not (store / built.name).exists():
            try:
                kept = entry(built.read_bytes())
            except Exception:  # not a record this callback can read: not kept
                continue
            write_whole(store / built.name, kept)
            added += 1
    return added


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "tfprov.gpu.payload_cache"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super().__init__()
        # Ansible's run-wide temporary directory, made when the controller process started: the forked workers
        # build into this same directory, and look there first.
        self._run_cache = Path(C.DEFAULT_LOCAL_TMP) / "ansiballz_cache"
        self._store = store_dir()
        try:
            reused, dropped = reuse(self._store, self._run_cache)
            display.vvv(f"payload_cache: {reused} module payloads reused, {dropped} rebuilt ({self._store})")
        except OSError as error:  # no store to read: every payload is built, as without this callback
            display.vvv(f"payload_cache: not used: {error}")

    def v2_playbook_on_stats(self, stats):
        try:
            added = keep(self._run_cache, self._store)
            display.vvv(f"payload_cache: {added} module payloads kept for later runs")
        except OSError as error:
            display.vvv(f"payload_cache: none kept: {error}")
