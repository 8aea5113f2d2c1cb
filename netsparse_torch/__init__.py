"""netsparse_torch: full-graph distributed GNN training with NetSparse in-network acceleration."""

import importlib.abc
import importlib.machinery
import sys

from netsparse_torch.errors import NetsparseError, NotBuiltError

__all__ = ["NetsparseError", "comm_stats", "reset_comm_stats", "rig"]
__version__ = "0.1.0"


def __getattr__(name: str):
    """The backend's helpers and ``rig`` load torch on first use, so torch-free tools (netsparse-simulate)
    start fast."""
    if name in ("comm_stats", "reset_comm_stats"):
        from netsparse_torch import backend

        return getattr(backend, name)
    if name == "rig":
        from netsparse_torch.comm.rig import rig

        return rig
    raise AttributeError(f"module 'netsparse_torch' has no attribute {name!r}")


class _ExtensionNeedsTorchLibraries(importlib.abc.MetaPathFinder):
    """Loads torch's shared libraries right before ``netsparse_torch._C`` is imported (see
    :mod:`netsparse_torch.native`), and turns a missing extension into one :class:`NotBuiltError`."""

    def find_spec(self, fullname, path, target=None):
        if fullname != "netsparse_torch._C":
            return None
        from netsparse_torch.native import load_torch_libraries

        load_torch_libraries()
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None:
            raise NotBuiltError("the C++ extension netsparse_torch._C is not built: run `make install` "
                                "(or `python setup.py build_ext --inplace`)")
        return spec


sys.meta_path.insert(0, _ExtensionNeedsTorchLibraries())
