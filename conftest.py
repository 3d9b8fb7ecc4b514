"""Make the checkout importable as ansible_collections.tfprov.gpu, as Ansible itself sees it."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT / "src"))

from tfprov.project import ensure_collection_link  # noqa: E402

ensure_collection_link(ROOT)
sys.path.insert(0, str(ROOT / ".tfprov" / "collections"))


import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _prices_offline(monkeypatch):
    """No test asks a cloud's price API by chance (tfprov up aws|gcp prices the spec first): the dated table only.
    Tests of the API paths build their PriceBook with offline=False and recorded answers."""
    monkeypatch.setenv("TFPROV_PRICES_OFFLINE", "1")
