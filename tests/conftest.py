import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("NETSPARSE_DATA", ROOT.parent / "shared" / "data"))


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    # PyG writes processed Planetoid files: keep them out of the user's cache.
    monkeypatch.setenv("NETSPARSE_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))
