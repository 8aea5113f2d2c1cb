"""The communication plan, computed once per graph and reused by every layer and epoch: a rank's halo,
its send lists and RIG idxs (:class:`Plan`, :func:`build_plan`).

It builds on the torch-free pieces in :mod:`hw_models`: the row bounds (:mod:`hw_models.bounds`), the
sparsity pattern (:mod:`hw_models.pattern`) and Two-Face's stripe classes (:mod:`hw_models.twoface`)."""

from netsparse_torch.plan.plan import Plan, build_plan

__all__ = ["Plan", "build_plan"]
