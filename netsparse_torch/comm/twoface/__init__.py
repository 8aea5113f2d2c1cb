"""Two-Face (ASPLOS'24): preprocessing into local/sync/async stripes, its cost model, and the runtime."""

from netsparse_torch.comm.twoface.classify import ASYNC, LOCAL, SYNC, Stripes, classify, find_stripes
from netsparse_torch.comm.twoface.cost import Coefficients
from netsparse_torch.comm.twoface.strategy import TwoFace

__all__ = ["ASYNC", "LOCAL", "SYNC", "Coefficients", "Stripes", "TwoFace", "classify", "find_stripes"]
