"""netsparse_torch: full-graph distributed GNN training with NetSparse in-network acceleration."""

from netsparse_torch.errors import NetsparseError

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
