"""Loading the C++ extension ``netsparse_torch._C`` without importing torch when torch is not needed.

The extension links against torch's shared libraries (libc10, libtorch_cpu, libtorch_python).
``import torch`` loads them, but also about a second of Python modules; torch-free tools that only
drive the units (``netsparse-simulate``, ``hw_models``) need the libraries alone. ``netsparse_torch``
calls :func:`load_torch_libraries` just before ``netsparse_torch._C`` is imported (an import hook in
``netsparse_torch/__init__.py``). If loading them directly fails (another torch layout), torch is
imported as usual.
"""

from __future__ import annotations

import ctypes
import importlib.util
import sys
from pathlib import Path

TORCH_LIBS = ("libc10.so", "libtorch_cpu.so", "libtorch.so", "libtorch_python.so")
"""Loaded in this order (each after the ones it depends on), those present."""


def load_torch_libraries() -> None:
    """Make torch's shared libraries available to the extension (a no-op once torch is imported)."""
    if "torch" in sys.modules:
        return
    try:
        lib = Path(importlib.util.find_spec("torch").submodule_search_locations[0]) / "lib"
        for name in TORCH_LIBS:
            if (lib / name).is_file():
                ctypes.CDLL(str(lib / name), mode=ctypes.RTLD_GLOBAL)
    except (OSError, AttributeError, TypeError):
        import torch  # noqa: F401 (loads the libraries the usual way)
