"""``sa``, sparsity-aware: all_to_all of exactly the unique rows each peer needs."""

from __future__ import annotations

import torch
import torch.distributed as dist

from netsparse_torch.comm.base import Strategy, row_bytes


class _SAGather(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor, strat: SparsityAware, tag: str) -> torch.Tensor:
        plan = strat.plan
        ctx.strat, ctx.tag = strat, tag
        # The halo lands straight behind the own rows: no concatenation copy afterwards.
        z = x.new_empty(plan.n_local + plan.n_halo, x.size(1))
        z[: plan.n_local] = x
        strat.fetch_halo(x.detach(), z[plan.n_local:], tag)
        strat.traffic.add("forward", row_bytes(plan.n_halo, x), x.size(1), tag)
        return z

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        strat = ctx.strat
        plan = strat.plan
        grad_local = grad[: plan.n_local].clone()
        grad_halo = grad[plan.n_local:].contiguous()
        back = grad.new_empty(plan.send_idx.numel(), grad.size(1))
        dist.all_to_all_single(back, grad_halo, plan.send_counts, plan.recv_counts)
        grad_local.index_add_(0, plan.send_idx, back)
        strat.traffic.add("backward", row_bytes(plan.n_halo, grad), grad.size(1), ctx.tag)
        strat.returned_gradients(ctx.tag, row_bytes(plan.n_halo, grad))
        return grad_local, None, None


class SparsityAware(Strategy):
    """Forward: the halo is filled by :meth:`fetch_halo`; backward: the reverse exchange sends each
    halo gradient row back to its owner, which adds it to its own rows' gradient."""

    name = "sa"
    space = "combined"
    function = _SAGather

    def fetch_halo(self, x: torch.Tensor, halo: torch.Tensor, tag: str) -> None:
        plan = self.plan
        dist.all_to_all_single(halo, x[plan.send_idx], plan.recv_counts, plan.send_counts)

    def returned_gradients(self, tag: str, nbytes: int) -> None:
        """Hook after the backward reverse exchange (statistics)."""
