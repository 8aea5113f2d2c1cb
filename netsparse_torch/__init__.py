"""netsparse_torch: full-graph distributed GNN training with NetSparse in-network acceleration."""

from netsparse_torch.backend import comm_stats, reset_comm_stats, rig
from netsparse_torch.errors import NetsparseError

__all__ = ["NetsparseError", "comm_stats", "reset_comm_stats", "rig"]
__version__ = "0.1.0"
