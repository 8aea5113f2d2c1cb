import os
from pathlib import Path

# One OpenMP thread per process, set before torch loads (devices imports it) and inherited by every rank,
# forkserver and command a test starts: make test runs two xdist workers on two cores, so a process with
# two threads shares its cores with the other worker, and its parallel ops wait at OpenMP's barrier on a
# descheduled thread. Measured here: tests/test_gat_equivalence.py's one-rank cases beside a busy process,
# 1.1-2.2 s with one thread against 6.7-10.6 s with two; nine training-heavy files on two workers, idle
# host, 97.1 and 91.8 s against 100.8 and 95.0 s. Tests of thread counts set theirs explicitly.
os.environ.setdefault("OMP_NUM_THREADS", "1")

import devices  # noqa: E402
import pytest  # noqa: E402

# Triton reads TRITON_INTERPRET when it is first imported, and any test may import it first (through
# netsparse_torch.kernels): set it before collection. The interpreter only where no GPU runs Triton
# natively (tests/devices.py decides; NETSPARSE_TEST_DEVICE=cpu forces the CPU view).
os.environ.setdefault("TRITON_INTERPRET", "1" if devices.TRITON_INTERPRETED else "0")

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("NETSPARSE_DATA", ROOT.parent / "shared" / "data"))
# netsparse-train's device=auto would take a GPU where there is one: the suite checks CPU results (golden
# losses, counters) on every machine, and the CUDA tests ask for device=cuda themselves.
os.environ.setdefault("NETSPARSE_DEVICE", "cpu")


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    # PyG writes processed Planetoid files: keep them out of the user's cache.
    monkeypatch.setenv("NETSPARSE_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))


@pytest.fixture
def cuda():
    """The CUDA device; skips the test (reason "needs a CUDA GPU") where there is none."""
    if not devices.CUDA:
        pytest.skip("needs a CUDA GPU")
    import torch

    return torch.device("cuda")
