# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Keep the module payloads Ansible builds from one run to the next, each reused only while its sources stand.

Ansible zips each module with every module_utils file it imports (its AnsiballZ payload) the first time a run uses
it, in the run's own temporary directory, and deletes them all at the end. Finding the imports means parsing each of
those files: 0.1-0.25 s of the controller's CPU per module, about 2 s of a fresh `tfprov run node` (13 modules) and
0.3 s of a no-op one, paid again by every run. This callback copies the payloads a run built into a store at its
end, and at the start of the next run copies back those whose every file is still byte for byte the controller's
own: a payload any of whose sources changed, appeared or went away is deleted, and Ansible builds it again as it
always would. Modules Ansible finds by bare name (ansible.legacy: a role's library/, ANSIBLE_LIBRARY) are never
kept: the same name may be another file in another project.

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
    and copies back, at the start of the next run, each one whose files are all still byte for byte those on the
    controller. A payload any of whose sources changed is deleted and built again by Ansible.
  - Modules found by bare name (C(ansible.legacy)) are never kept.
  - Enabled in the checkout's C(ansible.cfg) (C(callbacks_enabled)).
author:
  - tfprov maintainers
requirements:
  - enabled in C(callbacks_enabled)
"""

import base64
import importlib
import io
import os
import pickle
import shutil
import zipfile
from pathlib import Path

import ansible
from ansible import constants as C
from ansible.plugins.callback import CallbackBase
from ansible.release import __version__ as ANSIBLE_VERSION
from ansible.utils.display import Display
from ansible_collections.tfprov.gpu.plugins.plugin_utils.private_store import trusted

display = Display()

ANSIBLE_DIR = Path(ansible.__file__).parent
# Written by Ansible itself into every payload (its version is the store's key), not copied from a file.
GENERATED = {"ansible/__init__.py", "ansible/module_utils/__init__.py"}
KEPT_PREFIXES = ("ansible.modules.", "ansible_collections.")  # not ansible.legacy.*: a bare name may be any file


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


def _read(path: Path | None, sources: dict) -> bytes | None:
    if path not in sources:
        try:
            sources[path] = path.read_bytes() if path else None
        except OSError:
            sources[path] = None
    return sources[path]


def still_current(record: bytes, sources: dict) -> bool:
    """Whether every file in a kept payload is the controller's file as it is now (sources: files read so far).
    A package's __init__.py that has no file is one Ansible writes empty: it must still have none."""
    payload = zipfile.ZipFile(io.BytesIO(base64.b64decode(pickle.loads(record).zip_data)))
    for member in payload.infolist():
        if member.filename in GENERATED:
            continue
        current = _read(controller_file(member.filename), sources)
        if current is None:
            if not (member.filename.endswith("/__init__.py") and member.file_size == 0):
                return False
        elif current != payload.read(member):
            return False
    return True


def _copy(source: Path, target: Path) -> None:
    """Whole or not at all: Ansible (and another run) may read the target as soon as it exists."""
    partial = target.with_name(target.name + ".tfprov-part")
    shutil.copyfile(source, partial)
    os.replace(partial, target)


def _payloads(directory: Path) -> list[Path]:
    return [path for path in directory.glob("*") if path.name.startswith(KEPT_PREFIXES)
            and not path.name.endswith((".lock", "-part", ".tfprov-part"))]


def reuse(store: Path, run_cache: Path) -> tuple[int, int]:
    """Copy the store's payloads that still stand into this run's cache; delete those that do not.
    (reused, dropped)."""
    reused = dropped = 0
    sources: dict = {}
    if not trusted(store):
        return reused, dropped
    run_cache.mkdir(parents=True, exist_ok=True)
    for kept in _payloads(store):
        try:
            current = still_current(kept.read_bytes(), sources)
        except Exception:  # unreadable, or another ansible-core's format: rebuilt by Ansible
            current = False
        if current:
            _copy(kept, run_cache / kept.name)
            reused += 1
        else:
            kept.unlink(missing_ok=True)
            dropped += 1
    return reused, dropped


def keep(run_cache: Path, store: Path) -> int:
    """Copy the payloads this run built (those the store lacks) into the store. How many."""
    if not run_cache.is_dir():
        return 0
    store.mkdir(mode=0o700, parents=True, exist_ok=True)
    added = 0
    for built in _payloads(run_cache):
        if not (store / built.name).exists():
            _copy(built, store / built.name)
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
