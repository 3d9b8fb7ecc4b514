# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The controller-side stores tfprov's callbacks keep under ANSIBLE_HOME hold what Ansible will load and run (module
payloads it unpickles, compiled template code): one is used only when this user made it and only this user can
write to it, and each of its files is written whole or not at all."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def trusted(store: Path) -> bool:
    """A directory this user owns that neither its group nor others can write to."""
    try:
        found = store.stat()
    except OSError:
        return False
    return found.st_uid == os.getuid() and not found.st_mode & 0o022 and store.is_dir()


def write_whole(target: Path, data: bytes) -> None:
    """Write a store's file whole or not at all: a temporary file of its own beside it (named .part-*), renamed over
    it. Another process may read the target as soon as it exists, or write the same one at the same time."""
    with tempfile.NamedTemporaryFile(dir=target.parent, prefix=".part-", delete=False) as part:
        part.write(data)
    try:
        os.replace(part.name, target)
    except OSError:
        os.unlink(part.name)
        raise
