import os
from pathlib import Path

import pytest

# Triton reads TRITON_INTERPRET when it is first imported, and any test may import it first (through
# netsparse_torch.kernels): set it before collection so the CPU interpreter is used throughout.
os.environ.setdefault("TRITON_INTERPRET", "1")

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("NETSPARSE_DATA", ROOT.parent / "shared" / "data"))
# netsparse-train's device=auto would take a GPU where there is one: the suite checks CPU results (golden
# losses, counters) on every machine, and the CUDA tests ask for device=cuda themselves.
os.environ.setdefault("NETSPARSE_DEVICE", "cpu")


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    # PyG writes processed Planetoid files: keep them out of the user's cache.
    monkeypatch.setenv("NETSPARSE_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))
