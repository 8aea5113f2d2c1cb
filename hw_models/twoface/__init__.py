"""Two-Face (ASPLOS'24) preprocessing: local/sync/async stripes (:mod:`.classify`), the cost model that
classifies them (:mod:`.cost`), and the same classification on the modeled cluster (:mod:`.model`).

Torch-free: the runtime strategy (``comm.twoface``) and ``hw_models`` both build on it.
"""

from hw_models.twoface.classify import ASYNC, LOCAL, SYNC, Stripes, classify, find_stripes
from hw_models.twoface.cost import Coefficients

__all__ = ["ASYNC", "LOCAL", "SYNC", "Coefficients", "Stripes", "classify", "find_stripes"]
