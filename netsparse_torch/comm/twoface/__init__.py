"""Two-Face (ASPLOS'24) at run time: the stripe layout and the strategy (:class:`TwoFace`).

The stripe classification and the cost model are the plan's (:mod:`hw_models.twoface`),
written once for the runtime and the modeled cluster.
"""

from netsparse_torch.comm.twoface.strategy import TwoFace

__all__ = ["TwoFace"]
