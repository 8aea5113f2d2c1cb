"""Two-Face (ASPLOS'24): preprocessing into local/sync/async stripes, its cost model, and the runtime.

The runtime strategy (:class:`TwoFace`, which needs torch) loads on first use, so the torch-free cost
model (``comm.twoface.model``, used by ``netsparse-simulate``) imports fast.
"""

from netsparse_torch.comm.twoface.classify import ASYNC, LOCAL, SYNC, Stripes, classify, find_stripes
from netsparse_torch.comm.twoface.cost import Coefficients

__all__ = ["ASYNC", "LOCAL", "SYNC", "Coefficients", "Stripes", "TwoFace", "classify", "find_stripes"]


def __getattr__(name: str):
    if name == "TwoFace":
        from netsparse_torch.comm.twoface.strategy import TwoFace

        return TwoFace
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
