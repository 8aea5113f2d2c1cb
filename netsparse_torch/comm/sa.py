"""``sa``, sparsity-aware: all_to_all of exactly the unique rows each peer needs.

The SpMM is split by column into the own block and the halo block, ``A x [X_own; halo] = A_own X_own
+ A_halo halo``, so the exchange overlaps the product it does not feed: forward, the halo arrives
while the own block is multiplied; backward, the halo gradient ``A_halo^T G`` is computed first and
travels back to its owners while ``A_own^T G`` is computed. The adjacency is constant (GCN and SAGE
normalisations), so only the features get a gradient.

Attention layers use :class:`_SAGather` instead: it returns ``[X_own; halo]`` (the softmax of a row
needs all of its scores before any aggregation), and its backward is the same reverse exchange.
"""

from __future__ import annotations

import torch
import torch.distributed as dist

from netsparse_torch.comm.base import Strategy, row_bytes
from netsparse_torch.kernels import CSR, gather, spmm


class _SAPropagate(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor, strat: SparsityAware, adjacency: CSR, tag: str) -> torch.Tensor:
        plan = strat.plan
        own, remote = adjacency.split_columns(plan.n_local)
        ctx.strat, ctx.own, ctx.remote, ctx.tag = strat, own, remote, tag
        halo = x.new_empty(plan.n_halo, x.size(1))
        pending = strat.start_halo(x.detach(), halo, tag)
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
        grad_halo = ctx.remote.t_matmul(grad)
        back = grad.new_empty(plan.send_idx.numel(), grad.size(1))
        pending = dist.all_to_all_single(back, grad_halo, plan.send_counts, plan.recv_counts, group=strat.group,
                                         async_op=True)
        grad_x = ctx.own.t_matmul(grad)
        pending.wait()
        grad_x.index_add_(0, plan.send_idx, back)
        strat.traffic.add("backward", row_bytes(plan.n_halo, grad), grad.size(1), ctx.tag)
        strat.returned_gradients(ctx.tag, row_bytes(plan.n_halo, grad))
        return grad_x, None, None, None


class _SAGather(torch.autograd.Function):
    """``[x; halo]``; backward: the halo gradient rows go back to their owners (one all_to_all)."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, strat: SparsityAware, tag: str) -> torch.Tensor:
        plan = strat.plan
        ctx.strat, ctx.tag = strat, tag
        out = x.new_empty(plan.n_local + plan.n_halo, x.size(1))
        pending = strat.start_halo(x.detach().contiguous(), out[plan.n_local:], tag)
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
        back = grad.new_empty(plan.send_idx.numel(), grad.size(1))
        pending = dist.all_to_all_single(back, grad[plan.n_local:], plan.send_counts, plan.recv_counts,
                                         group=strat.group, async_op=True)
        grad_x = grad[: plan.n_local].clone()
        pending.wait()
        grad_x.index_add_(0, plan.send_idx, back)
        strat.traffic.add("backward", row_bytes(plan.n_halo, grad), grad.size(1), ctx.tag)
        strat.returned_gradients(ctx.tag, row_bytes(plan.n_halo, grad))
        return grad_x, None, None


class SparsityAware(Strategy):
    """Forward: the halo is filled by :meth:`start_halo`; backward: the reverse exchange sends each
    halo gradient row back to its owner, which adds it to its own rows' gradient."""

    name = "sa"
    space = "combined"
    function = _SAGather

    def propagate(self, adjacency: CSR, x_local: torch.Tensor, tag: str = "") -> torch.Tensor:
        if self.plan.world_size == 1:
            return spmm(adjacency, x_local)
        return _SAPropagate.apply(x_local, self, adjacency, tag)

    def start_halo(self, x: torch.Tensor, halo: torch.Tensor, tag: str):
        """Start filling ``halo`` with the rows this rank needs; returns something to ``wait()`` on.
        Until then no other collective may run on the group (the caller only computes)."""
        plan = self.plan
        send = gather(x, plan.send_idx)  # the packing kernel: C++ on CPU, Triton on CUDA
        return dist.all_to_all_single(halo, send, plan.recv_counts, plan.send_counts, group=self.group,
                                      async_op=True)

    def returned_gradients(self, tag: str, nbytes: int) -> None:
        """Hook after the backward reverse exchange (statistics)."""
