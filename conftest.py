"""Make the checkout importable as ansible_collections.tfprov.gpu, as Ansible itself sees it."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT / "src"))

from tfprov.project import ensure_collection_link  # noqa: E402

ensure_collection_link(ROOT)
sys.path.insert(0, str(ROOT / ".tfprov" / "collections"))
