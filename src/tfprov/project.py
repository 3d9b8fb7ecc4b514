"""Where the tfprov checkout is, and making it resolvable as the tfprov.gpu collection."""

from __future__ import annotations

import os
from pathlib import Path

from .errors import TfprovError

COLLECTION_LINK = Path(".tfprov/collections/ansible_collections/tfprov/gpu")


def _is_project(path: Path) -> bool:
    return (path / "galaxy.yml").is_file() and (path / "playbooks").is_dir()


def project_root() -> Path:
    """TFPROV_HOME, else the nearest parent of the working directory, else this package's checkout."""
    if env := os.environ.get("TFPROV_HOME"):
        root = Path(env).resolve()
        if not _is_project(root):
            raise TfprovError(f"TFPROV_HOME={env} is not a tfprov checkout (no galaxy.yml and playbooks/)")
        return root
    cwd = Path.cwd().resolve()
    for candidate in (cwd, *cwd.parents, Path(__file__).resolve().parents[2]):
        if _is_project(candidate):
            return candidate
    raise TfprovError("cannot find the tfprov checkout: run tfprov inside it or set TFPROV_HOME")


def ensure_collection_link(root: Path) -> Path:
    """Playbooks use FQCNs (tfprov.gpu.*): link the checkout where ansible.cfg's collections_path looks."""
    link = root / COLLECTION_LINK
    if not link.exists():
        link.parent.mkdir(parents=True, exist_ok=True)
        if link.is_symlink():  # dangling: the checkout moved
            link.unlink()
        link.symlink_to(Path("../../../.."))
    return link


def ansible_env(root: Path) -> dict[str, str]:
    """Environment for every ansible process tfprov starts: this checkout's config, whatever the cwd."""
    ensure_collection_link(root)
    return {
        "ANSIBLE_CONFIG": str(root / "ansible.cfg"),
        "ANSIBLE_FORCE_COLOR": "0",
        "ANSIBLE_NOCOLOR": "1",
        # ansible-runner turns host key checking off unless told otherwise: real VMs over SSH must be checked.
        "ANSIBLE_HOST_KEY_CHECKING": "True",
    }
