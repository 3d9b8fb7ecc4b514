# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The controller-side stores tfprov's callbacks keep under ANSIBLE_HOME hold what Ansible will load and run (module
payloads it unpickles, compiled template code): one is used only when this user made it and only this user can
write to it."""

from __future__ import annotations

import os
from pathlib import Path


def trusted(store: Path) -> bool:
    """A directory this user owns that neither its group nor others can write to."""
    try:
        found = store.stat()
    except OSError:
        return False
    return found.st_uid == os.getuid() and not found.st_mode & 0o022 and store.is_dir()
