"""The CPU tensor kernels, ``netsparse_torch._C``: C++ that takes and returns tensors, linked against torch.

Its callers import it from here, never directly: torch is imported first (the extension needs the shared
libraries ``import torch`` loads), and a missing build is one :class:`NotBuiltError` that names the fix.
The hardware units are the other extension, ``hw_models._C`` (:mod:`hw_models.native`), which needs no
torch."""

import importlib

import torch  # noqa: F401 (loads libc10 and libtorch, which the extension links against)

from netsparse_torch.errors import NotBuiltError

try:
    # By name: the import graph (import-linter) would read the extension, which it cannot see, as the
    # package root and its lazy names (netsparse_torch.rig), and find cycles that are not there.
    _C = importlib.import_module("netsparse_torch._C")
except ImportError as e:
    raise NotBuiltError.extension("netsparse_torch._C") from e

__all__ = ["_C"]
