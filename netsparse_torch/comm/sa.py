"""``sa``, sparsity-aware: all_to_all of exactly the unique rows each peer needs.

The SpMM is split by column into the own block and the halo block, ``A x [X_own; halo] = A_own X_own
+ A_halo halo``, so the exchange overlaps the product it does not feed: forward, the halo arrives
while the own block is multiplied; backward, the halo gradient ``A_halo^T G`` is computed first and
travels back to its owners while ``A_own^T G`` is computed. The adjacency is constant (GCN and SAGE
normalisations), so only the features get a gradient.

The exchange is a :class:`HaloExchange`: a forward transport (here one all_to_all) composed with the
reverse exchange that every halo strategy shares (:mod:`netsparse_torch.comm.halo`).

Attention layers use :class:`_SAGather` instead: it returns ``[X_own; halo]`` (the softmax of a row
needs all of its scores before any aggregation), and its backward is the same reverse exchange.
"""

from __future__ import annotations

import torch

from netsparse_torch.comm.base import Strategy, row_bytes
from netsparse_torch.comm.halo import AllToAll, Transport, add_returned, reverse_exchange
from netsparse_torch.kernels import CSR, spmm


class _SAPropagate(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor, strat: HaloExchange, adjacency: CSR, tag: str) -> torch.Tensor:
        plan = strat.plan
        own, remote = adjacency.split_columns(plan.n_local)
        ctx.strat, ctx.own, ctx.remote, ctx.tag = strat, own, remote, tag
        halo = x.new_empty(plan.n_halo, x.size(1))
        pending = strat.transport.start(x.detach(), halo, tag)
        try:
            out = spmm(own, x)
        finally:  # the halo exchange owns the group's collectives until it is done, also on an error here
            pending.wait()
        strat.traffic.add("forward", row_bytes(plan.n_halo, x), x.size(1), tag)
        return out.add_(spmm(remote, halo))

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        strat, plan = ctx.strat, ctx.strat.plan
        grad = grad.contiguous()
        back, work = reverse_exchange(plan, ctx.remote.t_matmul(grad), strat.group)
        grad_x = add_returned(ctx.own.t_matmul(grad), plan, back, work)
        strat.reversed(ctx.tag, row_bytes(plan.n_halo, grad), grad.size(1))
        return grad_x, None, None, None


class _SAGather(torch.autograd.Function):
    """``[x; halo]``; backward: the halo gradient rows go back to their owners (one all_to_all)."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, strat: HaloExchange, tag: str) -> torch.Tensor:
        plan = strat.plan
        ctx.strat, ctx.tag = strat, tag
        out = x.new_empty(plan.n_local + plan.n_halo, x.size(1))
        pending = strat.transport.start(x.detach().contiguous(), out[plan.n_local:], tag)
        try:
            out[: plan.n_local] = x.detach()  # while the halo is in flight
        finally:
            pending.wait()
        strat.traffic.add("forward", row_bytes(plan.n_halo, x), x.size(1), tag)
        return out

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        strat, plan = ctx.strat, ctx.strat.plan
        grad = grad.contiguous()
        back, work = reverse_exchange(plan, grad[plan.n_local:], strat.group)
        grad_x = add_returned(grad[: plan.n_local].clone(), plan, back, work)
        strat.reversed(ctx.tag, row_bytes(plan.n_halo, grad), grad.size(1))
        return grad_x, None, None


class HaloExchange(Strategy):
    """A forward :class:`~netsparse_torch.comm.halo.Transport` that fills the halo, composed with the
    shared reverse exchange that sends each halo gradient row back to its owner, which adds it to its own
    rows' gradient. ``sa`` is this with :class:`~netsparse_torch.comm.halo.AllToAll`."""

    name = "sa"
    space = "combined"
    function = _SAGather

    def __init__(self, plan, group=None, transport: Transport | None = None, **options):
        super().__init__(plan, group=group, **options)
        self.transport: Transport = transport if transport is not None else AllToAll(plan, group)

    def propagate(self, adjacency: CSR, x_local: torch.Tensor, tag: str = "") -> torch.Tensor:
        if self.plan.world_size == 1:
            return spmm(adjacency, x_local)
        return _SAPropagate.apply(x_local, self, adjacency, tag)

    def reversed(self, tag: str, nbytes: int, k: int) -> None:
        """Count the backward reverse exchange of ``nbytes`` payload bytes."""
        self.traffic.add("backward", nbytes, k, tag)
        self.transport.record_reverse(tag, nbytes)

    def stats(self) -> dict:
        return self.transport.stats()

    def counters(self) -> dict:
        counted = getattr(self.transport, "counters", None)
        return {**super().counters(), **({"transport": counted()} if counted else {})}

    def add_counters(self, counters: dict) -> None:
        super().add_counters(counters)
        if "transport" in counters:
            self.transport.add_counters(counters["transport"])

