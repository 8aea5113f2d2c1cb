"""The communication plan, computed once per graph and reused by every layer and epoch.

* :mod:`.bounds` - contiguous row blocks and the owner of each row;
* :mod:`.pattern` - the sparsity pattern at the papers' scale (CSR without values);
* :mod:`.plan` - a rank's halo, its send lists and RIG idxs (:class:`Plan`, :func:`build_plan`);
* :mod:`.twoface` - Two-Face's stripe classes and cost model.

:class:`Plan` holds torch tensors: it loads on first use, so the torch-free modeling path
(``hw_models``, which reads patterns, bounds and stripes) starts without importing torch.
"""

import importlib

_LAZY = {"Plan": "plan", "build_plan": "plan"}


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(f"netsparse_torch.plan.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["Plan", "build_plan"]
