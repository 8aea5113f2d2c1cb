"""Which devices the tests run on, decided once per process (imported by conftest before any test).

``NETSPARSE_TEST_DEVICE=cpu`` keeps a GPU machine on the CPU paths (CI's view of it). Triton runs
natively on CUDA tensors when a GPU is present; without one it runs CPU tensors in its interpreter,
which ``TRITON_INTERPRET=1`` must select before triton is first imported (conftest sets it from
:data:`TRITON_INTERPRETED`). Never the interpreter on CUDA tensors: it copies device memory through
the host and crashed ``make test`` on an H200.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os

import pytest
import torch

# Count the GPUs through NVML: the default check initialises the CUDA driver in this process, and a
# rank forked from it afterwards could not use CUDA. (torch reads this variable at every check.)
os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")
CUDA = os.environ.get("NETSPARSE_TEST_DEVICE", "").lower() != "cpu" and torch.cuda.is_available()
DEVICES = ["cpu"] + (["cuda"] if CUDA else [])
TRITON_INSTALLED = importlib.util.find_spec("triton") is not None
# An explicit TRITON_INTERPRET in the environment wins (conftest only fills it in when unset).
TRITON_INTERPRETED = os.environ.get("TRITON_INTERPRET", "0" if CUDA else "1") not in ("", "0")
# Triton's interpreter before 3.9 (3.6 on a GPU machine's image) makes a loop bound computed in a kernel
# an index with int() on a 1-element array, which NumPy 2 refuses ("only 0-dimensional arrays can be
# converted"); 3.9 squeezes it first. The native compile is not affected.
TRITON_INTERPRETER_LOOPS = TRITON_INSTALLED and tuple(
    int(x) for x in importlib.metadata.version("triton").split(".")[:2]) >= (3, 9)
# The one device on which backend="triton" runs in this process, or None.
TRITON_DEVICE = None if not TRITON_INSTALLED else ("cpu" if TRITON_INTERPRETED else ("cuda" if CUDA else None))

requires_cuda = pytest.mark.skipif(not CUDA, reason="needs a CUDA GPU")
requires_triton = pytest.mark.skipif(
    TRITON_DEVICE is None,
    reason="triton is not installed" if not TRITON_INSTALLED else
    "triton runs neither natively (no CUDA GPU) nor interpreted (TRITON_INTERPRET=0)")


def backends_on(device: str) -> list[str]:
    """The kernel backends that run on tensors of ``device`` here (``cpp`` is CPU only)."""
    out = ["cpp", "torch"] if device == "cpu" else ["torch"]
    if TRITON_DEVICE == device:
        out.append("triton")
    return out


def backend_device_pairs() -> list[tuple[str, str]]:
    """Every (backend, device) pair that runs here, for ``pytest.mark.parametrize("backend,device", ...)``."""
    return [(b, d) for d in DEVICES for b in backends_on(d)]
