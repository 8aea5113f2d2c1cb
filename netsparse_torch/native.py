"""Loading the C++ extension ``netsparse_torch._C`` without importing torch when torch is not needed.

The extension links against torch's shared libraries (libc10, libtorch_cpu, libtorch_python).
``import torch`` loads them, but also about a second of Python modules; torch-free tools that only
drive the units (``netsparse-simulate``, ``hw_models``) load the libraries alone. If that fails for
any reason (another torch layout), torch is imported as usual.
"""

from __future__ import annotations

import ctypes
import importlib.util
import sys
from pathlib import Path

TORCH_LIBS = ("libc10.so", "libtorch_cpu.so", "libtorch.so", "libtorch_python.so")
"""Loaded in this order (each after the ones it depends on), those present."""


def units():
    """``netsparse_torch._C.units``, loading torch's shared libraries first if torch is not imported."""
    if "torch" not in sys.modules:
        try:
            lib = Path(importlib.util.find_spec("torch").submodule_search_locations[0]) / "lib"
            for name in TORCH_LIBS:
                if (lib / name).is_file():
                    ctypes.CDLL(str(lib / name), mode=ctypes.RTLD_GLOBAL)
        except (OSError, AttributeError, TypeError):
            import torch  # noqa: F401 (loads the libraries the usual way)
    from netsparse_torch._C import units as _units

    return _units
